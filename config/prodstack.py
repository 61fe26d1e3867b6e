"""`make prod`: the production configuration on this machine, without containers
(docs/operations.md §make prod).

It prepares what production needs (the database, migrations, hashed static files, a secret key
and a board signing key under the data folder when none is configured, each said so), then
becomes supervisord (config/supervision.py, as `make run` does) running gunicorn, one Celery
worker, a single Celery beat and, when `caddy` is on PATH, Caddy in front of gunicorn with
deploy/Caddyfile. Every line it prints is JSON, tagged with its `part`.

Everything comes from the environment: PORT, HOST, DATABASE_URL, CELERY_BROKER_URL, CACHE_URL,
AEON_DATA_DIR, SECRET_KEY, AEON_SITE_URL, AEON_BOARD_KEY_FILE and every setting of
config/settings.py. This module imports no Django settings itself: it decides the environment
the settings are then read from.
"""

import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from config.supervision import ROOT, forward, log, supervise

STOP_WITHIN_SECONDS = 170  # gunicorn's graceful timeout (150 s) and a margin


class SetupFailed(Exception):
    pass


# --- the environment ------------------------------------------------------------------------


def prepared_environment(base: dict[str, str]) -> dict[str, str]:
    """The environment every part runs with: the caller's, production chosen, and defaults for
    what production requires and this machine can provide."""
    env = dict(base)
    env["AEON_ENV"] = "production"
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    env.pop("DEBUG", None)
    port = env.setdefault("PORT", "8000")
    env.setdefault("HOST", "127.0.0.1")
    data_dir = Path(env.setdefault("AEON_DATA_DIR", str(ROOT / "var" / "prod"))).resolve()
    env["AEON_DATA_DIR"] = str(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    env.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/aeon")
    env.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    # Several processes share answers: a Redis database apart from the broker's, on its server
    # unless CACHE_URL names one of the cache's own (docs/operations.md §The answer cache).
    env.setdefault("CACHE_URL", cache_beside(env["CELERY_BROKER_URL"]))
    # Each thread keeps its database connection a minute, as deploy/compose.yaml does: opening
    # one costs about as much as a small upload's whole floor (docs/protocol.md §Ingest cost).
    env.setdefault("DB_CONN_MAX_AGE", "60")
    env.setdefault("AEON_SITE_URL", f"http://127.0.0.1:{port}")
    if not env.get("ALLOWED_HOSTS") and urlsplit(env["AEON_SITE_URL"]).hostname in (
        "127.0.0.1",
        "localhost",
    ):
        env["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
    env.setdefault("PYTHONUNBUFFERED", "1")
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = local_secret(data_dir / "secret-key")
    if not env.get("AEON_BOARD_KEY_FILE"):
        env["AEON_BOARD_KEY_FILE"] = str(data_dir / "board-key.pem")
        env["AEON_PROD_LOCAL_BOARD_KEY"] = "1"
    return env


def behind_caddy(env: dict[str, str]) -> dict[str, str]:
    """Caddy takes HOST:PORT; gunicorn a loopback port of its own, and the client's address
    from the header Caddy sets (docs/operations.md §Slow clients)."""
    if not env.get("GUNICORN_BIND"):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            env["GUNICORN_BIND"] = f"127.0.0.1:{probe.getsockname()[1]}"
    env.setdefault("AEON_TRUSTED_PROXY_HEADER", "HTTP_X_FORWARDED_FOR")
    env["AEON_PROD_FRONT"] = "caddy"
    return env


def cache_beside(broker_url: str) -> str:
    """The broker's Redis server, the next database number: answers never share the broker's
    database (a flush or a full cache there would stop background work)."""
    parts = urlsplit(broker_url)
    number = parts.path.strip("/") or "0"
    following = (int(number) + 1) % 16 if number.isdigit() else 1  # Redis has 16 by default
    return urlunsplit(parts._replace(path=f"/{following}"))


def _where(url: str) -> tuple:
    """A Redis URL's server and database number."""
    parts = urlsplit(url)
    return (parts.hostname, parts.port or 6379, parts.path.strip("/") or "0")


def shares_a_server(first: str, second: str) -> bool:
    return _where(first)[:2] == _where(second)[:2]


def local_secret(path: Path) -> str:
    """A SECRET_KEY kept under the data folder, made once (no SECRET_KEY was given)."""
    if path.exists():
        log(f"SECRET_KEY not set: using the local one in {path}")
        return path.read_text().strip()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(50) + "\n")
    log(f"SECRET_KEY not set: made a local one in {path} (set SECRET_KEY to choose your own)")
    return path.read_text().strip()


# --- set-up -----------------------------------------------------------------------------------


def manage(env: dict[str, str], *arguments: str) -> None:
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    for line in (completed.stdout + completed.stderr).splitlines():
        forward("setup", line)
    if completed.returncode != 0:
        raise SetupFailed(f"manage.py {' '.join(arguments)} failed ({completed.returncode})")


def set_up(env: dict[str, str]) -> None:
    check_port_free(env["HOST"], int(env["PORT"]))
    check_services(env)
    create_database(env["DATABASE_URL"])
    manage(env, "migrate", "--noinput", "-v", "1")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    if env.get("AEON_PROD_LOCAL_BOARD_KEY"):
        path = env["AEON_BOARD_KEY_FILE"]
        manage(env, "create_board_key", "--path", path, "--if-missing")
        log(
            f"AEON_BOARD_KEY_FILE not set: the board signs with the local key {path}; "
            "a real deployment configures its own (docs/trust-anchor.md §Rotating the key)",
            level="warning",
        )


def check_port_free(host: str, port: int) -> None:
    """Another server on the port would answer our readiness probe in the board's place."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise SetupFailed(f"cannot serve on {host}:{port}: {exc.strerror}") from None


def check_services(env: dict[str, str]) -> None:
    import psycopg
    import redis

    if _where(env["CACHE_URL"]) == _where(env["CELERY_BROKER_URL"]):
        raise SetupFailed("CACHE_URL must not be the broker's database (CELERY_BROKER_URL)")
    database = env["DATABASE_URL"]
    if urlsplit(database).scheme not in ("postgres", "postgresql"):
        raise SetupFailed(f"make prod runs on PostgreSQL: DATABASE_URL is {redact(database)}")
    try:
        psycopg.connect(admin_url(database), connect_timeout=5).close()
    except psycopg.Error as exc:
        raise SetupFailed(f"PostgreSQL does not answer at {redact(database)}: {exc}") from None
    if shares_a_server(env["CACHE_URL"], env["CELERY_BROKER_URL"]):
        log(
            "the answer cache shares the broker's Redis server (another database): give it a "
            "server of its own with maxmemory and allkeys-lru in production "
            "(docs/operations.md §The answer cache)",
            level="warning",
        )
    for name in ("CELERY_BROKER_URL", "CACHE_URL"):
        try:
            redis.Redis.from_url(env[name], socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            raise SetupFailed(f"Redis does not answer at {redact(env[name])}: {exc}") from None


def admin_url(database_url: str) -> str:
    return urlunsplit(urlsplit(database_url)._replace(path="/postgres"))


def create_database(database_url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlsplit(database_url).path.lstrip("/")
    with psycopg.connect(admin_url(database_url), autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if exists.fetchone() is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            log(f"created the database {name}")


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    return urlunsplit(parts)


# --- the parts, under supervisord -------------------------------------------------------------


def programs(env: dict[str, str]) -> dict[str, dict]:
    """supervisord's programs for `make prod`; the listener `prod` first, Caddy last (so it is
    stopped first, while gunicorn still answers the requests it is finishing)."""
    python, data_dir = sys.executable, Path(env["AEON_DATA_DIR"])
    part = {"startsecs": 10, "startretries": 5, "stopwaitsecs": STOP_WITHIN_SECONDS}
    found = {
        "web": [python, "-m", "gunicorn", "--config", "config/gunicorn.conf.py", "config.wsgi"],
        # Threads: weight checks wait on Hugging Face, and one process leaves no child behind
        # when it is killed. -q: no start-up banner, which is not a JSON line.
        "worker": [
            *(python, "-m", "celery", "-q", "-A", "config", "worker", "--pool=threads"),
            f"--concurrency={env.get('CELERY_CONCURRENCY', '4')}",
            f"--hostname=worker-{os.getpid()}@%h",
            *("--loglevel=INFO", "--without-mingle", "--without-gossip"),
        ],
        "beat": [
            *(python, "-m", "celery", "-q", "-A", "config", "beat", "--loglevel=INFO"),
            f"--schedule={data_dir / 'celerybeat-schedule'}",
        ],
    }
    found = {name: part | {"command": command} for name, command in found.items()}
    if env.get("AEON_PROD_FRONT") == "caddy":
        caddy = [shutil.which("caddy", path=env.get("PATH")), "run", "--adapter", "caddyfile"]
        found["caddy"] = part | {
            "command": [*caddy, "--config", str(ROOT / "deploy" / "Caddyfile")],
            "stderr_logfile": str(data_dir / "caddy.log"),  # Caddy's own JSON log
            "environment": {
                "SITE_ADDRESS": f"http://:{env['PORT']}",
                "CADDY_BIND": env["HOST"],
                "AEON_UPSTREAMS": env["GUNICORN_BIND"],
                "ACME_EMAIL": env.get("ACME_EMAIL") or "ops@localhost",  # no ACME over http
                "CADDY_ADMIN": "off",
                "XDG_DATA_HOME": str(data_dir / "caddy"),
                "XDG_CONFIG_HOME": str(data_dir / "caddy"),
            },
        }
    listener = [
        python,
        "-m",
        "config.supervision",
        "events",
        f"http://127.0.0.1:{env['PORT']}",
        *found,
    ]
    return {
        "prod": {
            "eventlistener": True,
            "command": listener,
            "events": "PROCESS_STATE,PROCESS_LOG,SUPERVISOR_STATE_CHANGE_STOPPING",
            "buffer_size": 10000,  # output waiting for the listener, in chunks
            "stderr_logfile": "/dev/stdout",  # where it prints
        },
        **found,
    }


def main() -> int:
    try:
        env = prepared_environment(dict(os.environ))
        if shutil.which("caddy", path=env.get("PATH")):
            behind_caddy(env)
        else:
            log(
                "caddy is not on PATH: gunicorn serves the port itself, with no header or body "
                "read timeouts (docs/operations.md §Slow clients)",
                level="warning",
            )
        set_up(env)
    except SetupFailed as exc:
        log(str(exc), level="error")
        return 1
    os.environ.clear()
    os.environ.update(env)
    supervise(programs(env), Path(env["AEON_DATA_DIR"]), listener=True)
    return 0  # not reached: supervise() replaces this process


if __name__ == "__main__":
    sys.exit(main())
