"""Shared fixtures: a live board over HTTP, pod clients with real keys, service gates.

Tests that need PostgreSQL, Redis or Chromium skip with a clear message locally when the
service is missing; with AEON_REQUIRE_SERVICES=1 (CI) a missing service fails instead.
"""

import os
import shutil

import pytest
from django.db import connection

from submissions.demo.podclient import PodClient

REQUIRE_SERVICES = os.environ.get("AEON_REQUIRE_SERVICES") == "1"


def missing_service(message: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} (AEON_REQUIRE_SERVICES=1)")
    pytest.skip(message)


@pytest.fixture(autouse=True)
def blob_dir(tmp_path, settings):
    """Each test stores its evidence in its own folder."""
    settings.AEON_BLOB_DIR = tmp_path / "blobs"
    return settings.AEON_BLOB_DIR


@pytest.fixture
def postgres(transactional_db):
    """For behaviour that depends on the database: locks, constraints, concurrent requests."""
    if connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")


@pytest.fixture
def board_url(live_server) -> str:
    return live_server.url


@pytest.fixture
def pod(board_url) -> PodClient:
    """An enrolled pod with its own fresh device key."""
    client = PodClient(board_url, timeout=60)
    assert client.enroll().status == 200
    return client


@pytest.fixture
def make_pod(board_url):
    def make() -> PodClient:
        client = PodClient(board_url, timeout=60)
        assert client.enroll().status == 200
        return client

    return make


@pytest.fixture
def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        missing_service("needs Chromium: apt-get install -y chromium")
    return path
