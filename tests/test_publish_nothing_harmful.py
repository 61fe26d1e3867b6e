"""Nothing harmful is published (docs/recipes.md, "Secrets" and "Scrubbing"): a token anywhere in
a bundle withholds its run and benchmark; host paths, job signatures, groups and start stamps
reach no public answer or page; a hardware class is listed once it holds a published benchmark.
"""

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from board.models import Run
from demo.bundles import DEMO_JOBS, DEMO_MODELS, TEXT_SUITE_ID, job_bundles, text_checkpoints
from demo.loader import prefill_hub_cache
from recipes.secret_scan import PREFIXED_TOKEN
from tests.boardjobs import core_job, read_api, submit_job

# Rolled back, the board in-process (docs/README.md §The test suite): nothing here needs a socket
# or a real commit.
pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parent / "fixtures" / "examples"
HF_TOKEN = "hf_" + "Qm7RtY2uIo9PaS4dF6gH8jK1lZ3xC5vB7n"
MODEL = DEMO_MODELS[0]


def example(name: str) -> dict:
    bundle = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return {k: v for k, v in bundle.items() if k not in ("run_id", "run_nonce", "final")}


def with_token_in_unknown_key(bundle: dict) -> dict:
    return bundle | {"serve_log": f"export HF_TOKEN={HF_TOKEN}\nvllm serve /model"}


def with_token_in_environment(bundle: dict) -> dict:
    changed = copy.deepcopy(bundle)
    changed["environment"]["launcher"] = {"env": f"HUGGING_FACE_HUB_TOKEN={HF_TOKEN}"}
    return changed


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


@pytest.mark.parametrize("plant", [with_token_in_unknown_key, with_token_in_environment])
def test_a_final_carrying_a_token_is_withheld_with_its_benchmark(pod, board_url, plant):
    text, perf = core_job(MODEL)
    clean = submit_job(pod, [text])[0]
    board, suite, model, bundle = perf
    answer = pod.submit_run(model, suite, board, plant(bundle))

    assert answer.status == 200
    assert answer.body["benchmark_id"] == clean.body["benchmark_id"]
    run = Run.objects.get(run_id=answer.body["run_id"])
    assert run.secret_detected and run.secret_pointers
    assert not any(HF_TOKEN in pointer for pointer in run.secret_pointers)
    assert_withheld(board_url, answer, also_hidden=clean.body["run_id"])


@pytest.mark.parametrize("final_row", ["left out", "sent again without the token"])
def test_a_token_in_a_row_only_a_checkpoint_carried_withholds_the_run(pod, board_url, final_row):
    [(board, suite, model, text)] = [entry for entry in core_job(MODEL) if entry[0] == "text"]
    checkpoint = text_checkpoints(text)[0]
    row = {
        "case_id": "v4.coding.easy.99",
        "category": "Coding",
        "tier": 0,
        "status": "scored",
        "score": 1.0,
        "raw_output": f"curl -H 'Authorization: Bearer {HF_TOKEN}' https://huggingface.co",
        "evidence": {},
        "speed": {},
    }
    checkpoint["results"].append(row)
    if final_row != "left out":  # the checkpointed row is the one kept (first write wins)
        text = text | {"results": [*text["results"], row | {"raw_output": "curl https://x"}]}
    session = pod.open_run(model, suite, board)
    assert pod.submit(session, checkpoint, final=False).status == 200
    answer = pod.submit(session, text, final=True)

    assert answer.status == 200
    run = Run.objects.get(run_id=answer.body["run_id"])
    assert [p for p in run.secret_pointers if "raw_output" in p], run.secret_pointers
    assert_withheld(board_url, answer)


def assert_withheld(base_url: str, answer, also_hidden: str | None = None) -> None:
    run_id, benchmark_id = answer.body["run_id"], answer.body["benchmark_id"]
    for path in (
        f"/api/v1/runs/{run_id}",
        f"/runs/{run_id}/",
        f"/api/v1/benchmarks/{benchmark_id}",
        f"/benchmarks/{benchmark_id}/",
        *([f"/api/v1/runs/{also_hidden}"] if also_hidden else []),
    ):
        reply = read_api(base_url, path)
        assert reply.status == 404, path
        assert HF_TOKEN not in reply.text
    listed = read_api(base_url, "/api/v1/benchmarks").body["results"]
    assert benchmark_id not in {b["id"] for b in listed}
    assert benchmark_id not in read_api(base_url, "/").text


