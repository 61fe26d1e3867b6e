"""`make prod`: the production configuration on this machine, without containers
(docs/operations.md §make prod).

It prepares what production needs (the database, migrations, hashed static files, a secret key
and a board signing key under the data folder when none is configured, each said so), then
runs gunicorn, one Celery worker and a single Celery beat on Redis, all on loopback, and
supervises them: a part that dies is started again; Ctrl-C, SIGTERM or SIGHUP stops them all
(gunicorn lets uploads in flight finish first) and nothing is left behind. Every line it
prints is a JSON object, its own and its children's, each tagged with the part it came from.
It says `ready` once `/readyz` answers 200.

Everything comes from the environment: PORT, HOST, DATABASE_URL, CELERY_BROKER_URL, CACHE_URL,
AEON_DATA_DIR, SECRET_KEY, AEON_SITE_URL, AEON_BOARD_KEY_FILE and every setting of
config/settings.py. This module imports no Django settings itself: it decides the environment
the settings are then read from.
"""

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
READY_WITHIN_SECONDS = 120
STOP_WITHIN_SECONDS = 170  # gunicorn's graceful timeout (150 s) and a margin
CRASH_LOOP = (5, 60.0)  # this many restarts of one part within this many seconds: give up

_print_lock = threading.Lock()


def log(message: str, *, part: str = "prod", level: str = "info", **fields) -> None:
    entry = {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": level,
        "part": part,
        "message": message,
        **fields,
    }
    emit(entry)


def emit(entry: dict) -> None:
    line = json.dumps(entry, ensure_ascii=False, default=str)
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class SetupFailed(Exception):
    pass


class Stop(BaseException):
    """A stop signal arrived: unwind and stop every part (never caught as an Exception)."""


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


def manage(env: dict[str, str], *arguments: str, quiet: bool = False) -> str:
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    for line in (completed.stdout + completed.stderr).splitlines():
        if line.strip() and not quiet:
            forward("setup", line)
    if completed.returncode != 0:
        raise SetupFailed(f"manage.py {' '.join(arguments)} failed ({completed.returncode})")
    return completed.stdout


def set_up(env: dict[str, str]) -> None:
    check_port_free(env["HOST"], int(env["PORT"]))
    check_services(env)
    create_database(env["DATABASE_URL"])
    manage(env, "migrate", "--noinput", "-v", "1")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    if env.get("AEON_PROD_LOCAL_BOARD_KEY"):
        make_local_board_key(env)


def check_port_free(host: str, port: int) -> None:
    """Another server on the port would answer our readiness probe in gunicorn's place."""
    import socket

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


def make_local_board_key(env: dict[str, str]) -> None:
    """No AEON_BOARD_KEY_FILE was given: the board's key under the data folder, made by the key
    command (never overwritten), and said so."""
    path = env["AEON_BOARD_KEY_FILE"]
    commands = manage(env, "help", "--commands", quiet=True).split()
    if "create_board_key" in commands:
        manage(env, "create_board_key", "--path", path, "--if-missing")
    elif not Path(path).exists():  # until the key command is part of this checkout
        write_board_key(Path(path))
    log(
        f"AEON_BOARD_KEY_FILE not set: the board signs with the local key {path}; "
        "a real deployment configures its own (docs/operations.md §Key rotation)",
        level="warning",
    )


def write_board_key(path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    pem = Ed25519PrivateKey.generate().private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    return urlunsplit(parts)


# --- the parts --------------------------------------------------------------------------------


def commands(env: dict[str, str]) -> dict[str, list[str]]:
    data_dir = Path(env["AEON_DATA_DIR"])
    python = sys.executable
    return {
        "web": [python, "-m", "gunicorn", "--config", "config/gunicorn.conf.py", "config.wsgi"],
        "worker": [
            python,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            # Threads: weight checks wait on Hugging Face, and one process leaves no child
            # behind when it is killed.
            "--pool=threads",
            f"--concurrency={env.get('CELERY_CONCURRENCY', '4')}",
            f"--hostname=worker-{os.getpid()}@%h",
            "--loglevel=INFO",
            "--without-mingle",
            "--without-gossip",
        ],
        "beat": [
            python,
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            "--loglevel=INFO",
            f"--schedule={data_dir / 'celerybeat-schedule'}",
        ],
    }


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the kernel sends the part SIGTERM when `make prod` dies, even by SIGKILL."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def forward(part: str, line: str) -> None:
    """A child's output line as a JSON line tagged with its part."""
    line = line.rstrip("\n")
    if not line.strip():
        return
    try:
        entry = json.loads(line)
    except ValueError:
        entry = None
    if isinstance(entry, dict):
        emit({"part": part, **entry})
    else:
        log(line, part=part, level="info")


class Part:
    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.name, self.command, self.env = name, command, env
        self.process: subprocess.Popen | None = None
        self.restarts: list[float] = []

    def start(self) -> None:
        # A session of its own: the terminal's Ctrl-C reaches `make prod` only, which then
        # stops each part in order (gunicorn gracefully) instead of all of them at once.
        self.process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        log(f"{self.name} started", pid=self.process.pid)

    def _pump(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            forward(self.name, line)

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log(f"{self.name} did not stop in time: killed", level="warning")
            self.process.kill()
            self.process.wait()
        log(f"{self.name} stopped", exit_status=self.process.returncode)


def wait_ready(url: str, parts: list[Part]) -> None:
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    last = None
    while time.monotonic() < deadline:
        for part in parts:
            if part.exited() is not None:
                raise SetupFailed(f"{part.name} exited with {part.exited()} while starting")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as answer:
                if answer.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            last = exc.read().decode("utf-8", "replace")
        except OSError as exc:
            last = str(exc)
        time.sleep(0.5)
    raise SetupFailed(f"not ready within {READY_WITHIN_SECONDS} s: {last}")


def supervise(parts: list[Part]) -> None:
    """Start a part again when it dies; give up on one that keeps dying."""
    while True:
        for part in parts:
            status = part.exited()
            if status is None:
                continue
            now = time.monotonic()
            part.restarts = [t for t in part.restarts if now - t < CRASH_LOOP[1]] + [now]
            if len(part.restarts) > CRASH_LOOP[0]:
                raise SetupFailed(f"{part.name} keeps exiting (last status {status})")
            log(f"{part.name} exited with {status}: starting it again", level="warning")
            part.start()
        time.sleep(0.5)


def _raise_stop(signum, frame):
    raise Stop(signal.Signals(signum).name)


def main() -> int:
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    parts: list[Part] = []
    status = 0
    try:
        env = prepared_environment(dict(os.environ))
        set_up(env)
        parts = [Part(name, command, env) for name, command in commands(env).items()]
        for part in parts:
            part.start()
        url = f"http://127.0.0.1:{env['PORT']}"
        wait_ready(url, parts)
        log("ready", url=url, site=env["AEON_SITE_URL"], data_dir=env["AEON_DATA_DIR"])
        supervise(parts)
    except Stop as stop:
        log(f"{stop} received: stopping")
    except SetupFailed as exc:
        log(str(exc), level="error")
        status = 1
    finally:
        for signum in STOP_SIGNALS:  # a second Ctrl-C cannot interrupt the stop
            signal.signal(signum, signal.SIG_IGN)
        for part in parts:
            part.stop()
        deadline = time.monotonic() + STOP_WITHIN_SECONDS
        for part in parts:
            part.wait(deadline)
    log("stopped")
    return status


if __name__ == "__main__":
    sys.exit(main())
