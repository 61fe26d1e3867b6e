"""Champions over HTTP (docs/champions.md): the seed line of Gemma 4 26B-A4B on a single DGX
Spark, uploaded by real signing pods, crowned, challenged, flagged and reproduced."""

import pytest

from board.services import flag_benchmark, flag_run
from demo.loader import prefill_hub_cache
from tests.boardjobs import read_api
from tests.championjobs import (
    CPU_ONLY,
    GEMMA_1_5_PERCENT,
    GEMMA_12B_QUICK,
    GEMMA_816,
    GEMMA_816_AGAIN,
    GEMMA_SELF_REPORTED,
    GEMMA_SHORTCUT,
    QWEN_35B,
    QWEN_NEXT,
    champions,
    crown,
    submit,
    submit_seed_line,
)

pytestmark = pytest.mark.django_db

SPARK = "dgx-spark-x1"
GEMMA = GEMMA_816.hf_repo.lower()


@pytest.fixture(autouse=True)
def hub_answers():
    """The Hub's answers for the demo models, pre-filled in the cache as the demo does."""
    prefill_hub_cache()


def history(found: dict) -> list[tuple]:
    return [
        (reign["benchmark_id"], reign["value"], reign["dethroned_by"]) for reign in found["history"]
    ]


def test_the_seed_line_crowns_816_on_coding_at_c64_with_the_history_33_517_816(pod, board_url):
    b33, b517, b816 = submit_seed_line(pod)

    found = crown(board_url, SPARK, "throughput")

    assert (found["benchmark_id"], found["value"], found["unit"], found["cohort"]) == (
        b816,
        816.0,
        "tok/s",
        "coding @ c64",
    )
    assert (found["model"], found["crown"]) == (GEMMA, "class")
    assert found["hardware_class"] == {"slug": SPARK, "name": "Single DGX Spark"}
    assert history(found) == [(b33, 33.0, b517), (b517, 517.0, b816), (b816, 816.0, None)]
    assert [reign["cohort"] for reign in found["history"]] == ["coding @ c64"] * 3
    assert found["history"][0]["until"] == found["history"][1]["since"]
    assert found["history"][-1]["until"] is None
    assert found["since"] == found["history"][-1]["since"]
    # The same crown for the model on the class.
    per_model = crown(board_url, SPARK, "throughput", model=GEMMA_816.hf_repo)
    assert (per_model["crown"], history(per_model)) == ("model", history(found))


def test_no_challenger_takes_the_crown_below_the_floor_self_reported_or_within_the_margin(
    pod, board_url
):
    *_, b816 = submit_seed_line(pod)
    shortcut = submit(pod, GEMMA_SHORTCUT, "2026-10-04T09:00:00Z")  # 950 tok/s, composite −8
    endpoint = submit(pod, GEMMA_SELF_REPORTED, "2026-10-05T09:00:00Z", endpoint=True)
    near = submit(pod, GEMMA_1_5_PERCENT, "2026-10-06T09:00:00Z")  # 828 tok/s

    listed = {
        item["id"]: item for item in read_api(board_url, "/api/v1/benchmarks").body["results"]
    }
    assert (listed[shortcut]["ranked"], listed[shortcut]["peak_aggregate"]["tps"]) == (True, 950.0)
    assert listed[shortcut]["composite"] == pytest.approx(57.7, abs=0.05)
    assert (listed[endpoint]["trust"], listed[endpoint]["ranked"]) == ("self_reported", False)
    assert (listed[near]["ranked"], listed[near]["peak_aggregate"]["tps"]) == (True, 828.0)

    found = crown(board_url, SPARK, "throughput")

    assert (found["benchmark_id"], found["value"]) == (b816, 816.0)
    assert [reign["value"] for reign in found["history"]] == [33.0, 517.0, 816.0]


def test_flagging_the_champion_gives_the_crown_back_to_the_517_benchmark(pod, board_url):
    b33, b517, b816 = submit_seed_line(pod)

    flag_benchmark(public_id=b816, flagged=True, note="mis-wired drafter")

    found = crown(board_url, SPARK, "throughput")
    assert (found["benchmark_id"], found["value"]) == (b517, 517.0)
    assert history(found) == [(b33, 33.0, b517), (b517, 517.0, None)]
    flagged = read_api(board_url, f"/api/v1/benchmarks/{b816}").body
    assert (flagged["ranked"], "flagged" in flagged["badges"]) == (False, True)

    flag_benchmark(public_id=b816, flagged=False)

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b816


def test_flagging_the_champions_perf_run_unranks_it_and_the_crown_moves(pod, board_url):
    _, b517, b816 = submit_seed_line(pod)
    perf_run = next(
        run["run_id"]
        for run in read_api(board_url, f"/api/v1/benchmarks/{b816}").body["runs"]
        if run["kind"] == "perf"
    )

    flag_run(run_id=perf_run, flagged=True, note="cohort evidence doctored")

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b517
    benchmark = read_api(board_url, f"/api/v1/benchmarks/{b816}").body
    assert benchmark["ranked"] is False
    assert {"flagged", "no_perf"} <= set(benchmark["badges"])


