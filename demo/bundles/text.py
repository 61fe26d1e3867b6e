"""The text bundle's rows: per category of the text suite, scores fitted to the model's
composite, each with an output and the evidence its grader writes; and the arena artifacts."""

from __future__ import annotations

import random

from demo.bundles.common import (
    EASE,
    SUITE,
    case_row,
    checked,
    criterion,
    fit_units,
    graded_output,
    html_page,
    rubric,
    section_rng,
    stable_int,
    text_cases,
)
from demo.bundles.perf import OUTPUT_TOKENS, row_speed, rung_at_or_below, text_concurrency
from demo.catalogue import (
    CATEGORIES,
    RUBRICS,
    DemoModel,
)

_LENGTH = {"easy": 0.5, "medium": 0.8, "hard": 1.2, "expert": 1.8, "frontier": 2.6, "god_mode": 3.5}
_CATEGORY_OFFSETS = {
    "Math": 6.0,
    "Instruction": 4.0,
    "Reasoning": 1.0,
    "Coding": 3.0,
    "Prose": -14.0,
}
# Binary categories first: the fractional ones absorb their rounding.
_FIT_ORDER = ("Math", "Reasoning", "Coding", "Instruction", "Prose")
_DENOMS = {
    "Math": (1,),
    "Reasoning": (1,),
    "Coding": (4, 5, 6, 8, 10),
    "Instruction": (3, 4, 5, 6),
    "Prose": (3, 4, 5, 6),
}


def _category_targets(model: DemoModel, rng: random.Random) -> dict[str, float]:
    offsets = {c: _CATEGORY_OFFSETS[c] + rng.uniform(-3, 3) for c in CATEGORIES}
    shift = sum(offsets.values()) / len(offsets)
    return {c: min(97.0, max(3.0, model.composite + offsets[c] - shift)) for c in CATEGORIES}


def text_rows(model: DemoModel, seed: int, coverage: float, cells: dict) -> list[dict]:
    rng = section_rng(model, seed, "text")
    cases = text_cases()
    by_category: dict[str, list[tuple[str, str]]] = {c: [] for c in CATEGORIES}
    for case_id, category, difficulty in cases:
        by_category[category].append((case_id, difficulty))
    kept = {
        c: rows[: max(0, min(len(rows), round(len(rows) * coverage)))]
        for c, rows in by_category.items()
    }

    kinds: dict[str, str] = {}  # case_id → "no_answer" | "judge" | "free"
    hard_cases = [
        (cid, d)
        for c in ("Math", "Reasoning", "Coding")
        for cid, d in kept[c]
        if d in ("frontier", "god_mode")
    ]
    for case_id, _ in rng.sample(hard_cases, min(len(hard_cases), rng.randint(2, 4))):
        kinds[case_id] = "no_answer"
    prose_late = [cid for cid, d in kept["Prose"] if d in ("expert", "frontier", "god_mode")]
    if prose_late:
        kinds[rng.choice(prose_late)] = "judge"

    targets = _category_targets(model, rng)
    remaining_total = model.composite * len(CATEGORIES)
    scores: dict[str, tuple[int, int]] = {}
    for position, category in enumerate(_FIT_ORDER):
        planned_rest = sum(targets[c] for c in _FIT_ORDER[position:])
        target = targets[category] + (remaining_total - planned_rest) / (len(_FIT_ORDER) - position)
        rows = [(cid, d) for cid, d in kept[category] if kinds.get(cid, "free") != "judge"]
        free = [(cid, d) for cid, d in rows if kinds.get(cid) != "no_answer"]
        if not rows:
            remaining_total -= targets[category]
            continue
        denoms = [
            1 if SUITE.cases[cid].board_grades else rng.choice(_DENOMS[category]) for cid, _ in free
        ]
        units = fit_units(rng, [EASE[d] for _, d in free], denoms, target / 100 * len(rows))
        realised = 0.0
        for (case_id, _), unit, denom in zip(free, units, denoms, strict=True):
            scores[case_id] = (unit, denom)
            realised += round(unit / denom, 4)
        remaining_total -= 100 * realised / len(rows)

    text_cell_conc = rung_at_or_below(model, text_concurrency(model))
    rows_out = []
    for category in CATEGORIES:
        for number, (case_id, difficulty) in enumerate(kept[category]):
            cell = cells[(category.lower(), text_cell_conc)]
            kind = kinds.get(case_id, "free")
            row_rng = random.Random(stable_int(f"{seed}|{model.key}|{case_id}"))
            if kind == "no_answer":
                rows_out.append(_no_answer_row(row_rng, case_id, category, cell, model))
            elif kind == "judge":
                rows_out.append(_judge_pending_row(row_rng, case_id, category, cell))
            else:
                unit, denom = scores[case_id]
                rows_out.append(
                    _scored_row(row_rng, case_id, category, difficulty, number, unit, denom, cell)
                )
    return rows_out


