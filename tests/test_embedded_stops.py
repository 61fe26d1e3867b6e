"""The embedded default, continued (tests/test_embedded_default.py has the board as `make run`
starts it, and the busy demo load): a lock that makes the demo load wait out a 503, and `make run`
stopped by a terminal's Ctrl-C and by a supervisor's SIGTERM, leaving no process behind.

A file of its own so that `.ci/run` runs it beside tests/test_embedded_default.py, on the second
worker (`-n 2 --dist loadfile`, after the rest of the suite; docs/README.md §The test suite): each
file starts its boards one after another, about two minutes of them each.
"""

import json
import signal
import sys
import time
import urllib.request

import pytest

from demo.bundles import DEMO_JOBS
from tests.test_embedded_default import LOADED, STOPPED, hold_write_lock, start_board

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process tree in /proc")


def test_a_503_during_the_demo_load_is_waited_out_and_the_load_completes(tmp_path):
    # A one-second busy timeout: a lock held longer is answered 503 UNAVAILABLE.
    board = start_board(tmp_path / "board", AEON_SQLITE_BUSY_TIMEOUT_SECONDS="1")
    try:
        board.wait_for("Loading demo data", timeout=300)
        lock = hold_write_lock(board.data_dir / "aeon.sqlite3")
        board.wait_for("503 UNAVAILABLE", timeout=60)
        time.sleep(4)  # more refused attempts while the lock stays
        assert board.get("/api/v1/benchmarks") == 200  # readers are not blocked meanwhile
        lock.execute("ROLLBACK")
        lock.close()
        assert board.wait_for(LOADED, STOPPED) == LOADED, board.output[-3000:]
        assert board.process.poll() is None
        assert board.get("/healthz") == 200
        with urllib.request.urlopen(f"{board.url}/api/v1/benchmarks", timeout=30) as answer:
            assert json.load(answer)["count"] == len(DEMO_JOBS)
        status, left = board.stop(signal.SIGTERM)
        assert (status, left) == (0, set())
    finally:
        board.kill_all()


# --- `make run` itself: Ctrl-C and SIGTERM stop every process it started --------------------


@pytest.mark.parametrize("group", [True, False], ids=["ctrl-c-to-the-group", "sigterm-to-make"])
def test_stopping_make_run_leaves_no_process_behind(tmp_path, group):
    board = start_board(tmp_path / "board", make=True)
    try:
        board.wait_for("AEON Board is up", timeout=300)
        # make run made the development board key under the data folder, and said so.
        assert "board key created" in board.output
        assert (board.data_dir / "board-key.pem").exists()
        assert board.get("/.well-known/aeon-bench.json") == 200
        started = board.started_processes()
        assert any("runserver" in line for line in started.values()), started
        # A terminal's Ctrl-C sends SIGINT to the whole foreground group; a supervisor sends
        # SIGTERM to make alone.
        _, left = board.stop(signal.SIGINT if group else signal.SIGTERM, group=group)
        assert left == set(), {pid: started[pid] for pid in left}
    finally:
        board.kill_all()
