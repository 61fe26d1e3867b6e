"""The drafter × concurrency figures of the recipe lab (docs/lab.md §Drafter × concurrency),
built with plotly (Python) like board/charts.py and drawn by the same static/js/charts.js.

Every text plotly draws (trace names, hover texts) goes through `plot_text`: plotly renders a
small HTML subset in them, and a drafter method comes from a pod."""

from __future__ import annotations

import plotly.graph_objects as go

from board.charts import SERIES_COLOURS, Chart, _conc_axis, _empty_figure

BEST_COLOUR = "#d4a72c"


def plot_text(value) -> str:
    """Text safe in plotly's HTML subset: `<`, `>` and `&` as entities."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def drafter_charts(view) -> list[Chart]:
    """Aggregate tok/s and per-stream share against concurrency, a line per drafter setting, the
    setting best at each concurrency ringed; empty when fewer than one setting was measured."""
    curves = view.curves
    if not curves:
        return []
    concs = sorted({p["conc"] for c in curves for p in c["points"]})
    charts = []
    for key, title, caption, value, y_title in (
        (
            "drafter-aggregate",
            "Drafter × concurrency: aggregate tok/s",
            "Per drafter setting, the best valid cohort of any ranked benchmark at each "
            "concurrency; the ring marks the setting best at that concurrency.",
            "aggregate_tps",
            "tok/s",
        ),
        (
            "drafter-per-stream",
            "Drafter × concurrency: per-stream share",
            "The same cohorts' aggregate ÷ concurrent streams: what each user sees.",
            "per_stream_tps",
            "tok/s per stream",
        ),
    ):
        figure = _empty_figure(
            xaxis=_conc_axis(concs), yaxis={"title": {"text": y_title}, "rangemode": "tozero"}
        )
        best_x, best_y, best_text = [], [], []
        for index, curve in enumerate(curves):
            points = curve["points"]
            label = plot_text(curve["label"])
            figure.add_trace(
                go.Scatter(
                    x=[p["conc"] for p in points],
                    y=[round(p[value], 2) for p in points],
                    mode="lines+markers",
                    name=label,
                    line={"color": SERIES_COLOURS[index % len(SERIES_COLOURS)], "width": 2},
                    marker={"size": 7},
                    text=[
                        plot_text(f"{curve['label']}: {p['cohort']}, benchmark {p['benchmark']}")
                        for p in points
                    ],
                    hovertemplate="%{text}<br>%{y} " + y_title + "<extra></extra>",
                )
            )
            for p in points:
                if view.best.get(p["conc"]) == curve["label"]:
                    best_x.append(p["conc"])
                    best_y.append(round(p[value], 2))
                    best_text.append(plot_text(f"best at c{p['conc']}: {curve['label']}"))
        figure.add_trace(
            go.Scatter(
                x=best_x,
                y=best_y,
                mode="markers",
                name="best at this concurrency",
                marker={
                    "symbol": "circle-open",
                    "size": 16,
                    "color": BEST_COLOUR,
                    "line": {"width": 2},
                },
                text=best_text,
                hovertemplate="%{text}<extra></extra>",
            )
        )
        charts.append(Chart(key, title, caption, figure.to_plotly_json()))
    return charts
