"""Liveness and readiness probes (docs/operations.md §Health and drain).

They are answered by a middleware placed first, before the host check: an orchestrator or a
proxy probes a replica by its own address (`http://10.0.0.5:8000/healthz`), which is not one
of the board's public hosts.

- `/healthz` is liveness: the process answers. While the drain file exists it answers 503
  `{"ok": false, "draining": true}` so the proxy stops sending new requests to this replica;
  requests already in flight (a 128 MiB upload) go on and complete.
- `/readyz` is readiness: every part the board needs answers — the database, its migrations
  all applied, the Celery broker, the blob store and the board's signing key.
"""

import logging
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse

logger = logging.getLogger("aeon.health")

OK = "ok"


def drain_file() -> Path:
    return Path(settings.AEON_DRAIN_FILE)


def healthz(request) -> JsonResponse:
    if drain_file().exists():
        return JsonResponse({"ok": False, "draining": True}, status=503)
    return JsonResponse({"ok": True})


def readyz(request) -> JsonResponse:
    checks = {
        "database": _check(_database),
        "migrations": _check(_migrations),
        "broker": _check(_broker),
        **{name: _check(probe) for name, probe in _app_checks.items()},
        "signing_key": _check(_signing_key),
    }
    ready = all(value == OK for value in checks.values())
    if not ready:
        logger.warning("not ready: %s", {k: v for k, v in checks.items() if v != OK})
    return JsonResponse({"ok": ready, "checks": checks}, status=200 if ready else 503)


def _check(probe) -> str:
    try:
        return probe()
    except NotReady as exc:
        return f"error: {exc}"
    except Exception as exc:  # any failure of a part means not ready; name it, hide details
        return f"error: {exc.__class__.__name__}"


class NotReady(Exception):
    """A readiness check failed for a reason worth saying."""


def _database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return OK


_migrated = False  # once every migration is applied, this process need not look again


def _migrations() -> str:
    global _migrated
    if not _migrated:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if unapplied:
            raise NotReady(f"{len(unapplied)} migrations not applied (manage.py migrate)")
        _migrated = True
    return OK


def _broker() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return OK  # the development configuration runs tasks in-process
    from config.celery import app

    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=2)
    return OK


_app_checks: dict = {}  # name -> probe, registered by the apps that own the parts


def register_readiness_check(name: str, probe) -> None:
    """A part an app owns that the board needs (the blob store, registered by submissions):
    `probe()` raises when the part does not answer. config/ imports no app; apps register."""

    def checked() -> str:
        probe()
        return OK

    _app_checks[name] = checked


_loaded_key: tuple[str, float] | None = None  # (path, mtime) of the key last loaded


def _signing_key() -> str:
    """The board's key file is configured and holds an ed25519 private key (PEM, PKCS8)."""
    global _loaded_key
    configured = getattr(settings, "AEON_BOARD_KEY_FILE", "")
    if not configured:
        raise NotReady("AEON_BOARD_KEY_FILE is not set (manage.py create_board_key)")
    path = Path(configured)
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        if settings.DEVELOPMENT:
            return OK  # development makes its key on demand (docs/trust-anchor.md)
        raise NotReady("the board key file does not exist") from None
    if _loaded_key == (str(path), mtime):
        return OK
    key = load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise NotReady("the board key file holds no ed25519 private key")
    _loaded_key = (str(path), mtime)
    return OK


PROBES = {"/healthz": healthz, "/readyz": readyz}


class ProbeMiddleware:
    """Answers the probes before anything else runs (host check, sessions, CSRF)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        probe = PROBES.get(request.path_info)
        if probe is not None and request.method in ("GET", "HEAD"):
            response = probe(request)
            response["Cache-Control"] = "no-store"
            return response
        return self.get_response(request)
