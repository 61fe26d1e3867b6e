"""Server-side grading and suite integrity (docs/trust-and-ranking.md §Server-side grading).

The board keeps each known text suite's cases as data (`board/suite_data/<suite_id>.json`, taken
from the pod's own suite: see the NOTICE beside them): ids, categories, difficulties, tiers and
the deterministic checkers of every case. From the raw output a pod sends with each row it
grades again every case whose checkers are deterministic and linear-time — numeric tolerance,
exact match, regular-expression constraints (run by RE2, so no pattern and no output can take
more than linear time) and structural counts — and compares its grading with the pod's scores.
Cases that run code (unit tests), need a judge (tier 1 rubrics) or use a pattern RE2 cannot run
(look-around, back-references) stay the pod's word, and the page says so.

Pure Python (plus google-re2): no Django, no database; the demo generator imports it too.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

import re2

from board.jsonsafe import storable
from board.quality import CATEGORIES, score_text_run
from evidence.signing import json_encoder

SUITE_DATA_DIR = Path(__file__).resolve().parent / "suite_data"

# The composite the board grades may differ from the pod's by this much before the run is
# marked: the checkers are the pod's, re-implemented, and a Unicode corner case may fall either
# way on one or two cases (one case of a 34-case category moves the composite 0.6 points).
GRADING_TOLERANCE_POINTS = 1.0
# A cell (category × difficulty) counts as covered when at least this share of its cases,
# rounded down, has an answered or no-answer row: no tier can be dropped whole.
CELL_COVERAGE = 0.9
BOARD_CHECKERS = frozenset(
    {"numeric_tolerance", "exact_match", "regex_constraint", "structural_count"}
)
# RE2 grows a pattern's automaton up to this many bytes; a larger pattern is not run.
_RE2_MAX_MEM = 8 << 20


@dataclass(frozen=True)
class Case:
    case_id: str
    category: str
    difficulty: str
    tier: int
    checkers: tuple[dict, ...]
    combine: str
    # "board": the board grades it; else why it stays the pod's word.
    graded_by: str

    @property
    def board_grades(self) -> bool:
        return self.graded_by == "board"


@dataclass(frozen=True)
class SuiteCases:
    suite_id: str
    hashes: frozenset[str]
    difficulties: tuple[str, ...]
    cases: dict[str, Case]
    cells: dict[tuple[str, str], int]  # (category, difficulty) → number of cases

    @property
    def case_count(self) -> int:
        return len(self.cases)

    def categories(self) -> dict[str, int]:
        counts = Counter(case.category for case in self.cases.values())
        return {name: counts[name] for name in CATEGORIES if counts[name]}


def known_suite_ids() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in SUITE_DATA_DIR.glob("*.json")))


@cache
def suite_cases(suite_id: str | None) -> SuiteCases | None:
    """The case table of a suite the board holds as data, or None."""
    if not suite_id or suite_id not in known_suite_ids():
        return None
    data = json.loads((SUITE_DATA_DIR / f"{suite_id}.json").read_text(encoding="utf-8"))
    cases = {}
    for item in data["cases"]:
        checkers = tuple(item.get("checkers") or ())
        cases[item["id"]] = Case(
            case_id=item["id"],
            category=item["category"],
            difficulty=item["difficulty"],
            tier=item["tier"],
            checkers=checkers,
            combine=item.get("combine") or "all",
            graded_by=_graded_by(item["tier"], checkers),
        )
    cells = Counter((case.category, case.difficulty) for case in cases.values())
    return SuiteCases(
        suite_id=data["suite_id"],
        hashes=frozenset(data.get("hashes") or ()),
        difficulties=tuple(data["difficulties"]),
        cases=cases,
        cells=dict(cells),
    )


def _graded_by(tier: int, checkers: tuple[dict, ...]) -> str:
    if tier != 0 or not checkers:
        return "judged"  # a rubric: a judge decides (some criteria by program, on the pod)
    if any(checker.get("type") == "unit_test" for checker in checkers):
        return "unit_test"  # runs the model's code: the board runs no code
    if any(checker.get("type") not in BOARD_CHECKERS for checker in checkers):
        return "unknown_checker"
    for checker in checkers:
        if checker["type"] == "regex_constraint" and _pattern(checker) is None:
            return "pattern"  # look-around or back-reference: RE2 cannot run it
    return "board"


# --- the checkers, as the suite defines them (re-implemented; RE2 for every pattern) -----------


@cache
def _compiled(pattern: str, ignore_case: bool):
    options = re2.Options()
    options.max_mem = _RE2_MAX_MEM
    options.case_sensitive = not ignore_case
    options.log_errors = False
    try:
        return re2.compile(_as_re2(pattern), options)
    except re2.error:
        return None


def _pattern(checker: dict):
    if checker.get("linear") is False:
        return None
    return _compiled(checker["pattern"], bool(checker.get("ignore_case", True)))


def _as_re2(pattern: str) -> str:
    r"""Python's `\Z` (end of text) is RE2's `\z`; every other escape means the same."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            out.append("\\z" if pattern[i + 1] == "Z" else pattern[i : i + 2])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


