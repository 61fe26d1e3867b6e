"""`make bench` against a database that is not there says so in one line, not a traceback."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

from django.db import connection

from tests.conftest import missing_service

ROOT = Path(__file__).resolve().parent.parent


def test_a_missing_database_is_named_with_the_command_that_creates_it():
    if connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")
    db = connection.settings_dict
    name = f"aeon_missing_{secrets.token_hex(4)}"
    host, port, user = db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["USER"] or "postgres"
    env = os.environ | {
        "AEON_ENV": "development",
        "DATABASE_URL": f"postgres://{user}@{host}:{port}/{name}",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "bench_ingest"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert f"database '{name}' does not exist" in done.stderr, done.stderr
    assert f"createdb -h {host} -p {port} -U {user} {name}" in done.stderr, done.stderr
