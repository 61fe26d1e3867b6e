"""Realistic boards for the read benchmark (`manage.py bench reads`) and the query-count tests:
thousands of comprehensive benchmarks recorded through the service layer, as ingest records them.

Every benchmark is a text run of the current suite and a perf run built by the demo bundle
builder, on the demo model lines (a spread of models, hardware classes and engines), with one of
several recipes per line, seed-like figures around the published ones, one of many pods, and its
weight check answered from the Hugging Face answer cache the demo pre-fills. Completions are cut
to their first 160 characters so 10,000 benchmarks fit in a few hundred MB; no read under test
serves them. The same arguments always record the same board.
"""

import hashlib
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from board import services as board_services
from board.grading import suite_cases
from demo.bundles import (
    DEMO_MODELS,
    PERF_SUITE_ID,
    RECIPE_HISTORY,
    TEXT_SUITE_ID,
    DemoModel,
    job_bundles,
)
from demo.loader import prefill_hub_cache
from submissions.weight_checks import check_run_weights

LINES: tuple[DemoModel, ...] = DEMO_MODELS + RECIPE_HISTORY
PODS = 60
CONTEXTS = (65536, 98304, 131072)
# One-flag retunes of a vLLM line: each value is another recipe of the same model and class.
BATCHED_TOKENS = ("8192", "16384", "32768", "49152")
COMPLETION_CHARS = 160
START = datetime(2026, 1, 1, tzinfo=UTC)


def bench_model(index: int) -> tuple[DemoModel, int]:
    """The model line, recipe and figures of benchmark `index`, and its served context."""
    line = LINES[index % len(LINES)]
    rng = random.Random(f"read-bench|{index}")
    flags = line.flags
    if "--max-num-batched-tokens" in flags:
        flags = list(flags)
        flags[flags.index("--max-num-batched-tokens") + 1] = rng.choice(BATCHED_TOKENS)
        flags = tuple(flags)
    elif line.flags:
        flags = line.flags + ("--max-num-batched-tokens", rng.choice(BATCHED_TOKENS))
    speed = rng.uniform(0.55, 1.06)  # most runs fall short of the published figure
    model = replace(
        line,
        key=f"{line.key}-bench-{index}",
        flags=flags,
        peak_agg_tps=round(line.peak_agg_tps * speed, 1),
        composite=round(min(95.0, line.composite + rng.uniform(-6.0, 2.0)), 1),
        c1=tuple(
            (cat, round(d * min(speed, 1.0), 1), t, round(p / min(speed, 1.0), 1))
            for cat, d, t, p in line.c1
        ),
    )
    return model, rng.choice(CONTEXTS)


def _run_id(index: int, suite: str) -> str:
    return hashlib.sha256(f"read-bench|{index}|{suite}".encode()).hexdigest()[:16]


def _pod(index: int) -> str:
    return hashlib.sha256(f"read-bench-pod|{index % PODS}".encode()).hexdigest()[:16]


def _shortened(rows: list[dict]) -> list[dict]:
    # The outputs the board grades again stay whole (they are short), or they would be disputed.
    graded = suite_cases(TEXT_SUITE_ID).cases
    return [
        row | {"raw_output": row["raw_output"][:COMPLETION_CHARS]}
        if isinstance(row.get("raw_output"), str)
        and not (row.get("case_id") in graded and graded[row["case_id"]].board_grades)
        else row
        for row in rows
    ]


def record_benchmark(index: int) -> list[str]:
    """Record benchmark `index` (text + perf) and its weight checks; returns its run ids."""
    model, context = bench_model(index)
    started = (START + timedelta(minutes=7 * index)).strftime("%Y-%m-%dT%H:%M:%SZ")
    job = [
        entry
        for entry in job_bundles(
            model, started=started, seed=index, context_len=context, with_agentic=False
        )
        if entry[1] in (TEXT_SUITE_ID, PERF_SUITE_ID)
    ]
    run_ids = []
    # One transaction per benchmark, its weight checks included (each opens a savepoint of its
    # own here), committed without waiting for its WAL flush: a bulk load of a bench board
    # needs no disk flush per benchmark. On a busy 2-core machine the
    # five commits and flushes per benchmark cost more than the SQL.
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        for offset, (board, suite_id, name, bundle) in enumerate(job):
            run_id = _run_id(index, suite_id)
            board_services.record_run(
                run_id=run_id,
                key_fingerprint=_pod(index),
                model=name,
                board=board,
                suite_id=suite_id,
                bundle=bundle,
                rows=_shortened(bundle["results"]),
                bundle_sha256=hashlib.sha256(run_id.encode()).hexdigest(),
                committed_at=START + timedelta(minutes=7 * index + offset),
            )
            run_ids.append(run_id)
        for run_id in run_ids:
            check_run_weights(run_id)
    return run_ids


def load_benchmarks(count: int, *, first: int = 0, log=None) -> int:
    """Record benchmarks `first` … `first + count − 1`, then rewrite every read model once."""
    prefill_hub_cache()
    with board_services.read_models_deferred():
        for index in range(first, first + count):
            record_benchmark(index)
            if log and (index + 1 - first) % 500 == 0:
                log(f"  {index + 1 - first}/{count} benchmarks recorded")
    board_services.recompute_all_read_models()
    return count
