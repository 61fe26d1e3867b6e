"""Reads of the pod channel for public pages: a pod's key and ingest log, and the raw signed
bundles kept as evidence. The board never imports this app; pages about pods and evidence live
here and may read the board (data flows submissions → board)."""

from board.models import Run
from submissions.blobstore import blob_store
from submissions.models import DeviceKey, IngestLogEntry, IngestRoute

# What a visitor learns from a pod's history: its uploads and their outcomes, not the
# challenge/enroll handshakes nor the client addresses.
PUBLIC_ROUTES = (IngestRoute.OPEN_RUN, IngestRoute.RESULTS)


def device_key(fingerprint: str) -> DeviceKey | None:
    return DeviceKey.objects.filter(fingerprint=fingerprint).first()


def pod_ingest_log(fingerprint: str):
    """A pod's attempts, newest first (paginate it: one query per page)."""
    return (
        IngestLogEntry.objects.filter(key_fingerprint=fingerprint, route__in=PUBLIC_ROUTES)
        .only("created_at", "route", "status", "reason", "run_id", "bytes", "note")
        .order_by("-created_at", "-pk")
    )


def public_bundle_sha256(run_id: str) -> str | None:
    """The final bundle of a run visitors may see; None for unknown or withheld runs."""
    return (
        Run.objects.public().filter(run_id=run_id).values_list("bundle_sha256", flat=True).first()
    )


def raw_bundle(sha256: str) -> bytes:
    """The stored body; raises FileNotFoundError or BlobStoreUnavailable."""
    return blob_store().get(sha256)
