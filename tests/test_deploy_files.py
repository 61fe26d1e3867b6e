"""The container deployment as files (deploy/, docs/operations.md §Containers): the compose file
and the Caddyfile validate with the real tools, and say what production needs. Images cannot
be pulled here, so nothing is started; `tests/test_prod_stack.py` runs the same processes."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.conftest import missing_service

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
ENV = {"SITE_ADDRESS": "board.example", "ACME_EMAIL": "ops@board.example"}
ENV |= {"SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "p"}


def tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        missing_service(f"needs {name} (apt-get install {name})")
    return found


@pytest.fixture(scope="module")
def compose(tmp_path_factory) -> dict:
    env_file = tmp_path_factory.mktemp("compose") / "env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in ENV.items()))
    clean = {k: v for k, v in os.environ.items() if k not in ENV}
    done = subprocess.run(
        [tool("docker-compose"), "-f", str(DEPLOY / "compose.yaml"), "--env-file", str(env_file)]
        + ["config"],
        capture_output=True,
        text=True,
        env=clean,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_compose_validates_and_publishes_only_the_proxy(compose):
    services = compose["services"]
    assert set(services) == {
        "caddy",
        "migrate",
        "app1",
        "app2",
        "worker",
        "beat",
        "db",
        "redis",
        "cache",
    }
    assert [name for name, spec in services.items() if spec.get("ports")] == ["caddy"]
    assert {p["target"] for p in services["caddy"]["ports"]} == {80, 443}


def test_every_long_running_part_has_a_health_check(compose):
    services = compose["services"]
    for name in ("caddy", "app1", "app2", "worker", "db", "redis", "cache"):
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["app1"]["healthcheck"]["test"])


def test_the_apps_run_production_behind_the_proxy_with_their_own_drain_file(compose):
    app = compose["services"]["app1"]["environment"]
    assert app["AEON_ENV"] == "production"
    assert app["AEON_SITE_URL"] == "https://board.example"
    assert app["AEON_TRUSTED_PROXY_SSL_HEADER"] == "HTTP_X_FORWARDED_PROTO"
    assert app["AEON_DRAIN_FILE"].startswith("/tmp/")  # inside the container, not shared
    assert app["AEON_BOARD_KEY_FILE"] == "/run/secrets/board_key"
    assert app["DATABASE_URL"].startswith("postgres://aeon:p@db:5432/")
    for name in ("app1", "app2", "worker", "beat"):
        depends = compose["services"][name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_redis_keeps_its_queue_and_never_evicts(compose):
    command = " ".join(compose["services"]["redis"]["command"])
    assert "--appendonly yes" in command
    assert "--maxmemory-policy noeviction" in command


def test_the_answer_cache_has_a_redis_of_its_own_that_evicts(compose):
    """Issue 20 point 5: a full cache can never fill the broker (docs/operations.md §The answer
    cache)."""
    services = compose["services"]
    app = services["app1"]["environment"]
    assert urlsplit(app["CACHE_URL"]).hostname == "cache"
    assert urlsplit(app["CELERY_BROKER_URL"]).hostname == "redis"
    command = " ".join(services["cache"]["command"])
    assert "--maxmemory 256mb" in command and "--maxmemory-policy allkeys-lru" in command
    assert "--appendonly no" in command
    for name in ("app1", "app2", "worker", "beat"):
        assert services[name]["depends_on"]["cache"]["condition"] == "service_healthy"


def test_there_is_one_beat_and_one_worker(compose):
    services = compose["services"]
    assert "beat" in services["beat"]["command"]
    assert "worker" in services["worker"]["command"]
    assert "deploy" not in services["beat"]  # no replicas setting: never scaled


def test_the_image_builds_in_stages_and_runs_as_a_user():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", dockerfile, re.M)) == 2
    assert re.search(r"^USER aeon", dockerfile, re.M)
    assert "collectstatic" in dockerfile and "HEALTHCHECK" in dockerfile


@pytest.fixture(scope="module")
def caddy_config(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("caddy")
    done = subprocess.run(
        [tool("caddy"), "adapt", "--config", str(DEPLOY / "Caddyfile"), "--validate"],
        capture_output=True,
        text=True,
        env=os.environ | ENV | {"HOME": str(home), "XDG_DATA_HOME": str(home)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def handlers(node) -> list[dict]:
    """Every handler object anywhere in the adapted config."""
    found = []
    if isinstance(node, dict):
        if "handler" in node:
            found.append(node)
        for value in node.values():
            found += handlers(value)
    elif isinstance(node, list):
        for value in node:
            found += handlers(value)
    return found


def test_caddy_limits_bodies_per_route_above_the_apps_own_cap(caddy_config):
    from django.conf import settings

    server = caddy_config["apps"]["http"]["servers"]["srv0"]
    limits = sorted(h["max_size"] for h in handlers(server["routes"]) if "max_size" in h)
    assert limits == [1024 * 1024, 130 * 1024 * 1024]
    assert limits[1] > settings.AEON_MAX_RESULTS_BYTES  # the app answers its own JSON 413
    routes = json.dumps(server["routes"])
    assert "^/api/v1/runs/[^/]+/results$" in routes
    # A body announced too large is refused before it is read: 413, not a proxy error.
    assert "int({http.request.header.Content-Length}) > 136314880" in routes
    assert "int({http.request.header.Content-Length}) > 1048576" in routes


def test_caddy_cuts_slow_clients_and_reads_small_bodies_before_the_app(caddy_config):
    """Issue 20 point 4: headers within 10 s, a whole body within 150 s; every route but the
    results upload is buffered by Caddy, so a slow small body holds no app thread."""
    server = caddy_config["apps"]["http"]["servers"]["srv0"]
    assert server["read_header_timeout"] == 10 * 10**9
    assert server["read_timeout"] == 150 * 10**9
    proxies = [h for h in handlers(server["routes"]) if h["handler"] == "reverse_proxy"]
    assert sorted(bool(p.get("buffer_requests")) for p in proxies) == [False, True]


def test_caddy_answers_its_own_413_429_and_5xx_on_the_api_as_json(caddy_config):
    errors = caddy_config["apps"]["http"]["servers"]["srv0"]["errors"]
    bodies = {
        h.get("status_code"): json.loads(h["body"])
        for h in handlers(errors)
        if h["handler"] == "static_response" and "body" in h
    }
    assert bodies[413]["reason"] == "SIZE_EXCEEDED"
    assert bodies[429]["reason"] == "RATE_LIMITED"
    assert bodies[503]["reason"] == "UNAVAILABLE"


def test_caddy_drains_replicas_by_their_liveness_probe(caddy_config):
    proxies = [h for h in handlers(caddy_config) if h["handler"] == "reverse_proxy"]
    assert proxies and all(
        p["health_checks"]["active"]["uri"] == "/healthz" and len(p["upstreams"]) == 2
        for p in proxies
    )


# --- the product without its development tooling (issue 21 §3) ----------------------------------

TOOLING = ("tests", "demo", "benchtools")
PRODUCT = ("anchor", "board", "config", "evidence", "recipes", "submissions")


def test_the_image_leaves_out_the_tests_the_demo_and_the_benchmarks():
    ignored = {
        line.strip().strip("/")
        for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert set(TOOLING) <= ignored
    # A builder that reads no per-Dockerfile ignore file still drops them before the image.
    removed = re.search(r"^RUN rm -rf (.*?) \\$", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert removed and set(TOOLING) <= set(removed[1].split())


def test_production_installs_no_tooling_and_config_routes_no_benchmark():
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "from django.urls import Resolver404, resolve\n"
        "try:\n    resolve('/_bench/floor/x'); print('routed')\n"
        "except Resolver404:\n    print('unrouted')\n"
        "print(','.join(settings.INSTALLED_APPS)); print(hasattr(settings, 'AEON_BENCH_FLOOR_DIR'))"
    )
    production = {"AEON_ENV": "production", "SECRET_KEY": "s" * 50}
    production["AEON_SITE_URL"] = "https://board.example"
    answers = {}
    for name, env in (("production", production), ("development", {"AEON_ENV": "development"})):
        env = os.environ | env | {"DJANGO_SETTINGS_MODULE": "config.settings"}
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        routed, apps, floor_setting = done.stdout.split()
        answers[name] = (routed, set(apps.split(",")), floor_setting)
    assert answers["production"][0] == answers["development"][0] == "unrouted"
    assert answers["production"][2] == answers["development"][2] == "False"
    assert not {"demo", "benchtools"} & answers["production"][1]
    assert {"demo", "benchtools"} <= answers["development"][1]


def test_no_product_module_imports_the_tooling():
    pattern = re.compile(r"^\s*(?:from|import)\s+(demo|benchtools|tests)\b", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in PRODUCT
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
