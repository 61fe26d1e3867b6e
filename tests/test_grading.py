"""The numbers hold against a hostile pod (issue 19, points 4–7): the board grades the suite's
deterministic cases again, checks the suite, holds a quality floor no single run moves, names
models from the Hub, and counts pods by network and by evidence."""

import copy
import random
import unicodedata
from datetime import UTC, datetime, timedelta

import pytest

from board import grading as grading_module
from board.champions import Axis, Entry, best_composites, copies, replay, reproductions
from board.grading import suite_cases, text_quality
from board.models import Benchmark, BenchModel
from board.pods import network_of
from demo.bundles import TEXT_SUITE_ID, job_bundles
from demo.loader import prefill_hub_cache
from tests.boardjobs import as_frontier_run, core_job, read_api, submit_job
from tests.championjobs import GEMMA_816, QWEN_35B, crown, submit, submit_seed_line

SUITE = suite_cases(TEXT_SUITE_ID)
DAY0 = datetime(2026, 9, 1, tzinfo=UTC)


def honest_text() -> dict:
    job = job_bundles(GEMMA_816, with_agentic=False, with_perf=False)
    return next(bundle for _, suite, _, bundle in job if suite == TEXT_SUITE_ID)


def all_ones(bundle: dict) -> dict:
    """Every row claims 1.0 over the very outputs the honest run sent."""
    bundle = copy.deepcopy(bundle)
    for row in bundle["results"]:
        row["score"], row["status"] = 1.0, "scored"
    return bundle


# --- grading, pure ---------------------------------------------------------------------------


def test_all_one_scores_over_wrong_deterministic_answers_are_disputed():
    honest = honest_text()
    claimed = text_quality(SUITE, honest["suite_hash"], all_ones(honest)["results"])
    grading = claimed["grading"]

    assert claimed["composite"] == pytest.approx(100.0)
    assert grading["disputed"] and grading["disagreements"] > 20
    assert grading["board_composite"] < 90
    # The unit-test and judged cases are the pod's word, and say so.
    assert grading["pods_word"]["unit_test"] == 36 and grading["pods_word"]["judged"] >= 30
    honest_grading = text_quality(SUITE, honest["suite_hash"], honest["results"])["grading"]
    assert (honest_grading["disputed"], honest_grading["disagreements"]) == (False, 0)


def test_four_hundred_invented_ids_are_not_counted_and_coverage_stays_within_the_suite():
    honest = honest_text()
    invented = [
        {"case_id": f"v4.math.easy.{n:03d}", "category": "Math", "status": "scored", "score": 1.0}
        for n in range(100, 500)
    ]
    quality = text_quality(SUITE, honest["suite_hash"], invented)
    assert quality["grading"]["unknown_ids"] == 400
    assert (quality["covered"], quality["coverage_label"]) == (0, "0/174 cases")
    assert quality["composite"] is None

    padded = text_quality(SUITE, honest["suite_hash"], honest["results"] + invented)
    assert padded["covered"] <= 174 and padded["coverage_ratio"] <= 1.0
    assert padded["composite"] == pytest.approx(GEMMA_816.composite, abs=1.0)


def test_the_hardest_tier_dropped_is_not_complete_and_an_unknown_hash_is_said():
    honest = honest_text()
    without_god = [r for r in honest["results"] if ".god_mode." not in r["case_id"]]
    assert len(without_god) / 174 > 0.86
    grading = text_quality(SUITE, honest["suite_hash"], without_god)["grading"]
    assert not grading["tiers_complete"]
    assert {cell["difficulty"] for cell in grading["cells_short"]} == {"god_mode"}
    assert not text_quality(SUITE, "0123456789abcdef", honest["results"])["grading"][
        "suite_hash_known"
    ]


def test_a_pattern_cannot_take_more_than_linear_time():
    # A classic catastrophic pattern shape on a long output: RE2 answers at once.
    case = next(c for c in SUITE.cases.values() if c.board_grades and c.category == "Instruction")
    rows = [
        {"case_id": case.case_id, "status": "scored", "score": 1.0, "raw_output": "a" * 200_000}
    ]
    assert text_quality(SUITE, None, rows)["grading"]["regraded"] == 1


def test_folding_an_answer_collapses_what_re2_calls_space_and_nothing_else():
    # _fold collapses runs of RE2's ASCII `\s` with string methods; the RE2 pattern it replaced
    # is the reference, on short strings of every kind of space (Unicode ones NFKC keeps too).
    alphabet = ["a", "x", " ", "  ", "\t", "\n", "\f", "\r", "\v", "\u2028", "\u00a0", "\u3000"]
    alphabet += ["\x85", "\x1c", "\u2009", "\u2014", "\u201c"]

    def reference(text: str) -> str:
        text = unicodedata.normalize("NFKC", text).translate(grading_module._TYPOGRAPHY)
        return grading_module._WHITESPACE.sub(" ", text).strip()

    chosen = random.Random(7)
    for _ in range(5000):
        text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 10)))
        assert grading_module._fold(text) == reference(text), repr(text)
    assert grading_module._fold("\tThe  answer\r\nis\v 42 ") == "The answer is\v 42"


