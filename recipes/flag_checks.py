"""The checks of a serve flag's value (docs/recipes.md §The serve-flag policy): what each entry
of an engine's list (recipes/engine_flags/) checks, and the shape of that list. A check takes
the value (None: a switch) and answers what is wrong with it, or None; a `Refusal` answer means
the value names code, a URL or a file other than the pinned ones, not merely a bad value."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from recipes.argv import BOOLEAN_WORDS, parse_count

DRAFTER_PATH = "/drafter"
MODEL_PATH = "/model"

Check = Callable[[str | None], str | None]  # the value (None: a switch) → what is wrong, or None


@dataclass(frozen=True)
class Rule:
    """How one flag is checked; `refusal` set: a value failing the check is refused outright
    (it names code, a URL or a file other than the pinned ones), not merely a bad value."""

    check: Check
    refusal: str | None = None


@dataclass(frozen=True)
class EnginePolicy:
    """An engine family's list: the flags a one-click recipe may carry, each with its rule, and
    the flags never handed out, each with why."""

    rules: dict[str, Rule]
    refused: dict[str, str]


_INT = re.compile(r"-?\d{1,12}")
_FLOAT = re.compile(r"-?(?:\d{1,12}\.?\d{0,12}|\.\d{1,12})(?:[eE][-+]?\d{1,3})?")
# A registered name (a parser, a backend, a quantisation method): no dots, no slashes, so never a
# module path or a file.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]{0,63}")
_MOUNT_PATH = re.compile(r"/(?:model|drafter)(?:/[A-Za-z0-9_.+-]+)*")


def switch(value: str | None) -> str | None:
    if value is None or value.lower() in BOOLEAN_WORDS:
        return None
    return "a switch takes no value"


def integer(low: int, high: int) -> Check:
    def check(value: str | None) -> str | None:
        if value is None or not _INT.fullmatch(value) or not low <= int(value) <= high:
            return f"a whole number from {low} to {high}"
        return None

    return check


def number(low: float, high: float, *, above_low: bool = False) -> Check:
    words = f"a number {'above' if above_low else 'from'} {low:g} {'up ' if above_low else ''}to {high:g}"

    def check(value: str | None) -> str | None:
        if value is None or not _FLOAT.fullmatch(value):
            return words
        parsed = float(value)
        if not math.isfinite(parsed) or parsed > high or parsed < low:
            return words
        if above_low and parsed == low:
            return words
        return None

    return check


def size(high: int) -> Check:
    def check(value: str | None) -> str | None:
        count = parse_count(value)
        if count is None or count > high:
            return f"a token count up to {high}"
        return None

    return check


def choice(*values: str, any_case: bool = False) -> Check:
    allowed = {v.lower() for v in values} if any_case else set(values)

    def check(value: str | None) -> str | None:
        if value is None or (value.lower() if any_case else value) not in allowed:
            return "one of " + ", ".join(values)
        return None

    return check


def name(value: str | None) -> str | None:
    if value is None or not _NAME.fullmatch(value):
        return "a registered name (letters, digits, _ + -)"
    return None


def matching(pattern: str, words: str) -> Check:
    compiled = re.compile(pattern)

    def check(value: str | None) -> str | None:
        return None if value is not None and compiled.fullmatch(value) else words

    return check


def mount_path(*, files_only: bool = False, roots: tuple[str, ...] = (MODEL_PATH, DRAFTER_PATH)):
    """The model's or the drafter's own files (the container mounts), nothing else."""

    def check(value: str | None) -> str | None:
        ok = (
            value is not None
            and _MOUNT_PATH.fullmatch(value) is not None
            and ".." not in value.split("/")
            and any(value == root or value.startswith(root + "/") for root in roots)
            and not (files_only and value in roots)
        )
        return None if ok else "only the model's or the drafter's own pinned files"

    return check


def either(*checks: Check) -> Check:
    def check(value: str | None) -> str | None:
        problems = [c(value) for c in checks]
        return None if None in problems else " or ".join(p for p in problems if p)

    return check


def _scalar_json(value) -> bool:
    """Numbers, booleans, null and registered names: nothing a loader could follow."""
    if value is None or isinstance(value, bool | int | float):
        return not isinstance(value, float) or math.isfinite(value)
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def _plain_json(value, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, dict):
        return all(
            _NAME.fullmatch(str(key)) and _plain_json(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return len(value) <= 64 and all(_plain_json(item, depth + 1) for item in value)
    return _scalar_json(value)


def json_object(keys: dict[str, Check] | None = None) -> Check:
    """A JSON object; with `keys`, only those keys, each value checked (as JSON text); without,
    any keys holding plain values (numbers, booleans, registered names)."""

    def check(value: str | None) -> str | None:
        try:
            parsed = json.loads(value) if value is not None else None
        except ValueError:
            return "a JSON object"
        if not isinstance(parsed, dict):
            return "a JSON object"
        if keys is None:
            return None if _plain_json(parsed) else "a JSON object of plain values"
        for key, item in parsed.items():
            if key not in keys:
                return f"a JSON object whose keys are among {', '.join(sorted(keys))}"
            text = item if isinstance(item, str) else json.dumps(item)
            problem = keys[key](text)
            if problem:
                return f"{key}: {problem}"
        return None

    return check


def json_plain(value: str | None) -> str | None:
    """A JSON value of plain values, for keys nested in a config."""
    try:
        parsed = json.loads(value) if value is not None else None
    except ValueError:
        parsed = value  # a bare string leaf
    return None if _plain_json(parsed) else "plain values only"


def json_int(low: int, high: int) -> Check:
    inner = integer(low, high)
    return lambda value: inner(value)


def json_bool(value: str | None) -> str | None:
    return None if value in ("true", "false") else "true or false"


class Refusal(str):
    """A check's answer meaning the value is refused outright (it names code), not just bad."""


def _has_code_keys(value, depth: int = 0) -> bool:
    """A config naming code: `auto_map` (classes to import from a repo), a class or module path."""
    if depth > 8:
        return True
    if isinstance(value, dict):
        return any(
            str(key).lower() in CODE_KEYS or _has_code_keys(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_has_code_keys(item, depth + 1) for item in value)
    return False


CODE_KEYS = frozenset({"auto_map", "trust_remote_code", "code_revision", "tokenizer_class"})


HF_OVERRIDE_KEYS = {
    "rope_scaling": json_plain,
    "rope_parameters": json_plain,
    "rope_theta": number(0, 1e12),
    "max_position_embeddings": integer(1, 16 * 1024 * 1024),
    "sliding_window": integer(0, 16 * 1024 * 1024),
    "use_sliding_window": json_bool,
    "max_window_layers": integer(0, 4096),
}


def hf_overrides(value: str | None) -> str | None:
    """Overrides of the model's config: a few numeric keys, never `auto_map` (which makes the
    loader import classes from the repository it names) nor anything naming a repo or a class."""
    try:
        parsed = json.loads(value) if value is not None else None
    except ValueError:
        return "a JSON object"
    if _has_code_keys(parsed):
        return REFUSE_CODE
    return json_object(HF_OVERRIDE_KEYS)(value)


REFUSE_CODE = Refusal("loads code: the config names classes to import (auto_map)")


# Sizes shared by the engines' lists.
TOKENS = 16 * 1024 * 1024
SEQS = integer(1, 65536)
DEVICES = integer(1, 64)
ANY_INT = integer(-(2**31), 2**32)
FRACTION = number(0, 1, above_low=True)
