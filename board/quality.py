"""Quality scores of a run: text categories and composite (docs/trust-and-ranking.md §Quality scoring), coverage (§Coverage),
and the agentic harness score. Pure Python: no Django, no DB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

CATEGORIES = ("Math", "Instruction", "Reasoning", "Coding", "Prose")

# A judge was needed and never came: out of the denominator, counted as pending.
PENDING_STATUSES = frozenset({"needs_frontier_judge", "tier1_pending", "tier2_arena"})
NO_ANSWER_WEIGHT = 0.25

_BY_LOWER = {name.lower(): name for name in CATEGORIES}


@dataclass(frozen=True)
class CategoryScore:
    """One category of a text run.

    `answered` = rows with a score (a no-answer row scored 0.0 included); `no_answer` = no-answer
    rows with a null score (the ones weighted ¼); `pending` = judge never came; `excluded` =
    other unscored rows (error, harness_error, killed_resource_limit, na_capability, …), which,
    like pending rows, stay out of the score and out of the coverage.
    """

    category: str
    score: float | None
    answered: int
    no_answer: int
    pending: int
    cases: int
    excluded: int = 0


@dataclass(frozen=True)
class QualitySummary:
    categories: tuple[CategoryScore, ...]
    composite: float | None
    covered: int
    suite_cases: int | None
    coverage_ratio: float | None
    coverage_label: str


def score_text_run(rows: list[dict], suite_cases: int | None) -> QualitySummary:
    """Category scores, composite and coverage of a text run's result rows.

    Category score = 100 × Σ scores ÷ (answered + ¼ × no-answer rows with null score).
    A case id sent twice counts once (the last row wins), so coverage never exceeds the suite.
    Rows outside the five categories are ignored. Raises ValueError on an invalid score.
    """
    latest: dict[Any, dict] = {}
    for index, row in enumerate(rows):
        latest[row.get("case_id", index)] = row

    tallies = {
        name: {"sum": 0.0, "answered": 0, "no_answer": 0, "pending": 0, "excluded": 0, "cases": 0}
        for name in CATEGORIES
    }
    for row in latest.values():
        category = category_of(row)
        if category is None:
            continue
        tally = tallies[category]
        tally["cases"] += 1
        score = _checked_score(row)
        status = row.get("status")
        if score is not None:
            tally["sum"] += score
            tally["answered"] += 1
        elif status == "no_answer":
            tally["no_answer"] += 1
        elif status in PENDING_STATUSES:
            tally["pending"] += 1
        else:
            tally["excluded"] += 1

    categories = tuple(
        CategoryScore(
            category=name,
            score=_category_score(t["sum"], t["answered"], t["no_answer"]),
            answered=t["answered"],
            no_answer=t["no_answer"],
            pending=t["pending"],
            cases=t["cases"],
            excluded=t["excluded"],
        )
        for name, t in tallies.items()
    )
    scores = [c.score for c in categories]
    composite = None if any(s is None for s in scores) else sum(scores) / len(scores)
    covered = sum(c.answered + c.no_answer for c in categories)
    return QualitySummary(
        categories=categories,
        composite=composite,
        covered=covered,
        suite_cases=suite_cases,
        coverage_ratio=covered / suite_cases if suite_cases else None,
        coverage_label=f"{covered}/{suite_cases} cases" if suite_cases else f"{covered} cases",
    )


def score_agentic(rows: list[dict]) -> float | None:
    """Harness score 0..100: mean score × 100 of the scored task rows (setup probes excluded)."""
    scores = [
        score
        for row in rows
        if not str(row.get("case_id", "")).startswith("agentic.setup.")
        and (score := _checked_score(row)) is not None
    ]
    return 100 * sum(scores) / len(scores) if scores else None


def category_of(row: dict) -> str | None:
    """The row's category (case-insensitive), else the case id's second part (`v4.math.easy.01`)."""
    named = _BY_LOWER.get(str(row.get("category") or "").lower())
    if named:
        return named
    parts = str(row.get("case_id") or "").split(".")
    return _BY_LOWER.get(parts[1].lower()) if len(parts) > 1 else None


def _category_score(total: float, answered: int, no_answer: int) -> float | None:
    denominator = answered + NO_ANSWER_WEIGHT * no_answer
    return 100 * total / denominator if denominator else None


def _checked_score(row: dict) -> float | None:
    # Ingest refuses these; a bad score reaching here is a bug, so fail loudly.
    score = row.get("score")
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ValueError(f"{row.get('case_id')}: score must be a number, got {score!r}")
    if not math.isfinite(score) or not 0 <= score <= 1:
        raise ValueError(f"{row.get('case_id')}: score {score!r} is outside [0, 1]")
    return float(score)