def test_the_numbers_and_boxes_python_reads_are_the_ones_re2_read():
    # _NUMBER and _BOXED run on Python's engine with RE2's classes spelled out; the RE2 patterns
    # they replaced are the reference, on short strings of digits, signs, points, the
    # Unicode digits Python's `\d` would take and every kind of space.
    number = grading_module._compiled(r"-?\d+(?:\.\d+)?", False)
    boxed = grading_module._compiled(r"\\boxed\s*\{", False)
    alphabet = ["1", "42", "-", ".", "0.5", "\u0663", "\uff11", "\u2212", "e", " ", "\t", "\n"]
    alphabet += ["\v", "\f", "\r", "\u00a0", "\\boxed", "{", "}", "x"]
    chosen = random.Random(11)
    for _ in range(5000):
        text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 12)))
        assert grading_module._NUMBER.findall(text) == number.findall(text), repr(text)
        spans = [match.span() for match in grading_module._BOXED.finditer(text)]
        assert spans == [match.span() for match in boxed.finditer(text)], repr(text)


def test_the_last_balanced_box_is_the_one_a_scan_from_each_box_finds():
    # boxed_answer matches braces in one pass; the scan forward from each box that it replaced
    # (quadratic when the braces never close) is the reference, on short strings of boxes,
    # braces, answer tags and text.
    def reference(text: str) -> str | None:
        spans = []
        for match in grading_module._BOXED.finditer(text):
            depth, i = 1, match.end()
            while i < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            if depth == 0:
                spans.append(text[match.end() : i - 1])
        if spans:
            return spans[-1].strip()
        tags = list(grading_module._ANSWER_TAG.finditer(text))
        return tags[-1].group(1).strip() if tags else None

    alphabet = ["\\boxed", "\\boxed {", "{", "}", " ", "a", "7", "<answer>", "</answer>"]
    chosen = random.Random(13)
    for _ in range(5000):
        text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 14)))
        assert grading_module.boxed_answer(text) == reference(text), repr(text)
    assert grading_module.boxed_answer("\\boxed{x \\boxed{y}") == "y"
    assert grading_module.boxed_answer("\\boxed{\\boxed{1}} then \\boxed{2") == "1"


# --- floor, pods, copies, pure ---------------------------------------------------------------


def entry(name: str, day: int, pod: str, **fields) -> Entry:
    defaults = {"model": "m", "recipe": "r", "ranked": True, "applicable": True}
    return Entry(
        benchmark=name,
        pod=pod,
        key=fields.pop("key", pod),
        completed_at=DAY0 + timedelta(days=day),
        **(defaults | fields),
    )


def test_one_outlier_pod_cannot_move_the_quality_floor():
    honest = [entry("a", 0, "p1", composite=65.7), entry("b", 1, "p2", composite=65.0)]
    outlier = entry("x", 2, "p3", composite=100.0, throughput=10.0)
    assert best_composites([*honest, outlier]) == {"m": 65.7}
    fast = entry("fast", 3, "p1", composite=64.0, throughput=900.0)
    assert (
        replay(
            [*honest, outlier, fast], Axis.THROUGHPUT, best_composites([*honest, outlier, fast])
        )[-1].holder.benchmark
        == "fast"
    )
    # One pod alone is its own reference.
    assert best_composites([entry("a", 0, "p1", composite=70.0)]) == {"m": 70.0}


def test_three_keys_on_one_network_are_one_pod():
    found = reproductions(
        [entry(f"b{n}", n, "network-1", key=f"key-{n}", throughput=800.0 + n) for n in range(3)]
    )
    reproduction = found[("r", "m")]
    assert (reproduction.pods, reproduction.keys) == (1, 3)
    assert reproduction.describe(Axis.THROUGHPUT) == "reproduced by 1 pod (3 keys, 1 network)"


def test_a_re_signed_copy_of_another_pods_run_is_a_copy_and_reproduces_nothing():
    original = entry("orig", 0, "p1", throughput=816.0, evidence=frozenset({"t1", "p1"}))
    copied = entry("copy", 1, "p2", throughput=816.0, evidence=frozenset({"t1", "p1"}))
    other = entry("mine", 2, "p3", throughput=801.0, evidence=frozenset({"t3", "p3"}))
    found = copies([original, copied, other])
    assert found == {"copy": "orig"}
    marked = [original, Entry(**{**copied.__dict__, "copy_of": "orig"}), other]
    reproduction = reproductions(marked)[("r", "m")]
    assert (reproduction.benchmarks, reproduction.copies, reproduction.pods) == (
        ("orig", "mine"),
        ("copy",),
        2,
    )