# The two fixed patterns every numeric case reads run on Python's engine: RE2's Python binding
# makes a Python call per match and per search (for the 174 cases of a 0.2 MiB final, grading
# took 4.8-5.9 ms on RE2 against 3.2-3.5 ms here). Both are linear with backtracking too: one
# quantifier over a class, then an optional tail (or a literal) the class cannot match, so a
# failed try gives back one character (tests/test_linear_scanning.py). Their classes spell
# RE2's: ASCII digits, and `\s` as tab, newline, form feed, carriage return and space.
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_BOXED = re.compile(r"\\boxed[\t\n\f\r ]*\{")
_BRACE = re.compile(r"[{}]")
_ANSWER_TAG = _compiled(r"(?s)<answer>\s*(.*?)\s*</answer>", True)
_STANZA_BREAK = _compiled(r"\n[ \t]*\n+", False)
_SENTENCE_END = _compiled(r"[.!?]+(?:\s|$)", False)
_WHITESPACE = _compiled(r"\s+", False)
_ANSWER_LEAD = _compiled(
    r"^(?:the\s+)?(?:final\s+)?(?:answer|result|output|solution)\s*(?:is)?\s*[:\-\x{2014}]?\s*",
    True,
)


def boxed_answer(text: str) -> str | None:
    """The content of the last `\\boxed{…}` whose braces balance, else of the last <answer>
    tag. The braces are matched in one pass, on a stack: each box's closing brace is found when
    its opening one is taken off. (Scanning forward from each box for its closing brace was
    quadratic: an output of `\\boxed{1` repeated, its braces never closed, took 29 s at 40,000
    characters.)"""
    openers = {match.end() - 1 for match in _BOXED.finditer(text)}
    latest = None  # the balanced box that opens last: (its opening brace, its closing one)
    if openers:
        open_braces = []
        for brace in _BRACE.finditer(text):
            at = brace.start()
            if text[at] == "{":
                open_braces.append(at)
            elif open_braces:
                opened = open_braces.pop()
                if opened in openers and (latest is None or opened > latest[0]):
                    latest = (opened, at)
    if latest is not None:
        return text[latest[0] + 1 : latest[1]].strip()
    tags = list(_ANSWER_TAG.finditer(text))
    return tags[-1].group(1).strip() if tags else None


def _numbers(text: str) -> set[float]:
    found = set()
    for token in _NUMBER.findall(text.replace("\u2212", "-")):
        value = float(token)
        if math.isfinite(value):
            found.add(round(value, 6))
    return found


@lru_cache(maxsize=4096)
def _wanted_numbers(value: str) -> frozenset[float]:
    """A numeric checker's own numbers: the suite's, the same for every run graded."""
    return frozenset(_numbers(value))


def _numeric(candidate: str, checker: dict) -> bool:
    slot = boxed_answer(candidate)
    got = _numbers(slot if slot is not None else candidate)
    want = _wanted_numbers(str(checker["value"]))
    if checker.get("as_set"):
        return got == want
    return bool(want) and want <= got and len(got) <= len(want) + 1


_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u2009": " ",
        "\u2026": "...",
    }
)  # fmt: skip
_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))


# RE2's `\s` (ASCII only: tab, newline, form feed, carriage return, space), each made a space.
_ASCII_SPACES = str.maketrans(dict.fromkeys("\t\n\f\r", " "))


