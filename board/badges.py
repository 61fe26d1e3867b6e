"""SVG badges for model cards (docs/lab.md §Data to take away): `/badges/<org>/<name>/<class>.svg`
says the model's best ranked throughput and quality on that class (its crowns there). A badge
carries its own opaque colours, so it reads the same on a light and on a dark page; every text
in it is escaped; it is served behind the page cache (ETag, Cache-Control)."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.utils.html import escape

from board.champions import Axis
from board.models import BenchModel, Champion, HardwareClass

LABEL_BG = "#30363d"  # white text on it: contrast 12:1
VALUE_BG = "#0b5cad"  # white text on it: contrast 6.9:1
EMPTY_BG = "#5c6670"  # white text on it: contrast 5.9:1
CHAR_WIDTH = 6.6  # px per character of 11 px Verdana/DejaVu Sans, rounded up


def _width(text: str) -> int:
    return int(len(text) * CHAR_WIDTH) + 12


def badge_texts(bench_model: BenchModel, hardware_class: HardwareClass) -> tuple[str, str, bool]:
    """(label, value, measured): one query for the model's two crowns on the class."""
    crowns = {
        c.axis: c
        for c in Champion.objects.filter(
            hardware_class=hardware_class,
            model=bench_model,
            axis__in=(Axis.THROUGHPUT.value, Axis.QUALITY.value),
        )
    }
    label = f"AEON Bench · {hardware_class.name}"
    parts = []
    if Axis.THROUGHPUT.value in crowns:
        parts.append(f"{crowns[Axis.THROUGHPUT.value].value:,.0f} tok/s")
    if Axis.QUALITY.value in crowns:
        parts.append(f"quality {crowns[Axis.QUALITY.value].value:.1f}")
    if not parts:
        return label, "not ranked", False
    return label, " · ".join(parts), True


def badge_svg(label: str, value: str, measured: bool) -> str:
    left, right = _width(label), _width(value)
    total = left + right
    title = escape(f"{label}: {value}")
    label_text, value_text = escape(label), escape(value)
    colour = VALUE_BG if measured else EMPTY_BG
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{title}"><title>{title}</title>'
        f'<rect width="{left}" height="20" fill="{LABEL_BG}"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        '<g fill="#ffffff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="6" y="14">{label_text}</text>'
        f'<text x="{left + 6}" y="14">{value_text}</text>'
        "</g></svg>"
    )


def badge(request, canonical_id: str, slug: str):
    bench_model = BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()
    hardware_class = HardwareClass.objects.filter(slug=slug).first()
    if bench_model is None or hardware_class is None:
        raise Http404("no such model or hardware class")
    response = HttpResponse(
        badge_svg(*badge_texts(bench_model, hardware_class)),
        content_type="image/svg+xml; charset=utf-8",
    )
    # Served as an image and never as a document that could run anything.
    response["Content-Security-Policy"] = "default-src 'none'"
    return response
