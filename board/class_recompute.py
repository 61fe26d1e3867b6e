"""The read models of one hardware class rewritten: champions, their history, reproductions,
model and class summaries (docs/champions.md)."""

from dataclasses import replace as dataclass_replace

from django.db.models import Q

from board.champions import (
    Axis,
    Entry,
    Reign,
    best_composites,
    copies,
    measure,
    replay,
    reproductions,
)
from board.crowns import (
    champion_facts,
    crown_record,
    offer_verdicts,
    pod_entry,
    pods_offer,
    spread_json,
)
from board.hardware import Family
from board.lab_writer import write_flag_effects
from board.model_summaries import NEVER, summary_fields  # NEVER: a benchmark without runs
from board.models import (
    Badge,
    Benchmark,
    Champion,
    ChampionReign,
    ClassSummary,
    HardwareClass,
    ModelClassSummary,
    RecipeReproduction,
    Run,
)
from board.pods import pods_of

ENTRY_FIELDS = (
    "pk",
    "public_id",
    "model_id",
    "model__canonical_id",
    "key_fingerprint",
    "recipe_id",
    "completed_at",
    "ranked",
    "flagged",
    "recipe_applicable",
    "composite",
    "peak_tps",
    "peak_cohort",
    "single_stream_tps",
    "ttft_ms",
    "tpot_ms",
    "submitted_at",
    "text_run_id",
    "perf_run_id",
)


def _with_pods_and_copies(entries: list[Entry], rows: list[dict]) -> list[Entry]:
    """docs/champions.md §Reproductions: each entry's pod (its key's network group), the digests
    of its runs' per-case evidence, and whether it repeats an earlier pod's evidence."""
    pod = pods_of(entry.key for entry in entries)
    run_of = {row["public_id"]: (row["text_run_id"], row["perf_run_id"]) for row in rows}
    digests: dict[str, str] = dict(
        Run.objects.filter(
            run_id__in=[run_id for pair in run_of.values() for run_id in pair if run_id]
        )
        .exclude(quality__evidence_digest=None)
        .values_list("run_id", "quality__evidence_digest")
    )
    entries = [
        dataclass_replace(
            entry,
            pod=pod[entry.key],
            evidence=frozenset(
                digests[run_id] for run_id in run_of[entry.benchmark] if run_id in digests
            ),
        )
        for entry in entries
    ]
    copied = copies(entries)
    return [dataclass_replace(e, copy_of=copied.get(e.benchmark, "")) for e in entries]