def test_a_hardware_class_is_listed_once_it_holds_a_published_benchmark(pod, board_url):
    def on(label: str, bundle: dict) -> dict:
        changed = copy.deepcopy(bundle)
        changed["environment"]["hardware"]["detected_label"] = label
        return changed

    [(board, suite, model, perf)] = [entry for entry in core_job(MODEL) if entry[0] == "perf"]
    classes = {c["slug"] for c in read_api(board_url, "/api/v1/hardware-classes").body["items"]}
    assert "dgx-spark-x1" in classes  # presets are always listed
    assert "amd-radeon-pro-w7900-48gb-x1" not in classes

    withheld = with_token_in_unknown_key(on("AMD Radeon PRO W7900 48GB", perf))
    assert pod.submit_run(model, suite, board, withheld).status == 200
    classes = {c["slug"] for c in read_api(board_url, "/api/v1/hardware-classes").body["items"]}
    assert "amd-radeon-pro-w7900-48gb-x1" not in classes
    assert "amd-radeon-pro-w7900-48gb-x1" not in read_api(board_url, "/").text

    published = on("AMD Radeon PRO W7900 48GB", perf) | {"job_sig": "d" * 24, "job_group": "e" * 24}
    assert pod.submit_run(model, suite, board, published).status == 200
    classes = {c["slug"] for c in read_api(board_url, "/api/v1/hardware-classes").body["items"]}
    assert "amd-radeon-pro-w7900-48gb-x1" in classes
    assert 'value="amd-radeon-pro-w7900-48gb-x1"' in read_api(board_url, "/").text


# --- the sweep -----------------------------------------------------------------------------------

OPERATOR_PATH = re.compile(r"(?<![\w.:/~@-])(?:~|/)[^\s:'\"=,;()\[\]{}]*")


def private_strings(bundles: list[dict]) -> set[str]:
    """What must never be published from these bundles: their job signatures and groups, every
    absolute path the operator's machine wrote, the operator's account in model output, and the
    absolute clock of the sustained timeline."""
    found: set[str] = set()
    for bundle in bundles:
        for key in ("job_sig", "job_group"):
            if isinstance(bundle.get(key), str):
                found.add(bundle[key])
        for key, value in bundle.items():
            for text in strings(value):
                if key in ("results", "artifacts"):
                    found.update(re.findall(r"/home/[^/\s'\"]+|/Users/[^/\s'\"]+", text))
                    continue
                for path in OPERATOR_PATH.findall(text):
                    if path.count("/") >= 2 and not path.startswith(("//", "/model/", "/drafter/")):
                        found.add(path)
        for row in bundle.get("results") or []:
            if row.get("case_id") == "perf.sustained.timeline":
                found.update(str(int(point["t"])) for point in row["evidence"]["points"])
    return found


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.hrefs.append(value)


def with_host_paths(bundle: dict) -> dict:
    """A fixture bundle with host paths in every place a pod has put them."""
    changed = copy.deepcopy(bundle)
    changed["recipe"]["flags"] += [
        "--download-dir",
        "/home/alice/hf-cache",
        "--chat-template=/home/alice/templates/gemma.jinja",
    ]
    changed["environment"]["python"] = "/home/alice/venvs/aeon/bin/python3"
    changed["deployment_manifest"]["docker_run"] = changed["recipe"]["docker_run"]
    changed["serve_log"] = "loaded /srv/alice/aeon-models/gemma in 41 s"
    for row in changed["results"]:
        row["raw_output"] += "\n(workspace: /home/alice/aeon-work/case)"
    return changed


def load_the_demo(make_pod) -> None:
    """Every demo job, each demo pod with a key of its own, the text runs with their
    checkpoints: the bundles `submit_demo_jobs` sends (demo/loader.py), through the in-process
    pod client."""
    pods = {}
    for job in DEMO_JOBS:
        pod = pods.setdefault(job.pod, make_pod())
        for board, suite_id, name, bundle in job_bundles(job.model, started=job.started):
            checkpoints = text_checkpoints(bundle) if suite_id == TEXT_SUITE_ID else None
            answer = pod.submit_run(name, suite_id, board, bundle, checkpoints)
            assert answer.status == 200, (job.model.key, suite_id, answer.body)


