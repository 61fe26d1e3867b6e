"""Content-addressed storage of raw signed bundles: a folder by default, an S3-compatible
bucket by setting. Evidence is written before anything derived from it."""

import hashlib
import os
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
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)  # atomic: a reader never sees half a bundle
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

    def exists(self, digest: str) -> bool:
        return self._path(digest).exists()

    def check(self) -> None:
        """Readiness: the folder exists and is writable."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / ".ready"
            probe.write_bytes(b"ok")
        except OSError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None):
        import boto3  # optional dependency: pip install .[s3]

        self.bucket, self.prefix = bucket, prefix
        self.client = boto3.client("s3", endpoint_url=endpoint_url)

    def put(self, data: bytes | bytearray, *, digest: str | None = None) -> str:
        digest = digest or sha256_hex(data)
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.prefix + digest, Body=data)
        except Exception as exc:  # botocore raises many types; all mean "not stored"
            raise BlobStoreUnavailable(str(exc)) from exc
        return digest

    def get(self, digest: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.prefix + digest)[
                "Body"
            ].read()
        except self.client.exceptions.NoSuchKey as exc:
            raise FileNotFoundError(digest) from exc

    def exists(self, digest: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.prefix + digest)
        except Exception:
            return False
        return True

    def check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise BlobStoreUnavailable(str(exc)) from exc


@cache
def _store_for(backend: str, root: str, bucket: str, prefix: str, endpoint: str | None):
    if backend == "s3":
        return S3BlobStore(bucket, prefix, endpoint)
    return FileBlobStore(Path(root))


def blob_store():
    return _store_for(
        settings.AEON_BLOB_BACKEND,
        str(settings.AEON_BLOB_DIR),
        settings.AEON_S3_BUCKET,
        settings.AEON_S3_PREFIX,
        settings.AEON_S3_ENDPOINT_URL,
    )
