"""Caps on what one session and one key may store as checkpoints (docs/protocol.md §Storage
caps). A checkpoint past a cap is refused before its body is stored; a final never is (it carries
every row, so the run still commits). And the key's daily upload quota (docs/protocol.md
§Quotas per key): the finals it committed within 24 h, checked before a results body is read."""

import math
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, Sum
from django.utils import timezone

from submissions.models import RunSession, SessionBundle

# Defaults; each can be set in the Django settings by its name (config/settings.py sets none yet).
DEFAULTS = {
    # A text run checkpoints every 8 cases: 400 covers a 3,200-case suite.
    "AEON_MAX_CHECKPOINTS_PER_SESSION": 400,
    # Checkpoints are cumulative (about twelve times the final's rows over a run).
    "AEON_MAX_CHECKPOINT_BYTES_PER_SESSION": 256 * 1024 * 1024,
    # What one key's checkpoints may store within the last 24 hours, over all its sessions.
    "AEON_MAX_CHECKPOINTS_PER_KEY_DAY": 4000,
    "AEON_MAX_CHECKPOINT_BYTES_PER_KEY_DAY": 2 * 1024 * 1024 * 1024,
}
KEY_WINDOW = timedelta(hours=24)


def cap(name: str) -> int:
    return int(getattr(settings, name, DEFAULTS[name]))


class CapReached(Exception):
    """The session's checkpoint cap: no retry can pass it (the final still commits)."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


def check_checkpoint(session: RunSession, size: int) -> None:
    """Raise CapReached when storing one more checkpoint of `size` bytes would pass a cap of the
    session, QuotaReached when it would pass its key's 24-hour quota (with the seconds until the
    oldest counted checkpoint leaves the window, as for the finals' quota). Two aggregate reads
    over the session's and the key's checkpoint bundles (indexed by session)."""
    held = SessionBundle.objects.filter(session_id=session.pk, final=False).aggregate(
        n=Count("pk"), bytes=Sum("raw__size")
    )
    count, stored = held["n"], held["bytes"] or 0
    if count + 1 > cap("AEON_MAX_CHECKPOINTS_PER_SESSION"):
        raise CapReached(
            f"this run holds {count} checkpoints, its cap; send the final (it still commits)"
        )
    if stored + size > cap("AEON_MAX_CHECKPOINT_BYTES_PER_SESSION"):
        raise CapReached(
            f"this run's checkpoints hold {stored} bytes; {size} more would pass its cap of "
            f"{cap('AEON_MAX_CHECKPOINT_BYTES_PER_SESSION')}; send the final (it still commits)"
        )
    now = timezone.now()
    day = SessionBundle.objects.filter(
        session__key_id=session.key_id,
        final=False,
        received_at__gte=now - KEY_WINDOW,
    ).aggregate(n=Count("pk"), bytes=Sum("raw__size"), oldest=Min("received_at"))
    count, stored = day["n"], day["bytes"] or 0
    if count + 1 > cap("AEON_MAX_CHECKPOINTS_PER_KEY_DAY") or stored + size > cap(
        "AEON_MAX_CHECKPOINT_BYTES_PER_KEY_DAY"
    ):
        raise QuotaReached(
            f"this key stored {count} checkpoints ({stored} bytes) within 24 h, its quota",
            _until_out_of_window(day["oldest"], now),
        )


class QuotaReached(Exception):
    """The key's daily upload quota is used up: `retry_after` seconds until its oldest counted
    final leaves the window."""

    def __init__(self, note: str, retry_after: int):
        super().__init__(note)
        self.note, self.retry_after = note, retry_after


def check_upload_quota(key_id: int) -> None:
    """Raise QuotaReached when the key committed AEON_MAX_FINALS_PER_KEY_DAY finals, or
    AEON_MAX_FINAL_BYTES_PER_KEY_DAY bytes of finals, within the last 24 hours. One aggregate
    read of the key's sessions committed in the window (index on key and commit time), each
    joined to its final bundle's size: it reads at most the quota's rows, however long the key's
    history."""
    now = timezone.now()
    day = RunSession.objects.filter(
        key_id=key_id, committed_at__gte=now - KEY_WINDOW, bundles__final=True
    ).aggregate(n=Count("pk"), bytes=Sum("bundles__raw__size"), oldest=Min("committed_at"))
    count, stored = day["n"], day["bytes"] or 0
    finals, final_bytes = (
        settings.AEON_MAX_FINALS_PER_KEY_DAY,
        settings.AEON_MAX_FINAL_BYTES_PER_KEY_DAY,
    )
    if count >= finals or stored >= final_bytes:
        raise QuotaReached(
            f"this key committed {count} finals ({stored} bytes) within 24 h; its daily quota is "
            f"{finals} finals or {final_bytes} bytes",
            _until_out_of_window(day["oldest"], now),
        )


def _until_out_of_window(oldest, now) -> int:
    """Seconds until the oldest upload counted leaves the 24-hour window (at least 1); a quota
    of 0 counts nothing: a whole window then."""
    oldest = oldest or now
    return max(1, math.ceil((oldest + KEY_WINDOW - now).total_seconds()))
