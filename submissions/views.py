"""The pod routes of docs/protocol.md: plain Django views for exact byte control.

Each view reads its body under a cap (the results route only once the run and its token hold),
calls one service and answers JSON; every attempt on a write route leaves one ingest-log row,
whatever happened.
"""

import logging
from functools import wraps

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from config.api_errors import Reason, json_error
from config.site_url import absolute_url
from evidence.blobstore import BlobStoreUnavailable
from submissions import services
from submissions.jsonbody import BodyTooLarge, ReceivedBody, read_capped
from submissions.models import IngestRoute
from submissions.services import Outcome, Refusal

logger = logging.getLogger("aeon.ingest")

UNAVAILABLE_RETRY_AFTER = 5


def client_ip(request) -> str | None:
    """REMOTE_ADDR, or the right-most entry of the configured trusted proxy header."""
    header = settings.AEON_TRUSTED_PROXY_HEADER
    if header and request.META.get(header):
        return request.META[header].split(",")[-1].strip() or None
    return request.META.get("REMOTE_ADDR") or None


class RequestBody:
    """A route's body, read on first use under the route's cap: a route that can refuse from the
    path and headers alone does so without reading it."""

    def __init__(self, request, cap: int):
        self.request, self.cap = request, cap
        self.received: ReceivedBody | None = None

    def read(self) -> ReceivedBody:
        if self.received is None:
            encoding = self.request.META.get("HTTP_CONTENT_ENCODING", "identity").lower()
            if encoding not in ("", "identity"):
                raise Refusal(Reason.UNSUPPORTED_ENCODING, "send the body uncompressed")
            try:
                self.received = read_capped(self.request, self.cap)
            except BodyTooLarge as exc:
                raise Refusal(Reason.SIZE_EXCEEDED, str(exc)) from None
        return self.received

    @property
    def size(self) -> int:
        return self.received.size if self.received is not None else 0


def pod_route(
    route: IngestRoute,
    *,
    method: str,
    cap: str | None = None,
    logged: bool = True,
    counts_ip: bool = False,
):
    """`counts_ip`: the route counts the request against its IP's rate limit itself (with the
    other reads of its admission); otherwise this does, before the route runs."""

    def decorator(call):
        @csrf_exempt
        @wraps(call)
        def view(request, **kwargs):
            if request.method != method:
                response = json_error(Reason.METHOD_NOT_ALLOWED, f"use {method}", 405)
                response["Allow"] = method
                return response
            ip = client_ip(request)
            body = RequestBody(request, getattr(settings, cap) if cap else 0)
            retry_after = None
            try:
                if not counts_ip:
                    services.check_rate_limit(f"ip:{ip}", settings.AEON_RATE_LIMIT_PER_IP)
                outcome = call(request, body, **kwargs)
            except Refusal as refusal:
                outcome = Outcome(
                    refusal.status,
                    {
                        "error": refusal.reason.value,
                        "reason": refusal.reason.value,
                        "note": refusal.note,
                    },
                    reason=refusal.reason,
                    note=refusal.note,
                    **refusal.context,
                )
                retry_after = refusal.retry_after
            except (DataError, IntegrityError) as exc:
                # A value the database can never hold: a bug to fix, and a retry cannot help.
                logger.exception("%s: the database refused a value", route)
                note = "the database cannot store a value of this request"
                outcome = Outcome(
                    400,
                    {"error": "SCHEMA_INVALID", "reason": "SCHEMA_INVALID", "note": note},
                    reason=Reason.SCHEMA_INVALID,
                    note=f"{note}: {str(exc)[:400]}",
                    run_id=kwargs.get("run_id", ""),
                )
            except (DatabaseError, BlobStoreUnavailable) as exc:
                logger.warning("%s unavailable: %s", route, exc)
                outcome = Outcome(
                    503,
                    {
                        "error": "UNAVAILABLE",
                        "reason": "UNAVAILABLE",
                        "note": "storage is unavailable; retry",
                    },
                    reason=Reason.UNAVAILABLE,
                    note=str(exc)[:500],
                    run_id=kwargs.get("run_id", ""),
                )
                retry_after = UNAVAILABLE_RETRY_AFTER
            if logged:
                _log(route, outcome, body.size, ip, kwargs.get("run_id", ""))
            body_out = outcome.body
            if isinstance(body_out.get("url"), str) and body_out["url"].startswith("/"):
                body_out = body_out | {"url": absolute_url(request, body_out["url"])}
            response = JsonResponse(body_out, status=outcome.status)
            if retry_after is not None:
                response["Retry-After"] = str(retry_after)
            return response

        return view

    return decorator


def _log(route, outcome: Outcome, size: int, ip: str | None, path_run_id: str) -> None:
    try:
        services.log_attempt(
            route=route,
            status=outcome.status,
            reason=outcome.reason,
            run_id=outcome.run_id or path_run_id,
            key_fingerprint=outcome.key_fingerprint,
            size=size,
            client_ip=ip,
            note=outcome.note,
            bundle_sha256=outcome.bundle_sha256,
        )
    except DatabaseError:
        logger.exception("could not write the ingest log for %s %s", route, outcome.reason)


@pod_route(IngestRoute.CHALLENGE, method="GET", logged=False)
def enroll_challenge(request, body):
    return services.issue_challenge()


@pod_route(IngestRoute.ENROLL, method="POST", cap="AEON_MAX_SMALL_BYTES")
def enroll(request, body):
    return services.enroll_key(body.read().data)


@pod_route(IngestRoute.OPEN_RUN, method="POST", cap="AEON_MAX_SMALL_BYTES")
def open_run(request, body):
    return services.open_run(body.read().data)


@pod_route(IngestRoute.RESULTS, method="POST", cap="AEON_MAX_RESULTS_BYTES", counts_ip=True)
def results(request, body, run_id):
    # The run and its token are checked before the body is read (docs/protocol.md).
    ip = client_ip(request)
    session = services.admit_results(
        run_id=run_id, token=request.headers.get("X-Aeon-Run-Token"), ip=ip
    )
    return services.submit_results(session=session, body=body.read(), client_ip=ip)


@pod_route(IngestRoute.JOB_STATUS, method="GET", logged=False)
def job_status(request, body, job_sig):
    return services.job_status(job_sig)
