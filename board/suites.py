"""The suite table (seven rows of reference data, docs/trust-and-ranking.md §Suites) as each
process reads it: one query, then kept for a minute. Suites are added or edited as data, never
by a request; an edit in this process (a save, a delete, a migrate or flush re-seeding them)
clears the copy at once, an edit elsewhere reaches it within `MAX_AGE`."""

import threading
import time
from dataclasses import dataclass

from django.db.models.signals import post_delete, post_migrate, post_save

MAX_AGE = 60.0  # seconds


@dataclass(frozen=True)
class SuiteFacts:
    suite_id: str
    kind: str
    case_count: int | None
    current: bool


_lock = threading.Lock()
_cache: tuple[float, dict[str, SuiteFacts]] | None = None


def _table() -> dict[str, SuiteFacts]:
    global _cache
    cached = _cache
    if cached is not None and time.monotonic() - cached[0] < MAX_AGE:
        return cached[1]
    from board.models import Suite

    rows = Suite.objects.values_list("suite_id", "kind", "case_count", "current")
    table = {row[0]: SuiteFacts(*row) for row in rows}
    with _lock:
        _cache = (time.monotonic(), table)
    return table


def suite_named(suite_id: str | None) -> SuiteFacts | None:
    return _table().get(suite_id) if suite_id else None


def current_text_suites() -> set[str]:
    return {f.suite_id for f in _table().values() if f.current and f.kind == "text"}


def forget(**kwargs) -> None:
    global _cache
    with _lock:
        _cache = None


def connect() -> None:
    from board.models import Suite

    post_save.connect(forget, sender=Suite, dispatch_uid="board-suites-saved")
    post_delete.connect(forget, sender=Suite, dispatch_uid="board-suites-deleted")
    post_migrate.connect(forget, dispatch_uid="board-suites-migrated")
