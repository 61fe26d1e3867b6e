"""A final timed as a pod meets the board (issue 21, "Budgets the redesign keeps").

Each round is a new pod: a fresh key enrolls, opens a session and, on the same kept-alive HTTP/1.1
connection, sends one final prepared and signed beforehand (the whole job's rows, no
checkpoints), while the deployed board (`benchtools.deployed`: config/gunicorn.conf.py, a Redis
broker and a Celery worker) is at rest: the previous round's follow-up work (read-model
recompute, weight check) is done before the next final is sent, as it is for a pod whose job
took hours. The pod's time is taken around the request on its side; the board's part is
gunicorn's access-log time of the same request.
"""

import http.client
import json
import statistics
import time
from urllib.parse import urlsplit

from benchtools.deployed import DeployedBoard
from benchtools.procfs import cpu_seconds, memory_kib, reset_peak
from demo.podclient import USER_AGENT, PodClient, PodNetworkError

REST_SECONDS = 0.3  # the worker's CPU time unchanged this long, its queues empty: at rest


class KeptAlivePod(PodClient):
    """A pod whose requests share one HTTP/1.1 connection, as a pod's HTTP client keeps it."""

    def __init__(self, base_url: str, **kwargs):
        super().__init__(base_url, **kwargs)
        parts = urlsplit(self.base_url)
        self.connection = http.client.HTTPConnection(
            parts.hostname, parts.port, timeout=self.timeout
        )

    @property
    def connected(self) -> bool:
        return self.connection.sock is not None

    def _send_once(self, method, path, body, headers):
        sent = {"User-Agent": USER_AGENT} | (headers or {})
        if body is not None:
            sent["Content-Type"] = "application/json"
        try:
            self.connection.request(method, path, body=body, headers=sent)
            response = self.connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.connection.close()
            raise PodNetworkError(f"{type(exc).__name__}: {exc}") from exc
        return self.answer_of(response.status, payload, dict(response.headers))

    def close(self) -> None:
        self.connection.close()


def wait_at_rest(board: DeployedBoard, broker, timeout: float = 60.0) -> None:
    """Until the broker's queues are empty and the Celery worker spends no CPU for a while."""
    if "worker" not in board.parts:
        return
    deadline = time.monotonic() + timeout
    spent, since = board.worker_cpu_seconds(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now_spent = board.worker_cpu_seconds()
        if now_spent != spent or any(broker.llen(queue) for queue in ("celery", "weights")):
            spent, since = now_spent, time.monotonic()
        elif time.monotonic() - since >= REST_SECONDS:
            return
    raise RuntimeError("the Celery worker did not come to rest within a minute")


def time_pod_final(board: DeployedBoard, content: dict, model: str, suite_id: str) -> dict:
    """One round: a fresh pod enrolls, opens a session and sends `content` as its final."""
    pod = KeptAlivePod(board.base, timeout=600)
    try:
        session = pod.open_run(model, suite_id, "text")  # enrolls first, as pods do
        body = json.dumps(pod.signed_results(session, content, final=True)).encode()
        path = f"/api/v1/runs/{session.run_id}/results"
        if not pod.connected:
            raise RuntimeError("the pod's connection closed before its final")
        workers = board.web_workers()
        before = {pid: memory_kib(pid)["VmRSS"] for pid in workers}
        for pid in workers:
            reset_peak(pid)
        cpu_before = sum(cpu_seconds(pid) for pid in workers)
        started = time.perf_counter()
        answer = pod.send("POST", path, body, {"X-Aeon-Run-Token": session.run_token})
        pod_s = time.perf_counter() - started
        cpu = sum(cpu_seconds(pid) for pid in workers) - cpu_before
        growth = max(memory_kib(pid)["VmHWM"] - before[pid] for pid in workers) * 1024
    finally:
        pod.close()
    if answer.status != 200:
        raise RuntimeError(f"final refused: {answer.status} {answer.body}")
    return {
        "pod": pod_s,
        "board": board.board_ms(f"POST {path} ") / 1000,
        "cpu": cpu,
        "growth": growth,
        "size": len(body),
        "body": body,
        "public_key": pod.public_key,
        "run_id": session.run_id,
    }


def summary(rounds: list[dict], floors: list[float]) -> dict:
    """Medians of the timed rounds (the first, warming the workers up, left out by the caller)."""
    pod, board = (statistics.median(r[name] for r in rounds) for name in ("pod", "board"))
    floor = statistics.median(floors)
    cpu = statistics.mean(r["cpu"] for r in rounds)
    return {
        "pod": pod,
        "board": board,
        "floor": floor,
        "ratio": pod / floor,
        "board_ratio": board / floor,
        # The mean: /proc counts CPU time in ticks of 10 ms, a final's median would be a tick.
        "worker_cpu": cpu,
        "cpu_ratio": cpu / floor,
        "growth": max(r["growth"] for r in rounds),
        "growth_ratio": max(r["growth"] for r in rounds) / rounds[0]["size"],
        "size": rounds[0]["size"],
        "pod_all": [r["pod"] for r in rounds],
        "board_all": [r["board"] for r in rounds],
        "floor_all": floors,
    }
