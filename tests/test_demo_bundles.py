"""The demo bundle factory: realistic, self-consistent and deterministic pod uploads.

Plain pytest, no Django: demo.bundles is pure Python.
"""

import hashlib
import json
import math
import re
from collections import Counter

import pytest

from board.grading import suite_cases, text_quality
from demo.bundles import (
    AGENTIC_SUITE_ID,
    ALL_DEMO_MODELS,
    DEMO_JOBS,
    DEMO_MODELS,
    GEMMA4_26B_816,
    PERF_SUITE_ID,
    RECIPE_HISTORY,
    REPRODUCTIONS,
    SUITE_HASH,
    TEXT_SUITE_ID,
    job_bundles,
    suite_case_ids,
    text_checkpoints,
    weights_for,
)

ALL_MODELS = ALL_DEMO_MODELS
CATEGORIES = ("Math", "Instruction", "Reasoning", "Coding", "Prose")
HEX = {n: re.compile(f"[0-9a-f]{{{n}}}") for n in (16, 24, 40, 64)}


def by_key(model):
    return model.key


def composite(rows):
    """docs/trust-and-ranking.md §Category scores: 100 × Σ scores ÷ (answered + ¼ × null-score no-answers), mean of five."""
    scores = []
    for category in CATEGORIES:
        mine = [r for r in rows if r["category"] == category]
        total = sum(r["score"] for r in mine if r["score"] is not None)
        answered = sum(1 for r in mine if r["score"] is not None)
        null_no_answer = sum(1 for r in mine if r["score"] is None and r["status"] == "no_answer")
        scores.append(100 * total / (answered + 0.25 * null_no_answer))
    return sum(scores) / len(scores)


def bundle_of(job, board, suite_id):
    return next(b for bd, s, _, b in job if bd == board and s == suite_id)


def direct_cells(perf_bundle, *, with_overall=False):
    return [
        r
        for r in perf_bundle["results"]
        if r["case_id"].startswith("perf.direct.")
        and (with_overall or ".overall." not in r["case_id"])
    ]


def aggregate(evidence):
    wall = evidence.get("cell_wall_s") or evidence["wall_clock_s"]
    return evidence["engine_tokens_total"] / wall


@pytest.fixture
def blob_dir():
    """Overrides conftest's autouse blob folder: these tests store nothing and run without
    pytest-django (`-p no:django`), where its `settings` fixture does not exist."""
    return None


@pytest.fixture(scope="module")
def gemma_job():
    return job_bundles(GEMMA4_26B_816)


@pytest.fixture(scope="module")
def jobs():
    return {model.key: job_bundles(model) for model in ALL_MODELS}


# --- suite -----------------------------------------------------------------------------------


def test_the_suite_has_174_unique_ids_with_the_published_category_counts():
    ids = suite_case_ids()
    assert len(ids) == 174 == len(set(ids))
    counts = Counter(case_id.split(".")[1] for case_id in ids)
    assert counts == {"math": 34, "instruction": 34, "reasoning": 35, "coding": 36, "prose": 35}


def test_suite_ids_are_the_pods_own_over_all_six_difficulties():
    # The pod's suite: the carried easy/medium/hard cells keep their v3 ids, the rest are v4's.
    pattern = re.compile(
        r"(v3\.(math|instruction|reasoning|coding|prose)\.(easy|medium|hard)"
        r"|v4\.(math|instruction|reasoning|coding|prose)\.(expert|frontier|god_mode))\.\d{2}"
    )
    ids = suite_case_ids()
    assert all(pattern.fullmatch(case_id) for case_id in ids)
    assert {case_id.split(".")[2] for case_id in ids} == {
        "easy",
        "medium",
        "hard",
        "expert",
        "frontier",
        "god_mode",
    }
    assert HEX[16].fullmatch(SUITE_HASH)
    assert SUITE_HASH in suite_cases(TEXT_SUITE_ID).hashes


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_the_board_grades_every_demo_text_run_as_the_demo_scores_it(jobs, model):
    """Honest demo runs stay ranked: every case the board grades again from the raw output gets
    the score the demo claims, and every tier of the suite is there."""
    text = bundle_of(jobs[model.key], "text", TEXT_SUITE_ID)
    quality = text_quality(suite_cases(TEXT_SUITE_ID), text["suite_hash"], text["results"])
    grading = quality["grading"]
    assert grading["regraded"] >= 85
    assert (grading["disagreements"], grading["disputed"]) == (0, False)
    assert grading["board_composite"] == quality["composite"]
    assert grading["suite_hash_known"] and grading["tiers_complete"]
    assert grading["unknown_ids"] == 0


