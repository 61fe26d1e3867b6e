"""Rows of the public pages' benchmark tables, read once into plain strings: a template then only
prints them, with no filter, URL lookup or glossary lookup per cell."""

from django.urls import reverse

from board import glossary
from board.models import Badge, Benchmark
from board.templatetags.board_format import figure, sortable, tps

BADGE_LABELS = dict(Badge.choices)


def benchmark_rows(benchmarks) -> list[dict]:
    """One row per benchmark of `_benchmark_table.html`, the cells as that table shows them."""
    hardware_urls: dict[str, str] = {}
    rows = []
    for b in benchmarks:
        slug = b.hardware_class.slug
        if slug not in hardware_urls:
            hardware_urls[slug] = reverse("hardware", args=[slug])
        rows.append(
            {
                "url": reverse("benchmark", args=[b.public_id]),
                "model": b.model.canonical_id,
                "hardware_url": hardware_urls[slug],
                "hardware": b.hardware_class.name,
                "composite": figure(b.composite),
                "composite_sort": sortable(b.composite),
                "coverage_label": b.coverage_label,
                "peak": tps(b.peak_tps),
                "peak_sort": sortable(b.peak_tps),
                "peak_cohort": b.peak_cohort,
                "single": tps(b.single_stream_tps),
                "single_sort": sortable(b.single_stream_tps),
                "single_cohort": b.single_stream_cohort,
                "latency": f"{figure(b.ttft_ms, 0)} ms / {figure(b.tpot_ms)} ms"
                if b.ttft_ms is not None
                else "—",
                "latency_sort": sortable(b.ttft_ms),
                "trust": b.trust,
                "trust_label": b.get_trust_display(),
                "ranked": b.ranked,
                "badges": [
                    {
                        "label": BADGE_LABELS.get(code, code),
                        "meaning": glossary.BADGES.get(code, ""),
                    }
                    for code in b.badges
                ],
            }
        )
    return rows


def quality_rows(benchmarks: list[Benchmark]) -> tuple[list[str], list[dict]]:
    """The model page's quality table: the categories any of `benchmarks` scored, in the order
    first met, and a row per benchmark with a score (or none) in each."""
    names: list[str] = []
    for b in benchmarks:
        for category in b.categories:
            if category["category"] not in names:
                names.append(category["category"])
    rows = []
    for b in benchmarks:
        if not b.categories:
            continue
        scores = {c["category"]: c.get("score") for c in b.categories}
        rows.append(
            {
                "url": reverse("benchmark", args=[b.public_id]),
                "hardware": b.hardware_class.name,
                "public_id": b.public_id,
                "trust": b.trust,
                "trust_label": b.get_trust_display(),
                "composite": figure(b.composite),
                "composite_sort": sortable(b.composite),
                "coverage_label": b.coverage_label,
                "cells": [
                    {"sort": sortable(scores.get(name)), "figure": figure(scores.get(name))}
                    for name in names
                ],
            }
        )
    return names, rows
