"""Strict reading of pod request bodies: streaming size cap, then a standard-library parse that
refuses what a JSON document may not hold (protocol.md §3.3, MALFORMED_JSON)."""

import json

MAX_DEPTH = 64
MAX_INT_DIGITS = 20
READ_CHUNK = 1024 * 1024


class BodyTooLarge(Exception):
    pass


class MalformedJson(Exception):
    pass


def read_capped(request, cap: int) -> bytes:
    """Read the body counting the bytes actually read; a Content-Length claim is never trusted
    to accept, only to refuse early."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge(f"body of {declared} bytes exceeds the {cap}-byte cap")
    chunks, total = [], 0
    while True:
        chunk = request.read(READ_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > cap:
            raise BodyTooLarge(f"body exceeds the {cap}-byte cap")
        chunks.append(chunk)
    return b"".join(chunks)


def _reject_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise MalformedJson(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise MalformedJson(f"integer of {len(text)} digits")
    return int(text)


def _walk(value, depth: int) -> None:
    """Depth and text checks the parser does not do: nesting over 64, lone surrogates."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            if level >= MAX_DEPTH:
                raise MalformedJson(f"nesting deeper than {MAX_DEPTH}")
            for key, child in item.items():
                _check_text(key)
                stack.append((child, level + 1))
        elif isinstance(item, list):
            if level >= MAX_DEPTH:
                raise MalformedJson(f"nesting deeper than {MAX_DEPTH}")
            stack.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            _check_text(item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedJson("string holds a lone surrogate (not Unicode text)") from exc


def parse_json(body: bytes):
    """Parse a pod body. NaN/Infinity parse (they are part of what was signed); the schema
    refuses them where a number must be finite."""
    if body.startswith(b"\xef\xbb\xbf"):
        raise MalformedJson("body starts with a byte-order mark")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson(f"body is not UTF-8 (byte {exc.start})") from exc
    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicate_keys, parse_int=_parse_int)
    except RecursionError as exc:
        raise MalformedJson(f"nesting deeper than {MAX_DEPTH}") from exc
    except MalformedJson:
        raise
    except ValueError as exc:  # JSONDecodeError and int conversion limits
        raise MalformedJson(f"not JSON: {exc}") from exc
    _walk(value, 0)
    return value
