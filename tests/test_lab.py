"""The recipe lab on the board (docs/lab.md): single-flag effects written on commit with the read
models from benchmarks uploaded through the real pod protocol, shown on the model × class page,
the flag page and each benchmark page; only ranked benchmarks ever enter an effect."""

from dataclasses import replace

import pytest

from board.models import Benchmark, DrafterCurve, FlagEffect, FlagPair
from board.services import flag_benchmark
from demo.loader import prefill_hub_cache
from evidence.signing import key_fingerprint
from tests.boardjobs import read_api
from tests.championjobs import GEMMA_816, _with_flag, submit

pytestmark = pytest.mark.django_db

SPARK = "dgx-spark-x1"
GEMMA = GEMMA_816.hf_repo.lower()

# 816 tok/s on --max-num-batched-tokens 32768; the same recipe at 49152 measures 900.
WIDER_BATCH = replace(
    GEMMA_816,
    key="gemma-4-26b-a4b-dflash-spark-49152",
    flags=_with_flag(GEMMA_816.flags, "--max-num-batched-tokens", "49152"),
    peak_agg_tps=900.0,
    composite=65.2,
)
# Two flags changed at once: batched tokens and the sequence cap.
TWO_FLAGS = replace(
    WIDER_BATCH,
    key="gemma-4-26b-a4b-dflash-spark-two-flags",
    flags=_with_flag(WIDER_BATCH.flags, "--max-num-seqs", "48"),
    peak_agg_tps=700.0,
)
CHANGE = "--max-num-batched-tokens 32768 -> 49152"


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def effects() -> list[FlagEffect]:
    return list(FlagEffect.objects.filter(hardware_class__slug=SPARK).order_by("change_key"))


def test_two_benchmarks_one_flag_apart_give_one_effect_with_its_sign_and_size(pod, board_url):
    base = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    other = submit(pod, WIDER_BATCH, "2026-10-04T09:00:00Z")

    [effect] = effects()
    assert effect.change_key == CHANGE
    assert effect.change == {
        "flag": "--max-num-batched-tokens",
        "kind": "changed",
        "before": "32768",
        "after": "49152",
    }
    assert (effect.pair_count, effect.pod_count) == (1, 1)
    throughput = effect.axes["throughput"]
    assert throughput["median"] == pytest.approx(900.0 / 816.0)  # sign and size: +10.3 %
    assert throughput["better"] is True and throughput["n"] == 1
    composites = dict(Benchmark.objects.values_list("public_id", "composite"))
    assert effect.axes["quality"]["median"] == pytest.approx(composites[other] - composites[base])
    assert effect.axes["quality"]["median"] < 0 and effect.axes["quality"]["better"] is False
    assert effect.pairs[0]["base"] == [base] and effect.pairs[0]["other"] == [other]

    # The model × class page says what the flag did, measured once by one pod, with links.
    page = read_api(board_url, f"/models/{GEMMA}/hardware/{SPARK}/")
    assert page.status == 200, page.text
    assert "What each flag did" in page.text
    assert "--max-num-batched-tokens" in page.text and "+10.3 %" in page.text
    assert "measured once, by one pod" in page.text
    assert f"/benchmarks/{base}/" in page.text and f"/benchmarks/{other}/" in page.text
    # The flag's own page, across classes.
    flag_page = read_api(board_url, "/lab/flags/--max-num-batched-tokens/")
    assert flag_page.status == 200, flag_page.text
    assert "+10.3 %" in flag_page.text and "Single DGX Spark" in flag_page.text
    # Each benchmark names its neighbour one flag away, with the delta.
    for mine, theirs, delta in ((base, other, "+10.3 %"), (other, base, "−9.3 %")):
        shown = read_api(board_url, f"/benchmarks/{mine}/")
        assert "One flag away" in shown.text
        assert f"/benchmarks/{theirs}/" in shown.text and delta in shown.text, mine


