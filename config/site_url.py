"""Absolute URLs of the board: from the configured site URL, never from the Host header.

A request's Host header is chosen by its client; an absolute URL built from it (a run page link
given to a pod, a canonical or OpenGraph link) would carry whatever host the client sent.
Production always has `AEON_SITE_URL` (config/settings.py); only the development configuration
may leave it empty and answer with the address the request came to (docs/operations.md
§Settings).
"""

from django.conf import settings


def absolute_url(request, path: str) -> str:
    base = settings.AEON_SITE_URL.rstrip("/")
    if base:
        return f"{base}{path}"
    return request.build_absolute_uri(path)
