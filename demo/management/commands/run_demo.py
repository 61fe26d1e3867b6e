"""Serve the board and load the demo data through the real HTTP routes (`make run`).

The board is Django's development server in a child process. This command owns it: Ctrl-C,
SIGTERM and SIGHUP stop it before the command exits, and on Linux the server also dies with
this command if it is killed outright. The demo load never takes the board down: a load that
fails after the demo pods' retries is reported, and the board keeps serving.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.request

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from demo.loader import prefill_hub_cache, submit_demo_jobs

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
SERVER_STOP_SECONDS = 10


class StopRequested(BaseException):
    """SIGTERM or SIGHUP arrived: unwind like Ctrl-C does (never caught as an Exception)."""


def _raise_stop(signum, frame):
    raise StopRequested(signal.Signals(signum).name)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the kernel sends the server SIGTERM when this command dies, even by SIGKILL."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class Command(BaseCommand):
    help = "Serve the board on HOST:PORT and submit the demo pods' bundles to it."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))

    def handle(self, *args, host: str, port: int, **options):
        for signum in STOP_SIGNALS:
            signal.signal(signum, _raise_stop)
        # A SIGINT stops the board even when this process was started with SIGINT ignored (a
        # job started with `&` by a script, some supervisors): Python then installs no
        # KeyboardInterrupt handler of its own, and the signal would be dropped.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        server = None
        try:
            self._prefill()
            server = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
                # The development server and demo data: the development configuration.
                env=os.environ | {"AEON_DEMO": "1", "AEON_ENV": "development"},
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            self._wait_until_up(base_url, server)
            self.stdout.write(f"AEON Board is up at {base_url}/ (server pid {server.pid})")
            self._load_demo(base_url)
            returncode = server.wait()
            raise CommandError(f"the server stopped by itself (exit status {returncode})")
        except (KeyboardInterrupt, StopRequested):
            self.stdout.write("Stopping the board …")
        finally:
            self._stop(server)

    def _prefill(self) -> None:
        try:
            prefill_hub_cache()
        except DatabaseError as exc:  # the weight checks will then ask the Hub; not fatal
            self.stderr.write(f"Could not pre-fill the demo's Hub answers: {exc}")

    def _load_demo(self, base_url: str) -> None:
        self.stdout.write("Loading demo data through the pod protocol …")
        try:
            load = submit_demo_jobs(base_url, log=self.stdout.write)
        except Exception as exc:  # a bug in the loader must not take the board down either
            self.stderr.write(
                self.style.ERROR(f"The demo load failed: {type(exc).__name__}: {exc}")
            )
            return
        if load.complete:
            self.stdout.write(self.style.SUCCESS(f"Demo data loaded: {load.summary()}"))
            return
        self.stderr.write(
            self.style.ERROR(
                f"The demo load stopped: {load.stopped_by}\n"
                f"  ({load.summary()})\n"
                f"  The board keeps serving at {base_url}/; to finish the demo run "
                f"`manage.py load_demo --url {base_url}` (bundles already there are skipped)."
            )
        )

    def _wait_until_up(self, base_url: str, server: subprocess.Popen) -> None:
        for _ in range(240):
            if server.poll() is not None:
                raise CommandError(f"the server exited with {server.returncode}")
            try:
                with urllib.request.urlopen(base_url + "/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.25)
        raise CommandError("the server did not come up within 60 s")

    @staticmethod
    def _stop(server: subprocess.Popen | None) -> None:
        """Stop the server and wait for it; a second Ctrl-C or SIGTERM cannot interrupt this."""
        for signum in (signal.SIGINT, *STOP_SIGNALS):
            signal.signal(signum, signal.SIG_IGN)
        if server is None or server.poll() is not None:
            return
        server.terminate()  # SIGTERM: SIGINT may be ignored, as in a job started with `&`
        try:
            server.wait(timeout=SERVER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
