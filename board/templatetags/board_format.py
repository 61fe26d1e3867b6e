"""Formatting of board figures in templates, and the figure blocks charts are drawn from."""

import json
import shlex

from django import template
from django.utils.html import format_html, json_script
from plotly.utils import PlotlyJSONEncoder

from board import glossary

register = template.Library()


@register.filter
def figure(value, digits: int = 1) -> str:
    """A number with fixed digits, or an em dash when there is none."""
    if value is None or value == "":
        return "—"
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def sortable(value) -> str:
    """A cell's sort key for the table script: the raw number, or empty when there is none."""
    return "" if value is None or value == "" else repr(float(value))


@register.filter
def badge_label(code: str, labels: dict) -> str:
    return labels.get(code, code)


@register.filter
def badge_meaning(code: str) -> str:
    return glossary.BADGES.get(code, "")


@register.filter
def mark_label(code: str) -> str:
    return glossary.mark_label(code)


@register.simple_tag
def chart(chart, prefix: str = "chart"):
    """A chart's figure as JSON in a non-executed script block, and the element charts.js
    draws it into; the figure's numbers are in a table on the same page for readers without
    JavaScript."""
    element_id = f"{prefix}-{chart.key}"
    data = json_script(chart.figure, f"{element_id}-figure", encoder=PlotlyJSONEncoder)
    # The figure is named by its caption, which says where its figures are in words; the drawing
    # is no role="img": plotly puts focusable controls (zoom, download) inside it.
    return format_html(
        '<figure class="chart-box"><figcaption>{}<small>{}</small>'
        '<span class="visually-hidden"> A chart: its figures are in the table below.</span>'
        '</figcaption><div class="chart" id="{}" data-figure="{}-figure">'
        '<p class="fallback">The chart draws with JavaScript; its figures are in the table '
        "below.</p></div>{}</figure>",
        chart.title,
        chart.caption,
        element_id,
        element_id,
        data,
    )


@register.filter
def per_stream(aggregate, conc) -> float | None:
    """A cohort's aggregate shared among its streams."""
    if aggregate is None or not conc:
        return None
    return float(aggregate) / int(conc)


@register.filter
def shell_join(flags) -> str:
    """Serve flags as one shell-quoted line, ready to paste after the serve command."""
    return shlex.join(str(flag) for flag in flags or [])


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def linecount(text: str) -> int:
    return (text or "").count("\n") + 1


@register.filter
def minus(value, other) -> float | None:
    if value is None or other is None:
        return None
    return float(value) - float(other)


@register.filter
def signed(value, digits: int = 1) -> str:
    """A difference with its sign, or an em dash."""
    if value is None:
        return "—"
    return f"{float(value):+,.{int(digits)}f}"


@register.filter
def tps(value) -> str:
    """tok/s with one digit, or an em dash alone."""
    return "—" if value is None or value == "" else f"{float(value):,.1f} tok/s"


@register.filter
def drafter_meaning(status: str) -> str:
    return glossary.DRAFTER.get(status, status)


@register.filter
def attestation_meaning(method: str) -> str:
    return glossary.ATTESTATION.get(method, method)
