"""Settings read from the environment, and the liveness/readiness probes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_django_setup(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "AEON_ENV")}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=ROOT,
        env=clean | {"DJANGO_SETTINGS_MODULE": "config.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = run_django_setup({"AEON_ENV": "production"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_starts_with_a_secret_key():
    result = run_django_setup(
        {"AEON_ENV": "production", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "board.example"}
    )
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


@pytest.mark.django_db
def test_liveness_answers_ok_and_503_while_draining(client, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    assert client.get("/healthz").json() == {"status": "ok"}
    (tmp_path / "draining").write_text("")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "draining"}


@pytest.mark.django_db
def test_readiness_checks_the_database_and_the_blob_store(client, settings, tmp_path):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["storage"] == "ok"

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the blob folder should be")
    settings.AEON_BLOB_DIR = blocker / "blobs"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"].startswith("error")


@pytest.mark.django_db
def test_security_headers_are_set_on_pages_and_api(client):
    for path in ("/", "/api/v1/hardware-classes"):
        response = client.get(path)
        assert response["X-Content-Type-Options"] == "nosniff"
        assert "default-src 'self'" in response["Content-Security-Policy"]
