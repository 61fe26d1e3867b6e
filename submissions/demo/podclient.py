"""A minimal client of pod protocol v1, written from protocol.md: it enrolls, opens runs and
uploads signed bundles over real HTTP, the way AEON Bench pods do. The demo loader and the
tests speak to the board through it."""

import base64
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from submissions.signing import canonical_json

USER_AGENT = "aeon-pod/1.0 (+https://aeon-bench.com)"


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
    ):
        self.base_url = base_url.rstrip("/")
        self.wait_when_rate_limited = wait_when_rate_limited
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
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> Answer:
        answer = self._send_once(method, path, body, headers)
        for _ in range(5 if self.wait_when_rate_limited else 0):
            if answer.status != 429:
                break
            time.sleep(min(int(answer.headers.get("Retry-After", "1")), 60))  # as pods do on 429
            answer = self._send_once(method, path, body, headers)
        return answer

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
        return Answer(status, json.loads(payload), answer_headers)

    def post_json(self, path: str, obj, headers: dict | None = None) -> Answer:
        # Pods send json.dumps(obj) with Python's defaults: spaces, ASCII, NaN allowed.
        return self.send("POST", path, json.dumps(obj).encode("utf-8"), headers)

    # --- protocol calls ---------------------------------------------------------------------

    def enroll(self) -> Answer:
        challenge = self.send("GET", "/api/v1/enroll/challenge").body["challenge"]
        return self.post_json(
            "/api/v1/enroll",
            {
                "public_key": self.public_key,
                "challenge": challenge,
                "signature": self.sign(challenge.encode("utf-8")),
            },
        )

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
        return self.post_json(
            f"/api/v1/runs/{session.run_id}/results",
            self.signed_results(session, content, final=final),
            headers={"X-Aeon-Run-Token": session.run_token},
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
            if answer.status != 200:
                raise RuntimeError(f"checkpoint refused: {answer.status} {answer.body}")
        return self.submit(session, content, final=True)
