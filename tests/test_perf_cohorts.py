"""Perf rows → cohorts (docs/cohorts.md), on the published Gemma 4 26B-A4B single-Spark figures."""

import math

import pytest

from board.perf import (
    CohortMark,
    PerfRowError,
    parse_direct_id,
    summarise_perf,
)
from recipes.argv import max_num_seqs_from

GEMMA_FLAGS = [
    "--max-model-len",
    "65536",
    "--gpu-memory-utilization",
    ".8",
    "--max-num-seqs",
    "64",
    "--kv-cache-dtype",
    "auto",
]


def direct_row(
    case_id,
    *,
    aggregate,
    decode,
    ttft_p50,
    tpot_p50=None,
    n=None,
    n_errors=0,
    wall=40.0,
    **overrides,
):
    """A direct cell whose evidence satisfies every cohort rule unless overridden."""
    category, conc = parse_direct_id(case_id)
    tokens = round(aggregate * wall, 3)
    evidence = {
        "n": conc if n is None else n,
        "n_errors": n_errors,
        "ttft_ms_mean": ttft_p50 * 1.04,
        "ttft_ms_p50": ttft_p50,
        "ttft_ms_p95": ttft_p50 * 1.3,
        "decode_tps_mean": decode,
        "prefill_tps_mean": 2894.12,
        "e2e_ms_mean": 8214.9,
        "tpot_ms_mean": None if tpot_p50 is None else tpot_p50 * 1.02,
        "tpot_ms_p50": tpot_p50,
        "tpot_ms_p95": None if tpot_p50 is None else tpot_p50 * 1.1,
        "output_tokens_total": round(tokens * 0.97),
        "input_tokens_total": 3512,
        "agg_decode_tps": aggregate,
        "tokens_source": "engine",
        "engine_tokens_total": tokens,
        "input_tokens_estimated": False,
        "cell_wall_s": wall,
        "conc": conc,
        "wall_clock_s": 1800.0,
        "scope": category.capitalize(),
    }
    evidence.update(overrides)
    return {
        "case_id": case_id,
        "category": "Performance",
        "tier": 0,
        "status": "perf",
        "score": None,
        "raw_output": "",
        "evidence": evidence,
        "speed": {},
    }


def gemma_c1_rows():
    """Single-stream cells with DFlash n=10 as published (instruction added, plausibly)."""
    return [
        direct_row(
            "perf.direct.coding.c1", aggregate=148.0, decode=155.8, ttft_p50=83, tpot_p50=6.4
        ),
        direct_row(
            "perf.direct.math.c1", aggregate=121.0, decode=127.8, ttft_p50=145, tpot_p50=7.8
        ),
        direct_row(
            "perf.direct.reasoning.c1", aggregate=113.5, decode=118.9, ttft_p50=105, tpot_p50=8.4
        ),
        direct_row(
            "perf.direct.prose.c1", aggregate=47.9, decode=49.8, ttft_p50=105, tpot_p50=20.1
        ),
        direct_row(
            "perf.direct.instruction.c1", aggregate=125.0, decode=131.5, ttft_p50=98, tpot_p50=7.6
        ),
    ]


def gemma_c64_rows():
    """The 816 recipe's top rung: 32 640 engine tokens in 40 s on coding."""
    return [
        direct_row("perf.direct.coding.c64", aggregate=816.0, decode=14.2, ttft_p50=23000),
        direct_row("perf.direct.math.c64", aggregate=640.0, decode=11.5, ttft_p50=22100),
        direct_row("perf.direct.reasoning.c64", aggregate=590.0, decode=10.4, ttft_p50=21800),
        direct_row("perf.direct.prose.c64", aggregate=310.0, decode=5.6, ttft_p50=24500),
        direct_row("perf.direct.instruction.c64", aggregate=612.0, decode=10.9, ttft_p50=22700),
    ]


def gemma_run():
    return gemma_c1_rows() + gemma_c64_rows()


def cohort(summary, label):
    return next(c for c in summary.cohorts if c.label == label)


def refusal(rows):
    with pytest.raises(PerfRowError) as caught:
        summarise_perf(rows)
    return caught.value


# Direct ids


def test_a_direct_id_names_its_category_in_lowercase_and_its_concurrency():
    assert parse_direct_id("perf.direct.Coding.c64") == ("coding", 64)
    assert parse_direct_id("perf.direct.overall.c8") == ("overall", 8)


def test_harness_and_sustained_ids_are_not_direct_ids():
    assert parse_direct_id("perf.harness.hermes.c1") is None
    assert parse_direct_id("perf.sustained.summary") is None
    assert parse_direct_id("v4.math.easy.01") is None


