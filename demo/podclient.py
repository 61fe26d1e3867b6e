"""A minimal client of pod protocol v1, written from docs/protocol.md: it enrolls, opens runs
and uploads signed bundles over real HTTP, the way AEON Bench pods do. The demo loader and the
tests speak to the board through it.

By default every call is sent once and its answer returned as it came, which is what the tests
of refusals need. With `retry_like_a_pod=True` the client retries the way pods do
(docs/protocol.md §Transport): the statuses of RETRIED_STATUSES and network failures are sent
again after 1, 2, 4 and 8 s (a Retry-After asks for longer), checkpoints get one attempt only and
a failed checkpoint does not stop the run, and a final refused 403/404/409 is sent once more in a
new session.
"""

import base64
import http.client
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from evidence.signing import canonical_json

USER_AGENT = "aeon-pod/1.0 (+https://aeon-bench.com)"
RETRIED_STATUSES = frozenset({403, 408, 425, 429, 500, 502, 503, 504})
RETRY_SLEEPS = (1, 2, 4, 8)  # five attempts in all
MAX_RETRY_AFTER = 60
REOPEN_STATUSES = frozenset({403, 404, 409})  # a final refused so is sent again in a new session


class PodNetworkError(OSError):
    """No usable answer: the connection failed, timed out, or the answer was not JSON."""


@dataclass
class Answer:
    status: int
    body: dict
    headers: dict = field(default_factory=dict)

    @property
    def reason(self) -> str | None:
        return self.body.get("reason")


@dataclass
class RunSession:
    run_id: str
    run_nonce: str
    run_token: str


