// Loaded blocking in <head>: applies the theme the visitor picked before the first paint, so the
// page never flashes the wrong theme. With nothing stored, CSS follows the system setting.
(function () {
  try {
    var stored = window.localStorage.getItem("aeon-theme");
    if (stored === "light" || stored === "dark") {
      document.documentElement.setAttribute("data-theme", stored);
    }
  } catch (error) {
    // Storage blocked (privacy mode): the system setting applies.
  }
})();