def recompute_class(hardware_class: HardwareClass, model_ids: set[int] | None) -> None:
    """Rewrite one class's read models: class-wide crowns, the summary, and the crowns and
    reproductions of `model_ids` (None: of every model). Call holding the class's row lock."""
    rows = list(
        Benchmark.objects.public()
        .filter(hardware_class=hardware_class)
        .order_by("pk")
        .values_list(*ENTRY_FIELDS)
    )
    entries: list[Entry] = []
    model_pk: dict[str, int] = {}
    benchmark_pk: dict[str, int] = {}
    by_model: dict[int, list[dict]] = {}
    for row in rows:
        data = dict(zip(ENTRY_FIELDS, row, strict=True))
        by_model.setdefault(data["model_id"], []).append(data)
        model_pk[data["model__canonical_id"]] = data["model_id"]
        benchmark_pk[data["public_id"]] = data["pk"]
        entries.append(
            Entry(
                benchmark=data["public_id"],
                model=data["model__canonical_id"],
                pod=data["key_fingerprint"],
                key=data["key_fingerprint"],
                recipe=data["recipe_id"] or "",
                completed_at=data["completed_at"] or data["submitted_at"] or NEVER,
                ranked=data["ranked"] and not data["flagged"],
                applicable=data["recipe_applicable"],
                composite=data["composite"],
                throughput=data["peak_tps"],
                throughput_cohort=data["peak_cohort"],
                single_stream=data["single_stream_tps"],
                ttft_ms=data["ttft_ms"],
                tpot_ms=data["tpot_ms"],
            )
        )
    entries = _with_pods_and_copies(
        entries, [dict(zip(ENTRY_FIELDS, row, strict=True)) for row in rows]
    )
    _mark_copies(entries)
    if model_ids is None:
        scoped = sorted(model_pk)
        crown_rows, reproduction_rows = Q(), Q()
    else:
        scoped = sorted(name for name, pk in model_pk.items() if pk in model_ids)
        crown_rows = Q(model__isnull=True) | Q(model_id__in=model_ids)
        reproduction_rows = Q(model_id__in=model_ids)
    best = _best_composites_of(model_pk.values())
    reproduced = reproductions(entry for entry in entries if entry.model in scoped)

    crowns: dict[tuple[str | None, Axis], list[Reign]] = {}
    if hardware_class.family != Family.UNLABELED:  # Unlabeled never holds a crown
        for axis in Axis:
            crowns[(None, axis)] = replay(entries, axis, best)
            for name in scoped:
                crowns[(name, axis)] = replay([e for e in entries if e.model == name], axis, best)

    Champion.objects.filter(crown_rows, hardware_class=hardware_class).delete()
    ChampionReign.objects.filter(crown_rows, hardware_class=hardware_class).delete()
    RecipeReproduction.objects.filter(reproduction_rows, hardware_class=hardware_class).delete()

    RecipeReproduction.objects.bulk_create(
        RecipeReproduction(
            recipe_id=found.recipe,
            hardware_class=hardware_class,
            model_id=model_pk[found.model],
            pods=found.pods,
            keys=found.keys,
            copies=list(found.copies),
            benchmark_ids=list(found.benchmarks),
            spreads={axis.value: spread_json(spread) for axis, spread in found.spreads.items()},
        )
        for found in reproduced.values()
    )
    holders = {reigns[-1].holder.benchmark for reigns in crowns.values() if reigns}
    # Holders first; the other contenders of a model only when its holder is not one-click.
    verdicts = offer_verdicts(entries, benchmark_pk, holders, {})
    refused_models = set()
    for name in scoped:
        reigns = crowns.get((name, Axis.THROUGHPUT))
        verdict = verdicts.get(reigns[-1].holder.benchmark) if reigns else None
        if reigns and not (verdict and verdict.one_click):
            refused_models.add(name)
    verdicts = offer_verdicts(
        entries, benchmark_pk, {e.benchmark for e in entries if e.model in refused_models}, verdicts
    )
    offers = {
        name: pods_offer(crowns[(name, Axis.THROUGHPUT)], entries, name, best, verdicts)
        for name in scoped
        if crowns.get((name, Axis.THROUGHPUT))
    }
    offered = {offer.holder.benchmark for offer in offers.values() if offer is not None}
    facts = champion_facts(benchmark_pk[public_id] for public_id in holders | offered)
    champions, history = [], []
    for (name, axis), reigns in crowns.items():
        if not reigns:
            continue
        scope_model = model_pk[name] if name is not None else None
        current = reigns[-1]
        reproduction = reproduced.get((current.holder.recipe, current.holder.model))
        champions.append(
            Champion(
                hardware_class=hardware_class,
                model_id=scope_model,
                axis=axis.value,
                benchmark_id=benchmark_pk[current.holder.benchmark],
                value=current.measure.value,
                secondary=current.measure.secondary,
                cohort=current.measure.cohort,
                since=current.since,
                summary=crown_record(
                    current,
                    axis,
                    facts[current.holder.benchmark],
                    reproduction,
                    verdicts,
                    offers.get(name) if name is not None and axis is Axis.THROUGHPUT else False,
                ).as_json(),
                pod_recipe=(
                    pod_entry(
                        offers[name],
                        current,
                        hardware_class,
                        facts[offers[name].holder.benchmark],
                        verdicts,
                    ).as_json()
                    if name is not None and axis is Axis.THROUGHPUT and offers.get(name)
                    else None
                ),
            )
        )
        history.extend(
            ChampionReign(
                hardware_class=hardware_class,
                model_id=scope_model,
                axis=axis.value,
                position=position,
                benchmark_id=benchmark_pk[reign.holder.benchmark],
                value=reign.measure.value,
                secondary=reign.measure.secondary,
                cohort=reign.measure.cohort,
                since=reign.since,
                until=reign.until,
                dethroned_by_id=(
                    benchmark_pk[reign.dethroned_by.benchmark] if reign.dethroned_by else None
                ),
            )
            for position, reign in enumerate(reigns)
        )
    Champion.objects.bulk_create(champions)
    ChampionReign.objects.bulk_create(history, batch_size=500)
    _write_class_summary(hardware_class, entries)
    _write_model_summaries(hardware_class, by_model, model_ids)
    write_flag_effects(hardware_class, model_ids)  # the recipe lab (docs/lab.md)


