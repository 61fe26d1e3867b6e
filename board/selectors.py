"""Reads of the board: what pages, the read API and the pod channel's answers show."""

from board.models import Run


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


def run_detail(run_id: str) -> Run | None:
    return Run.objects.filter(run_id=run_id).first()


def recent_runs(limit: int = 50):
    return Run.objects.order_by("-committed_at")[:limit]
