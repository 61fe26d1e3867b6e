"""Settings fail closed, absolute URLs come from the configured site, the probes answer
(docs/operations.md §Settings, §Health and drain)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from django.test import RequestFactory

from config.site_url import absolute_url

ROOT = Path(__file__).resolve().parent.parent
SHOWN = (
    "AEON_ENV DEBUG ALLOWED_HOSTS AEON_SITE_URL SECURE_PROXY_SSL_HEADER SECURE_HSTS_SECONDS "
    "SESSION_COOKIE_SECURE CSRF_TRUSTED_ORIGINS"
).split()
SHOW = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    f"print(json.dumps({{n: getattr(s, n) for n in {SHOWN!r}}}))"
)


def configured(env: dict) -> subprocess.CompletedProcess:
    """Load the settings in a fresh process with exactly these variables of ours set."""
    ours = ("AEON_", "SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "CSRF_TRUSTED_ORIGINS")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env=clean | {"DJANGO_SETTINGS_MODULE": "config.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def settings_of(env: dict) -> dict:
    result = configured(env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refusal_of(env: dict) -> str:
    result = configured(env)
    assert result.returncode != 0, result.stdout
    return result.stderr.strip().splitlines()[-1]


PRODUCTION = {"SECRET_KEY": "x" * 50, "AEON_SITE_URL": "https://board.example"}


def test_without_a_choice_the_production_configuration_refuses_to_start_without_a_secret():
    assert "SECRET_KEY must be set when AEON_ENV=production" in refusal_of({})
    assert "SECRET_KEY must be set" in refusal_of({"AEON_ENV": "production"})


def test_production_needs_to_know_its_own_address():
    assert "set AEON_SITE_URL" in refusal_of({"SECRET_KEY": "x" * 50})
    assert "AEON_SITE_URL must be a scheme and host" in refusal_of(
        PRODUCTION | {"AEON_SITE_URL": "board.example"}
    )


def test_production_keeps_debug_off_and_serves_only_its_own_host():
    shown = settings_of(PRODUCTION)
    assert shown["AEON_ENV"] == "production"
    assert shown["DEBUG"] is False
    assert shown["ALLOWED_HOSTS"] == ["board.example"]
    assert shown["AEON_SITE_URL"] == "https://board.example"
    assert shown["CSRF_TRUSTED_ORIGINS"] == ["https://board.example"]
    assert shown["SECURE_HSTS_SECONDS"] == 31536000
    assert shown["SESSION_COOKIE_SECURE"] is True
    assert "DEBUG is for the development configuration only" in refusal_of(
        PRODUCTION | {"DEBUG": "1"}
    )


def test_production_given_only_its_hosts_links_to_the_first_over_https():
    shown = settings_of({"SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "b.example,www.b.example"})
    assert shown["AEON_SITE_URL"] == "https://b.example"
    assert shown["ALLOWED_HOSTS"] == ["b.example", "www.b.example"]


def test_the_proxy_scheme_header_is_trusted_only_when_configured():
    assert settings_of(PRODUCTION)["SECURE_PROXY_SSL_HEADER"] is None
    shown = settings_of(PRODUCTION | {"AEON_TRUSTED_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO"})
    assert shown["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_development_is_chosen_explicitly_and_needs_nothing_else():
    shown = settings_of({"AEON_ENV": "development"})
    assert shown["DEBUG"] is True and shown["ALLOWED_HOSTS"] == ["*"]
    assert shown["SECURE_HSTS_SECONDS"] == 0
    assert "AEON_ENV must be 'production' or 'development'" in refusal_of({"AEON_ENV": "prod"})


# --- in-process: production behaviour of the request path ------------------------------------


@pytest.fixture
def production_host(settings):
    settings.ALLOWED_HOSTS = ["board.example"]
    settings.AEON_SITE_URL = "https://board.example"
    settings.SECURE_HSTS_SECONDS = 31536000


@pytest.mark.django_db
def test_a_foreign_host_is_refused_but_the_probes_answer_any_address(client, production_host):
    assert client.get("/api/v1/hardware-classes", HTTP_HOST="evil.example").status_code == 400
    assert client.get("/", HTTP_HOST="evil.example").status_code == 400
    assert client.get("/healthz", HTTP_HOST="10.0.0.5:8000").json() == {"ok": True}
    assert client.get("/readyz", HTTP_HOST="10.0.0.5:8000").status_code == 200


@pytest.mark.django_db
def test_hsts_is_sent_behind_the_proxy_only_when_its_scheme_header_is_trusted(
    client, settings, production_host
):
    proxied = {"HTTP_HOST": "board.example", "HTTP_X_FORWARDED_PROTO": "https"}
    assert "Strict-Transport-Security" not in client.get("/", **proxied)

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/", **proxied)
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")
    plain = client.get("/", HTTP_HOST="board.example", HTTP_X_FORWARDED_PROTO="http")
    assert "Strict-Transport-Security" not in plain


def test_absolute_urls_come_from_the_site_url_never_from_the_host_header(settings):
    request = RequestFactory().get("/", HTTP_HOST="evil.example")
    settings.ALLOWED_HOSTS = ["*"]
    settings.AEON_SITE_URL = "https://board.example"
    assert absolute_url(request, "/runs/abc/") == "https://board.example/runs/abc/"


@pytest.mark.django_db(transaction=True)
def test_a_pod_and_a_shared_page_get_links_on_the_configured_site(make_pod, client, settings):
    from demo.bundles import DEMO_MODELS
    from demo.loader import prefill_hub_cache
    from tests.boardjobs import core_job, submit_job

    settings.AEON_SITE_URL = "https://board.example"
    prefill_hub_cache()
    answers = submit_job(make_pod(), core_job(DEMO_MODELS[0]))
    run_url = answers[0].body["url"]
    assert run_url.startswith("https://board.example/runs/"), run_url
    benchmark_id = answers[0].body["benchmark_id"]
    html = client.get(f"/benchmarks/{benchmark_id}/", HTTP_HOST="evil.example").content.decode()
    assert f'content="https://board.example/benchmarks/{benchmark_id}/"' in html
    assert "evil.example" not in html


# --- probes ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_liveness_answers_ok_and_503_while_the_drain_file_exists(client, settings, tmp_path):
    settings.AEON_DRAIN_FILE = tmp_path / "draining"
    assert client.get("/healthz").json() == {"ok": True}
    settings.AEON_DRAIN_FILE.write_text("")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"ok": False, "draining": True}
    settings.AEON_DRAIN_FILE.unlink()
    assert client.get("/healthz").status_code == 200


CHECKS = ("database", "migrations", "broker", "blob_store", "spool", "signing_key")


@pytest.fixture(autouse=True)
def signing_key(settings, tmp_path):
    """A board key of this test's own, made with cryptography as `create_board_key` makes it."""
    path = tmp_path / "board-key.pem"
    path.write_bytes(pem(Ed25519PrivateKey.generate()))
    settings.AEON_BOARD_KEY_FILE = str(path)
    return path