def _fold(text: str) -> str:
    r"""NFKC, typography to ASCII, every run of RE2's `\s` one space, trimmed: what
    `_WHITESPACE.sub(" ", text).strip()` gives, with string methods. RE2's Python `sub` makes a
    Python call per match: 1.7 ms for a 2.4 KB output with 400 runs of spaces against 0.02 ms
    here, and the 174 cases of a text final fold some outputs several times each."""
    text = unicodedata.normalize("NFKC", text or "").translate(_TYPOGRAPHY)
    return " ".join(filter(None, text.translate(_ASCII_SPACES).split(" "))).strip()


def _undecorate(text: str) -> str:
    """Take off what wraps an answer (a fence, "Answer:", emphasis, quotes, one full stop), layer
    by layer, at most six layers; applied to both sides of an exact match."""
    text = (text or "").strip()
    for _ in range(6):
        before = text
        if text.startswith("```") and text.endswith("```") and len(text) >= 6:
            inner, i = text[3:-3], 0
            while (
                i < len(inner) and inner[i].isascii() and (inner[i].isalnum() or inner[i] in "_+-")
            ):
                i += 1  # the fence's language tag
            text = inner[i:].strip()
        text = _ANSWER_LEAD.sub("", text, count=1).strip()
        for width in (3, 2, 1):
            lead = text[:width]
            if len(text) > 2 * width and lead and set(lead) <= set("*_`") and text.endswith(lead):
                text = text[width:-width].strip()
                break
        for opening, closing in _QUOTES:
            if len(text) > 1 and text[0] == opening and text[-1] == closing:
                text = text[1:-1].strip()
                break
        if text.endswith(".") and not text.endswith(".."):
            text = text[:-1].rstrip()
        if text == before:
            break
    return text


def _exact(candidate: str, checker: dict) -> bool:
    value = str(checker["value"])
    if checker.get("normalize", True) is False:
        return candidate == value
    lower = checker.get("ignore_case", True)

    def norm(text: str) -> str:
        folded = _fold(_undecorate(text))
        return folded.lower() if lower else folded

    want = norm(value)
    if norm(candidate) == want:
        return True
    if "\n" not in value.strip():  # a one-line answer may close a longer reply
        lines = [line for line in candidate.splitlines() if line.strip()]
        return any(norm(line) == want for line in lines[-3:])
    return False


def _regex(candidate: str, checker: dict) -> bool:
    found = _pattern(checker).search(candidate.strip()) is not None
    return found if checker.get("mode", "must_match") == "must_match" else not found


def _units(text: str, unit: str) -> int:
    text = text.strip()
    if unit == "line":
        parts = text.splitlines()
    elif unit == "stanza":
        parts = _STANZA_BREAK.split(text)
    elif unit == "sentence":
        parts = _SENTENCE_END.split(text)
    else:
        raise ValueError(unit)
    return sum(1 for part in parts if part and part.strip())


