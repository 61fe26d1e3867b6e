"""Reads of benchmarks: the lists and tables of the board, the API's list, and one benchmark's
page (its runs, cohorts, recipe and weight files)."""

from dataclasses import dataclass, field

from django.db.models import Prefetch, Q, Subquery

from board.models import (
    Benchmark,
    BenchModel,
    HardwareClass,
    PerfCohort,
    Run,
    SuiteKind,
    Trust,
    Verification,
)
from recipes.scrub import scrub_recipe

TRUE_WORDS = ("1", "true", "yes")


def benchmarks(
    *,
    hardware: str | None = None,
    model: str | None = None,
    model_id: int | None = None,
    trust: str | None = None,
    ranked: str | None = None,
    search: str | None = None,
    pod: str | None = None,
    without_trust: str | None = None,
):
    queryset = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .order_by("-submitted_at", "-pk")
    )
    # The class and model are matched in a subquery, not a join, so that the database reads the
    # page in order from the per-class (per-model) index instead of sorting every match.
    if hardware:
        queryset = queryset.filter(
            hardware_class_id=Subquery(HardwareClass.objects.filter(slug=hardware).values("pk"))
        )
    if model:
        queryset = queryset.filter(
            model_id__in=Subquery(
                BenchModel.objects.filter(canonical_id__iexact=model).values("pk")
            )
        )
    if model_id is not None:  # one model exactly: its page
        queryset = queryset.filter(model_id=model_id)
    if trust:
        queryset = queryset.filter(trust=trust)
    if without_trust:  # the board's default: self-reported ones behind a filter
        queryset = queryset.exclude(trust=without_trust)
    if ranked not in (None, ""):
        queryset = queryset.filter(ranked=ranked.lower() in TRUE_WORDS)
    if search:
        queryset = queryset.filter(
            Q(model__canonical_id__icontains=search) | Q(model__display_name__icontains=search)
        )
    if pod:
        queryset = queryset.filter(key_fingerprint=pod)
    return queryset


# The wide JSON columns a benchmark table (board/tables.py) never prints: left in the database.
TABLE_DEFERRED = ("weight_differences", "agentic", "modalities", "categories")


def benchmark_table(*, with_categories: bool = False, **filters):
    """`benchmarks(**filters)` with only what a table row shows (and the quality categories,
    with `with_categories`)."""
    deferred = [name for name in TABLE_DEFERRED if not (with_categories and name == "categories")]
    return benchmarks(**filters).defer(*deferred)


@dataclass
class WeightFile:
    path: str
    sha256: str
    verdict: str  # "matches Hugging Face", a difference kind, or the run's verdict


@dataclass
class BenchmarkView:
    """A benchmark with what its page shows, read in a fixed number of queries."""

    benchmark: Benchmark
    runs: list[Run]
    core_run: Run | None  # the text (else perf) run whose recipe and weights speak for it
    perf_run: Run | None
    cohorts: list[PerfCohort]
    recipe: dict | None  # scrubbed: safe on any public surface
    weight_files: list[WeightFile] = field(default_factory=list)


def _speaking(runs: list[Run]) -> Run | None:
    """The run that speaks for a board: the latest attested one, else the latest (as
    refresh_benchmark decides)."""
    attested = [run for run in runs if run.trust == Trust.ATTESTED]
    return (attested or runs)[-1] if runs else None


def _weight_files(run: Run | None, differences: list[dict]) -> list[WeightFile]:
    if run is None:
        return []
    declared = run.extras.get("weights_per_file")
    if not isinstance(declared, dict):
        declared = {}
    differing = {d.get("path"): d.get("kind", "differs") for d in differences}
    if run.verification == Verification.VERIFIED:
        default = "matches Hugging Face"
    else:
        default = run.get_verification_display()
    files = [
        WeightFile(str(path), str(sha), differing.get(path, default))
        for path, sha in sorted(declared.items())
    ]
    known = set(declared)
    files += [
        WeightFile(str(path), "", kind)
        for path, kind in differing.items()
        if path is not None and path not in known
    ]
    return files


def benchmark_detail(public_id: str) -> BenchmarkView | None:
    """A benchmark with its public runs and its perf run's cohorts, in three queries."""
    benchmark = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class", "recipe")
        .prefetch_related(
            Prefetch(
                "runs",
                queryset=Run.objects.public().order_by("committed_at", "pk"),
                to_attr="public_runs",
            )
        )
        .filter(public_id=public_id)
        .first()
    )
    if benchmark is None:
        return None
    runs = benchmark.public_runs
    perf_run = _speaking([run for run in runs if run.kind == SuiteKind.PERF])
    text_run = _speaking([run for run in runs if run.kind == SuiteKind.TEXT])
    core_run = text_run or perf_run
    cohorts = list(PerfCohort.objects.filter(run=perf_run)) if perf_run else []
    benchmark.perf_cohorts = cohorts  # the API serializer reads it
    recipe = scrub_recipe(core_run.extras.get("recipe")) if core_run else None
    differences = [
        d for d in benchmark.weight_differences if core_run and d.get("run_id") == core_run.run_id
    ]
    return BenchmarkView(
        benchmark=benchmark,
        runs=runs,
        core_run=core_run,
        perf_run=perf_run,
        cohorts=cohorts,
        recipe=recipe,
        weight_files=_weight_files(core_run, differences),
    )
