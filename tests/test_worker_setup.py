"""The test suite's own set-up (tests/conftest.py, docs/README.md §The test suite): a run on
several pytest-xdist workers without one Redis database per worker stops at once, loudly, with
a non-zero exit, before any worker starts; never "no tests ran" with exit 0."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What the runs below collect: the small test at the end of this file.
TARGET = "tests/test_worker_setup.py::test_the_suite_set_up_lives_in_one_conftest"


def run_pytest(*args: str, redis_urls: str | None) -> subprocess.CompletedProcess:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "AEON_TEST_REDIS_URL"))
    }
    if redis_urls is not None:
        env["AEON_TEST_REDIS_URL"] = redis_urls
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "workers, urls",
    [
        (2, None),  # the trap of issue 21: `make test PYTEST_ARGS="-n 2"` with no setting
        (2, "redis://127.0.0.1:6379/15"),  # one URL for two workers
        (3, "redis://127.0.0.1:6379/15,redis://127.0.0.1:6379/14"),
    ],
)
def test_more_workers_than_redis_databases_stops_the_run_loudly(workers, urls):
    listed = 0 if urls is None else len(urls.split(","))
    done = run_pytest("-n", str(workers), TARGET, redis_urls=urls)
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert f"-n {workers} runs {workers} pytest-xdist workers" in done.stderr, out
    assert f"AEON_TEST_REDIS_URL lists {listed}" in done.stderr, out
    assert "no tests ran" not in out
    assert "passed" not in out  # stopped before any worker ran anything


def test_one_url_per_worker_runs_every_test():
    """The counterpart: with a URL per worker the same run goes ahead and runs its test (the
    URLs are only handed out here; the test run uses no Redis)."""
    done = run_pytest(
        "-n",
        "2",
        TARGET,
        redis_urls="redis://127.0.0.1:6379/6,redis://127.0.0.1:6379/7",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "1 passed" in out and "failed" not in out, out


def test_the_suite_set_up_lives_in_one_conftest():
    assert [p.name for p in ROOT.joinpath("tests").glob("**/conftest.py")] == ["conftest.py"]
