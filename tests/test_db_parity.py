"""The same bundles through PostgreSQL and SQLite give identical answers, runs, per-case rows,
benchmarks, sessions and manifests (issue 21, "Show"): tests/parity_ingest.py uploads them in a
process of its own per database, and the two snapshots are compared."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import missing_service

ROOT = Path(settings.BASE_DIR)


def snapshot(database_url: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url, "AEON_ENV": "development"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.parity_ingest"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.mark.postgres
def test_the_same_bundles_give_the_same_board_on_postgresql_and_sqlite(tmp_path):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres") or connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")
    on_postgres = snapshot(url)
    on_sqlite = snapshot(f"sqlite:///{tmp_path / 'parity.sqlite3'}")
    assert on_postgres["answers"][1][0] == 200  # the first final committed
    assert len(on_postgres["results"]) == 6 + 5 + 3
    for part in on_postgres:
        assert on_sqlite[part] == on_postgres[part], part
