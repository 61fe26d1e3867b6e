"""Liveness and readiness probes."""

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

from submissions.blobstore import blob_store

logger = logging.getLogger("aeon.health")
DRAINING_FLAG = "draining"


def healthz(request):
    """Liveness; 503 while draining (the flag file exists under the data folder)."""
    if (settings.DATA_DIR / DRAINING_FLAG).exists():
        return JsonResponse({"status": "draining"}, status=503)
    return JsonResponse({"status": "ok"})


def readyz(request):
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready
        checks["database"] = f"error: {exc.__class__.__name__}"
    try:
        blob_store().check()
        checks["storage"] = "ok"
    except Exception as exc:
        checks["storage"] = f"error: {exc.__class__.__name__}"
    if settings.CELERY_TASK_ALWAYS_EAGER:
        checks["broker"] = "eager"
    else:
        try:
            from config.celery import app

            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"error: {exc.__class__.__name__}"
    ready = all(value in ("ok", "eager") for value in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )
