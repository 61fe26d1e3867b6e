"""What a crown says: the champion facts, the pod's recipe offer and the one-click verdicts
(docs/champions.md)."""

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import MISSING

from board.champion_shapes import (
    CrownHolder,
    CrownRecord,
    NotOneClick,
    PeakCell,
    PodChampionRecipe,
    PodDrafter,
    PodsOffered,
    Reproductions,
    Spread,
)
from board.champions import (
    Axis,
    Entry,
    Reign,
    replay,
)
from board.models import (
    Benchmark,
    HardwareClass,
    PerfCohort,
    Run,
)
from recipes.argv import option_value
from recipes.images import offered_image
from recipes.models import Recipe
from recipes.policy import Verdict, check_recipe, drafter_verified_by
from recipes.scrub import DRAFTER_PATH


def _spread(spread) -> Spread:
    return Spread(min=spread.minimum, max=spread.maximum, relative=spread.relative)


def spread_json(spread) -> dict:
    """A spread as the recipe API's reproductions show it (the crowns' shape)."""
    return _spread(spread).as_json()


@dataclass
class _ChampionFacts:
    """What a crown's answers say about its holder beyond the replay's figures."""

    benchmark: Benchmark
    perf_run: Run | None
    peak_cell: dict | None


def champion_facts(pks) -> dict[str, _ChampionFacts]:
    benchmarks = list(Benchmark.objects.select_related("model", "recipe").filter(pk__in=list(pks)))
    perf_runs = {
        run.run_id: run
        for run in Run.objects.filter(
            run_id__in=[b.perf_run_id for b in benchmarks if b.perf_run_id]
        ).only("run_id", "hf_revision", "committed_at")
    }
    cells = {
        (run_id, label): {"category": category, "conc": conc}
        for run_id, label, category, conc in PerfCohort.objects.filter(
            run__run_id__in=list(perf_runs)
        ).values_list("run__run_id", "label", "category", "conc")
    }
    return {
        benchmark.public_id: _ChampionFacts(
            benchmark=benchmark,
            perf_run=perf_runs.get(benchmark.perf_run_id),
            peak_cell=cells.get((benchmark.perf_run_id, benchmark.peak_cohort)),
        )
        for benchmark in benchmarks
    }


def crown_record(
    reign: Reign,
    axis: Axis,
    facts: _ChampionFacts,
    reproduction,
    verdicts: dict[str, Verdict],
    offer: Reign | None | Literal[False],
) -> CrownRecord:
    """The crown as `/api/v1/champions` shows it (the class, axis and history are added at read
    time): its figure, holder, recipe, reproductions and whether the recipe is one-click and why
    not; for a model's throughput crown (`offer` not False) also which benchmark pods are
    offered."""
    holder = reign.holder
    if reproduction is None:  # no recipe id: nothing can reproduce it
        pods, ids, spread = 1, [holder.benchmark], None
        described = "measured by one pod only"
    else:
        pods, ids = reproduction.pods, list(reproduction.benchmarks)
        spread = reproduction.spreads.get(axis)
        described = reproduction.describe(axis)
    verdict = verdicts.get(holder.benchmark)
    one_click = bool(verdict and verdict.one_click)
    pods_offered = MISSING  # only a model's throughput crown says what pods are handed
    if offer is not False:
        pods_offered = (
            PodsOffered(
                benchmark_id=offer.holder.benchmark,
                recipe_id=offer.holder.recipe,
                value=offer.measure.value,
            )
            if offer is not None
            else None
        )
    return CrownRecord(
        value=reign.measure.value,
        unit=axis.unit,
        cohort=reign.measure.cohort or None,
        tpot_ms=reign.measure.secondary if axis is Axis.LATENCY else None,
        model=holder.model,
        benchmark_id=holder.benchmark,
        composite=holder.composite,
        since=reign.since,
        recipe_id=holder.recipe or None,
        recipe=facts.benchmark.recipe.public_json() if facts.benchmark.recipe else None,
        # docs/cohorts.md §Rooflines: how much of its bandwidth bound the holder's single stream uses.
        roofline_pct=(facts.benchmark.roofline or {}).get("single_stream_pct"),
        reproductions=Reproductions(
            pods=pods,
            benchmark_ids=ids,
            spread=_spread(spread) if spread else None,
            summary=described,
        ),
        one_click=one_click,
        one_click_reasons=[] if one_click else _not_one_click(verdict),
        pods_offered=pods_offered,
    )


