"""Public pages of the pod channel: a pod's submissions with their ingest outcomes, and the raw
signed bundles as downloads. (The pod routes themselves are in views.py.)"""

import hashlib

from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.cache import get_conditional_response
from django.views.decorators.http import require_GET

from board import lab_selectors
from board.public_bundle import public_bundle_chunks, public_bundle_head
from board.selectors import benchmarks as benchmark_reads
from board.selectors import runs as run_reads
from board.tables import benchmark_rows
from config.api_errors import Reason
from evidence.blobstore import BlobStoreUnavailable
from submissions import selectors

# What each outcome means to a visitor reading a pod's history (docs/protocol.md).
REASON_MEANINGS = {
    Reason.OK: "accepted",
    Reason.BAD_SIG: "the signature did not verify with the pod's key",
    Reason.UNKNOWN_KEY: "the key is not enrolled",
    Reason.REVOKED_KEY: "the key is revoked; the bundle was quarantined",
    Reason.TOO_MANY_OPEN_RUNS: "too many runs open at once",
    Reason.RUN_NOT_FOUND: "no run with this id",
    Reason.TOKEN_MISMATCH: "the run token was missing or wrong",
    Reason.REPLAY_NONCE: "a nonce was replayed",
    Reason.RUN_ID_MISMATCH: "the bundle names another run",
    Reason.NONCE_MISMATCH: "the bundle carries another run's nonce",
    Reason.MALFORMED_JSON: "the body was not valid JSON",
    Reason.SCHEMA_INVALID: "the bundle broke the schema or a board rule",
    Reason.SIZE_EXCEEDED: "the body was larger than allowed",
    Reason.UNSUPPORTED_ENCODING: "the body's encoding is not supported",
    Reason.RATE_LIMITED: "too many requests; the pod waits and retries",
    Reason.QUOTA_EXCEEDED: "the key's daily upload quota was used up; the pod waits and retries",
    Reason.UNAVAILABLE: "the board could not store it right then; a retry works",
    Reason.RUN_CLOSED: "the run was already closed",
    Reason.BAD_REQUEST: "the request was malformed",
    Reason.INTERNAL_ERROR: "the board failed; nothing partial was kept",
}
LOG_PAGE_SIZE = 50


def pod_page(request, fingerprint: str):
    key = selectors.device_key(fingerprint)
    runs_page = Paginator(selectors.pod_submissions(fingerprint), LOG_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    log_page = Paginator(selectors.pod_ingest_log(fingerprint), LOG_PAGE_SIZE).get_page(
        request.GET.get("log")
    )
    benchmarks = list(benchmark_reads.benchmark_table(pod=fingerprint)[:50])
    if key is None and not benchmarks:
        raise Http404("no such pod")
    submissions = list(runs_page.object_list)
    entries = list(log_page.object_list)
    visible = run_reads.public_runs_by_id(
        {row["run_id"] for row in submissions} | {e.run_id for e in entries if e.run_id}
    )
    for row in submissions:
        row["meaning"] = REASON_MEANINGS.get(row["last_reason"], "")
        row["run_public"] = row["run_id"] in visible
        row["run"] = visible.get(row["run_id"])
    rows = [
        {
            "entry": entry,
            "meaning": REASON_MEANINGS.get(entry.reason, ""),
            "run_public": entry.run_id in visible,
        }
        for entry in entries
    ]
    return render(
        request,
        "submissions/pod.html",
        {
            "fingerprint": fingerprint,
            "key": key,
            "runs_page": runs_page,
            "submissions": submissions,
            "log_page": log_page,
            "rows": rows,
            "benchmarks": benchmarks,
            "benchmark_rows": benchmark_rows(benchmarks),
            # Its latest benchmark against the class champion (docs/lab.md §Against the champion).
            "latest": benchmarks[0] if benchmarks else None,
            "standing": lab_selectors.against_champion(benchmarks[0]) if benchmarks else None,
        },
    )


# A download reads the evidence store this much at a time: memory stays bounded whatever the
# bundle's size (up to 128 MiB), docs/website.md §Bundles to download.
BUNDLE_BLOCK = 64 * 1024
# The signed original never changes (content-addressed): a year, revalidated by its digest.
EVIDENCE_CACHE = "private, max-age=31536000, immutable"
# The public copy changes when the run's public record does (trust, the weight check).
PUBLIC_COPY_CACHE = "public, max-age=300"
# Cases serialised at a time: at most this many, and at most this much model output (a batch
# always holds one case, however large).
PUBLIC_COPY_BATCH = 200
PUBLIC_COPY_BATCH_BYTES = 2 * 1024 * 1024


class EvidenceDownload(FileResponse):
    block_size = BUNDLE_BLOCK


def _store_unavailable() -> HttpResponse:
    response = HttpResponse(
        "The evidence store is unavailable; try again shortly.",
        status=503,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = "30"
    return response


def _as_download(response, filename: str, cache_control: str, etag: str):
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = cache_control
    response["ETag"] = etag
    return response


@require_GET
def run_bundle(request, run_id: str):
    """The run's final signed bundle, byte for byte, as a download that no browser renders.

    Moderators only: the signed bytes hold what is never published (job_sig, job_group, host
    paths in raw commands), and a scrubbed copy would no longer verify (docs/trust-anchor.md).
    Streamed from the evidence store a block at a time; its ETag is its sha256, so a moderator's
    browser asking again with If-None-Match is answered 304 without reading the store."""
    if not (request.user.is_authenticated and request.user.is_staff):
        raise Http404("raw bundles are evidence, kept for moderators")
    digest = selectors.public_bundle_sha256(run_id)
    if not digest:
        raise Http404("no such run")
    etag = f'"{digest}"'
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _as_download(not_modified, f"aeon-run-{run_id}.json", EVIDENCE_CACHE, etag)
    try:
        handle = selectors.open_raw_bundle(digest)
    except FileNotFoundError:
        raise Http404("the bundle is not in the evidence store") from None
    except BlobStoreUnavailable:
        return _store_unavailable()
    response = EvidenceDownload(handle, content_type="application/json")
    response["X-Aeon-Bundle-Sha256"] = digest
    return _as_download(response, f"aeon-run-{run_id}.json", EVIDENCE_CACHE, etag)


@require_GET
def run_public_bundle(request, run_id: str):
    """The run's bundle as the public may have it (board/public_bundle.py): scrubbed, a download,
    streamed a batch of cases at a time. Its ETag hashes everything about the run that can
    change after its commit; an If-None-Match naming it is answered 304 without reading cases."""
    run = run_reads.public_run(run_id)
    if run is None:
        raise Http404("no such run")
    head = public_bundle_head(run)
    etag = f'"pb-{hashlib.sha256(head.encode()).hexdigest()[:40]}"'
    filename = f"aeon-run-{run_id}-public.json"
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _as_download(not_modified, filename, PUBLIC_COPY_CACHE, etag)
    batches = run_reads.run_result_batches(run, PUBLIC_COPY_BATCH, PUBLIC_COPY_BATCH_BYTES)
    chunks = public_bundle_chunks(head, batches)
    response = StreamingHttpResponse(
        (chunk.encode() for chunk in chunks), content_type="application/json"
    )
    return _as_download(response, filename, PUBLIC_COPY_CACHE, etag)
