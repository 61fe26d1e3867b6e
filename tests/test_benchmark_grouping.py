"""A benchmark is a key's runs sharing a job_group, all of one weight set and one serving recipe
(docs/recipes.md, "One benchmark, one weight set, one recipe"); a resumed job's second group
joins it only when key, model, hardware, weights and recipe all match."""

import copy
import hashlib

import pytest

from board.models import Benchmark, Run
from demo.bundles import DEMO_MODELS, text_checkpoints
from demo.loader import prefill_hub_cache
from submissions.rebuild import rebuild_board
from tests.boardjobs import benchmark_of, core_job, read_api, submit_job

pytestmark = pytest.mark.django_db

MODEL = DEMO_MODELS[0]


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def with_one_shard_changed(bundle: dict) -> dict:
    """The same bundle from a box whose last shard differs (re-quantised, corrupted …)."""
    changed = copy.deepcopy(bundle)
    per_file = changed["weights_per_file"]
    last = sorted(per_file)[-1]
    per_file[last] = hashlib.sha256(b"another file").hexdigest()
    joined = ";".join(f"{path}:{per_file[path]}" for path in sorted(per_file))
    changed["weights_hash"] = hashlib.sha256(joined.encode()).hexdigest()
    changed["deployment_manifest"]["verification"]["weights_hash"] = changed["weights_hash"]
    return changed


def weights_of(base_url: str, benchmark_id: str) -> set[str]:
    """The weights_hash of every public run of a benchmark, as the run API shows them."""
    detail = read_api(base_url, f"/api/v1/benchmarks/{benchmark_id}").body
    return {
        read_api(base_url, f"/api/v1/runs/{run['run_id']}").body["extras"]["weights_hash"]
        for run in detail["runs"]
    }


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
    assert weights_of(board_url, benchmark["id"]) == {text[3]["weights_hash"]}
    assert benchmark["weight_set"] == text[3]["weights_hash"]


def test_a_second_job_with_one_shard_changed_never_joins_the_first_jobs_benchmark(pod, board_url):
    # The first job: its text run checkpointed but its final never committed; its perf did.
    first_text, first_perf = core_job(MODEL, started="2026-11-05T10:00:00Z")
    session = pod.open_run(*first_text[2:0:-1], first_text[0])
    assert pod.submit(session, text_checkpoints(first_text[3])[0], final=False).status == 200
    first = submit_job(pod, [first_perf])
    # The second job, same model on the same box, with one shard hash changed.
    second_text, second_perf = (
        (board, suite, model, with_one_shard_changed(bundle))
        for board, suite, model, bundle in core_job(MODEL, started="2026-11-06T10:00:00Z")
    )
    second = submit_job(pod, [second_text, second_perf])

    first_id = first[0].body["benchmark_id"]
    second_id = benchmark_of(board_url, second)["id"]
    assert first_id != second_id
    assert weights_of(board_url, first_id) == {first_perf[3]["weights_hash"]}
    assert weights_of(board_url, second_id) == {second_text[3]["weights_hash"]}


def test_a_run_of_the_same_group_with_other_weights_or_another_recipe_starts_its_own_benchmark(
    pod, board_url
):
    text, perf = core_job(MODEL, started="2026-11-07T10:00:00Z")
    other_weights = with_one_shard_changed(perf[3]) | {"job_sig": "a" * 24}
    retuned = copy.deepcopy(perf[3]) | {"job_sig": "b" * 24}
    flags = retuned["recipe"]["flags"]
    flags[flags.index("--max-num-seqs") + 1] = "32"

    answers = submit_job(pod, [text, (*perf[:3], other_weights), (*perf[:3], retuned), perf])

    ids = [answer.body["benchmark_id"] for answer in answers]
    assert len(set(ids[:3])) == 3  # text; perf on other weights; perf with another recipe
    assert ids[3] == ids[0]  # the job's own perf joins its text
    recipes = {read_api(board_url, f"/api/v1/benchmarks/{i}").body["recipe_id"] for i in ids}
    assert len(recipes) == 2


def test_two_full_jobs_of_one_model_on_one_box_stay_two_benchmarks(pod):
    first = submit_job(pod, core_job(MODEL, started="2026-11-02T10:00:00Z"))
    second = submit_job(pod, core_job(MODEL, started="2026-11-03T10:00:00Z"))

    assert {a.body["benchmark_id"] for a in first} != {a.body["benchmark_id"] for a in second}


def test_the_same_job_group_from_another_pod_is_another_benchmark(make_pod):
    job = core_job(MODEL)
    first = submit_job(make_pod(), job)
    second = submit_job(make_pod(), job)

    assert first[0].body["benchmark_id"] != second[0].body["benchmark_id"]


def test_rebuild_board_regroups_a_benchmark_that_mixed_two_weight_sets(pod, board_url):
    first_perf = core_job(MODEL, started="2026-11-08T10:00:00Z")[1]
    second = [
        (board, suite, model, with_one_shard_changed(bundle))
        for board, suite, model, bundle in core_job(MODEL, started="2026-11-09T10:00:00Z")
    ]
    first = submit_job(pod, [first_perf])
    submit_job(pod, second)
    # What the old resume rule left behind: every run of the key in the first benchmark.
    mixed = Benchmark.objects.get(public_id=first[0].body["benchmark_id"])
    Run.objects.update(benchmark=mixed)
    Benchmark.objects.exclude(pk=mixed.pk).delete()

    rebuild_board()

    grouped = {
        benchmark.public_id: set(benchmark.runs.values_list("weights_hash", flat=True))
        for benchmark in Benchmark.objects.all()
    }
    assert len(grouped) == 2
    assert all(len(hashes) == 1 for hashes in grouped.values())
    assert mixed.public_id in grouped  # the first job keeps its public id
