"""Content-addressed storage of raw signed bundles: a folder by default, an S3-compatible
bucket by setting. Evidence is written before anything derived from it. Bundles of at most
AEON_INLINE_EVIDENCE_BYTES are not stored here but in their database rows (RawBundle.content);
`submissions.selectors.raw_bundle` reads either."""

import base64
import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from django.conf import settings


class BlobStoreUnavailable(Exception):
    pass


def sha256_hex(data: bytes | bytearray) -> str:
    return hashlib.sha256(data).hexdigest()


class FileBlobStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:4] / digest

    def put(self, data: bytes | bytearray, *, digest: str | None = None) -> str:
        """Store `data` under its sha256 (`digest` when the caller hashed it while reading)."""
        digest = digest or sha256_hex(data)
        path = self._path(digest)
        if path.exists():
            return digest
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_new(path.parent, ".incoming-", data, keep_as=path)
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc
        return digest

    def put_file(self, source: Path, *, digest: str) -> str:
        """Keep a file already written and synced (a spooled body, submissions/ingest/evidence.py)
        under `digest`: renamed into place, or copied when it is on another file system. The
        source is gone or left for the caller to remove."""
        path = self._path(digest)
        if path.exists():
            return digest
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(source, path)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                with open(source, "rb") as handle:
                    _write_new(path.parent, ".incoming-", handle, keep_as=path)
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc
        return digest

    def get(self, digest: str) -> bytes:
        try:
            return self._path(digest).read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc

    def open(self, digest: str):
        """The stored bytes as a file to read a block at a time (a download streams it)."""
        try:
            return self._path(digest).open("rb")
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc

    def exists(self, digest: str) -> bool:
        return self._path(digest).exists()

    def delete(self, digest: str) -> None:
        """Remove a stored body (a refused one, an orphan: submissions/cleanup.py)."""
        try:
            self._path(digest).unlink(missing_ok=True)
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc

    def check(self) -> None:
        """Readiness: the folder exists and a NEW file of a bundle's first block can be written
        to it and synced (then removed). Rewriting an existing small file needs no free block,
        so a full disk passed; a new one fails as an upload would."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            _write_new(self.root, ".ready-", READY_PROBE)
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc


# What readiness writes: as much as one file-system block, so that no inline-data trick of the
# file system lets it pass on a full disk.
READY_PROBE = b"\0" * 4096


def _write_new(folder: Path, prefix: str, data, *, keep_as: Path | None = None) -> None:
    """Write `data` to a new temporary file in `folder` and sync it; then rename it to
    `keep_as` (atomic: a reader never sees half a bundle), or remove it. On any failure the
    temporary file is removed: a full disk or a failed write leaves nothing behind."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(data, "read"):  # a file: copied a block at a time
                shutil.copyfileobj(data, handle, 1024 * 1024)
            else:
                handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_as is not None:
            os.replace(tmp, keep_as)
            return
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.unlink(tmp)


class S3BlobStore:
    """Bundles as objects `<prefix><sha256>` in one bucket of S3 or an S3-compatible server.

    Credentials come from boto3's usual sources (`AWS_ACCESS_KEY_ID` and
    `AWS_SECRET_ACCESS_KEY`, a profile, an instance role); docs/scale-out.md §The evidence
    bucket. Every failure to reach the bucket is `BlobStoreUnavailable`: the pod gets 503 and
    retries; only an object that is truly absent is `FileNotFoundError`."""

    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None, region: str | None):
        import boto3  # here, not at the top: a board on the folder never pays its import
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        self.bucket, self.prefix = bucket, prefix
        self._errors = (BotoCoreError, ClientError)
        config = Config(
            # An S3-compatible server on its own host names buckets in the path.
            s3={"addressing_style": "path" if endpoint_url else "auto"},
            connect_timeout=5,
            read_timeout=60,
            # A pod retries a 503 itself: fail within seconds rather than hold the upload.
            retries={"mode": "standard", "max_attempts": 3},
        )
        self.client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, region_name=region, config=config
        )

    def _key(self, digest: str) -> str:
        return self.prefix + digest

    def put(self, data: bytes | bytearray, *, digest: str | None = None) -> str:
        digest = digest or sha256_hex(data)
        try:
            # S3 checks the bytes it received against our sha256 before storing them; the
            # bytearray goes as it is (a 128 MiB bundle is never copied).
            self.client.put_object(
                Bucket=self.bucket,
                Key=self._key(digest),
                Body=data,
                ChecksumSHA256=base64.b64encode(bytes.fromhex(digest)).decode("ascii"),
            )
        except self._errors as exc:
            raise BlobStoreUnavailable(f"S3 put {self._key(digest)}: {exc}") from exc
        return digest

    def put_file(self, source: Path, *, digest: str) -> str:
        """Upload a file already written (a spooled body) as the object of `digest`, streamed
        from the file; the caller removes the file."""
        try:
            with open(source, "rb") as handle:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=self._key(digest),
                    Body=handle,
                    ChecksumSHA256=base64.b64encode(bytes.fromhex(digest)).decode("ascii"),
                )
        except OSError as exc:
            raise BlobStoreUnavailable(f"spool file {source}: {exc}") from exc
        except self._errors as exc:
            raise BlobStoreUnavailable(f"S3 put {self._key(digest)}: {exc}") from exc
        return digest

    def get(self, digest: str) -> bytes:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(digest))
            return answer["Body"].read()
        except self._errors as exc:
            if _is_missing(exc):
                raise FileNotFoundError(digest) from exc
            raise BlobStoreUnavailable(f"S3 get {self._key(digest)}: {exc}") from exc

    def open(self, digest: str):
        """The object's body as botocore's stream, read a block at a time (a download)."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(digest))["Body"]
        except self._errors as exc:
            if _is_missing(exc):
                raise FileNotFoundError(digest) from exc
            raise BlobStoreUnavailable(f"S3 get {self._key(digest)}: {exc}") from exc

    def exists(self, digest: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(digest))
        except self._errors as exc:
            if _is_missing(exc):
                return False
            raise BlobStoreUnavailable(f"S3 head {self._key(digest)}: {exc}") from exc
        return True

    def delete(self, digest: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(digest))
        except self._errors as exc:
            raise BlobStoreUnavailable(f"S3 delete {self._key(digest)}: {exc}") from exc

    def check(self) -> None:
        """Readiness: the bucket answers to our credentials."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except self._errors as exc:
            raise BlobStoreUnavailable(f"S3 bucket {self.bucket}: {exc}") from exc


def _is_missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("NoSuchKey", "404", "NotFound")


@cache
def _store_for(
    backend: str, root: str, bucket: str, prefix: str, endpoint: str | None, region: str | None
):
    if backend == "s3":
        return S3BlobStore(bucket, prefix, endpoint, region)
    return FileBlobStore(Path(root))


def blob_store():
    return _store_for(
        settings.AEON_BLOB_BACKEND,
        str(settings.AEON_BLOB_DIR),
        settings.AEON_S3_BUCKET,
        settings.AEON_S3_PREFIX,
        settings.AEON_S3_ENDPOINT_URL,
        settings.AEON_S3_REGION,
    )
