"""A local stand-in for the Hugging Face Hub's model-info API, for tests that run the real client.

It answers `GET /api/models/{repo_id}[/revision/{revision}][?blobs=true]` with the JSON the Hub
answers, and refuses with the status codes and `X-Error-Code` headers the Hub uses, so
`huggingface_hub.HfApi(endpoint=standin.endpoint).model_info(...)` raises the same errors it
raises against huggingface.co. It also serves the contents it was given of a commit's files
(`config.json`) at `HEAD|GET /{repo_id}/resolve/{revision}/{path}` with the headers
`hf_hub_download` reads (`ETag`, `X-Repo-Commit`, `Content-Length`), and 404 `EntryNotFound` for a
file the commit does not hold.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_MODELS_PREFIX = "/api/models/"
_REVISION_MARK = "/revision/"
_RESOLVE_MARK = "/resolve/"
_LFS_POINTER_SIZE = 134
_TIMESTAMP = "2025-01-01T00:00:00.000Z"


@dataclass
class _Repo:
    commits: dict[str, dict[str, str | None]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    contents: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit → path → bytes
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)  # commit → path → listed size


@dataclass(frozen=True)
class _Refusal:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


class HubStandIn:
    """Serve fake Hub repos on 127.0.0.1 from a daemon thread; use as a context manager.

    `requests` holds `(method, path)` for every request seen, the path with its query string
    (e.g. `("GET", "/api/models/org/m/revision/<sha>?blobs=true")`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._repos: dict[str, _Repo] = {}
        self._failures: dict[str, list[int]] = {}
        self._gates: dict[str, int] = {}
        self._holds: dict[str, threading.Event] = {}
        self._requests: list[tuple[str, str]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> HubStandIn:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        standin = self

        class Handler(_HubHandler):
            hub = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one poll
            name="hub-standin",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("HubStandIn is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._requests)

    # -- what the fake Hub holds -------------------------------------------------------------

    def add_repo(
        self,
        repo_id: str,
        commit: str,
        files: dict[str, str | None],
        *,
        branches: dict[str, str] | None = None,
        config: dict | bytes | None = None,
        sizes: dict[str, int] | None = None,
    ) -> None:
        """Add `commit` to `repo_id` with `files` ({path: LFS sha256, or None for a git file}).

        Calling it again for the same repo adds another commit; `branches` map names to commits.
        `config`: the commit's `config.json` (a dict is served as its JSON), listed as a git file
        of its real size; `sizes`: the sizes the Hub lists for some files (else stable fake ones).
        """
        with self._lock:
            repo = self._repos.setdefault(repo_id, _Repo())
            repo.commits[commit] = dict(files)
            repo.branches.update(branches or {})
            repo.contents[commit] = {}
            repo.sizes[commit] = dict(sizes or {})
            if config is not None:
                body = config if isinstance(config, bytes) else json.dumps(config).encode()
                repo.commits[commit].setdefault("config.json", None)
                repo.contents[commit]["config.json"] = body

    def fail_next(self, repo_id: str, status: int, times: int = 1) -> None:
        """Answer `status` (5xx, 429, ...) to the next `times` requests for `repo_id`."""
        with self._lock:
            self._failures.setdefault(repo_id, []).extend([status] * times)

    def recover(self, repo_id: str) -> None:
        """Forget the failures still queued for `repo_id`: the Hub answers again."""
        with self._lock:
            self._failures.pop(repo_id, None)

    def gate(self, repo_id: str, status: int) -> None:
        """Always refuse `repo_id` with 401/403 (gated) or 404 (private or deleted)."""
        if status not in (401, 403, 404):
            raise ValueError(f"gate() takes 401, 403 or 404, not {status}")
        with self._lock:
            self._gates[repo_id] = status

    def ungate(self, repo_id: str) -> None:
        """Access to `repo_id` is granted again (a gate lifted, a token renewed)."""
        with self._lock:
            self._gates.pop(repo_id, None)

    def hold(self, repo_id: str) -> None:
        """Keep every request for `repo_id` waiting, unanswered, until `release(repo_id)`:
        a weight check caught in the middle."""
        with self._lock:
            self._holds[repo_id] = threading.Event()

    def release(self, repo_id: str) -> None:
        with self._lock:
            held = self._holds.pop(repo_id, None)
        if held is not None:
            held.set()

    def asked_about(self, repo_id: str) -> int:
        """How many requests named `repo_id` so far."""
        return sum(1 for _, path in self.requests if f"{_MODELS_PREFIX}{repo_id}" in unquote(path))

    # -- answering ---------------------------------------------------------------------------

    def _record(self, method: str, path: str) -> None:
        with self._lock:
            self._requests.append((method, path))

    def _answer(self, path: str) -> tuple[int, dict[str, str], dict[str, Any] | bytes]:
        parts = urlsplit(path)
        file_path: str | None = None
        if parts.path.startswith(_MODELS_PREFIX):
            repo_part = parts.path[len(_MODELS_PREFIX) :]
            revision: str | None = None
            if _REVISION_MARK in repo_part:
                repo_part, revision = repo_part.split(_REVISION_MARK, 1)
                revision = unquote(revision)
        elif _RESOLVE_MARK in parts.path:
            repo_part, rest = parts.path.split(_RESOLVE_MARK, 1)
            revision, _, file_path = unquote(rest).partition("/")
        else:
            return _not_found_route(parts.path)
        repo_id = unquote(repo_part).strip("/")
        with_blobs = _is_true(parse_qs(parts.query).get("blobs"))
        with self._lock:
            held = self._holds.get(repo_id)
        if held is not None:
            held.wait(timeout=300)

        with self._lock:
            queued = self._failures.get(repo_id)
            failure = queued.pop(0) if queued else None
            gate = self._gates.get(repo_id)
            repo = self._repos.get(repo_id)
            if repo is None:  # the Hub finds a repository whatever the case it is asked in
                spelled = next(
                    (known for known in self._repos if known.lower() == repo_id.lower()), None
                )
                if spelled is not None:
                    repo_id, repo = spelled, self._repos[spelled]
            commit = _resolve(repo, revision) if repo is not None else None
            files = dict(repo.commits[commit]) if repo is not None and commit else None
            contents = dict(repo.contents.get(commit, {})) if repo is not None and commit else {}
            sizes = dict(repo.sizes.get(commit, {})) if repo is not None and commit else {}

        if failure is not None:
            refusal = _transient_failure(failure)
        elif gate is not None:
            refusal = _gated(repo_id, gate)
        elif repo is None:
            refusal = _repo_not_found()
        elif commit is None or files is None:
            refusal = _revision_not_found(revision or "main")
        elif file_path is not None:
            return _file_answer(commit, file_path, contents)
        else:
            return (
                200,
                {},
                _model_info_body(repo_id, commit, files, contents, sizes, with_blobs=with_blobs),
            )
        return refusal.status, refusal.headers, refusal.body


class _HubHandler(BaseHTTPRequestHandler):
    hub: HubStandIn
    server_version = "hub-standin"

    def do_GET(self) -> None:
        self.hub._record("GET", self.path)
        status, headers, body = self.hub._answer(self.path)
        self._send(status, headers, body)

    def do_HEAD(self) -> None:
        self.hub._record("HEAD", self.path)
        status, headers, body = self.hub._answer(self.path)
        if isinstance(body, bytes):  # a file: HEAD says its length, sends nothing
            headers = {**headers, "Content-Length": str(len(body))}
        self._send(status, headers, None)

    def _send(
        self, status: int, headers: dict[str, str], body: dict[str, Any] | bytes | None
    ) -> None:
        if isinstance(body, bytes):
            payload, kind = body, "application/octet-stream"
        else:
            payload = json.dumps(body).encode() if body is not None else b""
            kind = "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Request-Id", f"Root={uuid.uuid4()}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean


def _resolve(repo: _Repo, revision: str | None) -> str | None:
    if revision is None:
        revision = "main"
    commit = repo.branches.get(revision, revision)
    return commit if commit in repo.commits else None


def _is_true(values: list[str] | None) -> bool:
    return bool(values) and values[-1].lower() in ("1", "true")


def _file_answer(
    commit: str, path: str, contents: dict[str, bytes]
) -> tuple[int, dict[str, str], dict[str, Any] | bytes]:
    """A file of the commit as `resolve` serves it, or the Hub's 404 for a missing entry."""
    body = contents.get(path)
    if body is None:
        refusal = _error(404, "EntryNotFound", f"{path} does not exist on {commit}")
        return refusal.status, refusal.headers | {"X-Repo-Commit": commit}, refusal.body
    etag = f'"{hashlib.sha1(body).hexdigest()}"'
    return 200, {"ETag": etag, "X-Repo-Commit": commit}, body


def _model_info_body(
    repo_id: str,
    commit: str,
    files: dict[str, str | None],
    contents: dict[str, bytes],
    sizes: dict[str, int],
    *,
    with_blobs: bool,
) -> dict[str, Any]:
    siblings = []
    for path in sorted(files):
        sibling: dict[str, Any] = {"rfilename": path}
        if with_blobs:
            sibling.update(_blob_metadata(path, files[path], _listed_size(path, contents, sizes)))
        siblings.append(sibling)
    author = repo_id.split("/", 1)[0] if "/" in repo_id else None
    return {
        "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
        "id": repo_id,
        "modelId": repo_id,
        "author": author,
        "sha": commit,
        "lastModified": _TIMESTAMP,
        "createdAt": _TIMESTAMP,
        "private": False,
        "disabled": False,
        "gated": False,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "library_name": "transformers",
        "siblings": siblings,
        "spaces": [],
        "usedStorage": sum(
            _listed_size(path, contents, sizes) or _size_of(path, sha)
            for path, sha in files.items()
        ),
    }


def _listed_size(path: str, contents: dict[str, bytes], sizes: dict[str, int]) -> int | None:
    """The size given for `path` (`add_repo(sizes=…)`, or its served contents), else None."""
    if path in sizes:
        return sizes[path]
    body = contents.get(path)
    return len(body) if body is not None else None


def _blob_metadata(path: str, lfs_sha256: str | None, size: int | None = None) -> dict[str, Any]:
    size = _size_of(path, lfs_sha256) if size is None else size
    blob_id = hashlib.sha1(f"{path}:{lfs_sha256}".encode()).hexdigest()
    if lfs_sha256 is None:
        return {"blobId": blob_id, "size": size}
    return {
        "blobId": blob_id,
        "size": size,
        "lfs": {"sha256": lfs_sha256, "size": size, "pointerSize": _LFS_POINTER_SIZE},
    }


def _size_of(path: str, lfs_sha256: str | None) -> int:
    # Stable fake sizes: large for LFS files, small for git-stored ones.
    seed = int(hashlib.sha256(f"{path}:{lfs_sha256}".encode()).hexdigest()[:8], 16)
    return 1_000_000_000 + seed if lfs_sha256 else 100 + seed % 10_000


def _error(status: int, code: str | None, message: str) -> _Refusal:
    headers = {"X-Error-Message": message}
    if code is not None:
        headers["X-Error-Code"] = code
    return _Refusal(status, headers, {"error": message})


def _repo_not_found() -> _Refusal:
    return _error(404, "RepoNotFound", "Repository not found")


def _revision_not_found(revision: str) -> _Refusal:
    return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")


def _gated(repo_id: str, status: int) -> _Refusal:
    if status == 401:
        return _error(
            401,
            "GatedRepo",
            f"Access to model {repo_id} is restricted. You must have access to it and be "
            "authenticated to access it. Please log in.",
        )
    if status == 403:
        return _error(
            403,
            "GatedRepo",
            f"Access to model {repo_id} is restricted and you are not in the authorized list. "
            f"Visit https://huggingface.co/{repo_id} to ask for access.",
        )
    return _repo_not_found()


def _transient_failure(status: int) -> _Refusal:
    if status == 429:
        return _Refusal(
            429,
            {
                "RateLimit": '"api";r=0;t=55',
                "RateLimit-Policy": '"fixed window";"api";q=500;w=300',
                "Retry-After": "55",
            },
            {"error": "Too Many Requests"},
        )
    messages = {502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
    return _Refusal(status, {}, {"error": messages.get(status, "Internal Error")})


def _not_found_route(path: str) -> tuple[int, dict[str, str], dict[str, Any] | bytes]:
    return 404, {}, {"error": f"Sorry, we can't find the page you are looking for: {path}"}
