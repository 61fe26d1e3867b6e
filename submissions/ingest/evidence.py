"""Evidence: a request body kept, content-addressed, before anything derived from it
(docs/protocol.md §Evidence and the ingest log)."""

import contextlib
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings

from evidence.blobstore import READY_PROBE, BlobStoreUnavailable, blob_store
from submissions.jsonbody import ReceivedBody
from submissions.models import (
    RawBundle,
)


def store_evidence_row(digest: str, size: int, content: bytes | None = None) -> None:
    """The index row of a body (`content`: a small body's bytes, kept in the row; else the body
    is in the blob store already). Idempotent by content: a row already there (inline or not) is
    left as it is."""
    RawBundle.objects.bulk_create(
        [RawBundle(sha256=digest, size=size, content=content)], ignore_conflicts=True
    )


_writers: tuple[int, ThreadPoolExecutor] | None = None


_writers_lock = threading.Lock()


# A body up to this size may stay in memory while the bundle is checked (its write to the blob
# store overlaps that); a bigger one is written to the spool before it is parsed and let go once
# the secret scan is done (its bytes next to the bundle's canonical copy would raise the
# worker's peak by the body's size), and enters the store only once kept (docs/protocol.md
# §Ingest cost, §Evidence and the ingest log).
HELD_WHILE_WRITTEN_BYTES = 8 * 1024 * 1024


def _evidence_writers() -> ThreadPoolExecutor:
    """This process's threads that write bodies to the blob store. Made after a fork, never
    inherited from it."""
    global _writers
    with _writers_lock:
        if _writers is None or _writers[0] != os.getpid():
            _writers = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="evidence"))
        return _writers[1]


def spool_dir() -> Path:
    """Where bodies over HELD_WHILE_WRITTEN_BYTES wait for their signature check
    (`AEON_SPOOL_DIR`; by default `.spool` in the blob folder: the same file system, so that
    keeping one is a rename, and outside the store's content-addressed names)."""
    return Path(settings.AEON_SPOOL_DIR or Path(settings.AEON_BLOB_DIR) / ".spool")


def spool_body(data: bytes | bytearray) -> Path:
    """Write a body to a new file of the spool and sync it (so that its later rename into the
    store keeps it whole); a failed write leaves no file. BlobStoreUnavailable on any OSError."""
    folder = spool_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix="body-")
    except OSError as exc:
        raise BlobStoreUnavailable(f"spool: {exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(name)
        if isinstance(exc, OSError):
            raise BlobStoreUnavailable(f"spool: {exc}") from exc
        raise
    return Path(name)


def check_spool() -> None:
    """Readiness: the spool takes a new synced file of a block (removed again), so a full or
    read-only spool fails it as a big upload would. BlobStoreUnavailable otherwise."""
    _unspool(spool_body(READY_PROBE))


def _unspool(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


class Evidence:
    """A results body on its way to being stored. A body of at most AEON_INLINE_EVIDENCE_BYTES
    goes into its RawBundle row (no thread, no file); a bigger one goes to the blob store, whose
    write (and disk flush) runs on another thread while the request checks the parsed bundle,
    which no longer reads the bytes. `spool`: a body over HELD_WHILE_WRITTEN_BYTES, written
    before it is parsed, goes to a file of the spool instead (`spool_body`), and enters the store
    only when kept: once its signature verified (`keep`), or when a refusal keeps it (a
    quarantine); refused before that, its spool file is removed (`discard`). `stored()` writes
    the row (after waiting for the blob write or the move): called before anything refers to
    the body (a quarantine, a checkpoint, a commit) and before any answer, outside the commit's
    transaction, so evidence comes before anything derived from it (docs/protocol.md §Evidence
    and the ingest log)."""

    def __init__(self, body: ReceivedBody, *, spool: bool = False):
        self.body, self.digest = body, body.sha256
        self.inline = 0 < body.size <= settings.AEON_INLINE_EVIDENCE_BYTES
        self.spool = spool and not self.inline
        self._write = self._keep = None
        if not self.inline:
            if self.spool:
                self._write = _evidence_writers().submit(spool_body, body.data)
            else:
                self._write = _evidence_writers().submit(
                    blob_store().put, body.data, digest=self.digest
                )
            # Nothing reads the bytes after this: a big body is not held while it is worked on.
            self._write.add_done_callback(lambda _write: body.release())
        self._row_written = False

    def written(self) -> None:
        """Wait for the body's write (its bytes are let go then). BlobStoreUnavailable as the
        write raised it."""
        if self._write is not None:
            self._write.result()
            self.body.release()  # as its callback does, which may run just after this returns

    def keep(self) -> None:
        """Start moving a spooled body into the store (its signature verified): a rename on the
        folder store, an upload on a bucket, overlapping the checks that follow."""
        if self.spool and self._keep is None:
            self.written()  # spooled first (a failed spool raises here)
            self._keep = _evidence_writers().submit(self._move_in)

    def _move_in(self) -> None:
        path = self._write.result()
        try:
            blob_store().put_file(path, digest=self.digest)
        finally:
            _unspool(path)  # moved, uploaded, or failed: the spool keeps nothing

    def stored(self) -> str:
        if not self._row_written:
            if self.inline:
                store_evidence_row(self.digest, self.body.size, bytes(self.body.data))
                self.body.release()
            else:
                if self.spool:
                    self.keep()
                # BlobStoreUnavailable as the write (or the move into the store) raised it.
                (self._keep or self._write).result()
                store_evidence_row(self.digest, self.body.size)
            self._row_written = True
        return self.digest

    def discard(self) -> None:
        """Refused before its signature was checked (not JSON, not an envelope, past a cap): a
        spooled body's file is removed at once (a body written to the store ahead is removed
        from it unless a row keeps it), and no row is written."""
        if self._write is not None:
            try:
                written = self._write.result()
            except BlobStoreUnavailable:
                pass  # nothing was written
            else:
                if self.spool:
                    _unspool(written)
                elif not RawBundle.objects.filter(sha256=self.digest).exists():
                    blob_store().delete(self.digest)
        self._row_written = True
