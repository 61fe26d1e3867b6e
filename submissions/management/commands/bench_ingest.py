"""Measure ingest over HTTP against a running board: a 174-case text run through its 21
cumulative checkpoints and final, and a perf final, each with a fresh job identity.

Run it against the board `make run` serves: the demo model's Hugging Face answer is cached there,
so the weight check at commit asks nothing of the network."""

import statistics
import time

from django.core.management.base import BaseCommand

from submissions.demo.bundles import (
    DEMO_MODELS,
    PERF_SUITE_ID,
    TEXT_SUITE_ID,
    job_bundles,
    text_checkpoints,
)
from submissions.demo.podclient import PodClient


class Command(BaseCommand):
    help = "Time checkpoints and finals of demo jobs sent to a running board (medians in ms)."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--jobs", type=int, default=5)

    def handle(self, *args, url: str, jobs: int, **options):
        pod = PodClient(url, wait_when_rate_limited=True)
        timings: dict[str, list[float]] = {"checkpoint": [], "text final": [], "perf final": []}
        for index in range(jobs):
            bundles = {
                suite: (board, name, bundle)
                for board, suite, name, bundle in job_bundles(
                    DEMO_MODELS[0], started=f"bench-{time.time_ns()}-{index}", with_agentic=False
                )
            }
            board, name, text = bundles[TEXT_SUITE_ID]
            session = pod.open_run(name, TEXT_SUITE_ID, board)
            for checkpoint in text_checkpoints(text):
                timings["checkpoint"].append(
                    self._timed(pod.submit, session, checkpoint, final=False)
                )
            timings["text final"].append(self._timed(pod.submit, session, text, final=True))
            board, name, perf = bundles[PERF_SUITE_ID]
            session = pod.open_run(name, PERF_SUITE_ID, board)
            timings["perf final"].append(self._timed(pod.submit, session, perf, final=True))
        for label, values in timings.items():
            self.stdout.write(
                f"{label:>12}: median {statistics.median(values) * 1000:7.1f} ms  "
                f"max {max(values) * 1000:7.1f} ms  (n={len(values)})"
            )

    @staticmethod
    def _timed(call, *args, **kwargs) -> float:
        started = time.perf_counter()
        answer = call(*args, **kwargs)
        elapsed = time.perf_counter() - started
        if answer.status != 200:
            raise RuntimeError(f"refused: {answer.status} {answer.body}")
        return elapsed
