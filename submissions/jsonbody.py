"""Strict reading of pod request bodies: a streaming size cap that hashes while it reads, then a
standard-library parse that refuses what a JSON document may not hold (docs/protocol.md,
MALFORMED_JSON). Each body is read, hashed and parsed once."""

import gc
import hashlib
import json
import re
from dataclasses import dataclass

MAX_DEPTH = 64
MAX_INT_DIGITS = 20
WALK_CHUNK = 4096  # values of one level the nesting check reads per call
READ_CHUNK = 1024 * 1024
# A lone surrogate can only come from a \uD800–\uDFFF escape: raw surrogate bytes are not UTF-8.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class BodyTooLarge(Exception):
    pass


class MalformedJson(Exception):
    pass


@dataclass
class ReceivedBody:
    """The bytes of one request body (a bytearray: filled in place, never copied), their sha256
    computed while reading, and their size."""

    data: bytes | bytearray
    sha256: str
    size: int = -1

    def __post_init__(self):
        if self.size < 0:
            self.size = len(self.data)

    def __len__(self) -> int:
        return self.size

    def release(self) -> None:
        """Let the bytes go once they are stored: a big body is not held while it is worked on."""
        self.data = b""


def read_capped(request, cap: int) -> ReceivedBody:
    """Read the body counting the bytes actually read; a Content-Length claim is never trusted
    to accept, only to refuse early (and to size the buffer)."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    declared = int(declared) if declared.isdigit() else None
    if declared is not None and declared > cap:
        raise BodyTooLarge(f"body of {declared} bytes exceeds the {cap}-byte cap")
    data = bytearray(declared or 0)
    digest = hashlib.sha256()
    total = 0
    while True:
        chunk = request.read(READ_CHUNK)
        if not chunk:
            break
        size = len(chunk)
        if total + size > cap:
            raise BodyTooLarge(f"body exceeds the {cap}-byte cap")
        digest.update(chunk)
        data[total : total + size] = chunk  # in place while within the declared length
        total += size
    del data[total:]
    return ReceivedBody(data, digest.hexdigest())


def _object_without_duplicate_keys(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise MalformedJson(f"duplicate key {duplicate!r}")
    return obj


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS and len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise MalformedJson(f"integer of {len(text)} digits")
    return int(text)


def _check_depth(value) -> None:
    """Nesting over 64 is refused. The decoded tree is walked level by level in C: the referents
    (gc.get_referents) of dicts and lists are their values and items, and strings and numbers
    have none, so the k-th level is empty once no container sits k deep. A level is kept in the
    pieces gc returns (never copied whole) and read back a bounded slice at a time."""
    level = [[value]]
    levels = 0  # non-empty levels seen; containers reach `levels` or `levels + 1` deep
    while level:
        levels += 1
        if levels > MAX_DEPTH + 1:
            raise MalformedJson(f"nesting deeper than {MAX_DEPTH}")
        last = level
        level = [
            below
            for piece in last
            for start in range(0, len(piece), WALK_CHUNK)
            if (below := gc.get_referents(*piece[start : start + WALK_CHUNK]))
        ]
    # The last level holds only scalars and empty containers: one more level if any container.
    if levels == MAX_DEPTH + 1 and any(
        type(item) in (dict, list) for piece in last for item in piece
    ):
        raise MalformedJson(f"nesting deeper than {MAX_DEPTH}")


def _check_texts(value) -> None:
    """Every key and string is Unicode text (no lone surrogate)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                _check_text(key)
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            _check_text(item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedJson("string holds a lone surrogate (not Unicode text)") from exc


def parse_json(body: bytes | bytearray):
    """Parse a pod body. NaN/Infinity parse (they are part of what was signed); the schema
    refuses them where a number must be finite."""
    if body.startswith(b"\xef\xbb\xbf"):
        raise MalformedJson("body starts with a byte-order mark")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson(f"body is not UTF-8 (byte {exc.start})") from exc
    try:
        value = json.loads(
            text, object_pairs_hook=_object_without_duplicate_keys, parse_int=_parse_int
        )
    except RecursionError as exc:
        raise MalformedJson(f"nesting deeper than {MAX_DEPTH}") from exc
    except MalformedJson:
        raise
    except ValueError as exc:  # JSONDecodeError and int conversion limits
        raise MalformedJson(f"not JSON: {exc}") from exc
    finally:
        del text
    _check_depth(value)
    if SURROGATE_ESCAPE.search(body):
        _check_texts(value)
    return value
