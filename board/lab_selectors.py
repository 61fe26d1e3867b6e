"""Reads of the recipe lab (docs/lab.md): the effects of one model on one class, one flag across
classes, a benchmark's neighbours one flag away, its standing against its class champion, and the
drafter curves. Each a fixed number of queries over the lab's read models, whatever the number of
benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from board.champions import Axis
from board.lab import AXES, HIGHER_IS_BETTER, best_per_rung
from board.models import (
    Benchmark,
    BenchModel,
    Champion,
    DrafterCurve,
    FlagEffect,
    FlagPair,
    HardwareClass,
)
from recipes.diff import diff_recipes

LAB_AXES = tuple(AXES)
AXIS_TITLES = {
    "throughput": "Throughput",
    "single_stream": "Single-stream",
    "latency": "Latency (TTFT)",
    "quality": "Quality",
}
# The Benchmark column of each axis's figure, and whether lower wins.
AXIS_FIGURES = {
    "throughput": ("peak_tps", False),
    "single_stream": ("single_stream_tps", False),
    "latency": ("ttft_ms", True),
    "quality": ("composite", False),
}


def change_words(change: dict, *, reverse: bool = False) -> str:
    """A change as a tuner reads it: `--max-num-seqs 32 → 64`, `add --enable-prefix-caching`,
    `add --kv-cache-dtype fp8`; `reverse`: the same change read from its other side."""
    flag, before, after = change["flag"], change.get("before"), change.get("after")
    if change["kind"] == "added":
        shown = flag if after is None else f"{flag} {after}"
        return f"remove {shown}" if reverse else f"add {shown}"
    if reverse:
        before, after = after, before
    return f"{flag} {before} → {after}"


def _axis_cells(axes: dict) -> list[dict]:
    return [{"axis": axis, "effect": axes.get(axis)} for axis in LAB_AXES]


def _effect_row(effect: FlagEffect) -> dict:
    return {
        "effect": effect,
        "words": change_words(effect.change),
        "cells": _axis_cells(effect.axes),
        "once": effect.pair_count == 1 and effect.pod_count == 1,
    }


def model_class_effects(bench_model: BenchModel, hardware_class: HardwareClass) -> list[dict]:
    """What each flag did for this model on this class (one query)."""
    return [
        _effect_row(effect)
        for effect in FlagEffect.objects.filter(
            hardware_class=hardware_class, model=bench_model
        ).order_by("flag", "change_key")
    ]


def flag_effects(flag: str) -> list[dict]:
    """One flag's measured changes on every model and class (one query)."""
    rows = (
        FlagEffect.objects.filter(flag=flag)
        .select_related("hardware_class", "model")
        .order_by("hardware_class__slug", "model__canonical_id", "change_key")
    )
    return [_effect_row(effect) for effect in rows]


def measured_flags() -> list[dict]:
    """Every flag with a measured change: how many changes, model × class scopes and pairs."""
    return list(
        FlagEffect.objects.values("flag")
        .annotate(changes=Count("id"), scopes=Count("model_id", distinct=True))
        .order_by("flag")
    )


def model_class(canonical_id: str, slug: str) -> tuple[BenchModel, HardwareClass] | None:
    bench_model = BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()
    hardware_class = HardwareClass.objects.filter(slug=slug).first()
    if bench_model is None or hardware_class is None:
        return None
    return bench_model, hardware_class


def model_class_counts(bench_model: BenchModel, hardware_class: HardwareClass):
    """The model's summary row on the class (counts), or None."""
    from board.models import ModelClassSummary

    return ModelClassSummary.objects.filter(
        model=bench_model, hardware_class=hardware_class
    ).first()


@dataclass
class DrafterView:
    curves: list[dict]
    best: dict[int, str]  # concurrency → the setting best there


def drafter_view(bench_model: BenchModel, hardware_class: HardwareClass) -> DrafterView:
    curves = [
        {"label": c.label, "method": c.method, "n": c.n, "points": c.points}
        for c in DrafterCurve.objects.filter(hardware_class=hardware_class, model=bench_model)
    ]
    return DrafterView(curves=curves, best=best_per_rung(curves))


def _from_my_side(pair: FlagPair, mine_is_base: bool) -> dict:
    """A pair as one of its benchmarks sees it: the neighbour, what it changes, its deltas."""
    deltas = {}
    for axis, (_, how) in AXES.items():
        value = pair.deltas.get(axis)
        if value is None:
            deltas[axis] = None
        elif mine_is_base:
            deltas[axis] = value
        elif how == "ratio":
            deltas[axis] = 1.0 / value if value else None
        else:
            deltas[axis] = -value
    return {
        "words": change_words(pair.change, reverse=not mine_is_base),
        "flag": pair.flag,
        "neighbours": pair.other_benchmark_ids if mine_is_base else pair.base_benchmark_ids,
        "recipe_id": pair.other_recipe_id if mine_is_base else pair.base_recipe_id,
        "cells": [
            {
                "axis": axis,
                "effect": None
                if deltas[axis] is None
                else {
                    "how": how,
                    "median": deltas[axis],
                    "better": _better(axis, deltas[axis]),
                },
            }
            for axis, (_, how) in AXES.items()
        ],
    }


