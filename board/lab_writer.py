"""Writes the recipe lab's read models (docs/lab.md §Read models): the single-flag pairs and
effects of one class, of the models a change can affect. Called by the read-model recompute
(board/class_recompute.py `recompute_class`) holding the class's row lock; the finding is board/lab.py."""

from __future__ import annotations

import json

from django.db.models import F

from board.lab import CohortPoint, Effect, LabEntry, Pair, drafter_curves, effects_of, pairs_of
from board.models import (
    Benchmark,
    DrafterCurve,
    FlagEffect,
    FlagPair,
    HardwareClass,
    PerfCohort,
)

LAB_FIELDS = (
    "public_id",
    "key_fingerprint",
    "model_id",
    "weight_set",
    "recipe_id",
    "recipe__engine",
    "recipe__image",
    "recipe__image_digest",
    "recipe__flags",
    "recipe__drafter",
    "recipe__context_len",
    "peak_tps",
    "single_stream_tps",
    "ttft_ms",
    "composite",
)


def lab_entries(hardware_class: HardwareClass, model_ids: set[int] | None) -> list[LabEntry]:
    """The ranked benchmarks of the class (of `model_ids`; None: every model) with a recipe:
    only ranked benchmarks enter an effect (self-reported, pending, flagged, incomplete never)."""
    rows = Benchmark.objects.public().filter(
        hardware_class=hardware_class, ranked=True, flagged=False, recipe__isnull=False
    )
    if model_ids is not None:
        rows = rows.filter(model_id__in=model_ids)
    entries = []
    for row in rows.order_by("pk").values_list(*LAB_FIELDS):
        data = dict(zip(LAB_FIELDS, row, strict=True))
        entries.append(
            LabEntry(
                benchmark=data["public_id"],
                pod=data["key_fingerprint"],
                model=str(data["model_id"]),
                weight_set=data["weight_set"],
                recipe=data["recipe_id"],
                engine=data["recipe__engine"],
                image=data["recipe__image"] or "",
                image_digest=data["recipe__image_digest"] or "",
                flags=tuple(data["recipe__flags"] or ()),
                drafter=json.dumps(data["recipe__drafter"], sort_keys=True)
                if data["recipe__drafter"]
                else "",
                context_len=data["recipe__context_len"],
                throughput=data["peak_tps"],
                single_stream=data["single_stream_tps"],
                ttft_ms=data["ttft_ms"],
                composite=data["composite"],
            )
        )
    return entries


def _change_json(pair_or_effect: Pair | Effect) -> dict:
    change = pair_or_effect.change
    return {
        "flag": change.flag,
        "kind": change.kind,
        "before": change.before,
        "after": change.after,
    }


def _pair_json(pair: Pair) -> dict:
    return {
        "pod": pair.pod,
        "base": list(pair.base.benchmarks),
        "other": list(pair.other.benchmarks),
        "base_figures": pair.base.figures,
        "other_figures": pair.other.figures,
        "deltas": pair.deltas,
    }


def write_flag_effects(hardware_class: HardwareClass, model_ids: set[int] | None) -> None:
    """Rewrite the class's pairs and effects of `model_ids` (None: of every model)."""
    stale_pairs = FlagPair.objects.filter(hardware_class=hardware_class)
    stale_effects = FlagEffect.objects.filter(hardware_class=hardware_class)
    if model_ids is not None:
        stale_pairs = stale_pairs.filter(model_id__in=model_ids)
        stale_effects = stale_effects.filter(model_id__in=model_ids)
    stale_pairs.delete()
    stale_effects.delete()
    entries = lab_entries(hardware_class, model_ids)
    by_model: dict[str, list[LabEntry]] = {}
    for entry in entries:
        by_model.setdefault(entry.model, []).append(entry)
    pair_rows, effect_rows = [], []
    for model, scoped in sorted(by_model.items()):
        pairs = pairs_of(scoped)
        pair_rows.extend(
            FlagPair(
                hardware_class=hardware_class,
                model_id=int(model),
                key_fingerprint=pair.pod,
                flag=pair.change.flag,
                change_key=pair.change.key,
                change=_change_json(pair),
                base_recipe_id=pair.base.recipe,
                other_recipe_id=pair.other.recipe,
                base_benchmark_ids=list(pair.base.benchmarks),
                other_benchmark_ids=list(pair.other.benchmarks),
                base_figures=pair.base.figures,
                other_figures=pair.other.figures,
                deltas=pair.deltas,
            )
            for pair in pairs
        )
        effect_rows.extend(
            FlagEffect(
                hardware_class=hardware_class,
                model_id=int(model),
                flag=effect.change.flag,
                change_key=effect.change.key,
                change=_change_json(effect),
                pair_count=len(effect.pairs),
                pod_count=effect.pods,
                axes=effect.axes(),
                pairs=[_pair_json(pair) for pair in effect.pairs],
            )
            for effect in effects_of(pairs)
        )
    FlagPair.objects.bulk_create(pair_rows, batch_size=500)
    FlagEffect.objects.bulk_create(effect_rows, batch_size=500)
    _write_drafter_curves(hardware_class, model_ids)


def _drafter_of(drafter) -> tuple[str, int | None]:
    if not isinstance(drafter, dict) or not drafter.get("method"):
        return "", None
    n = drafter.get("n")
    return str(drafter["method"]), n if isinstance(n, int) and not isinstance(n, bool) else None


def _write_drafter_curves(hardware_class: HardwareClass, model_ids: set[int] | None) -> None:
    """Per model and drafter setting, the best valid cohort at each concurrency among the perf
    runs that speak for ranked benchmarks (the same pool as the effects)."""
    stale = DrafterCurve.objects.filter(hardware_class=hardware_class)
    cohorts = PerfCohort.objects.filter(
        valid=True,
        run__benchmark__hardware_class=hardware_class,
        run__benchmark__ranked=True,
        run__benchmark__flagged=False,
        run__benchmark__withheld=False,
        run__benchmark__recipe__isnull=False,
        run__run_id=F("run__benchmark__perf_run_id"),
    )
    if model_ids is not None:
        stale = stale.filter(model_id__in=model_ids)
        cohorts = cohorts.filter(run__benchmark__model_id__in=model_ids)
    stale.delete()
    by_model: dict[int, list[CohortPoint]] = {}
    for model_id, public_id, drafter, category, conc, aggregate in cohorts.values_list(
        "run__benchmark__model_id",
        "run__benchmark__public_id",
        "run__benchmark__recipe__drafter",
        "category",
        "conc",
        "aggregate_tps",
    ):
        method, n = _drafter_of(drafter)
        by_model.setdefault(model_id, []).append(
            CohortPoint(public_id, method, n, category, conc, aggregate)
        )
    DrafterCurve.objects.bulk_create(
        DrafterCurve(
            hardware_class=hardware_class,
            model_id=model_id,
            method=curve["method"],
            n=curve["n"],
            label=curve["label"],
            points=curve["points"],
        )
        for model_id, points in sorted(by_model.items())
        for curve in drafter_curves(points)
    )