def test_two_pods_doing_the_same_change_give_n_2(pod, make_pod, board_url):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    submit(pod, WIDER_BATCH, "2026-10-04T09:00:00Z")
    second = make_pod()
    submit(second, replace(GEMMA_816, peak_agg_tps=800.0), "2026-10-05T09:00:00Z")
    submit(second, replace(WIDER_BATCH, peak_agg_tps=840.0), "2026-10-06T09:00:00Z")

    [effect] = effects()
    assert (effect.pair_count, effect.pod_count) == (2, 2)
    throughput = effect.axes["throughput"]
    assert throughput["min"] == pytest.approx(840.0 / 800.0)
    assert throughput["max"] == pytest.approx(900.0 / 816.0)
    assert throughput["median"] == pytest.approx((840.0 / 800.0 + 900.0 / 816.0) / 2)
    page = read_api(board_url, f"/models/{GEMMA}/hardware/{SPARK}/")
    assert "2 pairs, 2 pods" in page.text and "measured once" not in page.text


def test_a_pair_that_differs_in_two_flags_gives_none(pod, board_url):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    submit(pod, TWO_FLAGS, "2026-10-04T09:00:00Z")

    assert effects() == [] and not FlagPair.objects.exists()
    page = read_api(board_url, f"/models/{GEMMA}/hardware/{SPARK}/")
    assert page.status == 200 and "No single-flag experiment" in page.text


def test_a_self_reported_or_unranked_benchmark_never_enters_an_effect(pod, board_url):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    submit(pod, WIDER_BATCH, "2026-10-04T09:00:00Z", endpoint=True)  # self-reported
    assert effects() == []

    ranked = submit(pod, replace(WIDER_BATCH, key="again"), "2026-10-05T09:00:00Z")
    [effect] = effects()
    assert effect.pairs[0]["other"] == [ranked]  # the self-reported one is not on its side

    flag_benchmark(public_id=ranked, flagged=True, note="test")  # flagged: no longer ranked
    assert effects() == []
    flag_benchmark(public_id=ranked, flagged=False)
    assert len(effects()) == 1


def test_drafter_curves_name_each_setting_and_the_best_cohort_per_rung(pod, board_url):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    no_drafter = replace(
        GEMMA_816,
        key="gemma-no-drafter",
        flags=GEMMA_816.flags[:-2],
        drafter_repo=None,
        spec_method=None,
        spec_n=None,
        peak_agg_tps=610.0,
        # One stream without a drafter decodes within its roofline (docs/cohorts.md §Rooflines):
        # the drafter's c1 figures slowed 2.5×.
        c1=tuple((cat, decode / 2.5, ttft, tpot * 2.5) for cat, decode, ttft, tpot in GEMMA_816.c1),
    )
    submit(pod, no_drafter, "2026-10-04T09:00:00Z")

    curves = {c.label: c for c in DrafterCurve.objects.filter(hardware_class__slug=SPARK)}
    assert set(curves) == {"no drafter", "dflash n=11"}
    top = {c: max(p["aggregate_tps"] for p in curves[c].points) for c in curves}
    assert top == {"no drafter": 610.0, "dflash n=11": 816.0}
    at_64 = next(p for p in curves["dflash n=11"].points if p["conc"] == 64)
    assert at_64["cohort"] == "coding @ c64" and at_64["per_stream_tps"] == 816.0 / 64
    # Removing the speculative config is itself a single-flag experiment.
    [effect] = effects()
    assert effect.change["flag"] == "--speculative-config" and effect.change["kind"] == "added"
    page = read_api(board_url, f"/models/{GEMMA}/hardware/{SPARK}/")
    assert "Drafter × concurrency" in page.text and "no drafter" in page.text


def test_a_pod_page_and_a_run_page_lead_to_the_run_against_the_champion(pod, make_pod, board_url):
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    champion = submit(pod, WIDER_BATCH, "2026-10-04T09:00:00Z")  # 900 tok/s takes the crown
    second = make_pod()
    mine = submit(second, replace(GEMMA_816, peak_agg_tps=800.0), "2026-10-05T09:00:00Z")

    for path in (f"/pods/{key_fingerprint(second.public_key)}/", f"/benchmarks/{mine}/"):
        page = read_api(board_url, path)
        assert page.status == 200, page.text
        assert "Against the champion of Single DGX Spark" in page.text, path
        assert "3 of 3" in page.text, path  # the slowest of three ranked on throughput
        assert "88.9 % of the champion" in page.text, path  # 800 ÷ 900
        assert f"/benchmarks/{champion}/" in page.text, path
        # The champion's recipe changes one flag against this one, and the board measured it.
        assert "--max-num-batched-tokens 32768 → 49152" in page.text, path
        assert "throughput +10.3 %" in page.text and "measured once, by one pod" in page.text
    # The URL a final's answer gives (the run page) leads to that comparison.
    run_id = read_api(board_url, f"/api/v1/benchmarks/{mine}").body["runs"][0]["run_id"]
    run_page = read_api(board_url, f"/runs/{run_id}/")
    assert f"/benchmarks/{mine}/#against-champion" in run_page.text