# Rule 1: refusals with the pointer of the offending field


def test_it_refuses_an_unknown_category_with_the_pointer_of_the_case_id():
    rows = gemma_run()
    rows.insert(3, direct_row("perf.direct.coding.c8", aggregate=230.0, decode=33.7, ttft_p50=598))
    rows[3]["case_id"] = "perf.direct.poetry.c8"
    error = refusal(rows)
    assert error.pointer == "/results/3/case_id"
    assert "poetry" in error.message


@pytest.mark.parametrize("rung", ["c0", "c1.5", "cX", "c-4", "8"])
def test_it_refuses_a_concurrency_that_is_not_a_positive_integer(rung):
    row = direct_row("perf.direct.math.c8", aggregate=230.0, decode=33.7, ttft_p50=598)
    row["case_id"] = f"perf.direct.math.{rung}"
    assert refusal([row]).pointer == "/results/0/case_id"


def test_it_refuses_a_negative_number_with_the_pointer_of_the_field():
    rows = gemma_run()
    rows[6]["evidence"]["ttft_ms_p95"] = -1.0
    error = refusal(rows)
    assert error.pointer == "/results/6/evidence/ttft_ms_p95"
    assert "negative" in error.message


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_it_refuses_a_non_finite_number(value):
    rows = gemma_run()
    rows[0]["evidence"]["decode_tps_mean"] = value
    assert refusal(rows).pointer == "/results/0/evidence/decode_tps_mean"


def test_it_refuses_a_cell_missing_a_required_number():
    rows = gemma_run()
    del rows[5]["evidence"]["agg_decode_tps"]
    assert refusal(rows).pointer == "/results/5/evidence/agg_decode_tps"


def test_it_refuses_a_number_sent_as_text():
    rows = gemma_run()
    rows[2]["evidence"]["n"] = "1"
    assert refusal(rows).pointer == "/results/2/evidence/n"


def test_it_refuses_a_fractional_request_count():
    rows = gemma_run()
    rows[1]["evidence"]["n"] = 1.5
    assert refusal(rows).pointer == "/results/1/evidence/n"


def test_it_refuses_evidence_whose_concurrency_disagrees_with_the_case_id():
    rows = gemma_run()
    rows[5]["evidence"]["conc"] = 32
    assert refusal(rows).pointer == "/results/5/evidence/conc"


def test_it_refuses_a_bad_number_in_an_overall_row_too():
    overall = direct_row("perf.direct.overall.c64", aggregate=3000.0, decode=12.0, ttft_p50=23000)
    overall["evidence"]["e2e_ms_mean"] = math.inf
    error = refusal([*gemma_run(), overall])
    assert error.pointer == "/results/10/evidence/e2e_ms_mean"


def test_it_refuses_the_same_cell_sent_twice():
    rows = gemma_run()
    rows.append(dict(rows[5]))
    assert refusal(rows).pointer == "/results/10/case_id"


# Rule 2: reported aggregate must match tokens ÷ cell wall-clock within 5 %


def test_it_marks_a_reported_aggregate_that_disagrees_with_tokens_over_cell_wall():
    rows = gemma_run()
    rows[5]["evidence"]["agg_decode_tps"] = 1937.0  # 32 640 tokens in 40 s is 816
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert CohortMark.AGGREGATE_INCONSISTENT in coding.marks
    assert coding.aggregate_tps == pytest.approx(816.0)
    assert coding.reported_aggregate_tps == 1937.0
    assert not coding.valid


def test_a_reported_aggregate_within_five_percent_is_accepted():
    rows = gemma_run()
    rows[5]["evidence"]["agg_decode_tps"] = 816.0 * 1.049
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.marks == ()
    assert coding.aggregate_tps == pytest.approx(816.0)


def test_a_reported_aggregate_six_percent_off_is_marked():
    rows = gemma_run()
    rows[5]["evidence"]["agg_decode_tps"] = 816.0 * 0.94
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.marks == (CohortMark.AGGREGATE_INCONSISTENT,)


def test_the_aggregate_counts_engine_tokens_when_the_engine_counted_them():
    rows = gemma_run()
    ev = rows[5]["evidence"]
    assert cohort(summarise_perf(rows), "coding @ c64").tokens == 32640.0
    ev["tokens_source"] = "client"
    ev["output_tokens_total"] = 32000
    ev["agg_decode_tps"] = 800.0
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.tokens == 32000
    assert coding.aggregate_tps == pytest.approx(800.0)
    assert coding.valid