# --- perf cohorts ----------------------------------------------------------------------------


def test_the_816_peak_cell_is_a_consistent_cohort(gemma_job):
    perf = bundle_of(gemma_job, "perf", PERF_SUITE_ID)
    cell = next(r for r in perf["results"] if r["case_id"] == "perf.direct.coding.c64")
    ev = cell["evidence"]
    assert ev["agg_decode_tps"] == 816.0
    assert ev["tokens_source"] == "engine"
    assert ev["engine_tokens_total"] / ev["cell_wall_s"] == pytest.approx(816.0, rel=0.01)
    assert ev["agg_decode_tps"] <= ev["decode_tps_mean"] * ev["conc"]
    assert ev["n"] >= ev["conc"] == 64
    assert ev["n_errors"] == 0
    assert 15_000 < ev["ttft_ms_p50"] < 30_000  # "TTFT at c64 ≈ 23 s"


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_every_direct_cell_satisfies_the_cohort_rules(jobs, model):
    perf = bundle_of(jobs[model.key], "perf", PERF_SUITE_ID)
    cells = direct_cells(perf, with_overall=True)
    assert len(cells) == 6 * len(model.ladder)
    for row in cells:
        ev = row["evidence"]
        assert row["status"] == "perf" and row["score"] is None and row["raw_output"] == ""
        assert row["case_id"].endswith(f".c{ev['conc']}")
        assert ev["agg_decode_tps"] == pytest.approx(aggregate(ev), rel=0.01), row["case_id"]
        assert aggregate(ev) <= ev["decode_tps_mean"] * ev["conc"], row["case_id"]
        assert ev["n"] >= ev["conc"] and ev["n_errors"] == 0, row["case_id"]
        numbers = [v for v in ev.values() if isinstance(v, int | float)]
        assert all(math.isfinite(v) and v >= 0 for v in numbers), row["case_id"]


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_the_published_peak_is_the_best_cohort_and_every_other_cell_is_lower(jobs, model):
    perf = bundle_of(jobs[model.key], "perf", PERF_SUITE_ID)
    peak_id = f"perf.direct.{model.peak_category}.c{model.peak_conc}"
    for row in direct_cells(perf):
        if row["case_id"] == peak_id:
            assert row["evidence"]["agg_decode_tps"] == model.peak_agg_tps
            assert aggregate(row["evidence"]) == pytest.approx(model.peak_agg_tps, abs=1e-6)
        else:
            assert aggregate(row["evidence"]) < model.peak_agg_tps, row["case_id"]


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_aggregate_grows_sublinearly_with_concurrency(jobs, model):
    perf = bundle_of(jobs[model.key], "perf", PERF_SUITE_ID)
    cells = {r["case_id"]: r["evidence"] for r in direct_cells(perf)}
    for category in ("math", "instruction", "reasoning", "coding", "prose"):
        per_stream = [
            cells[f"perf.direct.{category}.c{conc}"]["agg_decode_tps"] / conc
            for conc in model.ladder
        ]
        assert per_stream == sorted(per_stream, reverse=True), category
        rising = [
            cells[f"perf.direct.{category}.c{conc}"]["agg_decode_tps"]
            for conc in model.ladder
            if conc <= model.peak_conc
        ]
        assert rising == sorted(rising), category


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_single_stream_cells_carry_the_published_figures(jobs, model):
    perf = bundle_of(jobs[model.key], "perf", PERF_SUITE_ID)
    for category, decode, ttft, tpot in model.c1:
        ev = next(
            r["evidence"] for r in perf["results"] if r["case_id"] == f"perf.direct.{category}.c1"
        )
        assert (ev["decode_tps_mean"], ev["ttft_ms_p50"], ev["tpot_ms_p50"]) == (
            decode,
            ttft,
            tpot,
        )


