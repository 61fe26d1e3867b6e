"""Evidence: a request body kept, content-addressed, before anything derived from it
(docs/protocol.md §Evidence and the ingest log)."""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

from evidence.blobstore import BlobStoreUnavailable, blob_store
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
# store overlaps that); a bigger one is stored, and let go, once the secret scan is done: its
# bytes next to the bundle's canonical copy would raise the worker's peak by the body's size
# (docs/protocol.md §Ingest cost).
HELD_WHILE_WRITTEN_BYTES = 8 * 1024 * 1024


def _evidence_writers() -> ThreadPoolExecutor:
    """This process's threads that write bodies to the blob store. Made after a fork, never
    inherited from it."""
    global _writers
    with _writers_lock:
        if _writers is None or _writers[0] != os.getpid():
            _writers = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="evidence"))
        return _writers[1]


class Evidence:
    """A results body on its way to being stored. A body of at most AEON_INLINE_EVIDENCE_BYTES
    goes into its RawBundle row (no thread, no file); a bigger one goes to the blob store, whose
    write (and disk flush) runs on another thread while the request checks the parsed bundle,
    which no longer reads the bytes. `stored()` writes the row (after waiting for the blob
    write): called before anything refers to the body (a quarantine, a checkpoint, a commit) and
    before any answer, outside the commit's transaction, so evidence comes before anything
    derived from it (docs/protocol.md §Evidence and the ingest log)."""

    def __init__(self, body: ReceivedBody):
        self.body, self.digest = body, body.sha256
        self.inline = 0 < body.size <= settings.AEON_INLINE_EVIDENCE_BYTES
        self._write = None
        if not self.inline:
            self._write = _evidence_writers().submit(
                blob_store().put, body.data, digest=self.digest
            )
            # Nothing reads the bytes after this: a big body is not held while it is worked on.
            self._write.add_done_callback(lambda _write: body.release())
        self._row_written = False

    def stored(self) -> str:
        if not self._row_written:
            if self._write is not None:
                self._write.result()  # BlobStoreUnavailable as the write raised it
                store_evidence_row(self.digest, self.body.size)
            else:
                store_evidence_row(self.digest, self.body.size, bytes(self.body.data))
                self.body.release()
            self._row_written = True
        return self.digest

    def discard(self) -> None:
        """Refused before its signature was checked (not JSON, not an envelope, past a cap): a
        body written ahead is removed again unless a row keeps it, and no row is written."""
        if self._write is not None:
            try:
                self._write.result()
            except BlobStoreUnavailable:
                pass  # nothing was written
            else:
                if not RawBundle.objects.filter(sha256=self.digest).exists():
                    blob_store().delete(self.digest)
        self._row_written = True