def test_only_public_addresses_name_a_network():
    assert network_of("81.2.69.160") == "81.2.69.0/24"
    assert network_of("2a00:1450:4001:81c::200e") == "2a00:1450:4001::/48"
    assert network_of("127.0.0.1") is None and network_of("10.1.2.3") is None
    assert network_of("not an address") is None


# --- over HTTP, with real signing pods -------------------------------------------------------


@pytest.fixture
def hub_answers():
    prefill_hub_cache()


def from_network(pod, address: str):
    """The pod's requests reach the board through its proxy, from `address`."""
    send = pod.send

    def send_from(method, path, body=None, headers=None, **options):
        return send(method, path, body, {**(headers or {}), "X-Forwarded-For": address}, **options)

    pod.send = send_from
    return pod


@pytest.mark.django_db
def test_a_self_scored_run_is_marked_and_moves_no_crown_and_no_floor(
    pod, make_pod, hub_answers, board_url
):
    *_, b816 = submit_seed_line(pod)
    before = {
        axis: crown(board_url, "dgx-spark-x1", axis)["benchmark_id"]
        for axis in ("throughput", "quality")
    }
    hostile = make_pod()
    job = core_job(GEMMA_816, started="2026-10-20T09:00:00Z")
    job[0] = (*job[0][:3], all_ones(job[0][3]))
    answers = submit_job(hostile, job)
    cheat = answers[0].body["benchmark_id"]

    detail = read_api(board_url, f"/api/v1/benchmarks/{cheat}").body
    assert detail["ranked"] is False and "grading_disputed" in detail["badges"]
    stored = Benchmark.objects.get(public_id=cheat)
    assert stored.composite == pytest.approx(100.0)
    after = {
        axis: crown(board_url, "dgx-spark-x1", axis)["benchmark_id"]
        for axis in ("throughput", "quality")
    }
    assert after == before and after["throughput"] == b816
    page = read_api(board_url, f"/benchmarks/{cheat}/")
    assert "Board&#x27;s grading" in page.text or "Board's grading" in page.text
    math = next(c for c in stored.categories if c["category"] == "Math")
    assert math["score"] == pytest.approx(100.0) and math["board_score"] < 100


@pytest.mark.django_db
def test_a_frontier_run_naming_a_new_repo_does_not_make_it_frontier_nor_name_it(
    pod, make_pod, hub_answers, board_url
):
    text = next(b for _, s, _, b in job_bundles(QWEN_35B, with_agentic=False) if s == TEXT_SUITE_ID)
    frontier = as_frontier_run(copy.deepcopy(text), "qwen-hosted")
    frontier["hf_repo"] = QWEN_35B.hf_repo
    answer = pod.submit_run("Qwen … visit evil-example.com", TEXT_SUITE_ID, "text", frontier)
    assert answer.status == 200, answer.body
    model = BenchModel.objects.get(canonical_id=QWEN_35B.hf_repo.lower())
    assert not model.is_frontier and "evil" not in model.display_name

    honest = submit(make_pod(), QWEN_35B, "2026-10-21T09:00:00Z")
    detail = read_api(board_url, f"/api/v1/benchmarks/{honest}").body
    assert detail["ranked"] is True and "frontier" not in detail["badges"]
    model.refresh_from_db()
    assert (model.display_name, model.hf_repo, model.is_frontier) == (
        QWEN_35B.hf_repo,
        QWEN_35B.hf_repo,
        False,
    )


@pytest.mark.django_db
def test_three_keys_from_one_network_are_one_pod_and_a_re_signed_copy_is_marked(
    make_pod, hub_answers, board_url, settings
):
    settings.AEON_TRUSTED_PROXY_HEADER = "HTTP_X_FORWARDED_FOR"
    ids = [
        submit(
            from_network(make_pod(), f"81.2.69.{10 + n}"), GEMMA_816, f"2026-10-0{n + 1}T09:00:00Z"
        )
        for n in range(3)
    ]
    found = crown(board_url, "dgx-spark-x1", "throughput")
    assert found["benchmark_id"] == ids[0]
    assert found["reproductions"]["pods"] == 1
    assert found["reproductions"]["summary"] == "reproduced by 1 pod (3 keys, 1 network)"

    # Another network re-signs the first pod's very bundles as its own job.
    copier = from_network(make_pod(), "93.184.216.34")
    job = core_job(GEMMA_816, started="2026-10-09T09:00:00Z")  # its own job: the same rows
    copy_id = {a.body["benchmark_id"] for a in submit_job(copier, job)}.pop()
    assert "evidence_copy" in Benchmark.objects.get(public_id=copy_id).badges
    found = crown(board_url, "dgx-spark-x1", "throughput")
    assert found["reproductions"]["pods"] == 1
    assert copy_id not in found["reproductions"]["benchmark_ids"]
