"""A benchmark is a key's runs sharing a job_group; a resumed job's second group joins it."""

import pytest

from submissions.demo.bundles import DEMO_MODELS
from submissions.demo.loader import prefill_hub_cache
from tests.boardjobs import benchmark_of, core_job, submit_job

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = DEMO_MODELS[0]


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def test_a_resumed_job_sending_its_perf_bundle_under_a_second_group_is_one_benchmark(
    pod, board_url
):
    text, perf = core_job(MODEL)
    perf[3]["job_group"] = "ab" * 12  # the pod resumed and started a new group

    answers = submit_job(pod, [text, perf])

    benchmark = benchmark_of(board_url, answers)
    assert benchmark["complete"] is True
    assert benchmark["ranked"] is True
    assert {
        run["board"]
        for run in pod.send("GET", f"/api/v1/benchmarks/{benchmark['id']}").body["runs"]
    } == {
        "text",
        "perf",
    }


def test_two_full_jobs_of_one_model_on_one_box_stay_two_benchmarks(pod):
    first = submit_job(pod, core_job(MODEL, started="2026-11-02T10:00:00Z"))
    second = submit_job(pod, core_job(MODEL, started="2026-11-03T10:00:00Z"))

    assert {a.body["benchmark_id"] for a in first} != {a.body["benchmark_id"] for a in second}


def test_the_same_job_group_from_another_pod_is_another_benchmark(make_pod):
    job = core_job(MODEL)
    first = submit_job(make_pod(), job)
    second = submit_job(make_pod(), job)

    assert first[0].body["benchmark_id"] != second[0].body["benchmark_id"]
