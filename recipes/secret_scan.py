"""Finding secrets in what pods send (docs/recipes.md, "Secrets"): a bundle holding a
token-looking string anywhere is withheld from public view until a moderator clears it. Only
where it sits (a JSON pointer) is ever reported, never the value.

One pass over every string and key of the bundle. Two depths of looking:
- everywhere (model output and artifact HTML included): prefixed tokens (`hf_…`, `sk-…`,
  `ghp_…`, `github_pat_…`, `AKIA…`, `xox?-…`): one regex whose possible first characters let
  the engine skip most of the text (about 0.2–0.4 s for 64 MiB of artifact HTML here);
- in what the operator's machine wrote (recipe, environment, manifest, unknown keys — every key
  but `results` and `artifacts`): also credential-named keys and flags, `NAME_TOKEN=value`
  assignments and long random-looking strings. Model completions and generated HTML are left
  out of these: base64 images and long identifiers are normal there and would withhold honest
  runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

TOKEN_PATTERNS = (
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"sk-[A-Za-z0-9_\-]{20,}",  # OpenAI-style keys
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{40,}",  # GitHub fine-grained tokens
    r"AKIA[0-9A-Z]{16}",  # AWS access key ids
    r"xox[abeprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
)
PREFIXED_TOKEN = re.compile("|".join(TOKEN_PATTERNS))
_TOKEN_KINDS = tuple(re.compile(pattern) for pattern in TOKEN_PATTERNS)
# One pattern per kind of token, over strings and over JSON text (bytes), each starting with a
# literal prefix the engine skips to (one pattern with alternatives tests every byte; bytes.find
# is slower still); over JSON text, also the only escapes that can spell a token character: \u0020–\u007f (no other JSON escape
# turns into a token character).
#
# Linear time (docs/recipes.md §Secrets): a token's characters are one character class run
# to its end, so a token of one kind that begins inside a match of the same kind ends where
# that match ends and holds a subset of its characters. It cannot be a key where the longer
# match was a placeholder: the search for a kind goes on from the end of its last match, never
# from inside it (`sk-sk-sk-…` is read once, not once per prefix).
_TOKEN_PATTERNS_BYTES = tuple(re.compile(pattern.encode()) for pattern in TOKEN_PATTERNS)
_ESCAPED_ASCII = re.compile(rb"\\u00[2-7]")
PLACEHOLDER_DISTINCT = 6  # "sk-xxxxxxxxxxxxxxxxxxxx" is an example, not a key

CREDENTIAL_NAME = re.compile(
    r"(?:^|[_\-])(?:token|secret|password|passwd|api[_\-]?key|access[_\-]?key|credentials?)"
    r"(?:$|[_\-])",
    re.IGNORECASE,
)
CREDENTIAL_FLAGS = frozenset(
    {
        "--api-key",
        "--hf-token",
        "-hft",
        "--token",
        "--access-token",
        "--auth-token",
        "--admin-api-key",
        "--password",
        "--secret",
    }
)
# `NAME_TOKEN=value`: a whole word of letters and underscores naming a credential, then `=` or
# `:` and a value of 8 or more characters. In linear time: the word is matched from its first
# letter only (no word starts inside a word), the value is only looked ahead at (8 characters
# are enough to decide), and the name is searched for in the word afterwards.
_ASSIGNMENT = re.compile(
    r"(?<!\w)([A-Za-z_]+)(?=\s*[=:]\s*['\"]?[^\s'\"]{8})",
    re.IGNORECASE,
)
_CREDENTIAL_WORD = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|ACCESS_KEY", re.IGNORECASE)
_INLINE_FLAG = re.compile(
    r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:=|\s+)['\"]?([^\s'\"]+)",
)
# Long random-looking strings: 32+ letters and digits in one run.
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{32,}")  # from a run's first character
_HEX = re.compile(r"[0-9a-fA-F]+")
MIN_CLASS_CHANGES = 0.3  # share of neighbouring characters of different kinds (a-z, A-Z, 0-9)
MAX_POINTERS = 50
SKIPPED_KEYS = ("run_id", "run_nonce")  # protocol identifiers, random by design
MODEL_OUTPUT_KEYS = ("results", "artifacts")


def looks_like_token(text: str, *, operator: bool = True) -> bool:
    """A prefixed token anywhere; in operator-written text also a long random-looking run."""
    if _prefixed_token(text):
        return True
    return operator and _long_random_run(text)


def is_credential_name(name: str) -> bool:
    """A key or flag name that holds a credential (`hf_token`, `--api-key`, `AWS_SECRET`)."""
    if len(name) > REMEMBERED_NAME_CHARS:
        return _credential_name(name)
    return _remembered_credential_name(name)


def _credential_name(name: str) -> bool:
    return name.lower() in CREDENTIAL_FLAGS or bool(CREDENTIAL_NAME.search(name.lstrip("-")))


# The same few key and flag names come back in every bundle: short ones are judged once.
REMEMBERED_NAME_CHARS = 128
_remembered_credential_name = lru_cache(maxsize=4096)(_credential_name)


def find_bundle_secrets(
    bundle: dict, rows: Iterable[dict] | None = None, *, model_output_clean: bool = False
) -> list[str]:
    """Every string of a bundle: its keys, known or not, and `rows` in place of its results (the
    final's rows merged with the checkpoint-only ones).

    `model_output_clean`: the caller found, with `json_may_hold_token` over the JSON texts the
    bundle and rows were parsed from, that none of their strings holds a prefixed token. Model
    output (results, artifacts), where nothing else is looked for, is then not walked again,
    and the operator's strings are not searched for prefixed tokens again: the one pass over
    every string was the pass over the text."""
    found: list[str] = []
    tokens = not model_output_clean
    for key, value in bundle.items():
        if key in SKIPPED_KEYS or (key == "results" and rows is not None):
            continue
        where = "/" + _part(key)
        operator = key not in MODEL_OUTPUT_KEYS
        if (tokens and _prefixed_token(key)) or (operator and _operator_string_hit(key)):
            found.append("/(key)")
        if operator or tokens:
            _scan(value, where, operator, found, tokens=tokens)
    if rows is not None and not model_output_clean:
        _scan(list(rows), "/results", False, found)
    return sorted(set(found))[:MAX_POINTERS]


def json_may_hold_token(text: bytes | bytearray | str) -> bool:
    """Whether a string or key of this JSON text may hold a prefixed token once decoded. One
    pass over the text instead of a walk over every decoded string: a token is spelled out in
    the text itself, since no escape but \\u0020–\\u007f makes a token character (false is
    exact; true only means: walk the decoded strings to find where)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if _ESCAPED_ASCII.search(data):
        return True
    return _holds_token(_TOKEN_PATTERNS_BYTES, data)


def _scan(value, pointer: str, operator: bool, found: list[str], *, tokens: bool = True) -> None:
    """`tokens`: False when no string below can hold a prefixed token (already looked for)."""
    stack = [(value, pointer, None)]
    while stack:
        item, where, key = stack.pop()
        if isinstance(item, str):
            if _string_hit(item, key, operator, tokens):
                found.append(where)
        elif isinstance(item, dict):
            for child_key, child in item.items():
                name = str(child_key)
                if (tokens and _prefixed_token(name)) or (operator and _long_random_run(name)):
                    found.append(f"{where}/(key)")
                    name = "(key)"
                stack.append((child, f"{where}/{_part(name)}", name))
        elif isinstance(item, list):
            previous = None
            for index, child in enumerate(item):
                if (
                    operator
                    and isinstance(previous, str)
                    and previous.lower() in CREDENTIAL_FLAGS
                    and isinstance(child, str)
                    and child
                    and not child.startswith("-")
                ):
                    found.append(f"{where}/{index}")
                else:
                    stack.append((child, f"{where}/{index}", None))
                previous = child


def _string_hit(text: str, key: str | None, operator: bool, tokens: bool = True) -> bool:
    if tokens and _prefixed_token(text):
        return True
    if not operator:
        return False
    if key is not None and len(text) >= 8 and is_credential_name(key):
        return True
    return _operator_string_hit(text)


def _operator_string_hit(text: str) -> bool:
    if _long_random_run(text):
        return True
    if ("=" in text or ":" in text) and _credential_assignment(text):
        return True
    if ("-" in text and " " in text) or "=" in text:
        for match in _INLINE_FLAG.finditer(text):
            if match.group(1).lower() in CREDENTIAL_FLAGS and not match.group(2).startswith("-"):
                return True
    return False


def _credential_assignment(text: str) -> bool:
    return any(_CREDENTIAL_WORD.search(word[1]) for word in _ASSIGNMENT.finditer(text))


def _prefixed_token(text: str) -> bool:
    return _holds_token(_TOKEN_KINDS, text)


def _holds_token(patterns, text) -> bool:
    """Whether a match of one of `patterns` has enough distinct characters to be a key. Per
    kind, the search goes on from where its last match ended (linear time: a prefix inside that
    match is no key either, see _TOKEN_PATTERNS_BYTES); the engine skips to each prefix."""
    for pattern in patterns:
        match = pattern.search(text)
        while match:
            if len(set(match.group(0)[3:])) >= PLACEHOLDER_DISTINCT:
                return True
            match = pattern.search(text, match.end())
    return False


def _long_random_run(text: str) -> bool:
    if len(text) < 32:
        return False
    for match in _LONG_RUN.finditer(text):
        run = match.group(0)
        if _HEX.fullmatch(run):
            continue  # digests, commits, ids: hex is everywhere in bundles
        if run.isalpha() or run.isdigit():
            continue
        changes = sum(1 for a, b in zip(run, run[1:], strict=False) if _kind(a) != _kind(b))
        if changes >= MIN_CLASS_CHANGES * (len(run) - 1):
            return True
    return False


def _kind(char: str) -> int:
    return 0 if char.isdigit() else (1 if char.isupper() else 2)


def _part(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
