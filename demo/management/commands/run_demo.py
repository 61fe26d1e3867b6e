"""Serve the board and load the demo data through the real HTTP routes (`make run`).

The development server and the demo load are two programs of supervisord, the process manager
`make prod` runs its parts with (`supervise()` in config/supervision.py): this command pre-fills the
demo's Hub answers, then replaces itself with supervisord, so Ctrl-C or SIGTERM stops it and
everything it started, and a server that dies is started again. The demo load never takes the
board down: a load that fails after the demo pods' retries is reported, and the board keeps
serving.
"""

import argparse
import os
import sys
import time
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from config.supervision import supervise
from demo.loader import prefill_hub_cache, submit_demo_jobs

UP_WITHIN_SECONDS = 120


class Command(BaseCommand):
    help = "Serve the board on HOST:PORT and submit the demo pods' bundles to it."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        # The `demo` program: wait for the server, then load the demo into it.
        parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)

    def handle(self, *args, host: str, port: int, load: bool, **options):
        base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        if load:
            self._wait_until_up(base_url)
            self.stdout.write(f"AEON Board is up at {base_url}/")
            self._load_demo(base_url)
            return
        self._prefill()
        manage = [sys.executable, "manage.py"]
        # The development server and demo data: the development configuration.
        os.environ.update(AEON_DEMO="1", AEON_ENV="development", PYTHONUNBUFFERED="1")
        address = ["--host", host, "--port", str(port)]
        programs = {
            "server": {"command": [*manage, "runserver", f"{host}:{port}", "--noreload"]},
            "demo": {
                "command": [*manage, "run_demo", "--load", *address],
                "autorestart": "false",
                "startsecs": 0,
            },
        }
        self.stdout.flush()
        supervise(programs, settings.DATA_DIR, listener=False)

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

    def _wait_until_up(self, base_url: str) -> None:
        deadline = time.monotonic() + UP_WITHIN_SECONDS
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base_url + "/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.25)
        raise CommandError(f"the server did not come up within {UP_WITHIN_SECONDS} s")
