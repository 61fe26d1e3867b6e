"""The marks a perf run earns beyond its own evidence (docs/cohorts.md §Rooflines, §Drafter
health): written on the run and its cohorts, read back by the benchmark's summary.

Rooflines need the model's facts, which arrive with the weight verdict (after the commit), so
`apply_roofline` runs in `record_weight_verdict`; drafter health needs only the bundle and is
set when the run is prepared. `benchmark_checks` is what `_summarise` reads: no query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from board.jsonsafe import storable
from board.modelfacts import ModelFacts, unknown
from board.models import Badge, PerfCohort, Run, SuiteKind, Verification
from board.perf import CohortMark, PerfSummary, acceptance_of, drafter_health
from board.roofline import evaluate, percent_of
from recipes.normalise import normalise_recipe


def drafter_json(summary: PerfSummary, drafter: dict | None) -> dict:
    """`perf.acceptance` and `perf.drafter` of a perf run, from its sustained section."""
    acceptance = acceptance_of(summary.other_rows)
    return storable({"acceptance": acceptance, "drafter": drafter_health(acceptance, drafter)})


def apply_roofline(run: Run) -> None:
    """Evaluate the run's cohorts against the roofline of its verified facts on its benchmark's
    hardware class; rewrite the `beyond_roofline` marks of its cohorts and `run.perf.roofline`.
    Facts that are unknown (or weights not verified) clear every roofline mark. The caller saves
    the run."""
    if run.kind != SuiteKind.PERF or not isinstance(run.perf, dict) or not run.perf:
        return
    facts = (
        ModelFacts.from_json(run.model_facts)
        if run.verification == Verification.VERIFIED
        else unknown("the weights are not verified")
    )
    hardware = run.benchmark.hardware_class if run.benchmark_id else None
    spec = normalise_recipe(run.extras.get("recipe"))
    cohorts = list(PerfCohort.objects.filter(run=run))
    verdict = evaluate(
        facts,
        bandwidth_gbs=hardware.memory_bandwidth_gbs if hardware else None,
        devices=hardware.device_count if hardware else None,
        drafter=spec.drafter if spec else None,
        cohorts=cohorts,
    )
    marked = verdict.marked
    changed = []
    for cohort in cohorts:
        kept = [mark for mark in cohort.marks if mark != CohortMark.BEYOND_ROOFLINE]
        marks = kept + ([str(CohortMark.BEYOND_ROOFLINE)] if cohort.label in marked else [])
        if marks != cohort.marks:
            cohort.marks, cohort.valid = marks, not marks
            changed.append(cohort)
    if changed:
        PerfCohort.objects.bulk_update(changed, ["marks", "valid"])
    # The headline figures rest on the peak cohort and on the c1 cohorts (docs/cohorts.md).
    peak = (run.perf.get("peak") or {}).get("cohort")
    headline = {c.label for c in cohorts if c.conc == 1} | ({peak} if peak else set())
    single = (run.perf.get("single_stream") or {}).get("tps")
    run.perf = {
        **run.perf,
        "roofline": storable(
            verdict.to_json()
            | {
                "headline_beyond": sorted(marked & headline),
                "single_stream_pct": percent_of(single, verdict.single_stream_tps),
            }
        ),
    }


@dataclass(frozen=True)
class BenchmarkChecks:
    badges: list[str] = field(default_factory=list)
    unranked: bool = False
    roofline: dict = field(default_factory=dict)
    drafter: dict = field(default_factory=dict)


def benchmark_checks(perf: Run | None) -> BenchmarkChecks:
    """What the perf run speaking for a benchmark says of it: a benchmark whose peak,
    single-stream or latency figure rests on a cohort beyond its roofline is not ranked; a
    configured drafter under the acceptance threshold is marked."""
    figures = perf.perf if perf is not None and isinstance(perf.perf, dict) else {}
    roofline = figures.get("roofline") if isinstance(figures.get("roofline"), dict) else {}
    drafter = figures.get("drafter") if isinstance(figures.get("drafter"), dict) else {}
    badges = []
    unranked = bool(roofline.get("headline_beyond"))
    if unranked:
        badges.append(Badge.BEYOND_ROOFLINE)
    if drafter.get("status") == "barely_accepting":
        badges.append(Badge.DRAFTER_BARELY_ACCEPTING)
    summary = {}
    if roofline:
        summary = {
            key: roofline.get(key)
            for key in (
                "status",
                "note",
                "single_stream_tps",
                "single_stream_derivation",
                "single_stream_pct",
                "ttft_floor_ms",
                "tpot_floor_ms",
                "tokens_per_step",
                "bandwidth_gbs",
                "active_gb",
                "weight_gb",
                "tolerance",
                "headline_beyond",
            )
        } | {"breaches": [b.get("text") for b in roofline.get("breaches") or []][:50]}
    return BenchmarkChecks(badges=badges, unranked=unranked, roofline=summary, drafter=drafter)