def test_a_cell_without_cell_wall_clock_is_shown_but_never_a_peak():
    rows = gemma_run()
    del rows[5]["evidence"]["cell_wall_s"]
    summary = summarise_perf(rows)
    coding = cohort(summary, "coding @ c64")
    assert coding.marks == (CohortMark.UNVERIFIABLE_AGGREGATE,)
    assert coding.aggregate_tps == 816.0
    assert summary.peak.label == "math @ c64"


# Rule 3: the aggregate may not exceed decode_tps_mean × conc by more than 5 %


def test_it_marks_an_aggregate_above_what_the_streams_could_deliver():
    rows = gemma_run()
    rows[5]["evidence"]["decode_tps_mean"] = 12.0  # 12 × 64 = 768, and 816 > 768 × 1.05
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.marks == (CohortMark.EXCEEDS_STREAM_CEILING,)


def test_an_aggregate_within_five_percent_of_the_stream_ceiling_is_accepted():
    rows = gemma_run()
    rows[5]["evidence"]["decode_tps_mean"] = 12.2  # 12.2 × 64 = 780.8; 816 is 4.5 % above
    assert cohort(summarise_perf(rows), "coding @ c64").valid


# Rule 4: n ≥ conc and errors ≤ 10 % of requests


def test_it_marks_a_cell_with_fewer_requests_than_streams():
    rows = gemma_run()
    rows[5]["evidence"]["n"] = 48
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.marks == (CohortMark.TOO_FEW_REQUESTS,)


def test_it_marks_a_cell_where_more_than_ten_percent_of_requests_failed():
    rows = gemma_run()
    rows[5]["evidence"]["n_errors"] = 7  # 7 of 64 is 10.9 %
    coding = cohort(summarise_perf(rows), "coding @ c64")
    assert coding.marks == (CohortMark.TOO_MANY_ERRORS,)


def test_a_cell_with_exactly_ten_percent_errors_is_accepted():
    rows = gemma_run()
    rows[5]["evidence"].update(n=70, n_errors=7)
    assert cohort(summarise_perf(rows), "coding @ c64").valid


# Rule 5: rungs above --max-num-seqs are labelled, not excluded


def test_a_rung_above_max_num_seqs_is_labelled_but_still_counts():
    summary = summarise_perf(gemma_run(), max_num_seqs=32)
    coding = cohort(summary, "coding @ c64")
    assert coding.labels == (CohortMark.QUEUED_BEYOND_MAX_NUM_SEQS,)
    assert coding.valid
    assert summary.peak is coding
    assert cohort(summary, "coding @ c1").labels == ()


def test_a_rung_at_max_num_seqs_is_not_labelled():
    summary = summarise_perf(gemma_run(), max_num_seqs=max_num_seqs_from(GEMMA_FLAGS))
    assert all(c.labels == () for c in summary.cohorts)


def test_max_num_seqs_is_read_from_either_flag_spelling():
    assert max_num_seqs_from(GEMMA_FLAGS) == 64
    assert max_num_seqs_from(["--max-num-seqs=24", "--enable-prefix-caching"]) == 24
    assert max_num_seqs_from(["--max-num-seqs 24", "--kv-cache-dtype auto"]) == 24
    assert max_num_seqs_from(["--max-model-len", "65536"]) is None
    assert max_num_seqs_from(["--max-num-seqs", "many"]) is None
    assert max_num_seqs_from(None) is None


# Derived figures of the published run


def test_the_gemma_run_peaks_at_816_tokens_per_second_on_coding_at_c64():
    summary = summarise_perf(gemma_run(), max_num_seqs=64)
    assert all(c.valid for c in summary.cohorts)
    assert summary.peak.label == "coding @ c64"
    assert summary.peak.aggregate_tps == pytest.approx(816.0)
    assert summary.peak.category == "coding"
    assert summary.peak.conc == 64


def test_each_cohort_stores_its_stream_ceiling_and_scheduling_efficiency():
    coding = cohort(summarise_perf(gemma_run()), "coding @ c64")
    assert coding.stream_ceiling_tps == pytest.approx(14.2 * 64)
    assert coding.scheduling_efficiency == pytest.approx(816.0 / 908.8)
    assert coding.ttft_ms_p50 == 23000
    assert (coding.n, coding.n_errors) == (64, 0)


def test_cohorts_come_in_category_order_then_by_concurrency():
    labels = [c.label for c in summarise_perf(list(reversed(gemma_run()))).cohorts]
    assert labels[:4] == ["math @ c1", "math @ c64", "instruction @ c1", "instruction @ c64"]
    assert labels[-1] == "prose @ c64"


