"""The ingest log: one row per attempt."""

from board.jsonsafe import storable
from submissions.models import (
    IngestLogEntry,
)


def log_attempt(
    *,
    route: str,
    status: int,
    reason: str,
    run_id: str = "",
    key_fingerprint: str = "",
    size: int = 0,
    client_ip: str | None = None,
    note: str = "",
    bundle_sha256: str = "",
) -> None:
    """One ingest-log row per attempt, written outside the ingest transaction, so refusals stay."""
    IngestLogEntry.objects.create(
        route=route,
        status=status,
        reason=reason,
        run_id=storable(run_id)[:64],
        key_fingerprint=key_fingerprint,
        bytes=size,
        client_ip=client_ip,
        note=storable(note)[:2000],
        bundle_sha256=bundle_sha256,
    )