def _scored_row(
    rng: random.Random,
    case_id: str,
    category: str,
    difficulty: str,
    number: int,
    unit: int,
    denom: int,
    cell: dict,
) -> dict:
    score = round(unit / denom, 4)
    output, evidence = _TEXT_WRITERS[category](rng, difficulty, number, unit, denom)
    case = SUITE.cases[case_id]
    if case.board_grades:  # the board grades it again: the output must say what the score says
        output = graded_output(case_id, unit == denom)
        evidence = {"tier": 0, "checkers": [{"type": c["type"]} for c in case.checkers]}
    out_tokens = int(OUTPUT_TOKENS[category.lower()] * _LENGTH[difficulty] * rng.uniform(0.8, 1.2))
    creativity = None
    if category == "Prose" and difficulty not in ("easy", "medium"):
        creativity = min(3, max(0, round(score * 3 + rng.uniform(-0.6, 0.4))))
    return case_row(
        case_id,
        category,
        case.tier,
        score=score,
        creativity=creativity,
        raw_output=output,
        evidence=evidence,
        speed=row_speed(rng, cell, out_tokens),
    )


def _no_answer_row(
    rng: random.Random, case_id: str, category: str, cell: dict, model: DemoModel
) -> dict:
    reason = rng.choice(["empty_completion", "max_tokens_no_final", "unparseable_final"])
    speed = row_speed(rng, cell, min(32768, model.context_len // 2))
    return case_row(
        case_id,
        category,
        SUITE.cases[case_id].tier,
        status="no_answer",
        score=0.0,
        raw_output="",
        evidence={"no_answer": True, "true_fail": True, "attempts": 6, "reasons": [reason] * 6},
        speed=speed,
    )


def _judge_pending_row(rng: random.Random, case_id: str, category: str, cell: dict) -> dict:
    output = _prose_text(rng, 14)
    pending = "judge_pending — needs a frontier judge"
    criteria = [
        criterion(
            "voice",
            "Does the piece keep a consistent narrative voice?",
            None,
            pending,
            "judge_pending",
            True,
        ),
        criterion(
            "imagery",
            "Is the imagery concrete rather than abstract?",
            None,
            pending,
            "judge_pending",
            False,
        ),
    ]
    return case_row(
        case_id,
        category,
        1,
        status="needs_frontier_judge",
        score=None,
        raw_output=output,
        evidence=rubric(criteria, required_failed=False),
        speed=row_speed(rng, cell, len(output) // 4),
    )


def _math_row(rng, difficulty, number, unit, denom):
    a, b, c = rng.randint(1000, 9999), rng.randint(100, 999), rng.randint(2, 19)
    want = a + b * c
    got = want if unit else want + rng.choice([-10, -1, 1, 9, 100])
    steps = [
        f"We need {a} + {b}·{c}.",
        f"First, {b}·{c} = {b * c}.",
        f"Then {a} + {b * c} = {got}.",
    ]
    if difficulty in ("expert", "frontier", "god_mode"):
        steps.insert(1, "Check the order of operations: the product binds tighter than the sum.")
        steps.append(f"Sanity check: {got} mod 9 = {got % 9}.")
    output = "\n".join(steps) + f"\n\n\\boxed{{{got}}}"
    evidence = f"want [{float(want)}] got [{float(got)}] (slot=None)"
    return output, checked("numeric_tolerance", bool(unit), evidence)


def _reasoning_row(rng, difficulty, number, unit, denom):
    options = ["A", "B", "C", "D"]
    want = rng.choice(options)
    got = want if unit else rng.choice([o for o in options if o != want])
    people = rng.sample(["Ada", "Boris", "Chen", "Dana", "Emeka", "Farah"], 3)
    output = (
        f"Suppose {people[0]} tells the truth. Then {people[1]}'s statement contradicts the "
        f"second clue, so {people[1]} lies, which makes {people[2]}'s claim true.\n"
        f"Checking every constraint against that assignment leaves option {got} as the only "
        f"consistent one.\n\n<answer>{got}</answer>"
    )
    return output, checked("closed_set", bool(unit), f"want {want!r} got {got!r}")


def _coding_row(rng, difficulty, number, unit, denom):
    name = rng.choice(
        [
            "merge_intervals",
            "lru_cache_get",
            "parse_duration",
            "topo_order",
            "rolling_median",
            "balance_brackets",
        ]
    )
    output = (
        "Here is a straightforward implementation.\n\n```python\n"
        f"def {name}(items):\n"
        "    result = []\n"
        "    for item in sorted(items):\n"
        "        if result and item[0] <= result[-1][1]:\n"
        "            result[-1] = (result[-1][0], max(result[-1][1], item[1]))\n"
        "        else:\n"
        "            result.append(item)\n"
        "    return result\n```\n\n"
        "It sorts once (O(n log n)) and then makes a single pass."
    )
    evidence = f"{unit}/{denom} tests passed"
    return output, checked(
        "python_tests", unit == denom, evidence, tests_passed=unit, tests_total=denom
    )


def _rubric(rng, criteria, unit, denom, with_pending: bool):
    # The first criterion is the required one: it passes whenever anything passes.
    passed = {0} | set(rng.sample(range(1, denom), unit - 1)) if unit else set()
    rows = []
    for i, (cid, question) in enumerate(criteria[:denom]):
        ok = i in passed
        evidence = "pattern matched" if ok else "check failed"
        rows.append(criterion(cid, question, ok, evidence, "tier0_shadow", i == 0))
    if with_pending:
        rows.append(
            criterion(
                "on_topic",
                "Does the answer stay on the requested topic?",
                None,
                "judge_pending — optional criterion excluded from the score",
                "judge_pending",
                False,
            )
        )
    return rubric(rows, required_failed=unit == 0)


def _instruction_row(rng, difficulty, number, unit, denom):
    output = (
        "- keep the ledger reconciled every friday\n"
        "- flag any entry older than thirty days\n"
        "- send the summary to the finance channel\n\n"
        '{"owner": "ops", "cadence": "weekly"}\n\n'
        "shall i set a reminder for the first review?"
    )
    return output, _rubric(rng, RUBRICS["Instruction"], unit, denom, rng.random() < 0.2)


def _prose_text(rng, lines: int) -> str:
    words = [
        "amber",
        "harbor",
        "lantern",
        "quiet",
        "river",
        "ember",
        "salt",
        "orchard",
        "thunder",
        "glass",
        "willow",
        "iron",
        "morning",
        "ash",
        "tide",
    ]
    out = []
    for _ in range(lines):
        picked = rng.sample(words, 4)
        out.append(f"You carry the {picked[0]} {picked[1]} past the {picked[2]} {picked[3]}")
    return "\n".join(out)


def _prose_row(rng, difficulty, number, unit, denom):
    output = _prose_text(rng, 5 + int(_LENGTH[difficulty] * 4))
    return output, _rubric(rng, RUBRICS["Prose"], unit, denom, rng.random() < 0.3)


_TEXT_WRITERS = {
    "Math": _math_row,
    "Reasoning": _reasoning_row,
    "Coding": _coding_row,
    "Instruction": _instruction_row,
    "Prose": _prose_row,
}


def arena_artifacts(rng: random.Random) -> list[dict]:
    items = [
        ("game", "game.snake", "Neon Snake", "<canvas id=c width=400 height=400></canvas>"),
        ("app", "app.kanban", "Kanban Board", "<main id=board><section>Todo</section></main>"),
        ("animation", "anim.aurora", "Aurora", "<canvas id=sky></canvas>"),
    ]
    out = []
    for kind, prompt_id, title, body in items:
        html = html_page(title, body)
        out.append(
            {
                "kind": kind,
                "prompt_id": prompt_id,
                "title": title,
                "html": html,
                "ok": True,
                "gen_ms": round(rng.uniform(60000, 240000), 1),
                "bytes": len(html.encode()),
            }
        )
    out.append(
        {
            "kind": "animation",
            "prompt_id": "anim.balls",
            "title": "Bouncing Balls",
            "html": "",
            "ok": False,
            "gen_ms": None,
            "bytes": 0,
        }
    )
    return out
