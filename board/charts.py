"""Figures of the board, built server-side with plotly (Python) from stored cohorts.

A page embeds each figure's JSON in a non-executed `<script type="application/json">` block and
`static/js/charts.js` draws it with plotly.js from our static files. Figures carry no theme
colours for text and grid (the page's CSS supplies them), and an empty template keeps them small.
Marked cohorts (docs/cohorts.md) are drawn apart: excluded cells as crosses off the lines,
queued-beyond-max-num-seqs rungs circled.
"""

import hashlib
import html
from collections.abc import Iterable
from dataclasses import dataclass

import plotly.graph_objects as go

from board.answer_cache import cache_get, cache_set
from board.glossary import mark_label
from board.perf import CATEGORIES, CohortMark

CHARTS_VERSION = 2  # bump when a figure's shape changes: cached figures are keyed by it
CATEGORY_COLOURS = {  # legible on white and on near-black
    "math": "#4c8bf5",
    "instruction": "#f28e2b",
    "reasoning": "#59a14f",
    "coding": "#e15759",
    "prose": "#b07aa1",
}
EXCLUDED_COLOUR = "#8b949e"
QUEUED_COLOUR = "#d4a72c"
LOG_AXIS = {"type": "log", "dtick": 1, "tickformat": ",.0f"}  # labels at powers of ten only
SERIES_COLOURS = ("#4c8bf5", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2")


def plot_text(value) -> str:
    """A string as plotly must be given it to show it as text: plotly reads a subset of HTML in
    every text, name, legend and hover string (`<a href>`, `<b>`, `<br>`…), and shows entities
    as the characters they name. Every string that may come from a pod goes through here."""
    return html.escape(str(value), quote=False)


@dataclass(frozen=True)
class Chart:
    key: str  # element ids on the page derive from it
    title: str
    caption: str
    figure: dict


def _empty_figure(**layout) -> go.Figure:
    return go.Figure(
        layout={
            "template": go.layout.Template(),
            "margin": {"l": 56, "r": 12, "t": 8, "b": 48},
            # Above the plot: below it, a wrapped legend runs into the axis title.
            "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
            "hovermode": "closest",
            **layout,
        }
    )


def _conc_axis(concs: list[int]) -> dict:
    return {
        "title": {"text": "concurrent streams"},
        "type": "log",
        "tickvals": concs,
        "ticktext": [str(c) for c in concs],
    }


def _reasons(cohort) -> str:
    notes = [mark_label(code) for code in list(cohort.marks) + list(cohort.labels)]
    return "; ".join(notes)


def _line_chart(cohorts, value, *, y_title: str, log_y: bool = False) -> go.Figure:
    """One line per category through its valid cells; excluded cells as crosses, queued rungs
    circled."""
    concs = sorted({c.conc for c in cohorts})
    figure = _empty_figure(
        xaxis=_conc_axis(concs),
        yaxis={"title": {"text": y_title}, **LOG_AXIS}
        if log_y
        else {"title": {"text": y_title}, "rangemode": "tozero"},
    )
    for category in CATEGORIES:
        cells = [c for c in cohorts if c.category == category and c.valid and value(c) is not None]
        if not cells:
            continue
        figure.add_trace(
            go.Scatter(
                x=[c.conc for c in cells],
                y=[round(value(c), 2) for c in cells],
                mode="lines+markers",
                name=category,
                line={"color": CATEGORY_COLOURS[category], "width": 2},
                marker={"size": 7},
                hovertemplate=f"{category} @ c%{{x}}<br>%{{y}} {y_title}<extra></extra>",
            )
        )
    overlays = (
        (
            "excluded (marked)",
            [c for c in cohorts if not c.valid],
            {"symbol": "x-thin-open", "size": 13, "color": EXCLUDED_COLOUR, "line": {"width": 2}},
        ),
        (
            "queued beyond max-num-seqs",
            [c for c in cohorts if c.valid and CohortMark.QUEUED_BEYOND_MAX_NUM_SEQS in c.labels],
            {"symbol": "circle-open", "size": 15, "color": QUEUED_COLOUR, "line": {"width": 2}},
        ),
    )
    for name, cells, marker in overlays:
        cells = [c for c in cells if value(c) is not None]
        if not cells:
            continue
        figure.add_trace(
            go.Scatter(
                x=[c.conc for c in cells],
                y=[round(value(c), 2) for c in cells],
                mode="markers",
                name=name,
                marker=marker,
                text=[plot_text(f"{c.label}: {_reasons(c)}") for c in cells],
                hovertemplate="%{text}<br>%{y}<extra></extra>",
            )
        )
    return figure


def _heatmap(cohorts) -> go.Figure:
    concs = sorted({c.conc for c in cohorts})
    categories = [name for name in CATEGORIES if any(c.category == name for c in cohorts)]
    cell = {(c.category, c.conc): c for c in cohorts}
    z, text, notes = [], [], []
    for category in categories:
        z_row, text_row, note_row = [], [], []
        for conc in concs:
            found = cell.get((category, conc))
            if found is None:
                z_row.append(None)
                text_row.append("")
                note_row.append("not measured")
                continue
            z_row.append(round(found.aggregate_tps, 1))
            flag = "✕ " if not found.valid else ("◌ " if found.labels else "")
            text_row.append(f"{flag}{found.aggregate_tps:,.0f}")
            note_row.append(plot_text(_reasons(found) or "valid"))
        z.append(z_row)
        text.append(text_row)
        notes.append(note_row)
    figure = _empty_figure(
        xaxis={"title": {"text": "concurrent streams"}, "type": "category"},
        yaxis={"type": "category", "autorange": "reversed"},
        margin={"l": 88, "r": 12, "t": 12, "b": 48},
    )
    figure.add_trace(
        go.Heatmap(
            z=z,
            x=[f"c{conc}" for conc in concs],
            y=categories,
            text=text,
            customdata=notes,
            texttemplate="%{text}",
            colorscale="Viridis",
            colorbar={"title": {"text": "tok/s"}, "thickness": 12},
            hovertemplate="%{y} @ %{x}<br>%{z} tok/s aggregate<br>%{customdata}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    return figure


def _cohorts_digest(cohorts: list) -> str:
    fields = [
        (c.category, c.conc, c.aggregate_tps, c.ttft_ms_p50, c.tpot_ms_p50, c.marks, c.labels)
        for c in cohorts
    ]
    return hashlib.sha256(repr(fields).encode()).hexdigest()


def perf_charts(cohorts: Iterable) -> list[Chart]:
    """The perf figures of one run's cohorts, memoised by their content: building them costs
    milliseconds, reading them back microseconds."""
    cohorts = list(cohorts)
    if not cohorts:
        return []
    cache_key = f"aeon:charts:{CHARTS_VERSION}:{_cohorts_digest(cohorts)}"
    cached = cache_get(cache_key)
    if cached is not None:
        return cached
    charts = [
        Chart(
            "aggregate",
            "Aggregate tok/s vs concurrency",
            "Tokens per second of all streams together, per prompt category.",
            _line_chart(cohorts, lambda c: c.aggregate_tps, y_title="tok/s").to_plotly_json(),
        ),
        Chart(
            "per-stream",
            "Per-stream share vs concurrency",
            "Aggregate ÷ concurrent streams: what each user sees as the pool fills.",
            _line_chart(
                cohorts, lambda c: c.aggregate_tps / c.conc, y_title="tok/s per stream"
            ).to_plotly_json(),
        ),
        Chart(
            "heatmap",
            "Category × concurrency",
            "Aggregate tok/s of every cohort. ✕ excluded (marked), ◌ queued beyond max-num-seqs.",
            _heatmap(cohorts).to_plotly_json(),
        ),
        Chart(
            "ttft",
            "Time to first token vs concurrency",
            "Median (p50) TTFT, log scale.",
            _line_chart(
                cohorts, lambda c: c.ttft_ms_p50, y_title="ms", log_y=True
            ).to_plotly_json(),
        ),
        Chart(
            "tpot",
            "Time per output token vs concurrency",
            "Median (p50) TPOT: the gap between tokens of one stream.",
            _line_chart(cohorts, lambda c: c.tpot_ms_p50, y_title="ms").to_plotly_json(),
        ),
    ]
    cache_set(cache_key, charts, timeout=24 * 3600)
    return charts


def comparison_chart(sides: list[tuple[str, list]]) -> Chart | None:
    """Best valid aggregate per concurrency of two benchmarks, one line each."""
    figure = None
    for index, (name, cohorts) in enumerate(sides):
        best: dict[int, float] = {}
        for cohort in cohorts:
            if cohort.valid:
                best[cohort.conc] = max(best.get(cohort.conc, 0.0), cohort.aggregate_tps)
        if not best:
            continue
        concs = sorted(best)
        if figure is None:
            figure = _empty_figure(yaxis={"title": {"text": "tok/s"}, "rangemode": "tozero"})
        figure.add_trace(
            go.Scatter(
                x=concs,
                y=[round(best[c], 1) for c in concs],
                mode="lines+markers",
                name=plot_text(name),
                line={"color": SERIES_COLOURS[index % len(SERIES_COLOURS)], "width": 2},
            )
        )
    if figure is None:
        return None
    all_concs = sorted({x for trace in figure.data for x in trace.x})
    figure.update_layout(xaxis=_conc_axis(all_concs))
    return Chart(
        "compare",
        "Best aggregate tok/s vs concurrency",
        "For each concurrency, the best valid cohort of any category.",
        figure.to_plotly_json(),
    )


def _reign_text(reign, unit: str) -> str:
    """Hover lines joined by plotly's `<br>`, each line's text escaped (`plot_text`)."""
    figure = f"{reign.value:,.1f} {unit}"
    if reign.secondary is not None:
        figure += f" · TPOT {reign.secondary:,.1f} ms"
    if reign.cohort:
        figure += f" ({reign.cohort})"
    until = (
        f"until {reign.until:%Y-%m-%d}, dethroned by {reign.dethroned_by.public_id}"
        if reign.until and reign.dethroned_by
        else "holds it"
    )
    lines = (
        reign.benchmark.model.canonical_id,
        figure,
        f"benchmark {reign.benchmark.public_id}",
        f"since {reign.since:%Y-%m-%d}, {until}",
    )
    return "<br>".join(plot_text(line) for line in lines)


def crown_timeline(history) -> Chart:
    """Who held one crown of a class, memoised by what it draws: plotly builds a figure in
    milliseconds, the cache reads it back in microseconds."""
    unit = history.axis.unit
    drawn = [history.axis.value, history.title] + [
        (reign.value, reign.benchmark.model.canonical_id, _reign_text(reign, unit))
        for reign in history.reigns
    ]
    cache_key = (
        f"aeon:crown-timeline:{CHARTS_VERSION}:{hashlib.sha256(repr(drawn).encode()).hexdigest()}"
    )
    cached = cache_get(cache_key)
    if cached is None:
        cached = _crown_timeline(history)
        cache_set(cache_key, cached, timeout=24 * 3600)
    return cached


def _crown_timeline(history) -> Chart:
    """Who held one crown of a class, in the order it changed hands: a step line through the
    figure to beat, a point per reign coloured by model, the date it was taken under each point
    and the hover naming the benchmark and who took the crown from it. Reigns sit evenly apart
    (a crown can change hands twice in an hour and then hold for months); the dates say when."""
    reigns = list(history.reigns)
    axis = history.axis
    unit = axis.unit
    positions = list(range(len(reigns)))
    models = list(dict.fromkeys(reign.benchmark.model.canonical_id for reign in reigns))
    figure = _empty_figure(
        xaxis={
            "title": {"text": "taken on"},
            "tickvals": positions,
            "ticktext": [f"{reign.since:%Y-%m-%d}" for reign in reigns],
            "range": [-0.5, len(reigns) - 0.5],
            "zeroline": False,
        },
        yaxis={
            "title": {"text": unit if unit != "points" else "composite"},
            "rangemode": "tozero",
        },
        showlegend=True,
    )
    figure.add_trace(
        go.Scatter(
            x=[-0.5, *positions, len(reigns) - 0.5],
            y=[round(r.value, 2) for r in (reigns[0], *reigns, reigns[-1])],
            mode="lines",
            line={"shape": "hv", "color": EXCLUDED_COLOUR, "width": 2},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for index, model in enumerate(models):
        held = [
            (p, r)
            for p, r in zip(positions, reigns, strict=True)
            if r.benchmark.model.canonical_id == model
        ]
        figure.add_trace(
            go.Scatter(
                x=[position for position, _ in held],
                y=[round(reign.value, 2) for _, reign in held],
                mode="markers+text",
                name=plot_text(model),
                marker={"size": 12, "color": SERIES_COLOURS[index % len(SERIES_COLOURS)]},
                text=[f"{reign.value:,.0f}" for _, reign in held],
                textposition="top center",
                customdata=[_reign_text(reign, unit) for _, reign in held],
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    return Chart(
        f"crown-{axis.value.replace('_', '-')}",
        f"{history.title}: who held the crown",
        "Each point is a benchmark taking the crown, in the order the crown changed hands.",
        figure.to_plotly_json(),
    )
