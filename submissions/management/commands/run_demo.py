"""Serve the board and load the demo data through the real HTTP routes (`make run`)."""

import os
import signal
import subprocess
import sys
import time
import urllib.request

from django.core.management.base import BaseCommand, CommandError

from submissions.demo.loader import prefill_hub_cache, submit_demo_jobs


class Command(BaseCommand):
    help = "Serve the board on HOST:PORT and submit the demo pods' bundles to it."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))

    def handle(self, *args, host: str, port: int, **options):
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            env=os.environ | {"AEON_DEMO": "1"},
        )
        base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        try:
            self._wait_until_up(base_url, server)
            prefill_hub_cache()
            self.stdout.write("Loading demo data through the pod protocol …")
            sent = submit_demo_jobs(base_url, log=self.stdout.write)
            self.stdout.write(
                self.style.SUCCESS(f"AEON Board is up at {base_url}/ ({sent} demo bundles sent)")
            )
            server.wait()
        except KeyboardInterrupt:
            pass
        finally:
            if server.poll() is None:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=10)

    def _wait_until_up(self, base_url: str, server: subprocess.Popen) -> None:
        for _ in range(120):
            if server.poll() is not None:
                raise CommandError(f"the server exited with {server.returncode}")
            try:
                with urllib.request.urlopen(base_url + "/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise CommandError("the server did not come up within 60 s")
