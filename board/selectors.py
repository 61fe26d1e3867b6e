"""Reads of the board: what pages, the read API and the pod channel's answers show."""

from django.db.models import Prefetch

from board.models import Benchmark, HardwareClass, PerfCohort, Run, SuiteKind

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
    return Run.objects.public().filter(run_id=run_id).first()


def benchmarks(
    *,
    hardware: str | None = None,
    model: str | None = None,
    trust: str | None = None,
    ranked: str | None = None,
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
    return queryset


def benchmark_detail(public_id: str) -> Benchmark | None:
    """A benchmark with its public runs and its perf run's cohorts, in three queries."""
    benchmark = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .prefetch_related(
            Prefetch(
                "runs",
                queryset=Run.objects.public().order_by("committed_at"),
                to_attr="public_runs",
            )
        )
        .filter(public_id=public_id)
        .first()
    )
    if benchmark is None:
        return None
    perf_runs = [run for run in benchmark.public_runs if run.kind == SuiteKind.PERF]
    benchmark.perf_cohorts = list(PerfCohort.objects.filter(run=perf_runs[-1])) if perf_runs else []
    return benchmark


def hardware_classes():
    return HardwareClass.objects.order_by("-preset", "device_count", "name")
