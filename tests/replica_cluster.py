"""A second PostgreSQL cluster on this machine, a streaming replica of the test database's server
(docs/scale-out.md §Read replica): `pg_basebackup -R` from the primary, started on its own port
from a temporary folder, with WAL replay that a test can pause and resume.

The primary must accept replication connections from 127.0.0.1. When it does not, the cluster
adds `host replication all 127.0.0.1/32 trust` to the primary's pg_hba.conf (once; only a
loopback primary whose file this user may write) and reloads it; `wal_level` and
`max_wal_senders` are only checked, since changing them needs a restart.
"""

import shutil
import socket
import tempfile
from pathlib import Path

import psycopg

from tests.private_servers import (
    ClusterUnavailable,
    own,
    postgres_bin,
    run_program,
    wait_until,
    write_owned,
)

REPLICATION_HBA_LINE = "host replication all 127.0.0.1/32 trust"
# The hot-standby parameters a standby must hold at least at the primary's values.
STANDBY_MINIMUMS = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)
LOOPBACK = ("127.0.0.1", "localhost", "::1")

__all__ = ["ClusterUnavailable", "ReplicaCluster"]


class ReplicaCluster:
    def __init__(self, *, host: str, port: int, user: str, dbname: str, replica_port: int):
        self.host, self.port, self.user, self.dbname = host, port, user, dbname
        self.replica_port = replica_port
        self.folder: Path | None = None
        self.bin: Path | None = None

    # --- connections -------------------------------------------------------------------------

    def primary(self, dbname: str | None = None, **kwargs) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            dbname=dbname or self.dbname,
            autocommit=True,
            connect_timeout=5,
            **kwargs,
        )

    def replica(self) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.replica_port,
            user=self.user,
            dbname=self.dbname,
            autocommit=True,
            connect_timeout=5,
        )

    def on_replica(self, sql: str, params=()) -> list[tuple]:
        with self.replica() as conn:
            return _rows(conn.execute(sql, params))

    def on_primary(self, sql: str, params=()) -> list[tuple]:
        with self.primary() as conn:
            return _rows(conn.execute(sql, params))

    def url(self, application_name: str) -> str:
        return (
            f"postgres://{self.user}@127.0.0.1:{self.replica_port}/{self.dbname}"
            f"?application_name={application_name}"
        )

    # --- the replica's statement log --------------------------------------------------------

    def log_mark(self) -> int:
        return (self.folder / "replica.log").stat().st_size

    def statements_since(self, mark: int, application_name: str) -> list[str]:
        """The statements clients named `application_name` ran on the replica after `mark`."""
        with open(self.folder / "replica.log", "rb") as log:
            log.seek(mark)
            text = log.read().decode("utf-8", "replace")
        prefix = f"[{application_name}] LOG:  statement: "
        return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]

    # --- set-up ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.host not in LOOPBACK:
            raise ClusterUnavailable(f"the primary must run on this machine, not {self.host}")
        with self.primary("postgres") as conn:
            major = conn.info.server_version // 10000
            settings = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]
                for name in ("wal_level", "hba_file", *STANDBY_MINIMUMS)
            }
        self.bin = postgres_bin(major, programs=("pg_basebackup", "pg_ctl", "postgres"))
        if (
            settings["wal_level"] not in ("replica", "logical")
            or int(settings["max_wal_senders"]) < 2
        ):
            raise ClusterUnavailable(
                "the primary needs wal_level=replica and max_wal_senders >= 2 (a restart)"
            )
        self._allow_replication(settings["hba_file"])
        self._stop_stale_replica()
        self.folder = Path(tempfile.mkdtemp(prefix="aeon-replica-"))
        own(self.folder)
        data = self.folder / "data"
        self._run(
            "pg_basebackup",
            *("-h", "127.0.0.1", "-p", str(self.port), "-U", self.user),
            *("-D", str(data), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync"),
        )
        minimums = "\n".join(f"{name} = {settings[name]}" for name in STANDBY_MINIMUMS)
        write_owned(
            data / "postgresql.conf",
            f"port = {self.replica_port}\n"
            "listen_addresses = '127.0.0.1'\n"
            f"unix_socket_directories = '{self.folder}'\n"
            "hot_standby = on\n"
            "hot_standby_feedback = on\n"
            "shared_buffers = 32MB\n"
            "fsync = off\n"
            # Every statement, with the client's application_name: who asked the replica what.
            "log_statement = 'all'\n"
            "log_line_prefix = '[%a] '\n"
            f"{minimums}\n",
        )
        write_owned(data / "pg_hba.conf", "local all all trust\nhost all all 127.0.0.1/32 trust\n")
        write_owned(data / "pg_ident.conf", "")
        log = self.folder / "replica.log"
        self._run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60", "start")
        self._wait(lambda: self.on_replica("SELECT pg_is_in_recovery()")[0][0], "recovery")
        self.wait_for_replay()

    def stop(self) -> None:
        if self.folder is None:
            return
        data = self.folder / "data"
        if (data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def _allow_replication(self, hba_file: str) -> None:
        if self._replication_allowed():
            return
        hba = Path(hba_file)
        try:
            text = hba.read_text()
            if REPLICATION_HBA_LINE not in text:
                hba.write_text(
                    text.rstrip("\n")
                    + "\n# AEON Board tests: a streaming replica on loopback\n"
                    + REPLICATION_HBA_LINE
                    + "\n"
                )
        except OSError as exc:
            raise ClusterUnavailable(
                f"the primary refuses replication from 127.0.0.1 and {hba} cannot be changed "
                f"({exc.strerror}): add `{REPLICATION_HBA_LINE}` and reload it"
            ) from exc
        self.on_primary("SELECT pg_reload_conf()")
        self._wait(self._replication_allowed, "the primary to allow replication connections")

    def _replication_allowed(self) -> bool:
        try:
            psycopg.connect(
                host=self.host,
                port=self.port,
                user=self.user,
                replication="true",
                connect_timeout=5,
            ).close()
        except psycopg.OperationalError as exc:
            if "pg_hba.conf" in str(exc):
                return False
            raise
        return True

    def _stop_stale_replica(self) -> None:
        """A replica left running on our port by an interrupted run is stopped; anything else
        there makes this run unavailable."""
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.replica_port)) != 0:
                return
        try:
            with psycopg.connect(
                host="127.0.0.1", port=self.replica_port, user=self.user, dbname="postgres"
            ) as conn:
                folder = conn.execute("SHOW data_directory").fetchone()[0]
        except psycopg.Error as exc:
            raise ClusterUnavailable(f"port {self.replica_port} is in use") from exc
        if not Path(folder).parent.name.startswith("aeon-replica-"):
            raise ClusterUnavailable(f"port {self.replica_port} is in use by {folder}")
        self._run("pg_ctl", "-D", folder, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(Path(folder).parent, ignore_errors=True)

    # --- replay ------------------------------------------------------------------------------

    def wait_for_replay(self) -> None:
        """Until the replica has replayed everything the primary has written so far. The insert
        position, not the write position: a commit made without waiting for its flush (the
        board's bookkeeping writes, the generation among them) may still sit in WAL buffers."""
        lsn = self.on_primary("SELECT pg_current_wal_insert_lsn()::text")[0][0]
        self._wait(
            lambda: self.on_replica("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))[0][0],
            f"the replica to replay up to {lsn}",
        )

    def pause_replay(self) -> None:
        self.on_replica("SELECT pg_wal_replay_pause()")
        self._wait(
            lambda: self.on_replica("SELECT pg_get_wal_replay_pause_state()")[0][0] == "paused",
            "replay to pause",
        )

    def resume_replay(self) -> None:
        self.on_replica("SELECT pg_wal_replay_resume()")

    def resume_replay_if_running(self) -> None:
        """Before a stop: a standby paused mid-test must not hold the primary's DROP DATABASE."""
        if self.folder is not None and (self.folder / "data" / "postmaster.pid").exists():
            try:
                self.resume_replay()
            except psycopg.Error:
                pass

    # --- helpers -----------------------------------------------------------------------------

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        run_program(self.folder, self.bin, program, *args, check=check, log="replica.log")

    @staticmethod
    def _wait(ready, what: str, seconds: float = 60) -> None:
        wait_until(ready, what, seconds, errors=(psycopg.OperationalError,))


def _rows(cursor) -> list[tuple]:
    return cursor.fetchall() if cursor.description else []
