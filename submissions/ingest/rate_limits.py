"""Fixed-window rate limits per IP and per key (docs/protocol.md §Quotas per key)."""

import math
import time

from django.conf import settings
from django.db import connection

from config.api_errors import Reason
from submissions.ingest.outcomes import Refusal
from submissions.models import (
    RateCounter,
)


def check_rate_limit(scope: str, limit: int) -> None:
    """Count this request in the current window; refuse past `limit`."""
    window_start, now = _rate_window()
    _refuse_past_limit(scope, _counted(scope, window_start), limit, window_start, now)


def _counted(scope: str, window_start: int) -> int:
    """This request counted in its window, and the window's count as this request left it: one
    upsert (the window's row created by its first request, incremented by the others) that
    returns the count, PostgreSQL and SQLite alike (both take `ON CONFLICT … DO UPDATE …
    RETURNING`). Concurrent counts of one window are ordered by the row: each reads its own.

    One statement in autocommit mode, one round trip, where the ORM needed a transaction of its
    own (BEGIN, UPDATE, SELECT, COMMIT, and a savepoint and an INSERT on a window's first
    request): two of these run before a final's body is read (the IP's and the key's), so a
    final makes 6 round trips fewer. Measured on a fresh key's 0.14 MiB final through Django's
    test client against PostgreSQL (30 finals a run, three runs alternating with the code
    before, this 2-core machine at load average 4-4.5 from the other engineers): median
    34.7-35.4 ms against 36.1-36.7 ms, CPU 24.1-24.2 ms against 25.2-25.7 ms (with the
    moderation flags' two reads made one, board/recording.py)."""
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    scope_column, start_column, count_column = (
        connection.ops.quote_name(RateCounter._meta.get_field(name).column)
        for name in ("scope", "window_start", "count")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({scope_column}, {start_column}, {count_column}) "
            f"VALUES (%s, %s, 1) ON CONFLICT ({scope_column}, {start_column}) "
            f"DO UPDATE SET {count_column} = {table}.{count_column} + 1 "
            f"RETURNING {count_column}",
            [scope, window_start],
        )
        return cursor.fetchone()[0]


def _rate_window() -> tuple[int, float]:
    """The start of the current rate window, and now."""
    window = settings.AEON_RATE_WINDOW_SECONDS
    now = time.time()
    return int(now // window) * window, now


def _refuse_past_limit(scope: str, count: int, limit: int, window_start: int, now: float) -> None:
    window = settings.AEON_RATE_WINDOW_SECONDS
    if count == 1:  # first hit of a window: forget the windows before the previous one
        RateCounter.objects.filter(scope=scope, window_start__lt=window_start - window).delete()
    if count > limit:
        retry_after = max(1, math.ceil(window_start + window - now))
        raise Refusal(
            Reason.RATE_LIMITED,
            f"more than {limit} requests in {window} s",
            retry_after=retry_after,
        )
