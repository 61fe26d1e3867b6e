// The API docs page (Swagger UI, drawn by React), made accessible where Swagger is not; the
// markup itself is React's and left alone, only attributes are added:
// - its headings jump levels (the title is an h1, the operation groups h3, the schemas h4):
//   each heading gets the level that follows the one before it as an ARIA level;
// - it draws its operations in a <main> and its title and description beside it, outside any
//   landmark: that header becomes the page's banner;
// - an opened operation's responses are a region without a name, "Try it out" draws choices
//   without a label, its JSON examples scroll without taking focus, and an opened schema's enum
//   toggles are icons without a name: each gets what it lacks.
// Runs again whenever the UI redraws (an operation opened, a model shown).
(function () {
  "use strict";

  function levelHeadings(root) {
    var previous = 0;
    root.querySelectorAll("h1, h2, h3, h4, h5, h6").forEach(function (heading) {
      var own = parseInt(heading.tagName.slice(1), 10);
      var level = previous === 0 ? own : Math.min(own, previous + 1);
      if (level !== own) {
        if (heading.getAttribute("aria-level") !== String(level)) {
          heading.setAttribute("role", "heading");
          heading.setAttribute("aria-level", String(level));
        }
      } else if (heading.hasAttribute("aria-level")) {
        heading.removeAttribute("role");
        heading.removeAttribute("aria-level");
      }
      previous = level;
    });
  }

  function headerAsBanner(root) {
    var header = root.querySelector(".information-container");
    if (header && header.getAttribute("role") !== "banner") header.setAttribute("role", "banner");
  }

  // An opened operation's responses table is a region with no name: named after its operation.
  function nameResponses(root) {
    root.querySelectorAll("table.responses-table[role=region]:not([aria-label])").forEach(function (table) {
      var operation = table.closest(".opblock");
      var arrow = operation && operation.querySelector(".opblock-control-arrow[aria-label]");
      table.setAttribute("aria-label", "Responses" + (arrow ? " of " + arrow.getAttribute("aria-label") : ""));
    });
  }

  // "Try it out" draws a parameter's choices as a <select> with no label: named after its
  // parameter. A JSON example that scrolls sideways takes focus, so a keyboard can scroll it.
  function nameChoices(root) {
    root.querySelectorAll("tr[data-param-name] select:not([aria-label])").forEach(function (select) {
      select.setAttribute("aria-label", select.closest("tr").getAttribute("data-param-name"));
    });
  }

  function reachExamples(root) {
    root.querySelectorAll(".highlight-code pre:not([tabindex])").forEach(function (pre) {
      pre.setAttribute("tabindex", "0");
    });
  }

  // An opened schema's enums toggle with a button holding only an icon: named after its schema.
  function nameToggles(root) {
    root.querySelectorAll("button.model-box-control:not([aria-label])").forEach(function (button) {
      if (button.textContent.trim()) return;
      var model = button.closest("[id^=model-]");
      button.setAttribute("aria-label", "Show or hide " + (model ? model.id.slice(6) : "the details"));
    });
  }

  function fix(root) {
    nameToggles(root);
    headerAsBanner(root);
    nameResponses(root);
    nameChoices(root);
    reachExamples(root);
    levelHeadings(root);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("swagger-ui");
    if (!root || !window.MutationObserver) return;
    var pending = false;
    new MutationObserver(function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () {
        pending = false;
        fix(root);
      });
    }).observe(root, { childList: true, subtree: true });
    fix(root);
  });
})();
