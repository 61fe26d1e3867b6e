"""Formatting of the recipe lab's figures (docs/lab.md): a ratio as a signed percentage, a
difference in composite points, each with a word for readers who do not see colour."""

from django import template

register = template.Library()


def _signed(value: float, digits: int = 1) -> str:
    text = f"{abs(value):,.{digits}f}"
    if round(value, digits) == 0:
        return f"±{text}"
    return f"+{text}" if value > 0 else f"−{text}"


@register.filter
def lab_delta(effect) -> str:
    """An effect's median (or a delta) as shown: `+10.3 %` for a ratio, `−0.5 points`."""
    if not effect:
        return "—"
    value = effect["median"]
    if effect["how"] == "ratio":
        return f"{_signed((value - 1) * 100)} %"
    return f"{_signed(value)} points"


@register.filter
def lab_range(effect) -> str:
    """The spread of an effect over its pairs: `+4.9 % … +10.3 %`, empty for one pair."""
    if not effect or effect.get("n", 1) < 2:
        return ""
    low, high = effect["min"], effect["max"]
    if effect["how"] == "ratio":
        return f"{_signed((low - 1) * 100)} % … {_signed((high - 1) * 100)} %"
    return f"{_signed(low)} … {_signed(high)} points"


@register.filter
def lab_verdict(effect) -> str:
    """`better`, `worse` or `same` (a CSS class and a word)."""
    if not effect:
        return "none"
    better = effect.get("better")
    return "same" if better is None else ("better" if better else "worse")


@register.filter
def vs_champion(row) -> str:
    """A figure against the champion's: `92.0 % of the champion`, `−1.2 points`."""
    if row["ratio"] is None:
        return "—"
    if row["how"] == "ratio":
        return f"{row['ratio'] * 100:,.1f} % of the champion"
    return f"{_signed(row['ratio'])} points"
