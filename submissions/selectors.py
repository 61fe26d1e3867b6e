"""Reads of the pod channel for public pages: a pod's key and ingest log, and the raw signed
bundles kept as evidence. The board never imports this app; pages about pods and evidence live
here and may read the board (data flows submissions → board)."""

import io

from django.db.models import Count, Max, Min, OuterRef, Q, Subquery

from board.models import Run
from config.api_errors import Reason
from evidence.blobstore import blob_store
from submissions.models import DeviceKey, IngestLogEntry, IngestRoute, RawBundle

# What a visitor learns from a pod's history: its uploads and their outcomes, not the
# challenge/enroll handshakes nor the client addresses.
PUBLIC_ROUTES = (IngestRoute.OPEN_RUN, IngestRoute.RESULTS)
# Open-run refusals made before the signature verified: anyone with the public key can cause them.
UNSIGNED_REFUSALS = (Reason.BAD_SIG, Reason.REVOKED_KEY)


def device_key(fingerprint: str) -> DeviceKey | None:
    return DeviceKey.objects.filter(fingerprint=fingerprint).first()


def _own_attempts(fingerprint: str):
    """A pod's attempts on the public routes: those only its key could make. An open-run whose
    signature did not verify needs nothing but the public key (rows logged with its fingerprint
    before the board stopped attributing them are left out too)."""
    return IngestLogEntry.objects.filter(
        key_fingerprint=fingerprint, route__in=PUBLIC_ROUTES
    ).exclude(route=IngestRoute.OPEN_RUN, reason__in=UNSIGNED_REFUSALS)


def pod_ingest_log(fingerprint: str):
    """A pod's attempts, newest first (paginate it: one query per page)."""
    return (
        _own_attempts(fingerprint)
        .only("created_at", "route", "status", "reason", "run_id", "bytes", "note")
        .order_by("-created_at", "-pk")
    )


def public_bundle_sha256(run_id: str) -> str | None:
    """The final bundle of a run visitors may see; None for unknown or withheld runs."""
    return (
        Run.objects.public().filter(run_id=run_id).values_list("bundle_sha256", flat=True).first()
    )


def raw_bundle(sha256: str) -> bytes:
    """The evidence bytes of a digest: its row's content when the body is kept inline, else the
    blob store's copy. Raises FileNotFoundError (in neither) or BlobStoreUnavailable."""
    found = list(RawBundle.objects.filter(sha256=sha256).values_list("content", flat=True)[:1])
    if found and found[0] is not None:
        return bytes(found[0])
    return blob_store().get(sha256)


def open_raw_bundle(sha256: str):
    """The evidence bytes of a digest as a file to read a block at a time: its row's content
    when the body is kept inline (small by definition), else the blob store's file or object,
    never read whole. Raises FileNotFoundError (in neither) or BlobStoreUnavailable."""
    found = list(RawBundle.objects.filter(sha256=sha256).values_list("content", flat=True)[:1])
    if found and found[0] is not None:
        return io.BytesIO(bytes(found[0]))
    return blob_store().open(sha256)


def pod_submissions(fingerprint: str):
    """A pod's runs, one row each, newest first: attempts, refusals and the last answer (one
    query per page, whatever the number of attempts)."""
    attempts = _own_attempts(fingerprint).exclude(run_id="")
    last = attempts.filter(run_id=OuterRef("run_id")).order_by("-created_at", "-pk")
    return (
        attempts.values("run_id")
        .annotate(
            opened_at=Min("created_at"),
            last_at=Max("created_at"),
            n_attempts=Count("id"),
            n_refused=Count("id", filter=Q(status__gte=400)),
            last_status=Subquery(last.values("status")[:1]),
            last_reason=Subquery(last.values("reason")[:1]),
            last_note=Subquery(last.values("note")[:1]),
        )
        .order_by("-last_at", "run_id")
    )
