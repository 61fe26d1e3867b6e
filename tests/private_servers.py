"""Servers a test starts and stops itself: a PostgreSQL cluster of its own (`initdb` into a
temporary folder, on a free port) and a `redis-server` of its own. Faults are made by stopping
them for real (`pg_ctl stop`, SIGKILL), never by a stand-in.

The PostgreSQL programs are the server's own (`initdb`, `pg_ctl`, `postgres`); the server refuses
to run as root, so as root they run as the `postgres` user (`runuser`). `AEON_PG_BIN` names
their folder when it is not `/usr/lib/postgresql/<major>/bin`.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.processes import free_port


class ClusterUnavailable(Exception):
    """This machine cannot run the cluster: the message says what is missing."""


# --- PostgreSQL's server programs ----------------------------------------------------------------


def postgres_bin(major: int | None = None, programs: tuple[str, ...] = ("pg_ctl",)) -> Path:
    """The folder of PostgreSQL's server programs: `AEON_PG_BIN`, else Debian's folder of
    `major` (by default the newest installed); raises ClusterUnavailable without `programs`."""
    if os.environ.get("AEON_PG_BIN"):
        folder = Path(os.environ["AEON_PG_BIN"])
    elif major is not None:
        folder = Path(f"/usr/lib/postgresql/{major}/bin")
    else:
        found = sorted(
            Path("/usr/lib/postgresql").glob("*/bin"),
            key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        )
        folder = found[-1] if found else Path("/usr/lib/postgresql/<major>/bin")
    missing = [program for program in programs if not (folder / program).exists()]
    if missing:
        version = major or "<major>"
        raise ClusterUnavailable(
            f"needs PostgreSQL's server programs ({', '.join(missing)}) in {folder} "
            f"(apt-get install postgresql-{version}, or set AEON_PG_BIN)"
        )
    return folder


def as_postgres() -> list[str]:
    """The server refuses to run as root: as root, run its programs as `postgres`."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def own(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


def write_owned(path: Path, text: str) -> None:
    path.write_text(text)
    own(path)


def run_program(
    folder: Path | None, bin_dir: Path, program: str, *args: str, check: bool = True, log: str = ""
) -> subprocess.CompletedProcess:
    """One of the server's programs, run in `folder`; on failure the error names the tail of
    the log file `log` (a name inside `folder`)."""
    done = subprocess.run(
        [*as_postgres(), str(bin_dir / program), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder or "/",
    )
    if check and done.returncode != 0:
        path = folder / log if log and folder else None
        tail = path.read_text()[-2000:] if path and path.is_file() else ""
        raise RuntimeError(f"{program} failed: {done.stderr or done.stdout}\n{tail}")
    return done


def wait_until(ready, what: str, seconds: float = 60, errors=(OSError,)) -> None:
    """Until `ready()` is true (an exception of `errors` counts as not yet)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except errors:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"waited {seconds:.0f} s for {what}")


# --- a PostgreSQL cluster of the test's own -----------------------------------------------------


class PrivateCluster:
    """`initdb` into a temporary folder, served on a free loopback port, trust authentication
    for `postgres`; `stop(mode)` and `start()` again make an outage, `remove()` ends it all."""

    def __init__(self, prefix: str = "aeon-private-pg-"):
        self.prefix = prefix
        self.port = free_port()
        self.folder: Path | None = None
        self.bin: Path | None = None

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def create(self) -> None:
        self.bin = postgres_bin(programs=("initdb", "pg_ctl", "postgres"))
        self.folder = Path(tempfile.mkdtemp(prefix=self.prefix))
        own(self.folder)
        run_program(
            self.folder,
            self.bin,
            "initdb",
            *("-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync"),
            *("-E", "UTF8", "--locale=C.UTF-8"),
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.folder}'\n"
                "shared_buffers = 32MB\n"
                "fsync = off\n"
                "full_page_writes = off\n"
            )
        self.start()

    def start(self) -> None:
        run_program(
            self.folder,
            self.bin,
            "pg_ctl",
            *("-D", str(self.data), "-l", str(self.folder / "server.log")),
            *("-w", "-t", "60", "start"),
            log="server.log",
        )

    def stop(self, mode: str = "fast") -> None:
        """`fast` ends every session and checkpoints; `immediate` is a crash (recovery at the
        next start)."""
        run_program(self.folder, self.bin, "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return self.folder is not None and (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        if self.folder is None:
            return
        if self.running():
            args = ("-D", str(self.data), "-m", "immediate", "-w", "stop")
            run_program(self.folder, self.bin, "pg_ctl", *args, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None


# --- a redis-server of the test's own -------------------------------------------------------------


class PrivateRedis:
    """A redis-server of the test's own on a free port, keeping its files in `folder`;
    `options` are redis-server's (e.g. `--appendonly yes`, `--maxmemory 32mb`). `stop()` ends it
    gracefully, `kill()` with SIGKILL; `start()` again serves the same port and folder."""

    def __init__(self, folder: Path, *options: str):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.folder = folder
        self.options = options or ("--save", "", "--appendonly", "no")
        self.process: subprocess.Popen | None = None

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + [*self.options, "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until(self.answers, "the private Redis answers", seconds=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