def test_the_published_single_stream_summaries_are_the_means_of_the_c1_cohorts():
    published = {
        "qwen3.6-35b-a3b-heretic-nvfp4-dflash-spark": (116, 175, 9),
        "qwen3-next-80b-a3b-thinking-nvfp4-spark": (52.2, 228, 20),
        "gemma-4-12b-it-k4-fp8-spark": (17.0, 281, 57),
        "qwen3.6-27b-mtp-spark": (9.6, 636, 104),
        "gemma-4-12b-it-nvfp4-fp8-spark": (25.8, 261, 54),
    }
    models = {m.key: m for m in DEMO_MODELS}
    for key, (decode, ttft, tpot) in published.items():
        model = models[key]
        assert model.single_stream_tps == pytest.approx(decode, abs=0.01)
        assert model.ttft_p50_ms == pytest.approx(ttft, abs=0.01)
        assert model.tpot_p50_ms == pytest.approx(tpot, abs=0.01)
    gemma = GEMMA4_26B_816.c1_figures
    assert gemma["coding"] == (155.8, 83.0, 6.4)
    assert gemma["math"] == (127.8, 145.0, 7.8)
    assert gemma["reasoning"] == (118.9, 105.0, 8.4)
    assert gemma["prose"] == (49.8, 105.0, 20.1)


def test_a_rung_beyond_max_num_seqs_measures_queueing_below_the_peak(jobs):
    model = next(m for m in DEMO_MODELS if m.key == "qwen3.6-27b-mtp-spark")
    assert model.max_num_seqs == 16 and max(model.ladder) == 32
    perf = bundle_of(jobs[model.key], "perf", PERF_SUITE_ID)
    cells = {r["case_id"]: r["evidence"] for r in direct_cells(perf)}
    assert cells["perf.direct.coding.c32"]["agg_decode_tps"] < model.peak_agg_tps == 118.0
    assert (
        cells["perf.direct.coding.c32"]["ttft_ms_p50"]
        > cells["perf.direct.coding.c16"]["ttft_ms_p50"]
    )


def test_perf_bundle_carries_harness_and_sustained_rows(gemma_job):
    perf = bundle_of(gemma_job, "perf", PERF_SUITE_ID)
    ids = {r["case_id"] for r in perf["results"]}
    assert {"perf.harness.hermes.c1", "perf.harness.hermes.coding.c1"} <= ids
    assert "perf.sustained.summary" in ids
    assert all(r["category"] == "Performance" for r in perf["results"])


# --- weights and identity --------------------------------------------------------------------


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_weights_hash_recomputes_from_weights_per_file(jobs, model):
    per_file, weights_hash = weights_for(model)
    joined = ";".join(f"{path}:{per_file[path]}" for path in sorted(per_file))
    assert weights_hash == hashlib.sha256(joined.encode()).hexdigest()
    assert sorted(per_file) == sorted(model.weight_files)
    assert all(HEX[64].fullmatch(sha) for sha in per_file.values())
    for _, _, _, bundle in jobs[model.key]:
        verification = bundle["deployment_manifest"]["verification"]
        assert bundle["weights_per_file"] == per_file
        assert bundle["weights_hash"] == verification["weights_hash"] == weights_hash
        assert verification["revision"] == bundle["hf_revision"] == model.hf_revision
        assert verification["n_weight_files"] == len(per_file)
        assert verification["verified"] is True and verification["lfs_checked"] is True
        assert verification["method"] == "hf_lfs_sha256"