class PodClient:
    def __init__(
        self,
        base_url: str,
        private_key: Ed25519PrivateKey | None = None,
        timeout: float = 120.0,
        wait_when_rate_limited: bool = False,
        retry_like_a_pod: bool = False,
        on_retry: Callable[[str, str, str, int, float], None] | None = None,
    ):
        """`wait_when_rate_limited` retries 429 answers only; `retry_like_a_pod` retries as pods
        do. `on_retry(method, path, what, attempt, wait_s)` hears of every retry."""
        self.base_url = base_url.rstrip("/")
        self.wait_when_rate_limited = wait_when_rate_limited
        self.retry_like_a_pod = retry_like_a_pod
        self.on_retry = on_retry
        self.waited_out: Counter[str] = Counter()  # transient answers retried, by status
        self.checkpoints_refused: Counter[str] = Counter()  # by status, when retrying like a pod
        self.private_key = private_key or Ed25519PrivateKey.generate()
        self.timeout = timeout
        raw = self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode("ascii")

    @classmethod
    def from_seed(cls, base_url: str, seed: bytes, **kwargs) -> "PodClient":
        return cls(base_url, Ed25519PrivateKey.from_private_bytes(seed), **kwargs)

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self.private_key.sign(message)).decode("ascii")

    # --- transport --------------------------------------------------------------------------

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict | None = None,
        *,
        attempts: int | None = None,
    ) -> Answer:
        if self.retry_like_a_pod:
            retried = RETRIED_STATUSES
        elif self.wait_when_rate_limited:
            retried = frozenset({429})
        else:
            retried = frozenset()
        if attempts is None:
            attempts = len(RETRY_SLEEPS) + 1 if retried else 1
        for attempt in range(1, attempts + 1):
            try:
                answer = self._send_once(method, path, body, headers)
            except PodNetworkError as exc:
                if not self.retry_like_a_pod or attempt == attempts:
                    raise
                kind, what = "network error", f"network error ({exc})"
                wait = RETRY_SLEEPS[attempt - 1]
            else:
                if answer.status not in retried or attempt == attempts:
                    return answer
                kind = what = f"{answer.status} {answer.reason or ''}".strip()
                wait = max(RETRY_SLEEPS[attempt - 1], _retry_after(answer))
            self.waited_out[kind] += 1
            if self.on_retry:
                self.on_retry(method, path, what, attempt, wait)
            time.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _send_once(
        self, method: str, path: str, body: bytes | None, headers: dict | None
    ) -> Answer:
        request = urllib.request.Request(self.base_url + path, data=body, method=method)
        request.add_header("User-Agent", USER_AGENT)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status, payload, answer_headers = (
                    response.status,
                    response.read(),
                    dict(response.headers),
                )
        except urllib.error.HTTPError as error:
            status, payload, answer_headers = error.code, error.read(), dict(error.headers)
        except (OSError, http.client.HTTPException) as exc:
            raise PodNetworkError(f"{type(exc).__name__}: {exc}") from exc
        return self.answer_of(status, payload, answer_headers)

    @staticmethod
    def answer_of(status: int, payload: bytes, headers: dict) -> Answer:
        """An answer as pods read it: one that is not JSON is taken for a network failure."""
        try:
            parsed = json.loads(payload)
        except ValueError:
            raise PodNetworkError(f"{status} answer is not JSON") from None
        return Answer(status, parsed, headers)

    def post_json(self, path: str, obj, headers: dict | None = None) -> Answer:
        # Pods send json.dumps(obj) with Python's defaults: spaces, ASCII, NaN allowed.
        return self.send("POST", path, json.dumps(obj).encode("utf-8"), headers)

    # --- protocol calls ---------------------------------------------------------------------

    def enroll_request(self, challenge: str) -> dict:
        """The enrolment body: the key and its signature over the challenge's text."""
        return {
            "public_key": self.public_key,
            "challenge": challenge,
            "signature": self.sign(challenge.encode("utf-8")),
        }

    def enroll(self) -> Answer:
        challenge = self.send("GET", "/api/v1/enroll/challenge")
        if challenge.status != 200:
            return challenge
        return self.post_json("/api/v1/enroll", self.enroll_request(challenge.body["challenge"]))

    def open_run_request(self, model: str, suite_id: str | None, board: str) -> dict:
        signed = {
            "action": "open_run",
            "public_key": self.public_key,
            "model": model,
            "suite_id": suite_id,
            "board": board,
        }
        return {
            "public_key": self.public_key,
            "signature": self.sign(canonical_json(signed)),
            "model": model,
            "suite_id": suite_id,
            "board": board,
        }

    def open_run(self, model: str, suite_id: str | None, board: str) -> RunSession:
        self.enroll()  # pods enroll again before every open_run and ignore the answer
        answer = self.post_json("/api/v1/runs", self.open_run_request(model, suite_id, board))
        if answer.status != 200:
            raise RuntimeError(f"open_run refused: {answer.status} {answer.body}")
        return RunSession(answer.body["run_id"], answer.body["run_nonce"], answer.body["run_token"])

    def signed_results(self, session: RunSession, content: dict, *, final: bool) -> dict:
        bundle = {
            "run_id": session.run_id,
            "run_nonce": session.run_nonce,
            "final": final,
            **content,
        }
        return {"bundle": bundle, "signature": self.sign(canonical_json(bundle))}

    def submit(self, session: RunSession, content: dict, *, final: bool = True) -> Answer:
        return self.send(
            "POST",
            f"/api/v1/runs/{session.run_id}/results",
            json.dumps(self.signed_results(session, content, final=final)).encode("utf-8"),
            headers={"X-Aeon-Run-Token": session.run_token},
            attempts=1 if self.retry_like_a_pod and not final else None,  # checkpoints: once
        )

    def job_status(self, job_sig: str) -> Answer:
        return self.send("GET", f"/api/v1/jobs/{job_sig}")

    def submit_run(
        self,
        model: str,
        suite_id: str | None,
        board: str,
        content: dict,
        checkpoints: list[dict] | None = None,
    ) -> Answer:
        """One whole run as a pod sends it: open, cumulative checkpoints, then the final."""
        session = self.open_run(model, suite_id, board)
        for checkpoint in checkpoints or []:
            answer = self.submit(session, checkpoint, final=False)
            if answer.status == 200:
                continue
            if not self.retry_like_a_pod:
                raise RuntimeError(f"checkpoint refused: {answer.status} {answer.body}")
            # A pod carries on past a failed checkpoint: the final carries every row anyway.
            self.checkpoints_refused[f"{answer.status} {answer.reason or ''}".strip()] += 1
        answer = self.submit(session, content, final=True)
        if self.retry_like_a_pod and answer.status in REOPEN_STATUSES:
            answer = self.submit(self.open_run(model, suite_id, board), content, final=True)
        return answer


def _retry_after(answer: Answer) -> int:
    value = {name.lower(): v for name, v in answer.headers.items()}.get("retry-after", "")
    return min(int(value), MAX_RETRY_AFTER) if value.isdigit() else 0