def test_the_demo_gemma_line_on_a_spark_charts_three_drafter_settings_and_a_two_pod_effect(
    make_pod, board_url
):
    """The demo's lines of Gemma 4 26B-A4B on a single Spark, each from its own demo pod: no
    drafter, n=4 and n=11, crossing over; dropping the drafter measured by two pods."""
    from board.lab import best_per_rung
    from demo.catalogue import DEMO_JOBS

    pods: dict[str, object] = {}
    for job in DEMO_JOBS:
        if (
            job.model.hf_repo == GEMMA_816.hf_repo
            and job.model.key != "gemma-4-26b-a4b-dflash-spark-33"
        ):
            if job.model.key == "gemma-4-26b-a4b-dflash-spark-517":
                continue
            submit(pods.setdefault(job.pod, make_pod()), job.model, job.started)
    assert len(pods) == 3

    curves = list(DrafterCurve.objects.filter(hardware_class__slug=SPARK))
    assert {c.label for c in curves} == {"no drafter", "dflash n=4", "dflash n=11"}
    best = best_per_rung([{"label": c.label, "points": c.points} for c in curves])
    assert best[1] == "dflash n=11" and best[64] == "dflash n=11"
    assert best[32] == "dflash n=4"  # the crossover: a shorter draft batches better at c32
    dropped = next(
        e
        for e in effects()
        if e.change["flag"] == "--speculative-config" and e.change_key.endswith("11}")
    )
    assert dropped.change["kind"] == "added" and dropped.pod_count == 2
    assert dropped.axes["throughput"]["median"] > 1  # the drafter pays at the peak
    page = read_api(board_url, f"/models/{GEMMA}/hardware/{SPARK}/")
    assert 'id="chart-drafter-aggregate"' in page.text and "★" in page.text
    assert "2 pairs, 2 pods" in page.text


def test_the_ranks_against_the_champion_are_the_counts_axis_by_axis(pod, make_pod, board_url):
    # One aggregate makes every axis's rank and total (board.lab_selectors._ranks); the two
    # counts per axis it replaced are the reference, for ranked benchmarks and an unranked one.
    from board.lab_selectors import AXIS_FIGURES, against_champion

    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    submit(pod, WIDER_BATCH, "2026-10-04T09:00:00Z")
    submit(make_pod(), replace(GEMMA_816, peak_agg_tps=800.0), "2026-10-05T09:00:00Z")
    flagged = submit(make_pod(), replace(GEMMA_816, peak_agg_tps=850.0), "2026-10-06T09:00:00Z")
    flag_benchmark(public_id=flagged, flagged=True, note="test")  # no longer ranked

    def counted(benchmark: Benchmark, axis: str) -> tuple[int | None, int]:
        column, lowest = AXIS_FIGURES[axis]
        value = getattr(benchmark, column)
        pool = Benchmark.objects.public().filter(
            hardware_class_id=benchmark.hardware_class_id,
            ranked=True,
            **{f"{column}__isnull": False},
        )
        if value is None or not benchmark.ranked:
            return None, pool.count()
        beats = {f"{column}__lt" if lowest else f"{column}__gt": value}
        return pool.filter(**beats).count() + 1, pool.count()

    benchmarks = list(Benchmark.objects.filter(hardware_class__slug=SPARK))
    assert len(benchmarks) == 4 and not all(b.ranked for b in benchmarks)
    for benchmark in benchmarks:
        axes = against_champion(benchmark)["axes"]
        assert {a["axis"]: (a["rank"], a["total"]) for a in axes} == {
            a["axis"]: counted(benchmark, a["axis"]) for a in axes
        }, benchmark.public_id
    throughput = [
        a["rank"]
        for b in benchmarks
        for a in against_champion(b)["axes"]
        if a["axis"] == "throughput"
    ]
    assert sorted(throughput, key=lambda rank: (rank is None, rank)) == [1, 2, 3, None]
