"""What every part of the demo generator shares: the text suite as the board holds it, the
stable randomness (one `random.Random` per model, seed and section), the fitting of scores to
a target, and the HTML page of an artifact."""

from __future__ import annotations

import hashlib
import random

from board.grading import grade_case, suite_cases
from demo.catalogue import (
    AGENTIC_GOD_TASKS,
    AGENTIC_TASKS,
    TEXT_ANSWERS,
    TEXT_SUITE_ID,
    DemoModel,
)

SUITE = suite_cases(TEXT_SUITE_ID)  # the suite the board holds as data (board/suite_data/)


def text_cases() -> list[tuple[str, str, str]]:
    return [(case.case_id, case.category, case.difficulty) for case in SUITE.cases.values()]


def suite_case_ids() -> list[str]:
    """The 174 case ids of aeon-suite-v4, in suite order (category, difficulty, number)."""
    return list(SUITE.cases)


SUITE_HASH = sorted(SUITE.hashes)[0]  # the pod's suite_hash of that suite

# What a wrong answer looks like: the first of these the board grades 0 for the case.
_WRONG_ANSWERS = ("I am not sure.", "\\boxed{0}", "\\boxed{-1}")


def graded_output(case_id: str, passed: bool) -> str:
    """An output the board grades as the demo scores it: the case's right answer, or a wrong one."""
    case = SUITE.cases[case_id]
    candidates = (TEXT_ANSWERS[case_id],) if passed else _WRONG_ANSWERS
    for output in candidates:
        if grade_case(case, output) == (1.0 if passed else 0.0):
            return output
    raise ValueError(f"{case_id}: no demo output grades {'right' if passed else 'wrong'}")


def agentic_task_ids() -> list[str]:
    """The 31 task ids of aeon-agentic-v2.5 (the per-harness setup row comes on top)."""
    regular = [f"av2-{i:02d}-{slug}" for i, (slug, _, _) in enumerate(AGENTIC_TASKS, 1)]
    god = [f"av2-god-{i:02d}-{slug}" for i, (slug, _, _) in enumerate(AGENTIC_GOD_TASKS, 1)]
    return regular + god


def stable_int(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def section_rng(model: DemoModel, seed: int, section: str) -> random.Random:
    return random.Random(seed + stable_int(f"{model.key}|{section}"))


def hex_id(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def fit_units(
    rng: random.Random, eases: list[float], denoms: list[int], target_sum: float
) -> list[int]:
    """Per-row satisfied units (score = units ÷ denom) whose total score is nearest target_sum.

    Easier rows are likelier to pass; a repair pass then moves single units (preferring easy rows
    up and hard rows down) while each move brings the sum closer, so the result is deterministic
    and as close as the rows' granularity allows.
    """
    count = len(eases)
    target_sum = max(0.0, min(float(count), target_sum))
    low, high = 0.0, 1.0 / max(min(eases), 1e-6)
    for _ in range(60):
        mid = (low + high) / 2
        if sum(min(1.0, e * mid) for e in eases) < target_sum:
            low = mid
        else:
            high = mid
    units = []
    for ease, denom in zip(eases, denoms, strict=True):
        p = min(1.0, ease * high)
        if denom == 1:
            units.append(1 if rng.random() < p else 0)
        else:
            units.append(max(0, min(denom, round(p * denom + rng.uniform(-0.8, 0.8)))))
    while True:
        diff = target_sum - sum(u / d for u, d in zip(units, denoms, strict=True))
        if diff > 0:
            movable = [
                i for i in range(count) if units[i] < denoms[i] and 1 / denoms[i] < 2 * diff - 1e-12
            ]
            weights = [eases[i] + 0.01 for i in movable]
        else:
            movable = [
                i for i in range(count) if units[i] > 0 and 1 / denoms[i] < -2 * diff - 1e-12
            ]
            weights = [1.05 - eases[i] for i in movable]
        if not movable:
            return units
        pick = rng.choices(movable, weights=weights)[0]
        units[pick] += 1 if diff > 0 else -1


EASE = {
    "easy": 0.95,
    "medium": 0.82,
    "hard": 0.64,
    "expert": 0.47,
    "frontier": 0.32,
    "god_mode": 0.2,
}


def html_page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title></head>"
        f"<body>{body}<script>/* demo */</script></body></html>"
    )


# The shapes every text-suite-like bundle (text, vision, audio, video) repeats: a case's row,
# and the evidence its grader writes, tier 0 (one checker) or tier 1 (a rubric of criteria).


def case_row(
    case_id: str,
    category: str,
    tier: int,
    *,
    status: str = "scored",
    score: float | None,
    creativity: int | None = None,
    raw_output: str,
    evidence: dict,
    speed: dict,
) -> dict:
    """One result row of a text-like bundle, as the pod writes it."""
    return {
        "case_id": case_id,
        "category": category,
        "tier": tier,
        "status": status,
        "score": score,
        "creativity": creativity,
        "raw_output": raw_output,
        "evidence": evidence,
        "speed": speed,
    }


def checked(kind: str, satisfied: bool, evidence: str, **counts) -> dict:
    """Tier-0 evidence: one deterministic checker's verdict (with `counts` such as the tests
    passed, before the checkers)."""
    return {
        "tier": 0,
        **counts,
        "checkers": [{"type": kind, "satisfied": satisfied, "evidence": evidence}],
    }


def criterion(
    cid: str, question: str, satisfied: bool | None, evidence: str, decided_by: str, required: bool
) -> dict:
    """One criterion of a tier-1 rubric and who decided it (`satisfied` None: a judge has not)."""
    return {
        "id": cid,
        "question": question,
        "satisfied": satisfied,
        "evidence": evidence,
        "decided_by": decided_by,
        "required": required,
    }


def rubric(criteria: list[dict], *, required_failed: bool) -> dict:
    """Tier-1 evidence: the rubric's criteria."""
    return {"tier": 1, "required_failed": required_failed, "criteria": criteria}
