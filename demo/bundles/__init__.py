"""The demo's bundle generator: what AEON Bench pods upload for one comprehensive job, built
from the catalogue in `data/` (see `catalogue.py`).

The figures are the published DGX Spark ones plus a few plausible entries on other hardware.
Every bundle is the pod's `bundle` object without `run_id`, `run_nonce` and `final` (the pod
client adds those). Used by the demo loader (`make run`), the benchmark command and the tests;
standard library plus the argv reader (recipes/argv.py), so it imports without Django.

The same arguments always give identical bundles: every random draw comes from a
`random.Random` seeded with `seed` plus a stable hash of the model line and the section.
Note that `job_sig` follows docs/protocol.md §Bundle contents (`started|model|hw|scope`), so two
jobs of the same model on the same hardware need different `started` values or the board
deduplicates them.

This module assembles the bundles; their parts come from `recipe` (hardware, weights, recipe),
`text` (the text suite's rows and arena artifacts), `agentic` (agentic and multimodal rows) and
`perf` (the performance model and the perf rows), on top of `common` (the suite, the stable
randomness, the score fitting and the row and evidence shapes every bundle shares).
"""

from __future__ import annotations

import copy
import hashlib

from demo.bundles.agentic import agentic_rows, modality_rows
from demo.bundles.common import SUITE_HASH, agentic_task_ids, hex_id, section_rng, suite_case_ids
from demo.bundles.perf import perf_cells, perf_rows, text_concurrency
from demo.bundles.recipe import SERVED_ALIAS, hardware_of, recipe_of, weights_for
from demo.bundles.text import arena_artifacts, text_rows
from demo.catalogue import (
    AGENTIC_SUITE_ID,
    ALL_DEMO_MODELS,
    AUDIO_SUITE_ID,
    DEMO_JOBS,
    DEMO_MODELS,
    GEMMA4_26B_816,
    HARNESS_VERSIONS,
    HARNESSES,
    MODALITY_SUITES,
    PERF_SUITE_ID,
    RECIPE_HISTORY,
    REPRODUCTIONS,
    TEXT_SUITE_ID,
    VIDEO_SUITE_ID,
    VISION_SUITE_ID,
    DemoJob,
    DemoModel,
    demo_model,
    hub_facts_of,
    weight_sizes,
)

__all__ = [  # what the loader, the benchmark command and the tests import from here
    "AGENTIC_SUITE_ID",
    "ALL_DEMO_MODELS",
    "AUDIO_SUITE_ID",
    "DEMO_JOBS",
    "DEMO_MODELS",
    "GEMMA4_26B_816",
    "HARNESSES",
    "PERF_SUITE_ID",
    "RECIPE_HISTORY",
    "REPRODUCTIONS",
    "SUITE_HASH",
    "TEXT_SUITE_ID",
    "VIDEO_SUITE_ID",
    "VISION_SUITE_ID",
    "DemoJob",
    "DemoModel",
    "agentic_task_ids",
    "demo_model",
    "job_bundles",
    "suite_case_ids",
    "text_checkpoints",
    "hub_facts_of",
    "weight_sizes",
    "weights_for",
]

POD_BUILD_HASH = hashlib.sha256(b"aeon-bench-pod 1.0 demo build").hexdigest()

Bundle = dict
JobEntry = tuple[str, str | None, str, Bundle]


_TOOL_CALLING = {
    "verdict": "ok",
    "modes": {"nonstream": True, "stream": True, "concurrent": True},
    "required_oracle": None,
    "leaked_format": None,
    "suggested_parser": None,
    "remediation": None,
    "detail": "tool calling works in every mode the harnesses use "
    "(non-streaming, streaming, x4 concurrent)",
    "elapsed_s": 21.84,
    "probe_version": "aeon-probe-tools-v1",
}


