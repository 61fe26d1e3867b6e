"""The scheduled cleanup of the pod channel (docs/operations.md §Cleanup), run by the beat
(`submissions.tasks.clean_up_pod_channel`) and by `manage.py`'s shell when asked: expired
enrolment challenges, stale sessions with their checkpoints, evidence nothing refers to, unsigned
bundles kept in quarantine past their time or past their cap, and temporary files the store left
behind. Each kind is deleted in batches, and the counts are logged."""

import logging
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from board.models import Run
from config.api_errors import Reason
from evidence.blobstore import FileBlobStore, blob_store
from submissions.ingest.evidence import spool_dir
from submissions.models import (
    LIVE_SESSION_STATUSES,
    Challenge,
    QuarantinedBundle,
    RawBundle,
    RunSession,
    SessionBundle,
)

logger = logging.getLogger("aeon.cleanup")

DEFAULTS = {
    # An expired challenge is kept this long after it expired (for the log's sake), then deleted.
    "AEON_CHALLENGE_KEEP_SECONDS": 3600,
    # A live session untouched this long is abandoned: deleted with its checkpoints (pods bench
    # for days; the open-run cap stops counting it at 30 days already).
    "AEON_STALE_SESSION_DAYS": 30,
    # Evidence nothing refers to (a refused body, a duplicate's) is deleted once this old.
    "AEON_ORPHAN_EVIDENCE_SECONDS": 24 * 3600,
    # Bundles quarantined because their signature did not verify (unsigned: anyone may have sent
    # them) expire after this many days unless a moderator reviewed them, and at most this many
    # are kept per run key (the newest).
    "AEON_UNSIGNED_QUARANTINE_DAYS": 14,
    "AEON_UNSIGNED_QUARANTINE_PER_KEY": 20,
    # The store's temporary files (`.incoming-*`, `.ready-*`) and the spool's files older than
    # this are left over.
    "AEON_STORE_TEMP_SECONDS": 3600,
}
BATCH = 500
# Refused before (or for) the signature: not the pod's signed word.
UNSIGNED_REASONS = (Reason.BAD_SIG,)


def setting(name: str) -> int:
    return int(getattr(settings, name, DEFAULTS[name]))


@dataclass
class Cleaned:
    challenges: int = 0
    stale_sessions: int = 0
    unsigned_quarantine: int = 0
    orphan_evidence: int = 0
    orphan_evidence_bytes: int = 0
    store_temp_files: int = 0


def clean_up(now=None) -> Cleaned:
    now = now or timezone.now()
    cleaned = Cleaned()
    cleaned.challenges = _delete_in_batches(
        Challenge.objects.filter(
            expires_at__lt=now - timedelta(seconds=setting("AEON_CHALLENGE_KEEP_SECONDS"))
        )
    )
    cleaned.stale_sessions = _stale_sessions(now)
    cleaned.unsigned_quarantine = _unsigned_quarantine(now)
    cleaned.orphan_evidence, cleaned.orphan_evidence_bytes = _orphan_evidence(now)
    cleaned.store_temp_files = _store_temp_files()
    logger.info("pod channel cleaned: %s", asdict(cleaned), extra={"cleaned": asdict(cleaned)})
    return cleaned


def _delete_in_batches(queryset) -> int:
    total = 0
    while True:
        ids = list(queryset.values_list("pk", flat=True)[:BATCH])
        if not ids:
            return total
        total += (
            queryset.model.objects.filter(pk__in=ids).delete()[1].get(queryset.model._meta.label, 0)
        )


def _stale_sessions(now) -> int:
    """Live sessions with no progress (nor opening) for the stale age; their checkpoint rows and
    bundle links go with them (cascade), their evidence once it is an orphan."""
    since = now - timedelta(days=setting("AEON_STALE_SESSION_DAYS"))
    stale = RunSession.objects.filter(status__in=LIVE_SESSION_STATUSES, opened_at__lt=since).filter(
        Q(last_progress_at__isnull=True) | Q(last_progress_at__lt=since)
    )
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                stale.select_for_update(skip_locked=True).values_list("pk", flat=True)[:BATCH]
            )
            if not ids:
                return total
            RunSession.objects.filter(pk__in=ids).delete()
            total += len(ids)


def _unsigned_quarantine(now) -> int:
    """Unsigned quarantined bundles past their days (unless reviewed), and past the newest N of
    each key; their evidence goes once it is an orphan."""
    unsigned = QuarantinedBundle.objects.filter(reason__in=UNSIGNED_REASONS)
    expired = unsigned.filter(
        reviewed=False,
        created_at__lt=now - timedelta(days=setting("AEON_UNSIGNED_QUARANTINE_DAYS")),
    )
    total = _delete_in_batches(expired)
    keep = setting("AEON_UNSIGNED_QUARANTINE_PER_KEY")
    over = (
        unsigned.values("key_fingerprint")
        .order_by()
        .annotate(n=Count("pk"))
        .filter(n__gt=keep)
        .values_list("key_fingerprint", flat=True)
    )
    for fingerprint in list(over):
        kept = unsigned.filter(key_fingerprint=fingerprint).order_by("-created_at", "-pk")
        extra = list(kept.values_list("pk", flat=True)[keep:])
        total += _delete_in_batches(QuarantinedBundle.objects.filter(pk__in=extra))
    return total


def orphan_evidence():
    """Evidence rows nothing refers to: no session bundle, quarantine row, run or session
    final."""
    return RawBundle.objects.filter(
        ~Exists(SessionBundle.objects.filter(raw_id=OuterRef("sha256"))),
        ~Exists(QuarantinedBundle.objects.filter(raw_id=OuterRef("sha256"))),
        ~Exists(Run.objects.filter(bundle_sha256=OuterRef("sha256"))),
        ~Exists(RunSession.objects.filter(final_bundle_sha256=OuterRef("sha256"))),
    )


def _orphan_evidence(now) -> tuple[int, int]:
    """Orphans older than the grace (a body is stored just before what refers to it): the row,
    and the stored object or file of a big one."""
    old = orphan_evidence().filter(
        stored_at__lt=now - timedelta(seconds=setting("AEON_ORPHAN_EVIDENCE_SECONDS"))
    )
    store, count, size = blob_store(), 0, 0
    while True:
        with transaction.atomic():
            rows = list(
                old.select_for_update(skip_locked=True).values_list("sha256", "size", "content")[
                    :BATCH
                ]
            )
            if not rows:
                return count, size
            digests = [digest for digest, _size, _content in rows]
            RawBundle.objects.filter(sha256__in=digests).delete()
            for digest, _size, content in rows:
                if content is None:
                    store.delete(digest)
            count += len(rows)
            size += sum(row_size for _digest, row_size, _content in rows)


def _store_temp_files() -> int:
    """Temporary files of the folder store, and files of the spool, that a crash left behind."""
    store = blob_store()
    cutoff = time.time() - setting("AEON_STORE_TEMP_SECONDS")
    folders = [(spool_dir(), ("body-*",))]
    if isinstance(store, FileBlobStore):
        folders.append((Path(store.root), (".incoming-*", ".ready-*", "*/*/.incoming-*")))
    return sum(_remove_older(folder, patterns, cutoff) for folder, patterns in folders)


def _remove_older(folder: Path, patterns: tuple[str, ...], cutoff: float) -> int:
    if not folder.exists():
        return 0
    removed = 0
    for pattern in patterns:
        for path in folder.glob(pattern):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    return removed