def test_each_axis_can_have_a_different_champion(pod, board_url):
    gemma = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    qwen_next = submit(pod, QWEN_NEXT, "2026-10-04T09:00:00Z")
    qwen_35b = submit(pod, QWEN_35B, "2026-10-05T09:00:00Z")
    gemma_12b = submit(pod, GEMMA_12B_QUICK, "2026-10-06T09:00:00Z")

    crowns = {found["axis"]: found for found in champions(board_url, f"?hardware={SPARK}")}

    assert {axis: found["benchmark_id"] for axis, found in crowns.items()} == {
        "throughput": gemma,
        "single_stream": qwen_35b,
        "latency": gemma_12b,
        "quality": qwen_next,
    }
    assert crowns["throughput"]["cohort"] == "coding @ c64"
    assert crowns["single_stream"]["cohort"] == "5 categories @ c1"
    assert crowns["single_stream"]["value"] == pytest.approx(116.0, abs=0.01)
    assert (crowns["latency"]["cohort"], crowns["latency"]["unit"]) == ("5 categories @ c1", "ms")
    assert crowns["latency"]["tpot_ms"] == pytest.approx(57.0, abs=0.01)
    assert (crowns["quality"]["cohort"], crowns["quality"]["unit"]) == (None, "points")
    assert crowns["quality"]["value"] == pytest.approx(84.5, abs=0.05)
    assert list(crowns) == ["throughput", "single_stream", "latency", "quality"]


def test_a_second_pod_on_the_816_recipe_reproduces_it_and_the_crown_stays(pod, make_pod, board_url):
    *_, b816 = submit_seed_line(pod)
    again = submit(make_pod(), GEMMA_816_AGAIN, "2026-10-07T09:00:00Z")

    found = crown(board_url, SPARK, "throughput")

    assert (found["benchmark_id"], found["value"]) == (b816, 816.0)
    assert found["recipe_id"]
    assert found["reproductions"] == {
        "pods": 2,
        "benchmark_ids": [b816, again],
        "spread": {"min": 801.0, "max": 816.0, "relative": pytest.approx(15 / 816)},
        "summary": "reproduced by 2 pods, spread 1.8 %",
    }
    assert [reign["value"] for reign in found["history"]] == [33.0, 517.0, 816.0]
    other = crown(board_url, SPARK, "quality")
    assert other["reproductions"]["pods"] == 2
    recipe = read_api(board_url, f"/api/v1/recipes/{found['recipe_id']}").body
    assert recipe["reproductions"] == [
        {
            "hardware_class": {"slug": SPARK, "name": "Single DGX Spark"},
            "model": GEMMA,
            "pods": 2,
            "benchmark_ids": [b816, again],
            "spreads": recipe["reproductions"][0]["spreads"],
            "summary": "reproduced by 2 pods, spread 1.8 %",
        }
    ]
    assert recipe["reproductions"][0]["spreads"]["throughput"] == {
        "min": 801.0,
        "max": 816.0,
        "relative": pytest.approx(15 / 816),
    }
    assert recipe["diffs"]["champion"] == []  # it holds the crown itself


def test_a_recipe_says_how_it_differs_from_the_class_champion(pod, board_url):
    _, b517, b816 = submit_seed_line(pod)
    champion = crown(board_url, SPARK, "throughput")
    recipe_517 = read_api(board_url, f"/api/v1/benchmarks/{b517}").body["recipe_id"]

    recipe = read_api(board_url, f"/api/v1/recipes/{recipe_517}").body

    [against] = recipe["diffs"]["champion"]
    assert (against["against_benchmark"], against["against_recipe"]) == (
        b816,
        champion["recipe_id"],
    )
    assert against["hardware_class"]["slug"] == SPARK
    diff = against["diff"]
    assert {(c["flag"], c["from"], c["to"]) for c in diff["changed"]} == {
        ("--max-num-batched-tokens", "32768", "8192")
    }
    assert {a["flag"] for a in diff["removed"]} == {"--enable-chunked-prefill", "--moe-backend"}
    assert recipe["reproductions"][0]["summary"] == "measured by one pod only"


def test_a_recipe_measured_by_one_pod_only_says_so(pod, board_url):
    *_, b816 = submit_seed_line(pod)

    found = crown(board_url, SPARK, "throughput")

    assert found["reproductions"]["pods"] == 1
    assert found["reproductions"]["benchmark_ids"] == [b816]
    assert found["reproductions"]["summary"] == "measured by one pod only"


def test_unlabeled_hardware_never_holds_a_crown(pod, board_url):
    submit(pod, CPU_ONLY, "2026-10-08T09:00:00Z")

    assert champions(board_url, "?hardware=unlabeled") == []
    listed = read_api(board_url, "/api/v1/benchmarks").body["results"]
    assert [item["hardware_class"]["slug"] for item in listed] == ["unlabeled"]


def test_the_champion_api_answers_json_errors_for_a_bad_axis_and_an_overlong_query(board_url):
    bad_axis = read_api(board_url, "/api/v1/champions?axis=fastest")
    overlong = read_api(board_url, "/api/v1/champions?hardware=" + "x" * 301)

    for reply in (bad_axis, overlong):
        assert reply.status == 400
        assert reply.body["reason"] == "BAD_REQUEST"
    assert "throughput" in bad_axis.body["note"]
    assert read_api(board_url, "/api/v1/champions").body == {"champions": []}
