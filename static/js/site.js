// Progressive enhancement for every page: the theme toggle, sortable tables, copy buttons and
// keyboard-scrollable wide boxes.
// Without JavaScript the pages read the same; these only add conveniences.
(function () {
  "use strict";

  var THEMES = ["system", "light", "dark"];

  function currentTheme() {
    return document.documentElement.getAttribute("data-theme") || "system";
  }

  function setTheme(theme) {
    if (theme === "system") {
      document.documentElement.removeAttribute("data-theme");
    } else {
      document.documentElement.setAttribute("data-theme", theme);
    }
    try {
      if (theme === "system") window.localStorage.removeItem("aeon-theme");
      else window.localStorage.setItem("aeon-theme", theme);
    } catch (error) {
      // Not remembered, still applied.
    }
    document.dispatchEvent(new CustomEvent("aeon:themechange"));
  }

  function initThemeToggle() {
    var button = document.querySelector(".theme-toggle");
    if (!button) return;
    var label = function () {
      button.textContent = "Theme: " + currentTheme();
    };
    label();
    button.hidden = false;
    button.addEventListener("click", function () {
      var next = THEMES[(THEMES.indexOf(currentTheme()) + 1) % THEMES.length];
      setTheme(next);
      label();
    });
    if (window.matchMedia) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () {
        if (currentTheme() === "system") document.dispatchEvent(new CustomEvent("aeon:themechange"));
      });
    }
  }

  // A cell sorts by its data-sort value when it has one (numbers), else by its text; empty
  // values ("—") always sort last.
  function sortKey(cell, numeric) {
    if (!cell) return null;
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    if (raw === "" || raw === "—") return null;
    if (numeric) {
      var number = parseFloat(raw.replace(/,/g, ""));
      return isNaN(number) ? null : number;
    }
    return raw.toLowerCase();
  }

  function sortTable(table, index, th) {
    var numeric = th.getAttribute("data-type") === "number";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortKey(a.cells[index], numeric);
      var y = sortKey(b.cells[index], numeric);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      var order = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? order : -order;
    });
    rows.forEach(function (row) {
      body.appendChild(row);
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      if (cell.hasAttribute("aria-sort")) cell.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function initSortableTables() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.tHead || !table.tBodies.length || table.tBodies[0].rows.length < 2) return;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        if (th.hasAttribute("data-nosort")) return;
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        button.textContent = th.textContent;
        button.title = "Sort by " + th.textContent.trim();
        th.textContent = "";
        th.appendChild(button);
        if (!th.hasAttribute("aria-sort")) th.setAttribute("aria-sort", "none");
        button.addEventListener("click", function () {
          sortTable(table, index, th);
        });
      });
    });
  }

  // What a copy did, told to screen readers too (the button's own new text is not announced).
  function copyStatus() {
    var status = document.getElementById("copy-status");
    if (!status) {
      status = document.createElement("p");
      status.id = "copy-status";
      status.className = "visually-hidden";
      status.setAttribute("role", "status");
      (document.getElementById("main") || document.body).appendChild(status);
    }
    return status;
  }

  function initCopyButtons() {
    document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) return;
      button.hidden = false;
      var status = copyStatus();
      button.addEventListener("click", function () {
        status.textContent = "";
        navigator.clipboard.writeText(source.textContent).then(
          function () {
            status.textContent = "Copied to the clipboard.";
            button.textContent = "Copied";
            window.setTimeout(function () {
              button.textContent = "Copy";
            }, 2000);
          },
          function () {
            status.textContent = "Could not copy: select the text and copy it.";
            button.textContent = "Select and copy";
          }
        );
      });
    });
  }

  // A box that scrolls sideways (a wide table on a phone, a long command) can be scrolled from the
  // keyboard only if it takes focus: each one that overflows now is a tab stop, a table's box a
  // region named by the table's caption. Boxes that fit stay out of the tab order.
  var scrollerCount = 0;
  function reachScrollers() {
    document.querySelectorAll(".table-wrap, pre").forEach(function (box) {
      var overflows = box.scrollWidth > box.clientWidth + 1;
      if (overflows && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("data-scroller", "");
        if (box.classList.contains("table-wrap")) {
          box.setAttribute("role", "region");
          var caption = box.querySelector("caption");
          if (caption) {
            if (!caption.id) caption.id = "scroller-caption-" + ++scrollerCount;
            box.setAttribute("aria-labelledby", caption.id);
          } else {
            box.setAttribute("aria-label", "Table, scrolls sideways");
          }
        }
      } else if (!overflows && box.hasAttribute("data-scroller")) {
        ["tabindex", "data-scroller", "role", "aria-labelledby", "aria-label"].forEach(function (name) {
          box.removeAttribute(name);
        });
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    initThemeToggle();
    initSortableTables();
    initCopyButtons();
    reachScrollers();
    var resizing = null;
    window.addEventListener("resize", function () {
      window.clearTimeout(resizing);
      resizing = window.setTimeout(reachScrollers, 150);
    });
  });
})();