_COMPARE = {
    "==": lambda a, b: a == b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


def _structural(candidate: str, checker: dict) -> bool:
    return _COMPARE[checker.get("op", "==")](_units(candidate, checker["unit"]), checker["n"])


_CHECK = {
    "numeric_tolerance": _numeric,
    "exact_match": _exact,
    "regex_constraint": _regex,
    "structural_count": _structural,
}


def grade_case(case: Case, output: str) -> float | None:
    """The board's score of one output for one case (0..1), or None: the pod's word."""
    if not case.board_grades:
        return None
    satisfied = []
    for checker in case.checkers:
        try:
            satisfied.append(bool(_CHECK[checker["type"]](output or "", checker)))
        except (KeyError, TypeError, ValueError):
            satisfied.append(False)  # a malformed output or spec satisfies nothing
    if case.combine == "any":
        return 1.0 if any(satisfied) else 0.0
    if case.combine == "fraction":
        return sum(satisfied) / len(satisfied)
    return 1.0 if all(satisfied) else 0.0


# --- a text run against its suite ------------------------------------------------------------


@dataclass
class TextCheck:
    """What the board found checking a text run against its suite's own cases."""

    rows: list[dict]  # the rows of the suite's cases (category from the suite), the pod's scores
    board_rows: list[dict]  # the same with the board's grades where it grades
    unknown_ids: list[str] = field(default_factory=list)
    hash_known: bool = False
    regraded: int = 0
    disagreements: list[dict] = field(default_factory=list)
    pods_word: dict[str, int] = field(default_factory=dict)  # why → rows taken at the pod's word
    cells_short: list[dict] = field(default_factory=list)  # cells below CELL_COVERAGE


def check_text_run(suite: SuiteCases, suite_hash: str | None, rows: list[dict]) -> TextCheck:
    latest: dict[str, dict] = {}
    unknown: list[str] = []
    for row in rows:
        case_id = row.get("case_id")
        case = suite.cases.get(case_id) if isinstance(case_id, str) else None
        if case is None:
            unknown.append(str(case_id))
        else:
            latest[case_id] = row | {"category": case.category}
    check = TextCheck(rows=[], board_rows=[], unknown_ids=unknown)
    check.hash_known = isinstance(suite_hash, str) and suite_hash.lower() in suite.hashes
    covered: Counter = Counter()
    pods_word: Counter = Counter()
    for case_id, row in latest.items():
        case = suite.cases[case_id]
        check.rows.append(row)
        claimed = row.get("score")
        if claimed is not None or row.get("status") == "no_answer":
            covered[(case.category, case.difficulty)] += 1
        if claimed is None or isinstance(claimed, bool) or not isinstance(claimed, int | float):
            check.board_rows.append(row)
            continue
        graded = grade_case(
            case, row.get("raw_output") if isinstance(row.get("raw_output"), str) else ""
        )
        if graded is None:
            pods_word[case.graded_by] += 1
            check.board_rows.append(row)
            continue
        check.regraded += 1
        check.board_rows.append(row | {"score": graded})
        if abs(graded - float(claimed)) > 1e-6:
            check.disagreements.append({"case_id": case_id, "pod": float(claimed), "board": graded})
    check.pods_word = dict(pods_word)
    for (category, difficulty), size in sorted(suite.cells.items()):
        need = math.floor(CELL_COVERAGE * size + 1e-9)
        if covered[(category, difficulty)] < need:
            check.cells_short.append(
                {
                    "category": category,
                    "difficulty": difficulty,
                    "covered": covered[(category, difficulty)],
                    "cases": size,
                }
            )
    return check


def text_quality(suite: SuiteCases, suite_hash: str | None, rows: list[dict]) -> dict:
    """The quality JSON of a text run of a suite the board holds: the pod's scores over the suite's
    own cases, and the board's grading beside them (docs/trust-and-ranking.md §Server-side
    grading)."""
    check = check_text_run(suite, suite_hash, rows)
    claimed = score_text_run(check.rows, suite.case_count)
    board = score_text_run(check.board_rows, suite.case_count)
    if claimed.composite is not None and board.composite is not None:
        gap = abs(claimed.composite - board.composite)
    else:
        gaps = [
            abs(a.score - b.score)
            for a, b in zip(claimed.categories, board.categories, strict=True)
            if a.score is not None and b.score is not None
        ]
        gap = max(gaps, default=0.0)
    return {
        "composite": claimed.composite,
        "coverage_label": claimed.coverage_label,
        "coverage_ratio": claimed.coverage_ratio,
        "covered": claimed.covered,
        "suite_cases": claimed.suite_cases,
        "categories": [
            {
                "category": c.category,
                "score": c.score,
                "answered": c.answered,
                "no_answer": c.no_answer,
                "pending": c.pending,
                "cases": c.cases,
                "board_score": b.score,
            }
            for c, b in zip(claimed.categories, board.categories, strict=True)
        ],
        "grading": {
            "suite_hash_known": check.hash_known,
            "board_composite": board.composite,
            "gap": gap,
            "disputed": gap > GRADING_TOLERANCE_POINTS,
            "regraded": check.regraded,
            "disagreements": len(check.disagreements),
            "disagreeing_cases": check.disagreements[:20],
            "pods_word": check.pods_word,
            "unknown_ids": len(check.unknown_ids),
            "unknown_examples": storable(check.unknown_ids[:5]),  # a pod's id may hold a NUL
            "cells_short": check.cells_short,
            "tiers_complete": not check.cells_short,
        },
    }


# json.dumps(part, sort_keys=True, default=str), its encoder made once (a part per row).
_DIGEST_JSON = json_encoder(sort_keys=True, compact=False, default=str)


def evidence_digest(rows: list[dict]) -> str:
    """A run's per-case evidence — each row's case, output, timings and evidence — as one hash: a
    run signed again by another key carries the same (docs/champions.md §Reproductions)."""
    import hashlib

    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda row: str(row.get("case_id"))):
        part = [row.get(name) for name in ("case_id", "raw_output", "speed", "evidence", "score")]
        digest.update(_DIGEST_JSON(part).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:32]
