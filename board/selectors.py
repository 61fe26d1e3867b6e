"""Reads of the board: what pages, the read API and the pod channel's answers show."""

from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, Q

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


def commit_summary(run_id: str) -> dict:
    """The extra fields of a final-submit answer (protocol.md §3.3 Decision)."""
    run = Run.objects.select_related("benchmark").get(run_id=run_id)
    return {
        "trust_tier": run.trust,
        "verification": run.verification,
        "n_results": run.n_results,
        "benchmark_id": run.benchmark.public_id if run.benchmark else None,
        "url": f"/runs/{run.run_id}/",
    }


def public_runs_with_results():
    return Run.objects.public().select_related("benchmark").prefetch_related("results")


def run_detail(run_id: str) -> Run | None:
    return Run.objects.public().select_related("benchmark__model").filter(run_id=run_id).first()


def public_runs_by_id(run_ids) -> dict[str, dict]:
    """The runs among these that visitors may see, by id, with their board and model (one
    query, whatever their number)."""
    rows = (
        Run.objects.public()
        .filter(run_id__in=list(run_ids))
        .values("run_id", "board", "model_name", "benchmark__public_id")
    )
    return {row["run_id"]: row for row in rows}


def benchmarks(
    *,
    hardware: str | None = None,
    model: str | None = None,
    trust: str | None = None,
    ranked: str | None = None,
    search: str | None = None,
    pod: str | None = None,
):
    queryset = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .order_by("-submitted_at", "-pk")
    )
    if hardware:
        queryset = queryset.filter(hardware_class__slug=hardware)
    if model:
        queryset = queryset.filter(model__canonical_id__iexact=model)
    if trust:
        queryset = queryset.filter(trust=trust)
    if ranked not in (None, ""):
        queryset = queryset.filter(ranked=ranked.lower() in TRUE_WORDS)
    if search:
        queryset = queryset.filter(
            Q(model__canonical_id__icontains=search) | Q(model__display_name__icontains=search)
        )
    if pod:
        queryset = queryset.filter(key_fingerprint=pod)
    return queryset


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
        .select_related("model", "hardware_class")
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


def hardware_classes():
    return HardwareClass.objects.order_by("-preset", "device_count", "name")


def classes_with_benchmarks() -> set[int]:
    """Ids of the hardware classes holding at least one public benchmark (one query)."""
    return set(Benchmark.objects.public().values_list("hardware_class_id", flat=True).distinct())


def hardware_class(slug: str) -> HardwareClass | None:
    return HardwareClass.objects.filter(slug=slug).first()


def hardware_classes_with_counts():
    """Every class with how many public and ranked benchmarks it holds, presets first."""
    public = Q(benchmarks__withheld=False)
    return hardware_classes().annotate(
        n_benchmarks=Count("benchmarks", filter=public),
        n_ranked=Count("benchmarks", filter=public & Q(benchmarks__ranked=True)),
    )


def models_with_counts(search: str | None = None):
    queryset = (
        BenchModel.objects.annotate(
            n_benchmarks=Count("benchmarks", filter=Q(benchmarks__withheld=False)),
            n_ranked=Count(
                "benchmarks", filter=Q(benchmarks__withheld=False, benchmarks__ranked=True)
            ),
        )
        .filter(n_benchmarks__gt=0)
        .order_by("canonical_id")
    )
    if search:
        queryset = queryset.filter(
            Q(canonical_id__icontains=search) | Q(display_name__icontains=search)
        )
    return queryset


def bench_model(canonical_id: str) -> BenchModel | None:
    return BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()


def recipes_in_use():
    """Recipe ids that public benchmarks point at, with how many benchmarks and pods use each."""
    return (
        Benchmark.objects.public()
        .exclude(recipe_id="")
        .values("recipe_id")
        .annotate(n_benchmarks=Count("id"), n_pods=Count("key_fingerprint", distinct=True))
        .order_by("-n_benchmarks", "recipe_id")
    )
