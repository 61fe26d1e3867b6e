"""What the tests of the pod channel share: the exact answers of docs/protocol.md §Status table, short
bundles, raw HTTP for what a well-behaved client cannot send (lying Content-Length, gzip), and
small readers."""

import copy
import hashlib
import http.client
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from board.models import Run
from demo.podclient import USER_AGENT, Answer, PodClient, RunSession
from submissions.models import IngestLogEntry
from tests import inprocess

MODEL = "google/gemma-4-26B-A4B-it"
TEXT_SUITE = "aeon-suite-v4"
TEXT_EXAMPLE = Path(__file__).resolve().parent / "fixtures" / "examples" / "text-final.json"
DUPLICATE_MESSAGE = "job already submitted and available on the Mothership"
# Nothing listens there: weight checks run at commit (eager Celery) and defer, so runs stay pending.
UNREACHABLE_HUB = "http://127.0.0.1:9"
# Tests that need a socket or a real commit (docs/README.md §The test suite) run against a live
# server; the flush after each test re-seeds the reference data. The others are plain
# `django_db` tests, rolled back, the board in-process (tests/inprocess.py).
LIVE_DB = pytest.mark.django_db(transaction=True)


def sha256(data: bytes) -> str:
    """A body's evidence key: the hex sha256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


def job_sig(scope: str, *, started: str = "2026-03-01T09:00:00Z") -> str:
    """As a pod derives it: sha256("started|model|hw|scope")[:24]."""
    text = f"{started}|{MODEL}|single DGX Spark (GB10)|{scope}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def small_content(count: int = 3, **extras) -> dict:
    """A short local-weights text bundle (self-reported), rows cycled from the example fixture;
    no job_sig unless given."""
    templates = json.loads(TEXT_EXAMPLE.read_text(encoding="utf-8"))["results"]
    rows = []
    for i in range(count):
        row = copy.deepcopy(templates[i % len(templates)])
        row["case_id"] = f"v4.math.easy.{i + 1:02d}"
        row["raw_output"] = f"case {i}: {row['raw_output']}"
        rows.append(row)
    return {"target_class": "local_weights", "results": rows, **extras}


def committed_answer(
    board_url: str,
    run_id: str,
    n_results: int,
    *,
    trust_tier: str = "pending",
    verification: str = "pending",
) -> dict:
    return {
        "ok": True,
        "run_id": run_id,
        "trust_tier": trust_tier,
        "verification": verification,
        "n_results": n_results,
        "url": f"{board_url}/runs/{run_id}/",
    }


def local_answer(board_url: str, run_id: str, n_results: int) -> dict:
    """The committed answer of a local-weights run: self-reported, no weight check."""
    return committed_answer(
        board_url,
        run_id,
        n_results,
        trust_tier="self_reported",
        verification="not_applicable",
    )


def without_benchmark(answer: Answer) -> dict:
    """The answer body, its `benchmark_id` checked against the run and removed: the board adds
    the public id of the benchmark the run joined (beyond protocol.md's fields)."""
    body = dict(answer.body)
    if "benchmark_id" in body:
        run = Run.objects.select_related("benchmark").get(run_id=body["run_id"])
        assert body.pop("benchmark_id") == (run.benchmark.public_id if run.benchmark else None)
    return body


def duplicate_answer(run_id: str) -> dict:
    return {"ok": True, "duplicate": True, "run_id": run_id, "message": DUPLICATE_MESSAGE}


def tampered(pod: PodClient, session, content: dict) -> bytes:
    """A bundle changed after it was signed: the score of the first row."""
    request = pod.signed_results(session, content, final=True)
    request["bundle"]["results"][0]["score"] = (
        0.0 if request["bundle"]["results"][0]["score"] else 1.0
    )
    return json.dumps(request).encode("utf-8")


def results_path(run_id: str) -> str:
    return f"/api/v1/runs/{run_id}/results"


def signed_body(pod: PodClient, session: RunSession, content: dict, *, final: bool = True) -> bytes:
    """The exact bytes a pod posts: json.dumps with Python's defaults."""
    return json.dumps(pod.signed_results(session, content, final=final)).encode("utf-8")


def post_results(pod: PodClient, session: RunSession, body: bytes, token: str | None = None):
    return pod.send(
        "POST",
        results_path(session.run_id),
        body,
        {"X-Aeon-Run-Token": session.run_token if token is None else token},
    )


def read_run(pod: PodClient, run_id: str) -> Answer:
    return pod.send("GET", f"/api/v1/runs/{run_id}")


def read_run_results(pod: PodClient, run_id: str) -> list[dict]:
    """Every result row of a run through the read API, following its pages
    (docs/website.md §Reading a run)."""
    rows, path = [], f"/api/v1/runs/{run_id}"
    while path:
        answer = pod.send("GET", path)
        assert answer.status == 200, answer.body
        rows += answer.body["results"]
        path = answer.body["results_page"]["next"]
    return rows


@dataclass
class RawAnswer:
    status: int
    headers: dict
    payload: bytes

    @property
    def body(self) -> dict:
        return json.loads(self.payload)


def raw_request(
    board_url: str,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict | None = None,
) -> RawAnswer:
    """One request with exactly the given headers (no Content-Length is added), never following
    a redirect. In-process (tests/inprocess.py), a body must come with its true Content-Length:
    what the test client cannot send (a missing or lying length) needs a live server."""
    sent = {"User-Agent": USER_AGENT, "Connection": "close", **(headers or {})}
    if inprocess.in_process(board_url):
        if body and not any(name.lower() == "content-length" for name in sent):
            raise AssertionError("a body without a Content-Length needs a live server")
        answer = inprocess.send(method, board_url + path, body or None, sent)
        return RawAnswer(answer.status, answer.headers, answer.payload)
    url = urlsplit(board_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders()
        if body:
            connection.send(body)
        response = connection.getresponse()
        return RawAnswer(response.status, dict(response.getheaders()), response.read())
    finally:
        connection.close()


def assert_refused(answer, status: int, reason: str, *, route: str = "results") -> IngestLogEntry:
    """The refusal's status and body (docs/protocol.md §Refusal bodies) and its ingest-log row, returned."""
    assert answer.status == status, answer.body
    assert answer.body == {"error": reason, "reason": reason, "note": answer.body.get("note")}
    assert answer.body["note"]
    entry = IngestLogEntry.objects.order_by("-pk").first()
    assert (entry.route, entry.status, entry.reason) == (route, status, reason)
    return entry