# (field, lowest wins): the figures a model page shows per class (ModelClassSummary.best_*).
def _write_model_summaries(
    hardware_class: HardwareClass, by_model: dict[int, list[dict]], model_ids: set[int] | None
) -> None:
    """Each model's summary on this class (of `model_ids`; None: of every model)."""
    stale = ModelClassSummary.objects.filter(hardware_class=hardware_class)
    if model_ids is not None:
        stale = stale.filter(model_id__in=model_ids)
    stale.delete()
    ModelClassSummary.objects.bulk_create(
        ModelClassSummary(model_id=model_id, hardware_class=hardware_class, **summary_fields(rows))
        for model_id, rows in sorted(by_model.items())
        if model_ids is None or model_id in model_ids
    )


def _best_composites_of(model_ids) -> dict[str, float]:
    """The quality floor's reference of each model, from its ranked benchmarks on every hardware
    class (docs/champions.md §The quality floor: `best_composites`)."""
    rows = [
        dict(zip(ENTRY_FIELDS, row, strict=True))
        for row in Benchmark.objects.filter(
            ranked=True, flagged=False, model_id__in=list(model_ids)
        )
        .exclude(composite=None)
        .values_list(*ENTRY_FIELDS)
    ]
    entries = [
        Entry(
            benchmark=row["public_id"],
            model=row["model__canonical_id"],
            pod=row["key_fingerprint"],
            key=row["key_fingerprint"],
            recipe=row["recipe_id"] or "",
            completed_at=row["completed_at"] or row["submitted_at"] or NEVER,
            ranked=True,
            applicable=row["recipe_applicable"],
            composite=row["composite"],
        )
        for row in rows
    ]
    return best_composites(_with_pods_and_copies(entries, rows))


def _mark_copies(entries: list[Entry]) -> None:
    """Badge the benchmarks that repeat another pod's evidence (a rebuild re-derives the rest)."""
    copied = [entry.benchmark for entry in entries if entry.copy_of]
    if not copied:
        return
    for benchmark in Benchmark.objects.filter(public_id__in=copied).only("pk", "badges"):
        if Badge.EVIDENCE_COPY not in benchmark.badges:
            badges = [*benchmark.badges, Badge.EVIDENCE_COPY.value]
            Benchmark.objects.filter(pk=benchmark.pk).update(badges=badges)


def _write_class_summary(hardware_class: HardwareClass, entries: list[Entry]) -> None:
    """The class's counts and best ranked figures; a class holding no benchmark has none."""
    if not entries:
        ClassSummary.objects.filter(hardware_class=hardware_class).delete()
        return
    ranked = [entry for entry in entries if entry.ranked]
    best = {}
    for axis in Axis:
        figures = [(e, m) for e in ranked if (m := measure(e, axis)) is not None]
        if not figures:
            continue
        lowest_wins = axis is Axis.LATENCY
        entry, figure = (min if lowest_wins else max)(
            figures, key=lambda pair: (pair[1].value, pair[0].order)
        )
        best[axis.value] = {
            "value": figure.value,
            "cohort": figure.cohort or None,
            "benchmark_id": entry.benchmark,
            "model": entry.model,
        }
    ClassSummary.objects.update_or_create(
        hardware_class=hardware_class,
        defaults={
            "benchmark_count": len(entries),
            "ranked_count": len(ranked),
            "model_count": len({entry.model for entry in ranked}),
            "pod_count": len({entry.pod for entry in entries}),
            "best": best,
            "best_throughput": best.get(Axis.THROUGHPUT.value, {}).get("value"),
            "latest_at": max(
                (entry.completed_at for entry in entries if entry.completed_at), default=None
            ),
        },
    )
