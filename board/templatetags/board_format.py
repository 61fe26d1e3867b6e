"""Formatting of board figures in templates."""

from django import template

register = template.Library()


@register.filter
def figure(value, digits: int = 1) -> str:
    """A number with fixed digits, or an em dash when there is none."""
    if value is None or value == "":
        return "—"
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def badge_label(code: str, labels: dict) -> str:
    return labels.get(code, code)
