"""Shared fixtures: the board in-process or live over HTTP, pod clients with real keys, service
gates.

Tests that need PostgreSQL, Redis or Chromium skip with a clear message locally when the
service is missing; with AEON_REQUIRE_SERVICES=1 (CI) a missing service fails instead.
"""

import os
import shutil

import pytest
from django.db import connection

from demo.podclient import PodClient
from tests.inprocess import IN_PROCESS_URL, committing, pod_client

REQUIRE_SERVICES = os.environ.get("AEON_REQUIRE_SERVICES") == "1"


def _redis_of_this_worker() -> None:
    """Under pytest-xdist (`-n N`, as CI runs), each worker needs a Redis database of its own:
    tests flush it and Celery workers take their tasks from it. AEON_TEST_REDIS_URL may list
    one URL per worker, comma-separated; worker gwK takes the K-th. Read here, before any test
    module reads AEON_TEST_REDIS_URL (each worker's database name is made apart by
    pytest-django, its ports by tests.processes.free_port)."""
    # The whole list, kept apart: the workers inherit the environment of the controlling
    # process, which has already taken the first URL for itself.
    listed = os.environ.setdefault(
        "AEON_TEST_REDIS_URLS", os.environ.get("AEON_TEST_REDIS_URL", "")
    )
    urls = [u.strip() for u in listed.split(",") if u.strip()]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    if len(urls) > 1 or index:
        if index >= len(urls):
            raise pytest.UsageError(
                f"xdist worker {worker} has no Redis database of its own: list one URL per "
                "worker in AEON_TEST_REDIS_URL, comma-separated"
            )
        os.environ["AEON_TEST_REDIS_URL"] = urls[index]


_redis_of_this_worker()

# The longest files first (measured with --durations; docs/README.md §The test suite), so that under
# `-n 2 --dist loadfile --no-loadscope-reorder` they start at once on different workers and the
# short ones fill in around them, instead of one of them starting last and running alone.
LONGEST_FIRST = (
    "test_accessibility.py",
    "test_pages_browser.py",
    "test_prod_stack.py",
    "test_faults_under_load.py",
    "test_read_bench.py",
    "test_publish_nothing_harmful.py",
    "test_linear_scanning.py",
    "test_read_models.py",
)


def _one_redis_per_worker(config) -> None:
    """In the controlling process of `-n N`: with fewer Redis URLs than workers, stop before
    any worker starts, with a usage error (exit code 4). A worker that raised at import instead
    would leave its share of the tests unrun, and the run could end "no tests ran", exit 0."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    workers = getattr(config.option, "numprocesses", None)  # xdist has resolved "auto" by now
    if not isinstance(workers, int) or workers < 2:
        return
    listed = os.environ.get("AEON_TEST_REDIS_URLS", "")
    urls = [u.strip() for u in listed.split(",") if u.strip()]
    if len(urls) < workers:
        example = ",".join(f"redis://127.0.0.1:6379/{15 - k}" for k in range(workers))
        raise pytest.UsageError(
            f"-n {workers} runs {workers} pytest-xdist workers, and each needs a Redis database "
            f"of its own, but AEON_TEST_REDIS_URL lists {len(urls)}: list one URL per worker, "
            f"comma-separated, e.g. AEON_TEST_REDIS_URL={example} (docs/README.md §The test "
            "suite)"
        )


def pytest_configure(config):
    _one_redis_per_worker(config)


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def missing_service(message: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} (AEON_REQUIRE_SERVICES=1)")
    pytest.skip(message)


@pytest.fixture(autouse=True)
def blob_dir(tmp_path, settings):
    """Each test stores its evidence in its own folder, and never reaches the real Hugging Face:
    unless a test starts the stand-in, the Hub is a closed local port (an instant refusal)."""
    settings.AEON_BLOB_DIR = tmp_path / "blobs"
    settings.AEON_HF_ENDPOINT = "http://127.0.0.1:9"
    settings.AEON_HF_TIMEOUT_SECONDS = 2
    return settings.AEON_BLOB_DIR


@pytest.fixture(autouse=True)
def board_key_file(tmp_path, settings):
    """Each test signs with its own board key, made the way production makes it."""
    from anchor.keys import create_key_file

    path = tmp_path / "board-key.pem"
    create_key_file(path)
    settings.AEON_BOARD_KEY_FILE = str(path)
    return path


@pytest.fixture
def hub(settings):
    """The local Hugging Face stand-in, with the board pointed at it."""
    from tests.hf_standin import HubStandIn

    with HubStandIn() as stand_in:
        settings.AEON_HF_ENDPOINT = stand_in.endpoint
        yield stand_in


@pytest.fixture
def postgres(transactional_db):
    """For behaviour that depends on the database: locks, constraints, concurrent requests."""
    if connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")


def _commits_for_real(request) -> bool:
    """Whether the test runs outside a rolled-back transaction: `django_db(transaction=True)`,
    or a fixture that needs that (the live server, PostgreSQL's locks)."""
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or marker.args[:1] == (True,)):
        return True
    return bool({"transactional_db", "live_server", "postgres"} & set(request.fixturenames))


@pytest.fixture
def board_in_process(db):
    """The board in-process (tests/inprocess.py), in the test's rolled-back transaction: an
    empty answer cache (the rollback takes the board generation back to a number an earlier
    test may have cached answers under), and commits in autocommit's order for the whole test
    (`committing`: a command or service the test calls commits as a request does)."""
    from django.core.cache import cache

    cache.clear()
    with committing():
        yield IN_PROCESS_URL


@pytest.fixture
def board_url(request) -> str:
    """The board a test talks to (docs/README.md §The test suite): in a rolled-back test
    (`django_db`) the board in-process; in a test that commits for real
    (`django_db(transaction=True)`) a live server over HTTP."""
    if _commits_for_real(request):
        return request.getfixturevalue("live_server").url
    return request.getfixturevalue("board_in_process")


@pytest.fixture
def board_client(board_in_process):
    """Django's test client in a rolled-back test, its requests committing as on a live server
    (tests/inprocess.py): pages driven with a session (the admin)."""
    from tests.inprocess import Client

    return Client()


@pytest.fixture
def pod(board_url) -> PodClient:
    """An enrolled pod with its own fresh device key, on `board_url`."""
    client = pod_client(board_url, timeout=60)
    assert client.enroll().status == 200
    return client


@pytest.fixture
def make_pod(board_url):
    def make() -> PodClient:
        client = pod_client(board_url, timeout=60)
        assert client.enroll().status == 200
        return client

    return make


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        missing_service("needs Chromium: apt-get install -y chromium")
    return path