def test_the_peak_ignores_overall_rows_and_marked_cells():
    rows = gemma_run()
    rows.append(
        direct_row("perf.direct.overall.c64", aggregate=3000.0, decode=60.0, ttft_p50=23000)
    )
    inflated = direct_row("perf.direct.coding.c32", aggregate=1937.0, decode=33.0, ttft_p50=9000)
    inflated["evidence"]["engine_tokens_total"] = 28000.0  # 700 tok/s, not 1937
    rows.append(inflated)
    summary = summarise_perf(rows)
    assert summary.peak.label == "coding @ c64"
    assert set(summary.overall) == {64}
    assert summary.overall[64]["agg_decode_tps"] == 3000.0
    assert "overall @ c64" not in [c.label for c in summary.cohorts]
    assert not cohort(summary, "coding @ c32").valid


def test_single_stream_is_the_mean_decode_speed_over_the_five_categories_at_c1():
    summary = summarise_perf(gemma_run())
    assert summary.single_stream_tps == pytest.approx((155.8 + 127.8 + 118.9 + 49.8 + 131.5) / 5)
    assert summary.single_stream_cohort == "5 categories @ c1"


def test_latency_is_the_mean_ttft_p50_at_c1_with_tpot_beside_it():
    summary = summarise_perf(gemma_run())
    assert summary.latency_ttft_ms == pytest.approx((83 + 145 + 105 + 105 + 98) / 5)
    assert summary.latency_tpot_ms == pytest.approx((6.4 + 7.8 + 8.4 + 20.1 + 7.6) / 5)


def test_a_marked_c1_cell_is_left_out_of_single_stream_and_latency():
    rows = gemma_run()
    rows[3]["evidence"]["n_errors"] = 1  # prose @ c1: 1 error of 1 request
    summary = summarise_perf(rows)
    assert summary.single_stream_cohort == "4 categories @ c1"
    assert summary.single_stream_tps == pytest.approx((155.8 + 127.8 + 118.9 + 131.5) / 4)
    assert summary.latency_tpot_ms == pytest.approx((6.4 + 7.8 + 8.4 + 7.6) / 4)


def test_a_run_without_c1_cells_has_no_single_stream_or_latency():
    summary = summarise_perf(gemma_c64_rows())
    assert summary.single_stream_tps is None
    assert summary.latency_ttft_ms is None
    assert summary.latency_tpot_ms is None
    assert summary.peak.label == "coding @ c64"


def test_a_run_whose_every_cell_is_marked_has_no_peak():
    rows = gemma_c64_rows()
    for row in rows:
        row["evidence"]["n"] = 8
    summary = summarise_perf(rows)
    assert len(summary.cohorts) == 5
    assert summary.peak is None


def test_harness_and_sustained_rows_are_kept_by_case_id_but_never_cohorts():
    harness = {
        "case_id": "perf.harness.hermes.c1",
        "status": "perf",
        "score": None,
        "evidence": {"conc": 1, "mean_task_s": 41.2207, "tasks_per_min": 1.46, "failures": 0},
    }
    sustained = {
        "case_id": "perf.sustained.summary",
        "status": "perf",
        "score": None,
        "evidence": {"n_samples": 1440, "degradation_pct": None},
    }
    summary = summarise_perf([*gemma_run(), harness, sustained])
    assert set(summary.other_rows) == {"perf.harness.hermes.c1", "perf.sustained.summary"}
    assert summary.other_rows["perf.harness.hermes.c1"]["tasks_per_min"] == 1.46
    assert len(summary.cohorts) == 10


def test_the_protocol_example_cell_is_a_valid_cohort():
    """perf.direct.coding.c8 exactly as protocol examples/perf-final.json sends it."""
    row = {
        "case_id": "perf.direct.coding.c8",
        "category": "Performance",
        "status": "perf",
        "score": None,
        "evidence": {
            "n": 8,
            "n_errors": 0,
            "ttft_ms_mean": 612.44,
            "ttft_ms_p50": 598.1,
            "ttft_ms_p95": 701.37,
            "decode_tps_mean": 33.71,
            "prefill_tps_mean": 2894.12,
            "e2e_ms_mean": 8214.9,
            "tpot_ms_mean": 29.665,
            "tpot_ms_p50": 29.41,
            "tpot_ms_p95": 31.002,
            "output_tokens_total": 2048,
            "input_tokens_total": 3512,
            "agg_decode_tps": 231.87,
            "tokens_source": "engine",
            "engine_tokens_total": 2112.0,
            "input_tokens_estimated": False,
            "cell_wall_s": 9.108,
            "conc": 8,
            "wall_clock_s": 48.613,
            "scope": "Coding",
        },
    }
    coding = summarise_perf([row], max_num_seqs=24).peak
    assert coding.label == "coding @ c8"
    assert coding.aggregate_tps == pytest.approx(2112.0 / 9.108)
    assert coding.tpot_ms_p95 == 31.002