def offer_verdicts(
    entries: list[Entry], benchmark_pk: dict[str, int], wanted, known: dict[str, Verdict]
) -> dict[str, Verdict]:
    """docs/recipes.md §The serve-flag policy: `known` with the policy's word on the recipe of
    each benchmark in `wanted` that can contend (ranked, applicable), its drafter checked on its
    runs. Two queries; one check per recipe and drafter verdict."""
    contenders = [
        e
        for e in entries
        if e.benchmark in wanted and e.benchmark not in known and e.ranked and e.applicable
    ]
    contenders = [e for e in contenders if e.recipe]
    if not contenders:
        return known
    recipes = Recipe.objects.in_bulk({e.recipe for e in contenders})
    statuses: dict[int, set[str]] = {}
    for benchmark_id, status in Run.objects.filter(
        benchmark_id__in=[benchmark_pk[e.benchmark] for e in contenders], flagged=False
    ).values_list("benchmark_id", "drafter_status"):
        statuses.setdefault(benchmark_id, set()).add(status)
    checked: dict[tuple[str, bool], Verdict] = {}
    for entry in contenders:
        recipe = recipes.get(entry.recipe)
        if recipe is None:
            continue
        verified = drafter_verified_by(statuses.get(benchmark_pk[entry.benchmark], ()))
        if (entry.recipe, verified) not in checked:
            checked[(entry.recipe, verified)] = check_recipe(
                recipe.spec(), drafter_verified=verified
            )
        known[entry.benchmark] = checked[(entry.recipe, verified)]
    return known


def pods_offer(
    reigns: list[Reign], entries: list[Entry], model: str, best, verdicts: dict[str, Verdict]
) -> Reign | None:
    """docs/champions.md §The champion recipes pods fetch: the throughput crown holder when its
    recipe is one-click, else the holder of the same crown replayed among the one-click
    recipes of the model (same contention rules); None when none is."""
    holder = reigns[-1]
    verdict = verdicts.get(holder.holder.benchmark)
    if verdict is not None and verdict.one_click:
        return holder
    safe = [
        e
        for e in entries
        if e.model == model and (v := verdicts.get(e.benchmark)) is not None and v.one_click
    ]
    replayed = replay(safe, Axis.THROUGHPUT, best)
    return replayed[-1] if replayed else None


def _not_one_click(verdict: Verdict | None) -> list[NotOneClick]:
    if verdict is None:
        return [NotOneClick(code="no_recipe", flag=None, message="no recipe the board can check")]
    return [NotOneClick(**reason.as_json()) for reason in verdict.reasons]


def pod_entry(
    offer: Reign,
    crown: Reign,
    hardware_class: HardwareClass,
    facts: _ChampionFacts,
    verdicts: dict[str, Verdict],
) -> PodChampionRecipe:
    """One entry of the pods' champion list, field for field as docs/champions.md lists them:
    the recipe of `offer`, the model's throughput crown `crown` held by it or by a benchmark
    whose recipe is not one-click (`crown_holder` says which and why)."""
    benchmark, recipe, perf_run = facts.benchmark, facts.benchmark.recipe, facts.perf_run
    drafter = recipe.drafter
    crown_holder = None
    if offer.holder.benchmark != crown.holder.benchmark:
        crown_holder = CrownHolder(
            benchmark_id=crown.holder.benchmark,
            peak_agg_tps=crown.measure.value,
            not_offered_because=_not_one_click(verdicts.get(crown.holder.benchmark)),
        )
    return PodChampionRecipe(
        hardware=benchmark.hardware_label,
        hw_bucket=hardware_class.name,
        model=benchmark.model.hf_repo or benchmark.model.display_name,
        canonical=benchmark.model.canonical_id,
        hf_repo=benchmark.model.hf_repo or None,
        hf_revision=(perf_run.hf_revision if perf_run else "") or None,
        engine=recipe.engine,
        image=offered_image(recipe.image or None)[0],
        serve_flags=list(recipe.flags),
        spec_decode=drafter["method"] if drafter else None,
        drafter=PodDrafter(**drafter, uses_drafter=_uses_drafter(recipe)) if drafter else None,
        peak_agg_tps=offer.measure.value,
        peak_agg_cell=PeakCell(**facts.peak_cell) if facts.peak_cell else None,
        quality=benchmark.composite,
        quality_run=benchmark.text_run_id or None,
        trust_tier=benchmark.trust,
        run=benchmark.perf_run_id or None,
        started_at=int(perf_run.committed_at.timestamp()) if perf_run else None,
        benchmark_id=offer.holder.benchmark,
        crown_holder=crown_holder,
    )


def _uses_drafter(recipe: Recipe) -> bool:
    """A drafter model is loaded: named on the Hub, or mounted at /drafter by the config."""
    if (recipe.drafter or {}).get("repo"):
        return True
    try:
        config = json.loads(option_value(recipe.flags, ("--speculative-config",)) or "{}")
    except ValueError:
        return False
    return isinstance(config, dict) and config.get("model") == DRAFTER_PATH
