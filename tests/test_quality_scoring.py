"""Quality scoring of text runs (docs/trust-and-ranking.md §Quality scoring) and coverage of the suite (§Coverage)."""

import math

import pytest

from board.quality import CATEGORIES, score_agentic, score_text_run

SUITE_V4 = {"Math": 34, "Instruction": 34, "Reasoning": 35, "Coding": 36, "Prose": 35}
SUITE_V4_CASES = 174


def row(category, number, status="scored", score=1.0, *, with_category=True):
    data = {
        "case_id": f"v4.{category.lower()}.medium.{number:02d}",
        "tier": 0,
        "status": status,
        "score": score,
        "raw_output": "",
        "evidence": {},
        "speed": {},
    }
    if with_category:
        data["category"] = category
    return data


def gemma_text_run():
    """Gemma 4 26B-A4B: composite 65.7, two cases still waiting for a judge (172/174)."""
    targets = {"Math": 0.70, "Instruction": 0.72, "Reasoning": 0.605, "Coding": 0.68, "Prose": 0.58}
    rows = [
        row(category, number, score=targets[category])
        for category, count in SUITE_V4.items()
        for number in range(1, count + 1)
    ]
    rows[-1].update(status="tier1_pending", score=None)  # a prose rubric case
    rows[-40].update(status="needs_frontier_judge", score=None)  # a coding case
    return rows


def category(summary, name):
    return next(c for c in summary.categories if c.category == name)


def test_the_gemma_run_scores_a_composite_of_65_7_over_172_of_174_cases():
    summary = score_text_run(gemma_text_run(), SUITE_V4_CASES)
    assert summary.composite == pytest.approx(65.7)
    assert summary.coverage_label == "172/174 cases"
    assert summary.covered == 172
    assert summary.coverage_ratio == pytest.approx(172 / 174)


def test_the_five_categories_come_back_in_suite_order():
    summary = score_text_run(gemma_text_run(), SUITE_V4_CASES)
    assert tuple(c.category for c in summary.categories) == CATEGORIES
    assert [c.cases for c in summary.categories] == [34, 34, 35, 36, 35]


def test_a_no_answer_row_with_a_null_score_weighs_a_quarter_in_the_denominator():
    rows = [row("Reasoning", i, score=0.75) for i in range(1, 9)]  # Σ 6.0 over 8 answered
    rows += [row("Reasoning", i, status="no_answer", score=None) for i in range(9, 13)]
    reasoning = category(score_text_run(rows, None), "Reasoning")
    assert reasoning.score == pytest.approx(100 * 6.0 / (8 + 0.25 * 4))
    assert (reasoning.answered, reasoning.no_answer) == (8, 4)


def test_a_no_answer_row_scored_zero_counts_as_a_full_answer():
    rows = [row("Math", i) for i in range(1, 4)]
    rows.append(row("Math", 4, status="no_answer", score=0.0))
    math_score = category(score_text_run(rows, None), "Math")
    assert math_score.score == pytest.approx(75.0)
    assert (math_score.answered, math_score.no_answer) == (4, 0)


@pytest.mark.parametrize("status", ["needs_frontier_judge", "tier1_pending", "tier2_arena"])
def test_a_case_whose_judge_never_came_stays_out_of_the_score_and_the_coverage(status):
    rows = [row("Prose", 1, score=0.8), row("Prose", 2, score=0.6), row("Prose", 3, status, None)]
    summary = score_text_run(rows, 3)
    prose = category(summary, "Prose")
    assert prose.score == pytest.approx(70.0)
    assert (prose.pending, prose.cases) == (1, 3)
    assert summary.coverage_label == "2/3 cases"


def test_a_pending_status_with_a_score_counts_as_answered():
    rows = [row("Prose", 1, score=1.0), row("Prose", 2, "tier2_arena", 0.5)]
    prose = category(score_text_run(rows, None), "Prose")
    assert prose.score == pytest.approx(75.0)
    assert prose.pending == 0


@pytest.mark.parametrize(
    "status", ["error", "harness_error", "killed_resource_limit", "na_capability"]
)
def test_an_unscored_failed_row_is_excluded_and_lowers_the_coverage(status):
    rows = [row("Coding", 1, score=0.5), row("Coding", 2, status, None)]
    summary = score_text_run(rows, 2)
    coding = category(summary, "Coding")
    assert coding.score == pytest.approx(50.0)
    assert coding.excluded == 1
    assert summary.covered == 1


def test_the_composite_is_the_unweighted_mean_of_the_five_categories():
    rows = [row("Math", 1, score=1.0), row("Math", 2, score=1.0)]  # 100, two cases
    rows += [row("Instruction", 1, score=0.5)]  # 50, one case
    rows += [row("Reasoning", 1, score=0.25)]
    rows += [row("Coding", 1, score=0.75)]
    rows += [row("Prose", 1, score=0.0)]
    summary = score_text_run(rows, None)
    assert summary.composite == pytest.approx((100 + 50 + 25 + 75 + 0) / 5)


def test_there_is_no_composite_while_a_category_has_nothing_to_score():
    rows = [row(name, 1) for name in CATEGORIES if name != "Instruction"]
    rows.append(row("Instruction", 1, "tier1_pending", None))
    summary = score_text_run(rows, None)
    assert category(summary, "Instruction").score is None
    assert summary.composite is None


def test_the_category_is_matched_case_insensitively_or_read_from_the_case_id():
    rows = [row("Math", 1), row("Math", 2, score=0.0, with_category=False)]
    rows[0]["category"] = "MATH"
    math_score = category(score_text_run(rows, None), "Math")
    assert math_score.cases == 2
    assert math_score.score == pytest.approx(50.0)


def test_a_case_sent_twice_counts_once_with_its_last_score():
    rows = [row("Math", 1, score=0.0), row("Math", 1, score=1.0)]
    summary = score_text_run(rows, 1)
    assert category(summary, "Math").score == pytest.approx(100.0)
    assert summary.coverage_label == "1/1 cases"


def test_without_a_known_suite_the_coverage_is_a_bare_count():
    summary = score_text_run(gemma_text_run(), None)
    assert summary.coverage_label == "172 cases"
    assert summary.coverage_ratio is None


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, math.inf, True, "1.0"])
def test_an_invalid_score_is_refused_loudly(bad):
    with pytest.raises(ValueError):
        score_text_run([row("Math", 1, score=bad)], None)


def test_the_agentic_score_is_the_mean_task_score_without_setup_probes():
    rows = [
        {"case_id": "agentic.setup.hermes", "status": "scored", "score": 1.0},
        {"case_id": "av2-01-todo-app", "status": "scored", "score": 1.0},
        {"case_id": "av2-02-csv-report", "status": "scored", "score": 0.5},
        {"case_id": "av2-god-01-compiler", "status": "no_answer", "score": 0.0},
        {"case_id": "av2-03-refactor", "status": "harness_error", "score": None},
    ]
    assert score_agentic(rows) == pytest.approx(50.0)


def test_an_agentic_run_with_only_setup_probes_has_no_score():
    rows = [
        {"case_id": "agentic.setup.opencode", "status": "scored", "score": 1.0},
        {"case_id": "av2-01-todo-app", "status": "harness_error", "score": None},
    ]
    assert score_agentic(rows) is None