def test_revisions_are_40_hex_commits_derived_from_the_repo_name():
    for model in ALL_MODELS:
        assert HEX[40].fullmatch(model.hf_revision)
        assert model.drafter_repo is None or HEX[40].fullmatch(model.drafter_revision)
    history = RECIPE_HISTORY[0]
    assert history.hf_repo == GEMMA4_26B_816.hf_repo
    assert history.hf_revision == GEMMA4_26B_816.hf_revision


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_job_sigs_are_distinct_and_the_job_group_is_shared(jobs, model):
    job = jobs[model.key]
    sigs = [bundle["job_sig"] for _, _, _, bundle in job]
    groups = {bundle["job_group"] for _, _, _, bundle in job}
    assert len(sigs) == len(set(sigs))
    assert all(HEX[24].fullmatch(sig) for sig in sigs)
    assert len(groups) == 1 and HEX[24].fullmatch(groups.pop())


def test_a_later_start_gives_new_sigs_and_a_new_group():
    first = job_bundles(GEMMA4_26B_816, with_agentic=False)
    later = job_bundles(GEMMA4_26B_816, started="2026-11-02T10:00:00Z", with_agentic=False)
    assert {b["job_sig"] for *_, b in first}.isdisjoint({b["job_sig"] for *_, b in later})
    assert first[0][3]["job_group"] != later[0][3]["job_group"]


# --- job composition -------------------------------------------------------------------------


def test_the_comprehensive_job_comes_in_submission_order(gemma_job):
    layout = [(board, suite_id, name) for board, suite_id, name, _ in gemma_job]
    repo = GEMMA4_26B_816.hf_repo
    assert layout == [
        ("text", TEXT_SUITE_ID, repo),
        ("text", AGENTIC_SUITE_ID, repo),
        ("text", AGENTIC_SUITE_ID, repo),
        ("text", AGENTIC_SUITE_ID, repo),
        ("vision", "aeon-vision-v2", repo),
        ("video", "aeon-video-v1", repo),
        ("perf", PERF_SUITE_ID, repo),
    ]
    assert [b["harness"] for _, s, _, b in gemma_job if s == AGENTIC_SUITE_ID] == [
        "hermes",
        "openclaw",
        "opencode",
    ]


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_bundles_carry_the_extras_of_their_flow(jobs, model):
    for board, suite_id, _, bundle in jobs[model.key]:
        assert not {"run_id", "run_nonce", "final", "model", "suite_id", "board"} & set(bundle)
        assert bundle["target_class"] == "hf_pull_controlled"
        assert bundle["bench_seed"] is None
        env = bundle["environment"]
        assert env["runner"] == "aeon-pod-controlled"
        assert env["engine"] == {"name": model.engine}
        assert env["hardware"]["detected_label"] == model.detected_label
        assert env["hardware"]["label"] is None
        assert env["hardware"]["hardware_source"] == "detected-local"
        assert ("tool_calling" in env) == (suite_id != TEXT_SUITE_ID)
        assert ("suite_hash" in bundle) == (board != "perf")
        assert bundle.get("suite_hash", SUITE_HASH) == SUITE_HASH
        assert ("artifacts" in bundle) == (board == "text")
        assert ("judge_model" in bundle) == (board == "text")
        assert bundle["recipe"] == bundle["deployment_manifest"]["recipe"]


def test_spark_bundles_report_the_gb10_as_nvidia_smi_prints_it(gemma_job):
    hardware = gemma_job[0][3]["environment"]["hardware"]
    assert hardware["gpus"] == ["NVIDIA GB10, [N/A], 580.95.05"]
    assert hardware["machine"] == "aarch64"


