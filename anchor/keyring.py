"""The board keys the board publishes (docs/trust-anchor.md §Published keys): the current key
(the one in `AEON_BOARD_KEY_FILE`) and every key it replaced, with the dates each was in use.

The retired keys are kept in a small JSON file beside the key, never in the database: an audit
checks every stored manifest version against these keys only, so a version rewritten in the
database and signed with any other key fails it (`anchor/verify.py`). The file is written by
`manage.py rotate_board_key` and read on every use (it is a few hundred bytes):

    {"current_since": {"public_key": "<b64>", "valid_from": "<iso>"},
     "retired": [{"public_key": "<b64>", "valid_from": "<iso>" | null, "valid_until": "<iso>"}]}
"""

import base64
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from anchor.keys import BoardKeyError, configured_key_path, load_board_key

RETIRED_KEYS_NAME = "retired-board-keys.json"


@dataclass(frozen=True)
class PublishedKey:
    public_key: str
    status: str  # "current" or "retired"
    valid_from: str | None  # ISO 8601; None: since the board began (or not recorded)
    valid_until: str | None  # None for the current key


def retired_keys_path(key_path: Path | None = None) -> Path:
    """`AEON_BOARD_RETIRED_KEYS_FILE`, else `retired-board-keys.json` in the key's folder."""
    configured = getattr(settings, "AEON_BOARD_RETIRED_KEYS_FILE", "")
    if configured:
        return Path(configured)
    return (key_path or configured_key_path()).parent / RETIRED_KEYS_NAME


def read_keyring(path: Path) -> dict:
    """The file's contents ({} when there is none); BoardKeyError when it cannot be used."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise BoardKeyError(f"retired board keys file {path} cannot be read: {exc}") from None
    retired = data.get("retired", []) if isinstance(data, dict) else None
    if not isinstance(retired, list) or not all(
        isinstance(entry, dict) and _is_public_key(entry.get("public_key")) for entry in retired
    ):
        raise BoardKeyError(f"retired board keys file {path}: `retired` must list public keys")
    return data


def _is_public_key(value) -> bool:
    try:
        return isinstance(value, str) and len(base64.b64decode(value, validate=True)) == 32
    except ValueError:
        return False


def published_keys() -> list[PublishedKey]:
    """The current key first, then the retired ones, newest first. BoardKeyError when the
    current key or the retired keys file cannot be used."""
    current = load_board_key()
    keyring = read_keyring(retired_keys_path(current.path))
    since = keyring.get("current_since") or {}
    keys = [
        PublishedKey(
            public_key=current.public_key_b64,
            status="current",
            valid_from=since.get("valid_from")
            if since.get("public_key") == current.public_key_b64
            else None,
            valid_until=None,
        )
    ]
    for entry in reversed(keyring.get("retired", [])):
        if entry["public_key"] != current.public_key_b64:
            keys.append(
                PublishedKey(
                    public_key=entry["public_key"],
                    status="retired",
                    valid_from=entry.get("valid_from"),
                    valid_until=entry.get("valid_until"),
                )
            )
    return keys


def published_public_keys() -> set[str]:
    return {key.public_key for key in published_keys()}


def public_keys_of_document(document: dict) -> set[str]:
    """The keys a key document (`/.well-known/aeon-bench.json`, of this board or another)
    publishes: its `keys`, or its one `public_key` when it lists none."""
    listed = document.get("keys")
    if isinstance(listed, list):
        return {entry["public_key"] for entry in listed if isinstance(entry, dict)}
    return {document["public_key"]} if document.get("public_key") else set()


def as_document(keys: list[PublishedKey]) -> list[dict]:
    return [asdict(key) for key in keys]


def record_rotation(*, old_public_key: str, new_public_key: str, at: datetime, to: Path) -> None:
    """Write the keyring `to` (the file the board will read once it runs with the new key):
    the keys retired so far, the old key retired `at`, the new key current since `at`."""
    source = retired_keys_path()
    keyring = read_keyring(source)
    retired = [e for e in keyring.get("retired", []) if e["public_key"] != old_public_key]
    since = keyring.get("current_since") or {}
    retired.append(
        {
            "public_key": old_public_key,
            "valid_from": since.get("valid_from")
            if since.get("public_key") == old_public_key
            else None,
            "valid_until": at.isoformat(),
        }
    )
    document = {
        "current_since": {"public_key": new_public_key, "valid_from": at.isoformat()},
        "retired": retired,
    }
    to.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=to.parent, prefix=".retired-keys-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, to)  # atomic: the board never reads half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
