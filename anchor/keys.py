"""The board's own ed25519 signing key (docs/trust-anchor.md §The board key).

The key lives in a PEM file (PKCS8, unencrypted) named by `AEON_BOARD_KEY_FILE`. Development
defaults it to `DATA_DIR/board-key.pem`; production has no default and never makes one on its
own: `manage.py create_board_key` is the only thing that writes a key, and it never overwrites.
"""

import base64
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from django.conf import settings


class BoardKeyError(Exception):
    """The board key is not configured, missing or unreadable; `str()` says what to do."""


@dataclass(frozen=True)
class BoardKey:
    path: Path
    private_key: Ed25519PrivateKey

    @property
    def public_key_b64(self) -> str:
        """Standard padded base64 of the raw 32 bytes: the same encoding pods use for theirs."""
        return public_key_b64(self.private_key.public_key())

    def sign(self, message: bytes) -> str:
        """Standard base64 of the 64-byte ed25519 signature of `message`."""
        return base64.b64encode(self.private_key.sign(message)).decode("ascii")


def public_key_b64(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def configured_key_path() -> Path:
    value = getattr(settings, "AEON_BOARD_KEY_FILE", "")
    if not value:
        raise BoardKeyError(
            "no board signing key configured: set AEON_BOARD_KEY_FILE to a PEM file made by "
            "`manage.py create_board_key --path <file>`"
        )
    return Path(value)


def load_board_key(path: Path | None = None) -> BoardKey:
    """The configured key (or the one at `path`); BoardKeyError saying why and how to fix it
    when it cannot be used."""
    path = path or configured_key_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise BoardKeyError(
            f"board signing key file {path} does not exist: create it with "
            f"`manage.py create_board_key --path {path}` (AEON_BOARD_KEY_FILE)"
        ) from None
    except OSError as exc:
        raise BoardKeyError(f"board signing key file {path} cannot be read: {exc}") from None
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> BoardKey:
    """Parsed once per file version: a rotated key (new file contents) is read again."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BoardKeyError(f"board signing key file {path} cannot be read: {exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise BoardKeyError(
            f"board signing key file {path} is not an unencrypted PEM private key: {exc}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BoardKeyError(
            f"board signing key file {path} holds a {type(key).__name__}, not ed25519"
        )
    return BoardKey(path=Path(path), private_key=key)


def create_key_file(path: Path) -> BoardKey:
    """Write a new key to `path` (mode 0600); FileExistsError when the file is already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # O_EXCL: two starts racing to make a key never overwrite each other's.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    return BoardKey(path=path, private_key=key)