def test_the_816_recipe_carries_the_published_flags_and_drafter(gemma_job):
    recipe = gemma_job[0][3]["recipe"]
    served = ["--served-model-name", "model-under-test", "--host", "0.0.0.0", "--port", "8000"]
    assert recipe["flags"] == served + [
        "--max-model-len",
        "65536",
        "--gpu-memory-utilization",
        ".8",
        "--max-num-seqs",
        "64",
        "--kv-cache-dtype",
        "auto",
        "--attention-backend",
        "triton_attn",
        "--enable-prefix-caching",
        "--enable-chunked-prefill",
        "--reasoning-parser",
        "gemma4",
        "--tool-call-parser",
        "gemma4",
        "--enable-auto-tool-choice",
        "--moe-backend",
        "cutlass",
        "--max-num-batched-tokens",
        "32768",
        "--speculative-config",
        '{"method":"dflash","model":"/drafter","num_speculative_tokens":11}',
    ]
    assert recipe["command"][-len(recipe["flags"]) :] == recipe["flags"]
    assert recipe["drafter_repo"] == "z-lab/gemma-4-26B-A4B-it-DFlash"
    assert recipe["drafter"].startswith("/") and HEX[40].fullmatch(recipe["drafter_revision"])
    assert (recipe["spec_decode_method"], recipe["spec_decode_n"]) == ("dflash", 11)
    assert recipe["image"].startswith("ghcr.io/aeon-7/aeon-vllm-ultimate")
    assert re.fullmatch(
        r"ghcr\.io/aeon-7/aeon-vllm-ultimate@sha256:[0-9a-f]{64}", recipe["image_digest"]
    )


def test_the_cpu_box_sends_a_llama_cpp_command_without_flags(jobs):
    model = next(m for m in DEMO_MODELS if m.detected_label == "x86_64 (CPU)")
    job = jobs[model.key]
    recipe = job[0][3]["recipe"]
    assert (recipe["engine"], recipe["flags"]) == ("llama.cpp", [])
    assert "-c" in recipe["command"] and recipe["command"][recipe["command"].index("-c") + 1] == (
        "65536"
    )
    assert job[0][3]["environment"]["hardware"]["gpus"] == []
    assert [board for board, *_ in job] == ["text", "perf"]


def test_the_apple_line_serves_bare_with_mlx():
    model = next(m for m in DEMO_MODELS if m.engine == "mlx")
    recipe = job_bundles(model, with_agentic=False)[0][3]["recipe"]
    assert (recipe["serve_mode"], recipe["image"], recipe["docker_run"]) == ("bare", None, None)
    assert recipe["command"][0] == "mlx_lm.server" and recipe["context_len"] >= 65536


def test_context_len_override_rewrites_max_model_len():
    job = job_bundles(GEMMA4_26B_816, context_len=32768, with_agentic=False)
    for _, _, _, bundle in job:
        recipe = bundle["recipe"]
        assert recipe["context_len"] == 32768
        flags = recipe["flags"]
        assert flags[flags.index("--max-model-len") + 1] == "32768"
        assert "65536" not in recipe["command"]


def test_bench_seed_is_passed_through(gemma_job):
    job = job_bundles(GEMMA4_26B_816, bench_seed=7, with_agentic=False)
    assert {bundle["bench_seed"] for *_, bundle in job} == {7}


# --- text, checkpoints, quality --------------------------------------------------------------


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_text_scores_reproduce_the_target_composite(jobs, model):
    rows = bundle_of(jobs[model.key], "text", TEXT_SUITE_ID)["results"]
    assert composite(rows) == pytest.approx(model.composite, abs=1.0)


def test_text_rows_are_the_whole_suite_with_no_answers_and_valid_scores(gemma_job):
    rows = gemma_job[0][3]["results"]
    assert [r["case_id"] for r in rows] == suite_case_ids()
    keys = {
        "case_id",
        "category",
        "tier",
        "status",
        "score",
        "creativity",
        "raw_output",
        "evidence",
        "speed",
    }
    assert all(set(r) == keys for r in rows)
    assert all(r["category"] == r["case_id"].split(".")[1].capitalize() for r in rows)
    assert all(r["score"] is None or 0 <= r["score"] <= 1 for r in rows)
    assert all(r["creativity"] is None or r["creativity"] in (0, 1, 2, 3) for r in rows)
    no_answers = [r for r in rows if r["status"] == "no_answer"]
    assert no_answers and all(r["score"] == 0.0 and r["raw_output"] == "" for r in no_answers)
    answered = sum(1 for r in rows if r["score"] is not None)
    assert answered >= 0.9 * 174


