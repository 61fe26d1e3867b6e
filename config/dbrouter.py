"""Board reads from the read replica, everything else from the primary
(docs/scale-out.md §Read replica).

Installed by settings only when `DATABASE_REPLICA_URL` is set (the `replica` alias). The rule:
- Only GET and HEAD requests answered by a view of the board app (pages, the read API, exports)
  may read from the replica. The pod routes (enroll, open run, results, job status), the pod
  pages and raw bundles, the admin, health probes, Celery tasks and management commands read
  from the primary, always.
- Inside a transaction on the primary every read stays on the primary; every write goes there.
- Read-your-writes: every commit that changes what the board shows bumps the board generation
  (a row) after it commits, before the pod gets its answer. A request that may use the replica
  first compares the replica's generation with the primary's, once, at its first read: a replica
  behind the primary serves nothing of that request. So the final's run page, opened right after
  its answer, comes from the primary until the replica has replayed that commit.
- A replica that cannot be reached sends reads to the primary (and is not asked again for a few
  seconds): the board keeps serving without it.
- Migrations run on the primary only.
"""

import logging
import time
from contextvars import ContextVar

from django.apps import apps
from django.db import DatabaseError, connections, transaction

logger = logging.getLogger("aeon.dbrouter")

PRIMARY = "default"
REPLICA = "replica"
UNDECIDED = "undecided"
RETRY_UNREACHABLE_SECONDS = 5.0

# None: this request (or task, or command) reads from the primary. UNDECIDED: a board read that
# has not read yet. PRIMARY or REPLICA: the choice made at its first read, kept for the request.
_read_from: ContextVar[str | None] = ContextVar("aeon_read_from", default=None)
_unreachable_until = 0.0


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        choice = _read_from.get()
        if choice is None or transaction.get_connection(PRIMARY).in_atomic_block:
            return PRIMARY
        if choice == UNDECIDED:
            choice = _choose()
            _read_from.set(choice)
        return choice

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # one database, two copies of it

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY


class ReplicaReadsMiddleware:
    """Marks GET and HEAD requests to the board app's views as replica reads."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _read_from.set(None)
        try:
            return self.get_response(request)
        finally:
            _read_from.reset(token)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method in ("GET", "HEAD") and is_board_read(view_func):
            _read_from.set(UNDECIDED)


def is_board_read(view_func) -> bool:
    """A view of the board app: its pages, read API and exports (decorators keep the module)."""
    return getattr(view_func, "__module__", "").startswith("board.")


def _choose() -> str:
    """REPLICA when it answers and holds every generation the primary has committed."""
    global _unreachable_until
    if time.monotonic() < _unreachable_until:
        return PRIMARY
    primary = board_generation(PRIMARY)
    try:
        replica = board_generation(REPLICA)
    except DatabaseError as exc:
        logger.warning("read replica unreachable, reading from the primary: %s", exc)
        connections[REPLICA].close()
        _unreachable_until = time.monotonic() + RETRY_UNREACHABLE_SECONDS
        return PRIMARY
    if primary is None or replica is None or replica < primary:
        return PRIMARY
    return REPLICA


def board_generation(alias: str) -> int | None:
    """The board generation as `alias` holds it (a raw query: the router is not asked again)."""
    table = apps.get_model("board", "BoardGeneration")._meta.db_table  # config/ imports no app
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT number FROM {table} WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else None
