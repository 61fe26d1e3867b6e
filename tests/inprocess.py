"""The board in-process: requests through Django's test client, inside the test's rolled-back
transaction (docs/README.md §The test suite). Only the socket goes: the same middleware, views,
keys, signatures and ingest answer, and the after-commit work runs where the commit would be.

A test that commits for real (`django_db(transaction=True)`) talks to a live server instead:
`board_url` is then the live server's URL, and every helper here sends over HTTP.

Commits. A live server runs a request, and a transactional test its own code, in autocommit
mode: an outermost `atomic` block commits when it exits, and the `on_commit` work registered in
it (the board generation, the read-model recompute, the weight check: eager Celery in tests)
runs right then, before the code goes on; the final's answer reads the eager weight check's
verdict after that commit (submissions/ingest/answers.py). In a rolled-back test every block is
a savepoint of the test's transaction, and `on_commit` work would wait for a commit that never
comes (`captureOnCommitCallbacks` would run it only after the answer is made). `committing`
gives the test's connection autocommit's order back: the work registered in a block runs once
its outermost block is released, and work registered outside any block runs at once. The
in-process board fixtures (tests/conftest.py) hold it for the whole test, so a management
command or a service the test calls itself commits the same way; every in-process request
holds it too.
"""

import logging
from contextlib import contextmanager
from dataclasses import dataclass

from django import test
from django.db import DEFAULT_DB_ALIAS, connections

from demo.podclient import USER_AGENT, Answer, PodClient

IN_PROCESS_URL = "http://testserver"  # the test client's host (Django's own `testserver`)

logger = logging.getLogger("django.db.backends.base")


def in_process(url: str) -> bool:
    return url == IN_PROCESS_URL or url.startswith(IN_PROCESS_URL + "/")


def _run(func, robust: bool) -> None:
    """One piece of after-commit work, the way Django runs it at a commit."""
    if not robust:
        func()
        return
    try:
        func()
    except Exception as exc:
        logger.error(f"Error calling {func.__qualname__} in on_commit() ({exc}).", exc_info=True)


@contextmanager
def committing(using: str = DEFAULT_DB_ALIAS):
    """Within: after-commit work runs where autocommit mode would run it (module docstring).
    Outside a transaction (a transactional test) commits are real, and nothing changes; within
    `committing` already (the test holds it), nothing is added."""
    conn = connections[using]
    if not conn.in_atomic_block or "on_commit" in vars(conn):
        yield
        return
    depth = len(conn.atomic_blocks)  # the test's own blocks
    start = len(conn.run_on_commit)  # work registered before waits for the test's end
    release_savepoint = conn.savepoint_commit
    register = conn.on_commit

    def run_committed() -> None:
        # As run_and_clear_commit_hooks: the work is taken off the list first, so what it
        # registers in turn runs at its own commit.
        committed = conn.run_on_commit[start:]
        del conn.run_on_commit[start:]
        for _savepoints, func, robust in committed:
            _run(func, robust)

    def savepoint_commit(sid):
        release_savepoint(sid)
        if len(conn.atomic_blocks) == depth:  # an outermost block: its commit
            run_committed()

    def on_commit(func, robust=False):
        if len(conn.atomic_blocks) == depth:  # outside any block: autocommit
            if not callable(func):
                raise TypeError("on_commit()'s callback must be a callable.")
            _run(func, robust)
        else:
            register(func, robust)

    conn.savepoint_commit, conn.on_commit = savepoint_commit, on_commit
    try:
        yield
        run_committed()  # a block without a savepoint of its own (savepoint=False) ends here
    finally:
        del conn.savepoint_commit, conn.on_commit


@dataclass
class Response:
    status: int
    headers: dict
    payload: bytes


def send(method: str, url: str, body: bytes | None = None, headers: dict | None = None):
    """One request to the board in-process (`url` on IN_PROCESS_URL), with exactly these
    headers (plus the Content-Length of a body), as a fresh client: no cookie is kept, no
    redirect followed, a view's exception is the 500 answer a server sends."""
    assert in_process(url), url
    path = url[len(IN_PROCESS_URL) :] or "/"
    named = {name.lower(): (name, value) for name, value in (headers or {}).items()}
    content_type = named.pop("content-type", (None, ""))[1]
    length = named.pop("content-length", (None, None))[1]
    if length is not None and int(length) != len(body or b""):
        raise AssertionError("a Content-Length other than the body's needs a live server")
    environ = {}
    if body is not None:  # as urllib sends it: a length and a type even when empty
        environ = {"CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": content_type}
    client = test.Client(enforce_csrf_checks=True, raise_request_exception=False)
    with committing():
        response = client.generic(
            method,
            path,
            body or b"",
            content_type=content_type,
            headers=dict(named.values()),
            **environ,
        )
        payload = response.getvalue()  # a streamed answer read to its end, then closed
    return Response(response.status_code, dict(response.headers), payload)


class Client(test.Client):
    """Django's test client whose requests commit as they do on a live server (committing):
    for the tests that drive a page as a signed-in user (the admin) in a rolled-back test."""

    def request(self, **request):
        with committing():
            return super().request(**request)


class InProcessPodClient(PodClient):
    """The pod client with the test client for its socket: everything else is PodClient's."""

    def _send_once(self, method, path, body, headers) -> Answer:
        sent = {"User-Agent": USER_AGENT}
        if body is not None:
            sent["Content-Type"] = "application/json"
        # urllib's add_header: a later header of the same name (any case) replaces the earlier.
        for name, value in (headers or {}).items():
            for known in [k for k in sent if k.lower() == name.lower()]:
                del sent[known]
            sent[name] = value
        response = send(method, self.base_url + path, body, sent)
        return self.answer_of(response.status, response.payload, response.headers)


def pod_client(base_url: str, **options) -> PodClient:
    """A pod client for `base_url`: in-process on IN_PROCESS_URL, over HTTP anywhere else."""
    kind = InProcessPodClient if in_process(base_url) else PodClient
    return kind(base_url, **options)
