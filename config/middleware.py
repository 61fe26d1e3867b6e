"""Project middleware: JSON errors under /api/, no slash redirects there, security headers, and
the answer to an error no view caught (503 while the database is unreachable)."""

import logging
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.middleware.common import CommonMiddleware
from django.views.defaults import server_error as django_server_error

from config.api_errors import STATUS_REASONS, Reason, json_error

logger = logging.getLogger("aeon.api")

JSON_PREFIXES = ("/api/", "/.well-known/")


def wants_json(request) -> bool:
    return request.path.startswith(JSON_PREFIXES)


class ApiJsonErrorsMiddleware:
    """Under /api/, any non-JSON error (Django's 404, 405, 413, 500) becomes a JSON answer."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not wants_json(request) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        reason = STATUS_REASONS.get(
            status, Reason.INTERNAL_ERROR if status >= 500 else Reason.BAD_REQUEST
        )
        replacement = json_error(reason, f"HTTP {status} on {request.path}", status)
        if response.has_header("Allow"):
            replacement["Allow"] = response["Allow"]
        if response.has_header("Retry-After"):
            replacement["Retry-After"] = response["Retry-After"]
        return replacement

    def process_exception(self, request, exception):
        if not wants_json(request) or database_unavailable(exception):
            return None  # Django's handler500 answers: `server_error` below
        logger.exception("unhandled error on %s", request.path)
        return json_error(
            Reason.INTERNAL_ERROR, "internal error; the request left no partial state", 500
        )


class PageCommonMiddleware(CommonMiddleware):
    """CommonMiddleware without slash redirects on the API: a redirect turns a pod's POST into a
    body-less GET and loses its bundle."""

    def should_redirect_with_slash(self, request):
        if wants_json(request):
            return False
        return super().should_redirect_with_slash(request)


class SecurityHeadersMiddleware:
    """Content-Security-Policy on every answer. Scripts only from our origin, never inline and
    never eval: pages carry data in `<script type="application/json">` blocks that our static
    JS reads. Styles allow 'unsafe-inline' because plotly.js styles its charts through style
    attributes and `<style>` elements it creates (measured in Chromium: it breaks without)."""

    POLICY = (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
        "script-src 'self'; frame-src 'none'; object-src 'none'; "
        "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    )

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", self.POLICY)
        response.setdefault("X-Content-Type-Options", "nosniff")
        if settings.PRODUCTION:
            response.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        return response


# --- the database unreachable ------------------------------------------------------------------

RETRY_AFTER_SECONDS = 5
UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Briefly unavailable - AEON Board</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Briefly unavailable</h1>
<p>The board cannot reach its database right now. Please try again in a few seconds.</p>
</main></body></html>
"""


def database_unavailable(exception: BaseException | None) -> bool:
    """The database did not answer (down, restarting, a connection lost, a timeout): a retry
    will work, so the answer is 503, never 500. Other database errors are bugs."""
    return isinstance(exception, OperationalError | InterfaceError)


def server_error(request):
    """`handler500` (config/urls.py): what Django answers for an exception no view or
    middleware turned into an answer. The database unreachable: 503 with Retry-After, JSON with
    a reason code under /api/ and /.well-known/, a static page elsewhere (rendering a template
    could need the database itself). Anything else: Django's own 500."""
    exception = sys.exc_info()[1]
    if not database_unavailable(exception):
        return django_server_error(request)
    logger.warning("database unavailable on %s: %s", request.path, exception)
    if wants_json(request):
        return json_error(
            Reason.UNAVAILABLE,
            "the board cannot reach its database; retry",
            503,
            retry_after=RETRY_AFTER_SECONDS,
        )
    response = HttpResponse(UNAVAILABLE_PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
