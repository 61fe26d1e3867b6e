"""Strict reading of pod request bodies: a streaming size cap that hashes while it reads, then a
standard-library parse that refuses what a JSON document may not hold (docs/protocol.md,
MALFORMED_JSON) and, before it builds anything, what would take too much memory to build
(docs/protocol.md §Decoded size, SIZE_EXCEEDED). Each body is read, hashed and parsed once."""

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


class DecodedTooLarge(BodyTooLarge):
    """The body is within the byte cap but would decode to more than its memory budget."""


# --- the decoded-size budget (docs/protocol.md §Decoded size) -----------------------------------
# What json.loads builds, in bytes, on 64-bit CPython 3.11 with pymalloc, measured as the
# tracemalloc peak of a parse (the decoded text excluded), rounded up: each value slot of a list
# or object (a pointer, and a list's growth while it is appended to), each number (a float or an
# int), each object, array and string, each key (its pair tuple, dict entry and memo entry).
SLOT_COST = 16
NUMBER_COST = 32
OBJECT_COST = 64
ARRAY_COST = 56
STRING_COST = 56
KEY_COST = 128
FIXED_COST = 64 * 1024  # the decoder's own buffers, whatever the body
# A string holding a character beyond U+00FF takes 2 bytes a character (4 beyond U+FFFF), and the
# decoder's growing buffer peaks at 2.5 (7) bytes a body byte: the extra beyond the one counted.
WIDE_EXTRA = 1.5
ASTRAL_EXTRA = 6
# The decoded tree may take this many times the body, plus DECODED_ALLOWANCE: with the body and
# its decoded text while it is decoded, or the bundle's canonical bytes (text and bytes) while
# its signature is checked, that bounds a request at about 4× its body (issue 20 point 2). The
# allowance lets dense bodies of up to about 0.8 MiB (cumulative checkpoints: about 11 bytes
# decoded a body byte) through.
DECODED_FACTOR = 1
DECODED_ALLOWANCE = 8 * 1024 * 1024
# No body smaller than this can reach the budget: the costliest shape, `[{},{},…]`, builds at
# most this many bytes per body byte. Smaller bodies are not counted at all.
WORST_BYTES_PER_BYTE = 48
# The bytes the count reads; every other byte is dropped by one translate pass. The characters
# that may follow a backslash in valid JSON are kept, so that every backslash still precedes
# what it escapes.
_NOT_STRUCTURAL = bytes(sorted(set(range(256)) - set(b'{[,:"\\/bfnrtu')))
# A body whose estimate is over its limit is counted again without the structural bytes inside
# its strings (`_inside_strings`) when it holds at most this many strings: a pod's final holds a
# few thousand (174 cases, a dozen strings each), and reading them costs about 2 µs a string.
MAX_STRINGS_READ = 200_000
# A JSON string, possessively (no backtracking; an unterminated one runs to the end): linear.
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.S)
_ESCAPED_WIDE = re.compile(rb"\\u(?!00)")  # a character beyond U+00FF: 2 bytes a character


@dataclass
class DecodedEstimate:
    """An upper bound of what decoding a body builds, from counts made at C speed."""

    values: int
    objects: int
    arrays: int
    strings: int
    keys: int
    string_bytes: int
    size: int

    @property
    def bytes(self) -> int:
        numbers = max(0, self.values - self.objects - self.arrays + 1)
        return (
            FIXED_COST
            + SLOT_COST * self.values
            + NUMBER_COST * numbers
            + OBJECT_COST * self.objects
            + ARRAY_COST * self.arrays
            + STRING_COST * self.strings
            + KEY_COST * self.keys
            + self.string_bytes
        )

    @property
    def limit(self) -> int:
        return decoded_limit(self.size)


def decoded_limit(size: int) -> int:
    return int(DECODED_FACTOR * size) + DECODED_ALLOWANCE


def estimate_decoded(
    body: bytes | bytearray, *, surrogates: bool, widened: bool = True
) -> DecodedEstimate:
    """Counts of the structural bytes, strings included (an over-count, never an under-count):
    every value but the root follows a `[`, `,` or `:`; every key is a string and precedes a
    `:`; a string is two quotes that follow no lone backslash (a quote after exactly one
    backslash is escaped; in a body that is not valid JSON the decoder stops at the first
    invalid escape, before any quote such an escape could hide). Past the limit, a body of at
    most MAX_STRINGS_READ strings is counted again without the `{`, `[`, `,` and `:` inside its
    strings (still never an under-count): model output that is code or prose holds many.
    Characters beyond U+00FF (`surrogates`: beyond U+FFFF) take 2 (4) bytes each in the strings
    that hold them: when the body escapes any, those strings are measured one by one."""
    kept = body.translate(None, _NOT_STRUCTURAL)
    objects, arrays = kept.count(b"{"), kept.count(b"[")
    commas, colons, quotes = kept.count(b","), kept.count(b":"), kept.count(b'"')
    escaped = kept.count(b'\\"') - kept.count(b'\\\\"')
    strings = (quotes - escaped) // 2 + 1
    estimate = _estimate(len(body), objects, arrays, commas, colons, strings)
    if estimate.bytes > estimate.limit and strings <= MAX_STRINGS_READ:
        inside = _inside_strings(kept)
        estimate = _estimate(
            len(body),
            *(n - i for n, i in zip((objects, arrays, commas, colons), inside, strict=True)),
            strings,
        )
    del kept
    if widened and estimate.bytes <= estimate.limit and _is_wide(body, surrogates):
        estimate.string_bytes += int(_widened_bytes(body, estimate.limit - estimate.bytes))
    return estimate


