"""Reads of the trust anchor: manifests as published, and the moderation history of a benchmark."""

from anchor.models import AuditEntry, RunManifest
from board.models import Run


def published_manifests(run_id: str) -> list[RunManifest] | None:
    """Every signed version of a public run's manifest, oldest first; None when the run is not
    public (unknown, or withheld for a detected secret)."""
    if not Run.objects.public().filter(run_id=run_id).exists():
        return None
    return list(RunManifest.objects.filter(run_id=run_id).order_by("version"))


def moderation_log(benchmark_public_id: str, limit: int = 50) -> list[AuditEntry]:
    """The moderators' actions concerning a benchmark, newest first."""
    return list(
        AuditEntry.objects.filter(subjects__benchmark_public_id=benchmark_public_id)
        .order_by("-at", "-pk")
        .distinct()[:limit]
    )


def benchmark_manifests(benchmark_public_id: str) -> list[dict]:
    """The latest signed manifest version of each public run of a benchmark, in commit order."""
    run_ids = list(
        Run.objects.public()
        .filter(benchmark__public_id=benchmark_public_id)
        .order_by("committed_at", "pk")
        .values_list("run_id", flat=True)
    )
    latest: dict[str, RunManifest] = {}
    for manifest in RunManifest.objects.filter(run_id__in=run_ids).order_by("version"):
        latest[manifest.run_id] = manifest
    return [
        {
            "run_id": run_id,
            "version": latest[run_id].version,
            "sha256": latest[run_id].document_sha256,
        }
        for run_id in run_ids
        if run_id in latest
    ]
