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


def json_encoder(*, sort_keys: bool, compact: bool, allow_nan: bool = True, default=_not_json):
    """`json.dumps` with these options as a function of one value, its encoder made once instead
    of on every call: json.dumps given any option makes a new encoder each time, and a final's
    174 rows are spelled one by one several times (the set-up was a fifth of the canonical
    spelling and over half of the rows' JSON text, board/result_rows.py). Only for decoded
    JSON, which has no cycles: it keeps no circular-reference markers, so it holds no state and
    threads may share it."""
    key_separator, item_separator = (":", ",") if compact else (": ", ", ")
    if c_make_encoder is None:  # a Python without the C accelerator: json.dumps itself
        separators = (item_separator, key_separator)
        options = {"sort_keys": sort_keys, "separators": separators, "allow_nan": allow_nan}
        return lambda value: json.dumps(value, default=default, **options)
    encode = c_make_encoder(
        None,
        default,
        encode_basestring_ascii,
        None,
        key_separator,
        item_separator,
        sort_keys,
        False,
        allow_nan,
    )
    return lambda value: "".join(encode(value, 0))


_canonical = json_encoder(sort_keys=True, compact=True)


def canonical_text(value) -> str:
    """One value's canonical JSON text (as `canonical_json` spells it inside a document):
    json.dumps(value, sort_keys=True, separators=(",", ":"))."""
    return _canonical(value)


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


# `canonical_json_in_pieces`: texts shorter than this are gathered before they are kept (a row's
# text costs a str object's header, some 50 bytes); bytes are copied into the buffer this many
# at a time.
PIECE_CHARS = 1024 * 1024
SPLIT_DEPTH = 3  # the bundle, its lists (results, artifacts), their items; deeper values whole


def canonical_json_in_pieces(obj) -> bytearray:
    """`canonical_json(obj)` for a big body, in one buffer of its exact size, without the
    copies of the one-call spelling: the encoder's accumulated chunks, the joined text and its
    bytes existed at once beside the decoded tree (3× the body over the tree, as no freed block
    of one was big enough to hold the next). Here the containers of the top SPLIT_DEPTH levels
    are spelled value by value (keys sorted as `sort_keys` sorts them); each deeper value, or
    string, is one encoder call, whose text for a lone string is the encoder's one copy; the
    buffer is filled from the texts a slice at a time, each text let go once copied. Peak: the
    texts and the buffer, each about the body's size. Falls back to `canonical_json` where a
    key is not a string (keys of decoded JSON always are)."""
    pieces: list[str] = []
    small: list[str] = []
    small_chars = 0

    def add(text: str) -> None:
        nonlocal small_chars
        if len(text) >= PIECE_CHARS:
            flush()
            pieces.append(text)
            return
        small.append(text)
        small_chars += len(text)
        if small_chars >= PIECE_CHARS:
            flush()

    def flush() -> None:
        nonlocal small_chars
        if small:
            pieces.append("".join(small))
            small.clear()
            small_chars = 0

    def spell(value, depth: int) -> bool:
        if depth >= SPLIT_DEPTH or not value or type(value) not in (dict, list):
            add(canonical_text(value))
            return True
        if type(value) is list:
            add("[")
            for index, item in enumerate(value):
                if index:
                    add(",")
                spell(item, depth + 1)
            add("]")
            return True
        if any(type(key) is not str for key in value):
            return False
        add("{")
        for index, key in enumerate(sorted(value)):
            add(("," if index else "") + canonical_text(key) + ":")
            if not spell(value[key], depth + 1):
                return False
        add("}")
        return True

    if not spell(obj, 0):
        return bytearray(canonical_json(obj))
    flush()
    buffer = bytearray(sum(map(len, pieces)))
    at = 0
    for index, piece in enumerate(pieces):
        pieces[index] = ""  # the text goes once copied
        for start in range(0, len(piece), PIECE_CHARS):
            part = piece[start : start + PIECE_CHARS].encode("ascii")
            buffer[at : at + len(part)] = part
            at += len(part)
        del piece
    return buffer


def decode_public_key(public_key_b64: object) -> bytes | None:
    """The raw 32 key bytes, or None when the text is not padded standard base64 of 32 bytes."""
    if not isinstance(public_key_b64, str) or not public_key_b64.isascii():
        return None
    try:
        raw = base64.b64decode(public_key_b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def verify_signature(
    public_key_b64: str, signature_b64: object, message: bytes | bytearray
) -> bool:
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
