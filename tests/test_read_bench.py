"""`manage.py bench reads` runs end to end on a tiny board: a database per size (dropped at the
end), a board signing key, gunicorn as deployed on a Redis cache serving every size at once, wrk
against the reads asked for and their floor in alternating rounds, a JSON report.
It asserts that every read was measured and answered without an error, never how fast."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.conftest import missing_service
from tests.test_celery_worker import REDIS_URL, redis_answers

ROOT = Path(__file__).resolve().parent.parent
# What the test measures (`--reads`): one read of each kind the goals name (a champion API, a
# list API, a page), one of them with a path made from the board's own ids; the bench measures
# every read by default (benchtools/read_bench.py TARGETS), each costing this test about 10 s of
# wrk, which it spends once per kind.
READS = {"pod_champions", "benchmark_detail", "board_page"}


@pytest.fixture
def bench_database(postgres):
    if not shutil.which("wrk"):
        missing_service("needs wrk: apt-get install wrk")
    if not redis_answers(REDIS_URL):
        missing_service(f"needs Redis at {REDIS_URL}")
    db = connection.settings_dict
    name = f"{db['NAME']}_readbench"
    server = (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    )
    yield f"{server}/{name}"
    # The command suffixes the name it is given once more (its default database): drop both.
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        for leftover in (name, f"{name}_readbench", f"{name}14", f"{name}28"):
            admin.execute(f'DROP DATABASE IF EXISTS "{leftover}" WITH (FORCE)')


def databases_named(bench_database: str) -> set[str]:
    server, name = bench_database.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres") as admin:
        rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (name + "%",))
        return {row[0] for row in rows}


def test_the_read_benchmark_measures_every_read_next_to_its_floor(bench_database, tmp_path):
    report = tmp_path / "reads.json"
    env = os.environ | {"DATABASE_URL": bench_database, "AEON_ENV": "development"}
    completed = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench",
            "reads",
            "--sizes",
            "14,28",
            "--duration",
            "1",
            "--rounds",
            "2",
            "--warmup",
            "0",
            "--connections",
            "2",
            "--wrk-threads",
            "1",
            "--workers",
            "1",
            "--threads",
            "2",
            "--reads",
            ",".join(sorted(READS)),
            "--cache-url",
            REDIS_URL,
            "--output",
            str(report),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "no board signing key configured" not in completed.stdout + completed.stderr
    assert databases_named(bench_database) == set()  # made for the run, dropped after it

    measured = json.loads(report.read_text())
    assert set(measured["sizes"]) == {"14", "28"}
    for size, reads in measured["sizes"].items():
        assert set(reads) == READS, size
        for name, result in reads.items():
            for side in ("answer", "floor", "uncached"):
                assert result[side]["requests"] > 0, (size, name, side)
                assert result[side]["errors"] == result[side]["non_2xx_3xx"] == 0
                assert result[side]["cpu_ms_per_request"] > 0, (size, name, side)
                assert len(result["rounds"][side]) == 2, (size, name, side)
            if name in measured["sizes"]["28"]:  # one floor, in the same rounds as both sizes
                assert result["floor"] == measured["sizes"]["28"][name]["floor"]
            assert result["bytes"] > 0
    # Each read has its goal of share of the floor, and its goal of staying within 10 % between
    # the sizes, cached and not.
    named = Counter(re.match(r"\w+", goal["goal"]).group() for goal in measured["goals"])
    assert named == {name: 3 for name in READS}, measured["goals"]
    assert "%floor" in completed.stdout and "written to" in completed.stdout