def job_bundles(
    model: DemoModel,
    *,
    started: str = "2026-11-01T10:00:00Z",
    seed: int = 0,
    coverage: float = 1.0,
    with_agentic: bool = True,
    with_perf: bool = True,
    context_len: int | None = None,
    bench_seed: int | None = None,
) -> list[JobEntry]:
    """The comprehensive job in submission order as (board, suite_id, model_name, bundle).

    Text (174 rows scaled by `coverage`, with arena artifacts), one agentic bundle per harness
    that ran, vision/audio/video when the model has them, then perf. `context_len` overrides the
    served context (rewrites --max-model-len and recipe.context_len).
    """
    served_context = context_len or model.context_len
    per_file, weights_hash = weights_for(model)
    recipe = recipe_of(model, served_context)
    hardware = hardware_of(model)
    cells = perf_cells(model, seed)
    group = hex_id(f"group|{started}|{model.hf_repo}|{model.detected_label}|{model.key}|{seed}", 24)

    def bundle(
        scope: str,
        results: list[dict],
        concurrency: int,
        *,
        tool_calling: bool,
        text_suite: bool = True,
    ) -> dict:
        environment = {
            "hardware": copy.deepcopy(hardware),
            "engine": {"name": model.engine},
            "runner": "aeon-pod-controlled",
            "concurrency": concurrency,
        }
        if tool_calling:
            environment["tool_calling"] = copy.deepcopy(_TOOL_CALLING)
        body = {"results": results}
        if text_suite:
            body["suite_hash"] = SUITE_HASH
        body.update(
            {
                "environment": environment,
                "target_class": "hf_pull_controlled",
                "job_group": group,
                "hf_repo": model.hf_repo,
                "hf_revision": model.hf_revision,
                "weights_hash": weights_hash,
                "weights_per_file": dict(per_file),
                "recipe": copy.deepcopy(recipe),
                "deployment_manifest": _manifest(model, recipe, hardware, weights_hash, per_file),
                "bench_seed": bench_seed,
                "job_sig": hex_id(f"{started}|{model.hf_repo}|{model.detected_label}|{scope}", 24),
            }
        )
        return body

    text_conc = text_concurrency(model)
    text = bundle(
        f"text/{TEXT_SUITE_ID}",
        text_rows(model, seed, coverage, cells),
        text_conc,
        tool_calling=False,
    )
    text["judge_model"] = None
    text["artifacts"] = arena_artifacts(section_rng(model, seed, "arena"))
    job: list[JobEntry] = [("text", TEXT_SUITE_ID, model.hf_repo, text)]

    if with_agentic:
        for harness, score in model.agentic or ():
            rows, artifacts = agentic_rows(model, harness, score, seed, cells)
            agentic = bundle(f"text/{AGENTIC_SUITE_ID}/{harness}", rows, 1, tool_calling=True)
            agentic.update(
                {
                    "judge_model": None,
                    "harness": harness,
                    "harness_version": HARNESS_VERSIONS[harness],
                    "artifacts": artifacts,
                }
            )
            job.append(("text", AGENTIC_SUITE_ID, model.hf_repo, agentic))

    for modality, suite_id, cases in MODALITY_SUITES:
        if modality in model.modalities:
            rows = modality_rows(model, modality, cases, seed, cells)
            job.append(
                (
                    modality,
                    suite_id,
                    model.hf_repo,
                    bundle(f"{modality}/{suite_id}", rows, 4, tool_calling=True),
                )
            )

    if with_perf:
        perf = bundle(
            f"perf/{PERF_SUITE_ID}",
            perf_rows(model, seed, cells),
            max(model.ladder),
            tool_calling=True,
            text_suite=False,
        )
        job.append(("perf", PERF_SUITE_ID, model.hf_repo, perf))
    return job


def _manifest(
    model: DemoModel, recipe: dict, hardware: dict, weights_hash: str, per_file: dict
) -> dict:
    return {
        "build_hash": POD_BUILD_HASH,
        "recipe": copy.deepcopy(recipe),
        "verification": {
            "verified": True,
            "method": "hf_lfs_sha256",
            "weights_hash": weights_hash,
            "revision": model.hf_revision,
            "n_weight_files": len(per_file),
            "lfs_checked": True,
        },
        "served_model_check": {
            "endpoint": f"http://127.0.0.1:{model.port}/v1",
            "served": [SERVED_ALIAS],
            "alias_present": True,
        },
        "endpoint_fingerprint": None,
        "serving_integrity": None,
        "hf": {"repo": model.hf_repo, "revision": model.hf_revision},
        "hardware": copy.deepcopy(hardware),
    }


def text_checkpoints(text_bundle: dict, every: int = 8) -> list[dict]:
    """The cumulative checkpoint bundles a pod sends during a text run: one per `every`
    finished cases, each with every row so far and without artifacts (the last partial group
    only travels in the final)."""
    rows = text_bundle["results"]
    extras = {k: v for k, v in text_bundle.items() if k not in ("results", "artifacts")}
    checkpoints = []
    for done in range(every, len(rows) + 1, every):
        checkpoint = copy.deepcopy(extras)
        checkpoint["results"] = copy.deepcopy(rows[:done])
        checkpoints.append(checkpoint)
    return checkpoints
