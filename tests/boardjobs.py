"""What the tests of the board's read side share: demo jobs cut to the bundles a test needs,
the Hub stand-in holding a demo model's weights, uploads through the real signing client, and
reads of the public API (in-process or over HTTP: tests/inprocess.py)."""

import hashlib
import json
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urljoin

from demo.bundles import (
    PERF_SUITE_ID,
    TEXT_SUITE_ID,
    DemoModel,
    hub_facts_of,
    job_bundles,
    weight_sizes,
    weights_for,
)
from demo.podclient import PodClient
from tests import inprocess

JobEntry = tuple[str, str | None, str, dict]  # (board, suite_id, model, bundle)
HF_FIELDS = (
    "hf_repo",
    "hf_revision",
    "weights_hash",
    "weights_per_file",
    "recipe",
    "deployment_manifest",
    "bench_seed",
)


@dataclass
class Reply:
    status: int
    body: dict
    text: str


def fetch(url: str) -> tuple[int, dict, bytes]:
    """GET `url` the way a visitor's client does (urllib: redirects followed): the status,
    headers and body of the last answer; in-process on tests.inprocess.IN_PROCESS_URL."""
    if inprocess.in_process(url):
        return _fetch_in_process(url)
    request = urllib.request.Request(url, headers={"Accept": "*/*"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


URLLIB_AGENT = f"Python-urllib/{sys.version_info.major}.{sys.version_info.minor}"


def _fetch_in_process(url: str) -> tuple[int, dict, bytes]:
    """As urllib reads it: the same headers, and up to 10 redirects followed."""
    for _ in range(11):
        answer = inprocess.send("GET", url, headers={"Accept": "*/*", "User-Agent": URLLIB_AGENT})
        if answer.status not in (301, 302, 303, 307, 308):
            return answer.status, answer.headers, answer.payload
        url = urljoin(url, answer.headers["Location"])
    raise AssertionError(f"more than 10 redirects, the last to {url}")


def read_api(base_url: str, path: str) -> Reply:
    """GET a public route (`fetch`); the body parsed when it is JSON."""
    status, _, payload = fetch(base_url.rstrip("/") + path if path else base_url)
    text = payload.decode("utf-8")
    try:
        body = json.loads(text)
    except ValueError:
        body = {}
    return Reply(status, body if isinstance(body, dict) else {"items": body}, text)


def drafter_sha(model: DemoModel) -> str:
    return hashlib.sha256(f"{model.drafter_repo}@{model.drafter_revision}".encode()).hexdigest()


def put_on_hub(
    hub,
    model: DemoModel,
    files: dict | None = None,
    *,
    drafter: bool = True,
    config: dict | None = None,
    weight_bytes: int | None = None,
) -> None:
    """The stand-in holds the model's repo at its commit (by default exactly the files the pod
    hashed, plus config.json: the demo's, or `config`, with the demo's weight sizes or
    `weight_bytes` split over the files) and, when asked, its drafter."""
    per_file, _ = weights_for(model)
    weights = per_file if files is None else files
    _, demo_config = hub_facts_of(model.hf_repo)
    sizes = weight_sizes(model) if weight_bytes is None else None
    if weight_bytes is not None:
        paths = sorted(weights)
        sizes = {path: weight_bytes // len(paths) for path in paths}
        sizes[paths[0]] += weight_bytes - sum(sizes.values())
    config = demo_config if config is None else config
    hub.add_repo(
        model.hf_repo,
        model.hf_revision,
        {**weights, "config.json": None},
        config=config,
        sizes=sizes,
    )
    if drafter and model.drafter_repo:
        hub.add_repo(
            model.drafter_repo, model.drafter_revision, {"model.safetensors": drafter_sha(model)}
        )


def core_job(model: DemoModel, **options) -> list[JobEntry]:
    """The text and perf bundles of a demo job: what a benchmark needs to be complete."""
    return [
        entry
        for entry in job_bundles(model, **options)
        if entry[1] in (TEXT_SUITE_ID, PERF_SUITE_ID)
    ]


def only(job: list[JobEntry], suite_id: str) -> list[JobEntry]:
    return [entry for entry in job if entry[1] == suite_id]


def bundles(job: list[JobEntry]) -> list[dict]:
    return [bundle for _, _, _, bundle in job]


def submit_job(pod: PodClient, job: list[JobEntry]) -> list:
    """Every bundle of the job as its own run; each must be accepted."""
    answers = []
    for board, suite_id, model, bundle in job:
        answer = pod.submit_run(model, suite_id, board, bundle)
        assert answer.status == 200, answer.body
        answers.append(answer)
    return answers


def benchmark_of(base_url: str, answers: list) -> dict:
    """The public benchmark the job's runs landed in (they must share one)."""
    ids = {answer.body["benchmark_id"] for answer in answers}
    assert len(ids) == 1, ids
    reply = read_api(base_url, f"/api/v1/benchmarks/{ids.pop()}")
    assert reply.status == 200, reply.text
    return reply.body


def as_local_run(bundle: dict) -> dict:
    """docs/protocol.md §Bundle contents: a local run names no Hugging Face weights and sends no recipe."""
    for key in HF_FIELDS:
        bundle.pop(key, None)
    bundle["target_class"] = "local_weights"
    return bundle


def as_frontier_run(bundle: dict, provider_model: str) -> dict:
    """docs/protocol.md §Bundle contents: a frontier API run, display only."""
    as_local_run(bundle)
    bundle["target_class"] = "remote_api"
    bundle["engine"] = "openai-compatible"
    bundle["frontier"] = {"provider": "example-ai", "model": provider_model}
    bundle["environment"]["frontier"] = {"provider": "example-ai", "base_url": "https://api"}
    return bundle