def _better(axis: str, value: float) -> bool | None:
    neutral = 1.0 if AXES[axis][1] == "ratio" else 0.0
    if value == neutral:
        return None
    return (value > neutral) == HIGHER_IS_BETTER[axis]


def one_flag_away(benchmark: Benchmark) -> list[dict]:
    """The benchmark's neighbours one flag away (its own pod's other recipes): one query."""
    if not benchmark.recipe_id or not benchmark.ranked:
        return []
    pairs = FlagPair.objects.filter(
        Q(base_recipe_id=benchmark.recipe_id) | Q(other_recipe_id=benchmark.recipe_id),
        hardware_class_id=benchmark.hardware_class_id,
        model_id=benchmark.model_id,
        key_fingerprint=benchmark.key_fingerprint,
    ).order_by("flag", "change_key", "pk")
    return [
        _from_my_side(pair, pair.base_recipe_id == benchmark.recipe_id)
        for pair in pairs
        if benchmark.public_id in pair.base_benchmark_ids + pair.other_benchmark_ids
    ]


# --- against the champion (docs/lab.md §Against the champion) ----------------------------------


def _ranks(benchmark: Benchmark) -> dict[str, tuple[int | None, int]]:
    """Per axis, (rank, out of) among the ranked benchmarks of the class: every count in one
    aggregate, one pass over the class's rows. Two counts per axis read them eight times: with
    10,000 benchmarks in one class, a benchmark page not cached took 255-284 ms, 170-195 ms of it
    in the database; 160-166 ms and 54-57 ms now (docs/lab.md §Against the champion)."""
    counts = {}
    for axis in Axis:
        column, lowest = AXIS_FIGURES[axis.value]
        counts[f"{axis.value}_total"] = Count("pk", filter=Q(**{f"{column}__isnull": False}))
        value = getattr(benchmark, column)
        if value is not None and benchmark.ranked:  # an unranked benchmark has no rank
            beats = {f"{column}__lt" if lowest else f"{column}__gt": value}
            counts[f"{axis.value}_better"] = Count("pk", filter=Q(**beats))
    found = (
        Benchmark.objects.public()
        .filter(hardware_class_id=benchmark.hardware_class_id, ranked=True)
        .aggregate(**counts)
    )
    return {
        axis.value: (
            found[better] + 1 if (better := f"{axis.value}_better") in found else None,
            found[f"{axis.value}_total"],
        )
        for axis in Axis
    }


def against_champion(benchmark: Benchmark) -> dict | None:
    """Where a benchmark stands against its class's champion on each axis: its rank among the
    class's ranked benchmarks, its figure over the champion's, the recipe diff to the throughput
    champion's recipe and, per differing flag, the effect the board measured for this model on
    this class where it has one. A fixed number of queries (the ranks count in the database)."""
    champions = {
        c.axis: c
        for c in Champion.objects.filter(
            hardware_class_id=benchmark.hardware_class_id, model__isnull=True
        ).select_related("benchmark__recipe", "benchmark__model")
    }
    if not champions:
        return None
    axes = []
    ranks = _ranks(benchmark)
    for axis in Axis:
        champion = champions.get(axis.value)
        column, lowest = AXIS_FIGURES[axis.value]
        mine = getattr(benchmark, column)
        rank, total = ranks[axis.value]
        ratio = None
        if champion is not None and mine is not None and champion.value:
            ratio = mine / champion.value if axis.value != "quality" else mine - champion.value
        axes.append(
            {
                "axis": axis.value,
                "title": AXIS_TITLES[axis.value],
                "champion": champion,
                "mine": mine,
                "rank": rank,
                "total": total,
                "ratio": ratio,
                "how": "difference" if axis.value == "quality" else "ratio",
                "lower_wins": lowest,
                "is_champion": champion is not None and champion.benchmark_id == benchmark.pk,
            }
        )
    holder = champions.get(Axis.THROUGHPUT.value)
    diff, flags = None, []
    if holder is not None and holder.benchmark.recipe is not None and benchmark.recipe is not None:
        diff = diff_recipes(benchmark.recipe.public_spec(), holder.benchmark.recipe.public_spec())
        measured = {
            e.change_key: e
            for e in FlagEffect.objects.filter(
                hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id
            )
        }
        by_flag: dict[str, list[FlagEffect]] = {}
        for effect in measured.values():
            by_flag.setdefault(effect.flag, []).append(effect)
        for kind in ("added", "removed", "changed"):
            for row in diff[kind]:
                flags.append(
                    {
                        "kind": kind,
                        "row": row,
                        "effects": [_effect_row(e) for e in by_flag.get(row["flag"], [])],
                    }
                )
    return {
        "axes": axes,
        "holder": holder,
        "diff": diff,
        "flags": flags,
        "same_model": holder is not None and holder.benchmark.model_id == benchmark.model_id,
    }