def test_no_public_answer_or_page_shows_a_host_path_a_token_or_a_job_signature(make_pod, board_url):
    load_the_demo(make_pod)
    sent = [
        bundle for job in DEMO_JOBS for *_, bundle in job_bundles(job.model, started=job.started)
    ]
    pod = make_pod()
    full_job = [
        (
            "text",
            "aeon-suite-v4",
            "google/gemma-4-26B-A4B-it",
            with_host_paths(example("text-final.json")),
        ),
        (
            "perf",
            "aeon-perf-v1",
            "google/gemma-4-26B-A4B-it",
            with_host_paths(example("perf-final.json")),
        ),
    ]
    answers = submit_job(pod, full_job)
    withheld = with_token_in_unknown_key(core_job(MODEL, started="2026-12-01T10:00:00Z")[1][3])
    answers.append(pod.submit_run(MODEL.hf_repo, "aeon-perf-v1", "perf", withheld))
    sent += [bundle for *_, bundle in full_job] + [withheld]
    # the planted token withholds its run; nothing in the demo or the fixtures is mistaken for one
    assert list(Run.objects.filter(secret_detected=True).values_list("run_id", flat=True)) == [
        answers[-1].body["run_id"]
    ]
    private = private_strings(sent)
    assert {"/home/aeon/aeon-models/google__gemma-4-26B-A4B-it", "/home/alice"} <= private
    assert len(private) > 50

    run_ids = {answer.body["run_id"] for answer in answers}
    run_ids |= set(Run.objects.values_list("run_id", flat=True))
    queue = [
        "/",
        "/api/v1/benchmarks?page_size=200",
        "/api/v1/hardware-classes",
        "/api/v1/champions",
        "/api/recipes/champions",
        *(f"/api/v1/runs/{run_id}" for run_id in run_ids),
        *(f"/runs/{run_id}/" for run_id in run_ids),
    ]
    seen: set[str] = set()
    while queue and len(seen) < 800:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        reply = read_api(board_url, path)
        assert reply.status < 500, path
        leaked = {text for text in private if text in reply.text}
        assert not leaked, (path, leaked)
        assert HF_TOKEN not in reply.text and not PREFIXED_TOKEN.search(reply.text), path
        queue += next_paths(path, reply)

    visited = " ".join(seen)
    assert "/api/v1/recipes/" in visited and "/benchmarks/" in visited and "?hardware=" in visited
    assert len([p for p in seen if p.startswith("/api/v1/benchmarks/")]) >= 8


def next_paths(path: str, reply) -> list[str]:
    """Same-origin links of a page; benchmark, recipe and class pages an API answer names."""
    found: list[str] = []
    if not path.startswith("/api/"):
        links = Links()
        links.feed(reply.text)
        for href in links.hrefs:
            url = urlsplit(href)
            if url.netloc or not url.path.startswith("/"):
                continue
            if url.path.startswith(("/static/", "/admin/", "/api/docs", "/api/schema")):
                continue
            found.append(url.path + (f"?{url.query}" if url.query else ""))
        return found
    for item in _dicts(reply.body):
        if isinstance(item.get("id"), str) and "hardware_class" in item:
            found += [f"/api/v1/benchmarks/{item['id']}", f"/benchmarks/{item['id']}/"]
        if isinstance(item.get("recipe_id"), str):
            found.append(f"/api/v1/recipes/{item['recipe_id']}")
        if isinstance(item.get("slug"), str):
            found += [f"/?hardware={item['slug']}", f"/api/v1/benchmarks?hardware={item['slug']}"]
        if isinstance(item.get("run_id"), str):
            found.append(f"/api/v1/runs/{item['run_id']}")
        if isinstance(item.get("next"), str) and item["next"].startswith("/"):
            found.append(item["next"])  # a run's next page of results
    return found


def _dicts(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _dicts(item)