@pytest.mark.django_db
def test_readiness_checks_every_part(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {"ok": True, "checks": dict.fromkeys(CHECKS, "ok")}


@pytest.mark.django_db
def test_readiness_fails_when_the_blob_store_cannot_be_written(client, settings, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the blob folder should be")
    settings.AEON_BLOB_DIR = blocker / "blobs"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["ok"] is False
    assert response.json()["checks"]["blob_store"].startswith("error")


@pytest.mark.django_db
def test_readiness_fails_without_a_usable_ed25519_signing_key(client, settings, tmp_path):
    settings.DEVELOPMENT = False  # production: a key is always required
    settings.AEON_BOARD_KEY_FILE = ""
    assert "AEON_BOARD_KEY_FILE is not set" in client.get("/readyz").json()["checks"]["signing_key"]

    settings.AEON_BOARD_KEY_FILE = str(tmp_path / "absent.pem")
    assert client.get("/readyz").json()["checks"]["signing_key"] == (
        "error: the board key file does not exist"
    )

    wrong = tmp_path / "x25519.pem"
    wrong.write_bytes(pem(X25519PrivateKey.generate()))
    settings.AEON_BOARD_KEY_FILE = str(wrong)
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert (
        answer.json()["checks"]["signing_key"]
        == "error: the board key file holds no ed25519 private key"
    )

    right = tmp_path / "board.pem"
    right.write_bytes(pem(Ed25519PrivateKey.generate()))
    settings.AEON_BOARD_KEY_FILE = str(right)
    assert client.get("/readyz").json()["checks"]["signing_key"] == "ok"


@pytest.mark.django_db
def test_readiness_fails_while_a_migration_is_unapplied(client):
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    from config import health

    health._migrated = False
    MigrationRecorder(connection).migration_qs.filter(app="recipes").order_by("-id")[0].delete()
    answer = client.get("/readyz").json()
    assert answer["ok"] is False
    assert answer["checks"]["migrations"] == ("error: 1 migrations not applied (manage.py migrate)")


def pem(key) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


@pytest.mark.django_db
def test_security_headers_are_set_on_pages_and_api(client):
    for path in ("/", "/api/v1/hardware-classes"):
        response = client.get(path)
        assert response["X-Content-Type-Options"] == "nosniff"
        assert "default-src 'self'" in response["Content-Security-Policy"]


def test_make_prod_keeps_database_connections_unless_told_otherwise(tmp_path):
    from config.prodstack import prepared_environment

    base = {"AEON_DATA_DIR": str(tmp_path), "SECRET_KEY": "x" * 50}
    assert prepared_environment(base)["DB_CONN_MAX_AGE"] == "60"
    assert prepared_environment(base | {"DB_CONN_MAX_AGE": "0"})["DB_CONN_MAX_AGE"] == "0"
