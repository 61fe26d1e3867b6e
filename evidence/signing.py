"""Canonical JSON and ed25519 signatures exactly as the pods produce them (docs/protocol.md §Canonical JSON and signatures)."""

import base64
import binascii
import hashlib
import json
import secrets
from json.encoder import c_make_encoder, encode_basestring_ascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def canonical_json(obj) -> bytes:
    """The signed bytes: Python's json.dumps with sorted keys, compact separators, ASCII, NaN allowed."""
    return canonical_text(obj).encode("utf-8")


def _not_json(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# What json.dumps(value, sort_keys=True, separators=(",", ":")) runs, made once instead of on
# every call (a final's rows are spelled one by one: the per-call set-up was a fifth of it).
# No circular-reference markers: it is only given decoded JSON, which has no cycles, and it
# then holds no state, so threads may share it.
_ENCODER = (
    c_make_encoder(None, _not_json, encode_basestring_ascii, None, ":", ",", True, False, True)
    if c_make_encoder is not None
    else None
)


def canonical_text(value) -> str:
    """One value's canonical JSON text (as `canonical_json` spells it inside a document)."""
    if _ENCODER is None:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "".join(_ENCODER(value, 0))


def canonical_json_with_items(obj: dict, key: str) -> tuple[bytes, list[str] | None]:
    """`canonical_json(obj)`, and the canonical text of each item of the list `obj[key]` (None
    when it is not a non-empty list), made in the same pass: a list's canonical text is its
    items' texts joined by commas in brackets, so the document is spliced from the texts of the
    items and of the rest of `obj`, in which the list stands in for a random placeholder."""
    items = obj.get(key)
    if not isinstance(items, list) or not items:
        return canonical_json(obj), None
    texts = [canonical_text(item) for item in items]
    placeholder = canonical_text(secrets.token_hex(16))
    head, found, tail = canonical_text(obj | {key: placeholder[1:-1]}).partition(placeholder)
    if not found or placeholder in tail:  # only a value sent with this very text: never by chance
        return canonical_json(obj), None
    return "".join([head, "[", ",".join(texts), "]", tail]).encode("utf-8"), texts


def decode_public_key(public_key_b64: object) -> bytes | None:
    """The raw 32 key bytes, or None when the text is not padded standard base64 of 32 bytes."""
    if not isinstance(public_key_b64, str) or not public_key_b64.isascii():
        return None
    try:
        raw = base64.b64decode(public_key_b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def verify_signature(public_key_b64: str, signature_b64: object, message: bytes) -> bool:
    raw_key = decode_public_key(public_key_b64)
    if raw_key is None or not isinstance(signature_b64, str) or not signature_b64.isascii():
        return False
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        Ed25519PublicKey.from_public_bytes(raw_key).verify(signature, message)
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True


def key_fingerprint(public_key_b64: str) -> str:
    """First 16 hex of sha256 of the base64 key text: short, stable, shown on pod pages."""
    return hashlib.sha256(public_key_b64.encode("ascii")).hexdigest()[:16]
