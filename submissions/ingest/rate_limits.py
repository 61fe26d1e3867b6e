"""Fixed-window rate limits per IP and per key (docs/protocol.md §Quotas per key)."""

import math
import time

from django.conf import settings
from django.db import (
    IntegrityError,
    transaction,
)
from django.db.models import F

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
    """This request counted in its window, and the window's count: an increment of the window's
    row (whose lock, held to the end of this transaction, orders concurrent counts: each reads
    its own), or the row itself when this is the window's first request (a concurrent first
    request that created it meanwhile makes the create fail: the increment is made then)."""
    counter = RateCounter.objects.filter(scope=scope, window_start=window_start)
    with transaction.atomic():
        if not counter.update(count=F("count") + 1):
            try:
                with transaction.atomic():
                    RateCounter.objects.create(scope=scope, window_start=window_start, count=1)
                return 1
            except IntegrityError:
                counter.update(count=F("count") + 1)
        return counter.values_list("count", flat=True).get()


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