def test_text_final_carries_arena_artifacts_with_one_failed_item(gemma_job):
    artifacts = gemma_job[0][3]["artifacts"]
    assert len(artifacts) >= 3
    for item in artifacts:
        assert set(item) == {"kind", "prompt_id", "title", "html", "ok", "gen_ms", "bytes"}
        assert item["bytes"] == len(item["html"].encode())
    failed = [item for item in artifacts if not item["ok"]]
    assert len(failed) == 1 and failed[0]["html"] == ""


def test_coverage_drops_rows_from_the_end_of_each_category():
    rows = job_bundles(GEMMA4_26B_816, coverage=0.8, with_agentic=False, with_perf=False)[0][3][
        "results"
    ]
    ids = [r["case_id"] for r in rows]
    assert 0.78 <= len(ids) / 174 <= 0.82
    suite = suite_case_ids()
    for category in ("math", "instruction", "reasoning", "coding", "prose"):
        full = [i for i in suite if i.split(".")[1] == category]
        kept = [i for i in ids if i.split(".")[1] == category]
        assert kept == full[: len(kept)]
    assert composite(rows) == pytest.approx(GEMMA4_26B_816.composite, abs=1.0)


def test_a_text_run_sends_21_cumulative_checkpoints_without_artifacts(gemma_job):
    text = gemma_job[0][3]
    checkpoints = text_checkpoints(text)
    assert len(checkpoints) == 21
    for number, checkpoint in enumerate(checkpoints, 1):
        assert "artifacts" not in checkpoint and "final" not in checkpoint
        assert checkpoint["results"] == text["results"][: 8 * number]
        assert checkpoint["job_sig"] == text["job_sig"]
    assert len(checkpoints[-1]["results"]) == 168  # the last 6 rows only travel in the final
    assert "artifacts" in text  # the final keeps them


# --- agentic and multimodal ------------------------------------------------------------------


def test_agentic_bundles_hold_a_setup_row_and_31_tasks(gemma_job):
    for _, suite_id, _, bundle in gemma_job:
        if suite_id != AGENTIC_SUITE_ID:
            continue
        harness = bundle["harness"]
        rows = bundle["results"]
        assert rows[0]["case_id"] == f"agentic.setup.{harness}"
        tasks = rows[1:]
        assert len(tasks) == 31 == len({r["case_id"] for r in tasks})
        assert all(re.fullmatch(r"av2-(god-)?\d{2}-[a-z0-9-]+", r["case_id"]) for r in tasks)
        for row in rows:
            assert "creativity" not in row
            assert len(row["raw_output"]) <= 8000 and isinstance(
                json.loads(row["raw_output"]), dict
            )
            assert isinstance(row["evidence"], list)
        assert bundle["harness_version"] and bundle["judge_model"] is None
        for item in bundle["artifacts"]:
            assert set(item) == {"kind", "prompt_id", "html", "ok"}
            assert item["ok"] or item["html"] == ""


@pytest.mark.parametrize("model", [m for m in ALL_MODELS if m.agentic], ids=by_key)
def test_agentic_task_scores_reproduce_the_harness_scores(jobs, model):
    for _, suite_id, _, bundle in jobs[model.key]:
        if suite_id != AGENTIC_SUITE_ID:
            continue
        tasks = [r["score"] for r in bundle["results"][1:]]
        score = 100 * sum(tasks) / len(tasks)
        assert score == pytest.approx(model.agentic_scores[bundle["harness"]], abs=1.0)