def _estimate(size: int, objects, arrays, commas, colons, strings) -> DecodedEstimate:
    keys = min(colons, strings)
    values = 1 + arrays + commas + keys
    return DecodedEstimate(values, objects, arrays, strings, keys, size, size)


def _inside_strings(kept: bytes) -> tuple[int, int, int, int]:
    """How many of the structural bytes `{`, `[`, `,` and `:` of `kept` (a body's structural
    bytes) stand inside its strings, where they build nothing: code and prose in model output
    are full of them. The strings are read as the decoder reads them, left to right, one match
    and four counts at C speed each; past an invalid escape the reading may drift, but the
    decoder stops there, and nothing after it is ever built."""
    inside = [0, 0, 0, 0]
    for match in _STRING.finditer(kept):
        start, end = match.span()
        if end - start > 2:
            for position, byte in enumerate((b"{", b"[", b",", b":")):
                inside[position] += kept.count(byte, start, end)
    return tuple(inside)


def _is_wide(body, surrogates: bool) -> bool:
    return surrogates or _ESCAPED_WIDE.search(body) is not None


def _widened_bytes(body, room: int) -> float:
    """The extra bytes of the strings holding characters beyond U+00FF (WIDE_EXTRA a body byte;
    ASTRAL_EXTRA with a surrogate escape), counted up to `room` (past it the body is refused
    anyway). Each such escape is found at C speed; the string around it by walking the body's
    strings from the last one measured (a quote outside every string opens one), one match each:
    the walk reads each string once, and stops after the last wide escape."""
    extra, covered = 0.0, 0
    while extra <= room and (escape := _ESCAPED_WIDE.search(body, covered)) is not None:
        at = escape.start()
        while True:
            start = body.find(b'"', covered)
            if start < 0 or start > at:  # an escape outside every string: not JSON
                covered = at + 2
                break
            covered = _STRING.match(body, start).end()
            if covered > at:
                astral = SURROGATE_ESCAPE.search(body, start, covered) is not None
                extra += (covered - start) * (ASTRAL_EXTRA if astral else WIDE_EXTRA)
                break
    return extra


def check_decoded_size(body: bytes | bytearray, *, surrogates: bool) -> None:
    """Refuse (DecodedTooLarge) a body whose decoded tree would exceed its budget. A quick bound
    first, from three counts over the body: every key and every array item follows a `{`, `[` or
    `,`, and costs at most a key with a string value (or an item that is a string); only past the
    budget are the strings counted too (`estimate_decoded`), which bounds them far closer."""
    size = len(body)
    if size * WORST_BYTES_PER_BYTE <= DECODED_ALLOWANCE:
        return
    limit = decoded_limit(size)
    objects, arrays, commas = body.count(b"{"), body.count(b"["), body.count(b",")
    member = KEY_COST + 2 * STRING_COST + SLOT_COST
    quick = member * (1 + objects + arrays + commas) + OBJECT_COST * objects
    quick += ARRAY_COST * arrays + size + FIXED_COST
    estimate = None
    if quick > limit:
        estimate = estimate_decoded(body, surrogates=surrogates, widened=False)
        quick = estimate.bytes
    if quick <= limit and _is_wide(body, surrogates):
        quick += int(_widened_bytes(body, limit - quick))
    if quick > limit:
        counted = (
            f" ({estimate.values} values, {estimate.objects} objects, {estimate.arrays} arrays, "
            f"{estimate.strings} strings)"
            if estimate is not None
            else ""
        )
        raise DecodedTooLarge(
            f"the body would decode to about {quick // (1024 * 1024)} MiB{counted}, over the "
            f"limit of {DECODED_FACTOR} × its size + {DECODED_ALLOWANCE // (1024 * 1024)} MiB "
            f"({limit // (1024 * 1024)} MiB)"
        )


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


def parse_json(body: bytes | bytearray, *, bounded: bool = True):
    """Parse a pod body. NaN/Infinity parse (they are part of what was signed); the schema
    refuses them where a number must be finite. `bounded`: refuse (DecodedTooLarge) a body that
    would decode to more than its budget, before anything is built."""
    if body.startswith(b"\xef\xbb\xbf"):
        raise MalformedJson("body starts with a byte-order mark")
    surrogates = SURROGATE_ESCAPE.search(body) is not None
    if bounded:
        check_decoded_size(body, surrogates=surrogates)
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
    if surrogates:
        _check_texts(value)
    return value
