// Draws the figures the server built with plotly (Python). Each chart element names the
// <script type="application/json"> block that holds its figure; nothing here is executed from
// the page. Colours of text and grid come from the page's CSS, so both themes read well.
(function () {
  "use strict";

  function themeColours() {
    var style = window.getComputedStyle(document.documentElement);
    var read = function (name) {
      return style.getPropertyValue(name).trim();
    };
    return { fg: read("--fg"), muted: read("--muted"), grid: read("--chart-grid"), line: read("--line"), bg: read("--bg") };
  }

  function themedLayout(layout) {
    var colours = themeColours();
    var axis = function (existing) {
      return Object.assign({}, existing || {}, {
        gridcolor: colours.grid,
        linecolor: colours.line,
        zerolinecolor: colours.line,
        tickfont: { color: colours.muted },
        title: Object.assign({}, (existing || {}).title || {}, { font: { color: colours.muted } })
      });
    };
    return Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: Object.assign({}, layout.font || {}, { color: colours.fg }),
      legend: Object.assign({}, layout.legend || {}, { font: { color: colours.fg } }),
      hoverlabel: { bgcolor: colours.bg, bordercolor: colours.line, font: { color: colours.fg } },
      xaxis: axis(layout.xaxis),
      yaxis: axis(layout.yaxis)
    });
  }

  var CONFIG = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"]
  };

  function draw(element) {
    var source = document.getElementById(element.getAttribute("data-figure"));
    if (!source || !window.Plotly) return;
    var figure = JSON.parse(source.textContent);
    element.textContent = "";
    element.figureLayout = figure.layout || {};
    window.Plotly.newPlot(element, figure.data, themedLayout(element.figureLayout), CONFIG);
  }

  function retheme() {
    document.querySelectorAll(".chart[data-figure]").forEach(function (element) {
      if (element.figureLayout) window.Plotly.relayout(element, themedLayout(element.figureLayout));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".chart[data-figure]").forEach(draw);
  });
  document.addEventListener("aeon:themechange", retheme);
})();
