"""Chart text is text (issue 20, "Chart text is text"): plotly reads a subset of HTML in every
name, legend, text and hover string, so a pod's model name or label reaches a figure escaped and
is shown as the characters it holds, never as a link or bold type."""

import json

from board.charts import comparison_chart, perf_charts, plot_text
from board.perf import Cohort, CohortMark

HOSTILE = '<a href="https://evil.example/">< b>&<b>x</b></a><br>'
ESCAPED = (
    '&lt;a href="https://evil.example/"&gt;&lt; b&gt;&amp;&lt;b&gt;x&lt;/b&gt;&lt;/a&gt;&lt;br&gt;'
)


def cohort(conc: int, *, label: str = "text c1", marks=()) -> Cohort:
    return Cohort(
        category="math",
        conc=conc,
        label=label,
        aggregate_tps=100.0 * conc,
        reported_aggregate_tps=100.0 * conc,
        stream_ceiling_tps=100.0,
        scheduling_efficiency=None,
        decode_tps_mean=100.0,
        ttft_ms_p50=50.0,
        ttft_ms_mean=None,
        ttft_ms_p95=None,
        tpot_ms_p50=10.0,
        tpot_ms_mean=None,
        tpot_ms_p95=None,
        n=8,
        n_errors=0,
        marks=marks,
    )


def strings_of(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for child in value.values():
            yield from strings_of(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from strings_of(child)


def test_plot_text_escapes_what_plotly_reads_as_markup():
    assert plot_text(HOSTILE) == ESCAPED
    assert plot_text("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


def test_a_model_name_with_markup_reaches_the_comparison_figure_escaped():
    chart = comparison_chart(
        [(f"A · {HOSTILE}", [cohort(1), cohort(2)]), ("B · plain/model", [cohort(1)])]
    )
    figure = json.loads(json.dumps(chart.figure, default=str))
    names = [trace["name"] for trace in figure["data"]]
    assert names == [f"A · {ESCAPED}", "B · plain/model"]
    # No string of the figure holds the tag as plotly would read it.
    assert not any("<a" in text or "<b>" in text for text in strings_of(figure))


def test_a_cohort_label_with_markup_reaches_the_perf_figures_escaped():
    marked = cohort(4, label=HOSTILE, marks=(next(iter(CohortMark)),))
    charts = perf_charts([cohort(1), cohort(2), marked])
    texts = [
        text
        for chart in charts
        for text in strings_of(json.loads(json.dumps(chart.figure, default=str)))
    ]
    assert any(ESCAPED in text for text in texts)
    assert not any("<a" in text or "<b>" in text for text in texts)