def test_multimodal_suites_have_their_case_counts(jobs):
    expected = {"vision": 31, "audio": 21, "video": 10}
    seen = Counter()
    for model in DEMO_MODELS:
        boards = [board for board, *_ in jobs[model.key]]
        for modality, count in expected.items():
            assert (modality in boards) == (modality in model.modalities)
            if modality in boards:
                bundle = next(b for bd, _, _, b in jobs[model.key] if bd == modality)
                ids = [r["case_id"] for r in bundle["results"]]
                assert len(ids) == count == len(set(ids))
                assert all(i.startswith(f"{modality}.") and i.count(".") == 2 for i in ids)
                seen[modality] += 1
    assert set(seen) == set(expected)


# --- determinism and serialisation -----------------------------------------------------------


def test_the_same_arguments_give_identical_bundles(gemma_job):
    again = job_bundles(GEMMA4_26B_816)
    assert json.dumps(again, sort_keys=True) == json.dumps(gemma_job, sort_keys=True)
    other_seed = job_bundles(GEMMA4_26B_816, seed=1)
    assert other_seed[0][3]["results"] != gemma_job[0][3]["results"]
    assert other_seed[-1][3]["results"] != gemma_job[-1][3]["results"]


@pytest.mark.parametrize("model", ALL_MODELS, ids=by_key)
def test_bundles_survive_a_json_round_trip(jobs, model):
    for entry in jobs[model.key]:
        bundle = entry[3]
        text = json.dumps(bundle)
        assert "NaN" not in text and "Infinity" not in text
        assert json.loads(text) == bundle


# --- the demo's load order (data/models.json "jobs") -----------------------------------------


def test_every_demo_line_is_loaded_once_and_no_two_jobs_share_a_job_sig():
    assert sorted(job.model.key for job in DEMO_JOBS) == sorted(m.key for m in ALL_MODELS)
    sigs = [
        bundle["job_sig"]
        for job in DEMO_JOBS
        for *_, bundle in job_bundles(job.model, started=job.started)
    ]
    assert len(sigs) == len(set(sigs))


def test_the_gemma_recipe_line_commits_33_then_517_then_816_on_one_spark_pod():
    line = [job for job in DEMO_JOBS if job.model.hf_repo == GEMMA4_26B_816.hf_repo]
    first_pod = [job for job in line if job.pod == line[0].pod]
    assert [job.model.peak_agg_tps for job in first_pod] == [33.0, 517.0, 816.0]
    assert [job.started for job in first_pod] == sorted(job.started for job in first_pod)
    for job in first_pod:
        assert job.model.peak_cohort == "coding @ c64"
        assert job.model.detected_label == "single DGX Spark (GB10)"
        assert job.model.spec_n == 11 and job.model.drafter_repo == GEMMA4_26B_816.drafter_repo


def test_a_second_pod_reproduces_the_816_recipe_a_little_slower():
    (reproduction,) = REPRODUCTIONS
    job = next(job for job in DEMO_JOBS if job.model is reproduction)
    original = next(job for job in DEMO_JOBS if job.model is GEMMA4_26B_816)
    assert job.pod != original.pod
    assert job.started > original.started
    assert 0.97 * 816 < reproduction.peak_agg_tps < 816
    ours = job_bundles(reproduction, started=job.started, with_agentic=False)[0][3]
    theirs = job_bundles(GEMMA4_26B_816, started=original.started, with_agentic=False)[0][3]
    assert ours["recipe"] == theirs["recipe"]
    assert ours["weights_hash"] == theirs["weights_hash"]
    assert ours["environment"]["hardware"] == theirs["environment"]["hardware"]


def test_the_demo_spans_several_hardware_classes_and_a_cpu_only_box():
    labels = {job.model.detected_label for job in DEMO_JOBS}
    gpu_boxes = labels - {"x86_64 (CPU)"}
    assert "x86_64 (CPU)" in labels
    assert {"single DGX Spark (GB10)", "RTX 5090 32GB", "2× RTX 5090 32GB"} <= gpu_boxes
    assert len(gpu_boxes) >= 5
