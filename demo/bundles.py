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
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
from fractions import Fraction

from board.grading import grade_case, suite_cases
from demo.catalogue import (
    AGENTIC_GOD_TASKS,
    AGENTIC_SUITE_ID,
    AGENTIC_TASKS,
    ALL_DEMO_MODELS,
    AUDIO_SUITE_ID,
    CATEGORIES,
    DEMO_JOBS,
    DEMO_MODELS,
    GEMMA4_26B_816,
    HARDWARE,
    HARNESS_VERSIONS,
    HARNESSES,
    MODALITY_SUITES,
    PERF_CATEGORIES,
    PERF_SUITE_ID,
    RECIPE_HISTORY,
    REPRODUCTIONS,
    RUBRICS,
    TEXT_ANSWERS,
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

SERVED_ALIAS = "model-under-test"
POD_BUILD_HASH = hashlib.sha256(b"aeon-bench-pod 1.0 demo build").hexdigest()

Bundle = dict
JobEntry = tuple[str, str | None, str, Bundle]


# ---------------------------------------------------------------------------------------------
# Suite definitions
# ---------------------------------------------------------------------------------------------


_SUITE = suite_cases(TEXT_SUITE_ID)  # the suite the board holds as data (board/suite_data/)


def _suite_cases() -> list[tuple[str, str, str]]:
    return [(case.case_id, case.category, case.difficulty) for case in _SUITE.cases.values()]


def suite_case_ids() -> list[str]:
    """The 174 case ids of aeon-suite-v4, in suite order (category, difficulty, number)."""
    return list(_SUITE.cases)


SUITE_HASH = sorted(_SUITE.hashes)[0]  # the pod's suite_hash of that suite

# What a wrong answer looks like: the first of these the board grades 0 for the case.
_WRONG_ANSWERS = ("I am not sure.", "\\boxed{0}", "\\boxed{-1}")


def _graded_output(case_id: str, passed: bool) -> str:
    """An output the board grades as the demo scores it: the case's right answer, or a wrong one."""
    case = _SUITE.cases[case_id]
    candidates = (TEXT_ANSWERS[case_id],) if passed else _WRONG_ANSWERS
    for output in candidates:
        if grade_case(case, output) == (1.0 if passed else 0.0):
            return output
    raise ValueError(f"{case_id}: no demo output grades {'right' if passed else 'wrong'}")


def agentic_task_ids() -> list[str]:
    """The 31 task ids of aeon-agentic-v2.5 (the per-harness setup row comes on top)."""
    regular = [f"av2-{i:02d}-{slug}" for i, (slug, _, _) in enumerate(AGENTIC_TASKS, 1)]
    god = [f"av2-god-{i:02d}-{slug}" for i, (slug, _, _) in enumerate(AGENTIC_GOD_TASKS, 1)]
    return regular + god


# ---------------------------------------------------------------------------------------------
# Hardware, weights, recipe
# ---------------------------------------------------------------------------------------------


def _hardware(model: DemoModel) -> dict:
    facts = HARDWARE[model.detected_label]
    return {
        "label": None,
        "platform": facts["platform"],
        "machine": facts["machine"],
        "cpu_count": facts["cpu_count"],
        "gpus": list(facts["gpus"]),
        "detected_label": model.detected_label,
        "hardware_source": "detected-local",
    }


def weights_for(model: DemoModel) -> tuple[dict[str, str], str]:
    """(weights_per_file, weights_hash) of the model, hashed as docs/protocol.md §Weights says."""
    per_file = {
        path: hashlib.sha256(f"{model.hf_repo}@{model.hf_revision}/{path}".encode()).hexdigest()
        for path in model.weight_files
    }
    joined = ";".join(f"{path}:{per_file[path]}" for path in sorted(per_file))
    return per_file, hashlib.sha256(joined.encode()).hexdigest()


def _host_dir(model: DemoModel, repo: str) -> str:
    root = "/Users/aeon/aeon-models" if model.engine == "mlx" else "/home/aeon/aeon-models"
    return f"{root}/{repo.replace('/', '__')}"


def _with_context(argv: tuple[str, ...], context_len: int) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in ("--max-model-len", "--context-length", "--ctx-size", "-c"):
            out[i + 1] = str(context_len)
    return out


def _image_digest(image: str | None) -> str | None:
    if not image:
        return None
    repo, _, tag = image.rpartition(":")
    if not repo or "/" in tag:
        repo = image
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _command(model: DemoModel, flags: list[str], serve_args: list[str]) -> list[str]:
    model_dir = _host_dir(model, model.hf_repo)
    if model.engine == "mlx":
        return [
            "mlx_lm.server",
            "--model",
            model_dir,
            "--host",
            "127.0.0.1",
            "--port",
            str(model.port),
        ]
    docker = ["docker", "run", "--rm", "--name", "aeon-bench-serve", "--network", "host"]
    if model.detected_label != "x86_64 (CPU)":
        docker += ["--gpus", "all"]
    if model.engine == "sglang":
        docker += ["--shm-size", "16g"]
    docker += ["-v", f"{model_dir}:/model:ro"]
    if model.drafter_repo:
        docker += ["-v", f"/models/{model.drafter_repo.replace('/', '__')}:/drafter:ro"]
    if model.engine == "sglang":
        return docker + [
            model.image,
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/model",
            "--served-model-name",
            SERVED_ALIAS,
            "--host",
            "0.0.0.0",
            "--port",
            str(model.port),
            *serve_args,
        ]
    if model.engine == "llama.cpp":
        gguf = model.weight_files[0]
        return docker + [
            model.image,
            "-m",
            f"/model/{gguf}",
            "--alias",
            SERVED_ALIAS,
            "--host",
            "0.0.0.0",
            "--port",
            str(model.port),
            *serve_args,
        ]
    return docker + [
        "--entrypoint",
        "vllm",
        model.image,
        "serve",
        "/model",
        "--served-model-name",
        SERVED_ALIAS,
        "--host",
        "0.0.0.0",
        "--port",
        str(model.port),
        *flags,
    ]


def _recipe(model: DemoModel, context_len: int) -> dict:
    tuning = _with_context(model.flags, context_len)
    serve_args = _with_context(model.serve_args, context_len)
    command = _command(model, tuning, serve_args)
    vllm_like = model.engine in ("vllm", "aeon-vllm-ultimate")
    flags = (
        (
            ["--served-model-name", SERVED_ALIAS, "--host", "0.0.0.0", "--port", str(model.port)]
            + tuning
        )
        if vllm_like
        else []
    )
    return {
        "served_alias": SERVED_ALIAS,
        "port": model.port,
        "source": "auto",
        "architecture": model.architecture,
        "context_len": context_len,
        "quant": model.quant,
        "modalities": list(model.modalities),
        "engine": model.engine,
        "serve_mode": model.serve_mode,
        "image": model.image,
        "command": command,
        "docker_run": " ".join(command) if model.serve_mode == "docker" else None,
        "container_name": "aeon-bench-serve" if model.serve_mode == "docker" else None,
        "image_overridden": False,
        "flags": flags,
        "drafter": (
            f"/models/{model.drafter_repo.replace('/', '__')}" if model.drafter_repo else None
        ),
        "drafter_repo": model.drafter_repo,
        "drafter_revision": model.drafter_revision,
        "spec_decode": model.spec_method,
        "spec_decode_method": model.spec_method,
        "spec_decode_n": model.spec_n,
        "spec_decode_note": (
            "lossless — draft tokens verified by the target model; speed only"
            if model.spec_method
            else None
        ),
        "image_digest": _image_digest(model.image),
    }


# ---------------------------------------------------------------------------------------------
# Randomness
# ---------------------------------------------------------------------------------------------


def _stable_int(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def _rng(model: DemoModel, seed: int, section: str) -> random.Random:
    return random.Random(seed + _stable_int(f"{model.key}|{section}"))


def _hex(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _fit_units(
    rng: random.Random, eases: list[float], denoms: list[int], target_sum: float
) -> list[int]:
    """Per-row satisfied units (score = units ÷ denom) whose total score is nearest target_sum.

    Easier rows are likelier to pass; a repair pass then moves single units (preferring easy rows
    up and hard rows down) while each move brings the sum closer, so the result is deterministic
    and as close as the rows' granularity allows.
    """
    count = len(eases)
    target_sum = max(0.0, min(float(count), target_sum))
    low, high = 0.0, 1.0 / max(min(eases), 1e-6)
    for _ in range(60):
        mid = (low + high) / 2
        if sum(min(1.0, e * mid) for e in eases) < target_sum:
            low = mid
        else:
            high = mid
    units = []
    for ease, denom in zip(eases, denoms, strict=True):
        p = min(1.0, ease * high)
        if denom == 1:
            units.append(1 if rng.random() < p else 0)
        else:
            units.append(max(0, min(denom, round(p * denom + rng.uniform(-0.8, 0.8)))))
    while True:
        diff = target_sum - sum(u / d for u, d in zip(units, denoms, strict=True))
        if diff > 0:
            movable = [
                i for i in range(count) if units[i] < denoms[i] and 1 / denoms[i] < 2 * diff - 1e-12
            ]
            weights = [eases[i] + 0.01 for i in movable]
        else:
            movable = [
                i for i in range(count) if units[i] > 0 and 1 / denoms[i] < -2 * diff - 1e-12
            ]
            weights = [1.05 - eases[i] for i in movable]
        if not movable:
            return units
        pick = rng.choices(movable, weights=weights)[0]
        units[pick] += 1 if diff > 0 else -1


_EASE = {
    "easy": 0.95,
    "medium": 0.82,
    "hard": 0.64,
    "expert": 0.47,
    "frontier": 0.32,
    "god_mode": 0.2,
}


# ---------------------------------------------------------------------------------------------
# Performance model (shared by the perf bundle and the per-row speed of the other bundles)
# ---------------------------------------------------------------------------------------------

_OUTPUT_TOKENS = {"math": 620, "instruction": 430, "reasoning": 910, "coding": 780, "prose": 540}
_INPUT_TOKENS = {"math": 190, "instruction": 520, "reasoning": 350, "coding": 460, "prose": 240}
_TTFT_GROWTH = 1.35  # TTFT grows with queueing: about 23 s at c64 for an 83 ms c1 prompt


def _exact_wall(agg: float, tokens_guess: float) -> tuple[float, float]:
    """A 3-decimal wall-clock and integral token count with tokens ÷ wall == agg exactly."""
    rate = Fraction(str(agg))
    step = Fraction(1000 * rate.denominator, math.gcd(rate.numerator, 1000 * rate.denominator))
    steps = max(1, round(Fraction(tokens_guess) / rate * 1000 / step))
    wall = Fraction(steps) * step / 1000
    return float(wall), float(wall * rate)


def _perf_cells(model: DemoModel, seed: int) -> dict[tuple[str, int], dict]:
    """Evidence of every direct cohort cell, keyed by (lowercase category, conc)."""
    rng = _rng(model, seed, "perf")
    c1 = model.c1_figures
    top = model.peak_agg_tps
    decline = rng.uniform(0.03, 0.08)
    cells: dict[tuple[str, int], dict] = {}
    for cat in PERF_CATEGORIES:
        decode1, ttft1, tpot1 = c1[cat]
        first = _c1_cell(rng, cat, decode1, ttft1, tpot1)
        cells[(cat, 1)] = first
        agg1 = first["agg_decode_tps"]
        n_peak = model.peak_conc
        if cat == model.peak_category:
            at_peak = top
        else:
            at_peak = top * rng.uniform(0.58, 0.9)
            at_peak = max(at_peak, agg1 * n_peak**0.2)
            at_peak = min(at_peak, top * 0.95, agg1 * n_peak**0.9)
        alpha = math.log(at_peak / agg1) / math.log(n_peak) if n_peak > 1 else 0.0
        previous = first
        for conc in model.ladder:
            if conc == 1:
                continue
            if conc <= n_peak:
                agg = agg1 * conc**alpha
                if not (cat == model.peak_category and conc == n_peak):
                    agg *= rng.uniform(0.965, 0.995)
            else:
                agg = at_peak * (1 - decline * math.log2(conc / n_peak)) * rng.uniform(0.98, 1.0)
            if (cat, conc) != (model.peak_category, n_peak):
                agg = min(agg, top * 0.995)
            is_peak = (cat, conc) == (model.peak_category, n_peak)
            if is_peak:
                agg = top
            cell = _loaded_cell(rng, cat, conc, agg, ttft1, tpot1, decode1, previous, exact=is_peak)
            cells[(cat, conc)] = cell
            previous = cell
    return cells


def _c1_cell(rng: random.Random, cat: str, decode: float, ttft: float, tpot: float) -> dict:
    out = int(_OUTPUT_TOKENS[cat] * rng.uniform(0.9, 1.1))
    inp = int(_INPUT_TOKENS[cat] * rng.uniform(0.9, 1.1))
    ttft_mean = ttft * rng.uniform(1.01, 1.06)
    e2e_ms = ttft_mean + out / decode * 1000
    wall = round(e2e_ms / 1000 + rng.uniform(0.04, 0.12), 3)
    engine = float(out + 1)
    return _evidence(
        cat=cat,
        conc=1,
        n=1,
        ttft_mean=ttft_mean,
        ttft_p50=ttft,
        ttft_p95=ttft * 1.27,
        decode=decode,
        prefill=inp / (ttft_mean / 1000),
        e2e_ms=e2e_ms,
        tpot_mean=tpot * 1.02,
        tpot_p50=tpot,
        tpot_p95=tpot * 1.3,
        out=out,
        inp=inp,
        engine=engine,
        wall=wall,
        agg=round(engine / wall, 2),
    )


def _loaded_cell(
    rng: random.Random,
    cat: str,
    conc: int,
    agg: float,
    ttft1: float,
    tpot1: float,
    decode1: float,
    previous: dict,
    *,
    exact: bool,
) -> dict:
    out = sum(int(_OUTPUT_TOKENS[cat] * rng.uniform(0.75, 1.25)) for _ in range(conc))
    inp = sum(int(_INPUT_TOKENS[cat] * rng.uniform(0.9, 1.1)) for _ in range(conc))
    # The engine counter also counts one stop token per request.
    if exact:  # the published peak: tokens ÷ wall gives the figure to the last digit
        wall, engine = _exact_wall(agg, out + conc)
        out = int(engine) - conc
    else:
        engine = float(out + conc)
        wall = round(engine / agg, 3)
    mean_out = out / conc
    e2e = wall * rng.uniform(0.84, 0.92)
    ttft = min(ttft1 / 1000 * conc**_TTFT_GROWTH * rng.uniform(0.92, 1.08), 0.45 * e2e)
    decode = mean_out / (e2e - ttft)
    ceiling = previous["decode_tps_mean"] * 0.97
    if decode > ceiling:  # streams never decode faster under more load
        e2e = min(ttft + mean_out / ceiling, wall * 0.99)
        decode = mean_out / (e2e - ttft)
    tpot = 1000 / decode * (tpot1 / (1000 / decode1)) ** 0.5
    return _evidence(
        cat=cat,
        conc=conc,
        n=conc,
        ttft_mean=ttft * 1000,
        ttft_p50=ttft * 1000 * 0.95,
        ttft_p95=ttft * 1000 * 1.5,
        decode=decode,
        prefill=inp / conc / ttft,
        e2e_ms=e2e * 1000,
        tpot_mean=tpot * 1.03,
        tpot_p50=tpot,
        tpot_p95=tpot * 1.22,
        out=out,
        inp=inp,
        engine=engine,
        wall=wall,
        agg=agg if exact else round(engine / wall, 2),
    )


def _evidence(
    *,
    cat,
    conc,
    n,
    ttft_mean,
    ttft_p50,
    ttft_p95,
    decode,
    prefill,
    e2e_ms,
    tpot_mean,
    tpot_p50,
    tpot_p95,
    out,
    inp,
    engine,
    wall,
    agg,
) -> dict:
    return {
        "n": n,
        "n_errors": 0,
        "ttft_ms_mean": round(ttft_mean, 2),
        "ttft_ms_p50": round(ttft_p50, 2),
        "ttft_ms_p95": round(ttft_p95, 2),
        "decode_tps_mean": round(decode, 2),
        "prefill_tps_mean": round(prefill, 2),
        "e2e_ms_mean": round(e2e_ms, 1),
        "tpot_ms_mean": round(tpot_mean, 3),
        "tpot_ms_p50": round(tpot_p50, 3),
        "tpot_ms_p95": round(tpot_p95, 3),
        "output_tokens_total": out,
        "input_tokens_total": inp,
        "agg_decode_tps": agg,
        "tokens_source": "engine",
        "engine_tokens_total": engine,
        "input_tokens_estimated": False,
        "cell_wall_s": wall,
        "conc": conc,
        "wall_clock_s": None,  # the rung's wall-clock, filled in by _perf_rows
        "scope": cat.capitalize(),
    }


def _text_concurrency(model: DemoModel) -> int:
    if model.engine in ("llama.cpp", "mlx"):
        return min(4, max(model.ladder))
    return min(16, model.max_num_seqs or 16, max(model.ladder))


def _rung_at_or_below(model: DemoModel, conc: int) -> int:
    return max(c for c in model.ladder if c <= conc)


def _row_speed(rng: random.Random, cell: dict, output_tokens: int) -> dict:
    ttft = cell["ttft_ms_p50"] * rng.uniform(0.7, 1.4)
    decode = cell["decode_tps_mean"] * rng.uniform(0.88, 1.12)
    return {
        "ttft_ms": round(ttft, 1),
        "decode_tps": round(decode, 1),
        "e2e_ms": round(ttft + output_tokens / decode * 1000, 1),
        "output_tokens": output_tokens,
        "streamed": True,
    }


# ---------------------------------------------------------------------------------------------
# Text rows
# ---------------------------------------------------------------------------------------------

_LENGTH = {"easy": 0.5, "medium": 0.8, "hard": 1.2, "expert": 1.8, "frontier": 2.6, "god_mode": 3.5}
_CATEGORY_OFFSETS = {
    "Math": 6.0,
    "Instruction": 4.0,
    "Reasoning": 1.0,
    "Coding": 3.0,
    "Prose": -14.0,
}
# Binary categories first: the fractional ones absorb their rounding.
_FIT_ORDER = ("Math", "Reasoning", "Coding", "Instruction", "Prose")
_DENOMS = {
    "Math": (1,),
    "Reasoning": (1,),
    "Coding": (4, 5, 6, 8, 10),
    "Instruction": (3, 4, 5, 6),
    "Prose": (3, 4, 5, 6),
}


def _category_targets(model: DemoModel, rng: random.Random) -> dict[str, float]:
    offsets = {c: _CATEGORY_OFFSETS[c] + rng.uniform(-3, 3) for c in CATEGORIES}
    shift = sum(offsets.values()) / len(offsets)
    return {c: min(97.0, max(3.0, model.composite + offsets[c] - shift)) for c in CATEGORIES}


def _text_rows(model: DemoModel, seed: int, coverage: float, cells: dict) -> list[dict]:
    rng = _rng(model, seed, "text")
    cases = _suite_cases()
    by_category: dict[str, list[tuple[str, str]]] = {c: [] for c in CATEGORIES}
    for case_id, category, difficulty in cases:
        by_category[category].append((case_id, difficulty))
    kept = {
        c: rows[: max(0, min(len(rows), round(len(rows) * coverage)))]
        for c, rows in by_category.items()
    }

    kinds: dict[str, str] = {}  # case_id → "no_answer" | "judge" | "free"
    hard_cases = [
        (cid, d)
        for c in ("Math", "Reasoning", "Coding")
        for cid, d in kept[c]
        if d in ("frontier", "god_mode")
    ]
    for case_id, _ in rng.sample(hard_cases, min(len(hard_cases), rng.randint(2, 4))):
        kinds[case_id] = "no_answer"
    prose_late = [cid for cid, d in kept["Prose"] if d in ("expert", "frontier", "god_mode")]
    if prose_late:
        kinds[rng.choice(prose_late)] = "judge"

    targets = _category_targets(model, rng)
    remaining_total = model.composite * len(CATEGORIES)
    scores: dict[str, tuple[int, int]] = {}
    for position, category in enumerate(_FIT_ORDER):
        planned_rest = sum(targets[c] for c in _FIT_ORDER[position:])
        target = targets[category] + (remaining_total - planned_rest) / (len(_FIT_ORDER) - position)
        rows = [(cid, d) for cid, d in kept[category] if kinds.get(cid, "free") != "judge"]
        free = [(cid, d) for cid, d in rows if kinds.get(cid) != "no_answer"]
        if not rows:
            remaining_total -= targets[category]
            continue
        denoms = [
            1 if _SUITE.cases[cid].board_grades else rng.choice(_DENOMS[category])
            for cid, _ in free
        ]
        units = _fit_units(rng, [_EASE[d] for _, d in free], denoms, target / 100 * len(rows))
        realised = 0.0
        for (case_id, _), unit, denom in zip(free, units, denoms, strict=True):
            scores[case_id] = (unit, denom)
            realised += round(unit / denom, 4)
        remaining_total -= 100 * realised / len(rows)

    text_cell_conc = _rung_at_or_below(model, _text_concurrency(model))
    rows_out = []
    for category in CATEGORIES:
        for number, (case_id, difficulty) in enumerate(kept[category]):
            cell = cells[(category.lower(), text_cell_conc)]
            kind = kinds.get(case_id, "free")
            row_rng = random.Random(_stable_int(f"{seed}|{model.key}|{case_id}"))
            if kind == "no_answer":
                rows_out.append(_no_answer_row(row_rng, case_id, category, cell, model))
            elif kind == "judge":
                rows_out.append(_judge_pending_row(row_rng, case_id, category, cell))
            else:
                unit, denom = scores[case_id]
                rows_out.append(
                    _scored_row(row_rng, case_id, category, difficulty, number, unit, denom, cell)
                )
    return rows_out


def _scored_row(
    rng: random.Random,
    case_id: str,
    category: str,
    difficulty: str,
    number: int,
    unit: int,
    denom: int,
    cell: dict,
) -> dict:
    score = round(unit / denom, 4)
    output, evidence = _TEXT_WRITERS[category](rng, difficulty, number, unit, denom)
    case = _SUITE.cases[case_id]
    if case.board_grades:  # the board grades it again: the output must say what the score says
        output = _graded_output(case_id, unit == denom)
        evidence = {"tier": 0, "checkers": [{"type": c["type"]} for c in case.checkers]}
    out_tokens = int(_OUTPUT_TOKENS[category.lower()] * _LENGTH[difficulty] * rng.uniform(0.8, 1.2))
    creativity = None
    if category == "Prose" and difficulty not in ("easy", "medium"):
        creativity = min(3, max(0, round(score * 3 + rng.uniform(-0.6, 0.4))))
    return {
        "case_id": case_id,
        "category": category,
        "tier": case.tier,
        "status": "scored",
        "score": score,
        "creativity": creativity,
        "raw_output": output,
        "evidence": evidence,
        "speed": _row_speed(rng, cell, out_tokens),
    }


def _no_answer_row(
    rng: random.Random, case_id: str, category: str, cell: dict, model: DemoModel
) -> dict:
    reason = rng.choice(["empty_completion", "max_tokens_no_final", "unparseable_final"])
    speed = _row_speed(rng, cell, min(32768, model.context_len // 2))
    return {
        "case_id": case_id,
        "category": category,
        "tier": _SUITE.cases[case_id].tier,
        "status": "no_answer",
        "score": 0.0,
        "creativity": None,
        "raw_output": "",
        "evidence": {"no_answer": True, "true_fail": True, "attempts": 6, "reasons": [reason] * 6},
        "speed": speed,
    }


def _judge_pending_row(rng: random.Random, case_id: str, category: str, cell: dict) -> dict:
    output = _prose_text(rng, 14)
    return {
        "case_id": case_id,
        "category": category,
        "tier": 1,
        "status": "needs_frontier_judge",
        "score": None,
        "creativity": None,
        "raw_output": output,
        "evidence": {
            "tier": 1,
            "required_failed": False,
            "criteria": [
                {
                    "id": "voice",
                    "question": "Does the piece keep a consistent narrative voice?",
                    "satisfied": None,
                    "evidence": "judge_pending — needs a frontier judge",
                    "decided_by": "judge_pending",
                    "required": True,
                },
                {
                    "id": "imagery",
                    "question": "Is the imagery concrete rather than abstract?",
                    "satisfied": None,
                    "evidence": "judge_pending — needs a frontier judge",
                    "decided_by": "judge_pending",
                    "required": False,
                },
            ],
        },
        "speed": _row_speed(rng, cell, len(output) // 4),
    }


def _math_row(rng, difficulty, number, unit, denom):
    a, b, c = rng.randint(1000, 9999), rng.randint(100, 999), rng.randint(2, 19)
    want = a + b * c
    got = want if unit else want + rng.choice([-10, -1, 1, 9, 100])
    steps = [
        f"We need {a} + {b}·{c}.",
        f"First, {b}·{c} = {b * c}.",
        f"Then {a} + {b * c} = {got}.",
    ]
    if difficulty in ("expert", "frontier", "god_mode"):
        steps.insert(1, "Check the order of operations: the product binds tighter than the sum.")
        steps.append(f"Sanity check: {got} mod 9 = {got % 9}.")
    output = "\n".join(steps) + f"\n\n\\boxed{{{got}}}"
    evidence = {
        "tier": 0,
        "checkers": [
            {
                "type": "numeric_tolerance",
                "satisfied": bool(unit),
                "evidence": f"want [{float(want)}] got [{float(got)}] (slot=None)",
            }
        ],
    }
    return output, evidence


def _reasoning_row(rng, difficulty, number, unit, denom):
    options = ["A", "B", "C", "D"]
    want = rng.choice(options)
    got = want if unit else rng.choice([o for o in options if o != want])
    people = rng.sample(["Ada", "Boris", "Chen", "Dana", "Emeka", "Farah"], 3)
    output = (
        f"Suppose {people[0]} tells the truth. Then {people[1]}'s statement contradicts the "
        f"second clue, so {people[1]} lies, which makes {people[2]}'s claim true.\n"
        f"Checking every constraint against that assignment leaves option {got} as the only "
        f"consistent one.\n\n<answer>{got}</answer>"
    )
    evidence = {
        "tier": 0,
        "checkers": [
            {
                "type": "closed_set",
                "satisfied": bool(unit),
                "evidence": f"want {want!r} got {got!r}",
            }
        ],
    }
    return output, evidence


def _coding_row(rng, difficulty, number, unit, denom):
    name = rng.choice(
        [
            "merge_intervals",
            "lru_cache_get",
            "parse_duration",
            "topo_order",
            "rolling_median",
            "balance_brackets",
        ]
    )
    output = (
        "Here is a straightforward implementation.\n\n```python\n"
        f"def {name}(items):\n"
        "    result = []\n"
        "    for item in sorted(items):\n"
        "        if result and item[0] <= result[-1][1]:\n"
        "            result[-1] = (result[-1][0], max(result[-1][1], item[1]))\n"
        "        else:\n"
        "            result.append(item)\n"
        "    return result\n```\n\n"
        "It sorts once (O(n log n)) and then makes a single pass."
    )
    evidence = {
        "tier": 0,
        "tests_passed": unit,
        "tests_total": denom,
        "checkers": [
            {
                "type": "python_tests",
                "satisfied": unit == denom,
                "evidence": f"{unit}/{denom} tests passed",
            }
        ],
    }
    return output, evidence


def _rubric(rng, criteria, unit, denom, with_pending: bool):
    # The first criterion is the required one: it passes whenever anything passes.
    passed = {0} | set(rng.sample(range(1, denom), unit - 1)) if unit else set()
    rows = []
    for i, (cid, question) in enumerate(criteria[:denom]):
        ok = i in passed
        rows.append(
            {
                "id": cid,
                "question": question,
                "satisfied": ok,
                "evidence": "pattern matched" if ok else "check failed",
                "decided_by": "tier0_shadow",
                "required": i == 0,
            }
        )
    if with_pending:
        rows.append(
            {
                "id": "on_topic",
                "question": "Does the answer stay on the requested topic?",
                "satisfied": None,
                "evidence": "judge_pending — optional criterion excluded from the score",
                "decided_by": "judge_pending",
                "required": False,
            }
        )
    return {"tier": 1, "required_failed": unit == 0, "criteria": rows}


def _instruction_row(rng, difficulty, number, unit, denom):
    output = (
        "- keep the ledger reconciled every friday\n"
        "- flag any entry older than thirty days\n"
        "- send the summary to the finance channel\n\n"
        '{"owner": "ops", "cadence": "weekly"}\n\n'
        "shall i set a reminder for the first review?"
    )
    return output, _rubric(rng, RUBRICS["Instruction"], unit, denom, rng.random() < 0.2)


def _prose_text(rng, lines: int) -> str:
    words = [
        "amber",
        "harbor",
        "lantern",
        "quiet",
        "river",
        "ember",
        "salt",
        "orchard",
        "thunder",
        "glass",
        "willow",
        "iron",
        "morning",
        "ash",
        "tide",
    ]
    out = []
    for _ in range(lines):
        picked = rng.sample(words, 4)
        out.append(f"You carry the {picked[0]} {picked[1]} past the {picked[2]} {picked[3]}")
    return "\n".join(out)


def _prose_row(rng, difficulty, number, unit, denom):
    output = _prose_text(rng, 5 + int(_LENGTH[difficulty] * 4))
    return output, _rubric(rng, RUBRICS["Prose"], unit, denom, rng.random() < 0.3)


_TEXT_WRITERS = {
    "Math": _math_row,
    "Reasoning": _reasoning_row,
    "Coding": _coding_row,
    "Instruction": _instruction_row,
    "Prose": _prose_row,
}


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title></head>"
        f"<body>{body}<script>/* demo */</script></body></html>"
    )


def _arena_artifacts(rng: random.Random) -> list[dict]:
    items = [
        ("game", "game.snake", "Neon Snake", "<canvas id=c width=400 height=400></canvas>"),
        ("app", "app.kanban", "Kanban Board", "<main id=board><section>Todo</section></main>"),
        ("animation", "anim.aurora", "Aurora", "<canvas id=sky></canvas>"),
    ]
    out = []
    for kind, prompt_id, title, body in items:
        html = _page(title, body)
        out.append(
            {
                "kind": kind,
                "prompt_id": prompt_id,
                "title": title,
                "html": html,
                "ok": True,
                "gen_ms": round(rng.uniform(60000, 240000), 1),
                "bytes": len(html.encode()),
            }
        )
    out.append(
        {
            "kind": "animation",
            "prompt_id": "anim.balls",
            "title": "Bouncing Balls",
            "html": "",
            "ok": False,
            "gen_ms": None,
            "bytes": 0,
        }
    )
    return out


# ---------------------------------------------------------------------------------------------
# Agentic and multimodal rows
# ---------------------------------------------------------------------------------------------


def _agentic_rows(
    model: DemoModel, harness: str, score: float, seed: int, cells: dict
) -> tuple[list[dict], list[dict]]:
    rng = _rng(model, seed, f"agentic|{harness}")
    tasks = [
        (tid, d, kind, i >= len(AGENTIC_TASKS))
        for i, (tid, (_, d, kind)) in enumerate(
            zip(agentic_task_ids(), AGENTIC_TASKS + AGENTIC_GOD_TASKS, strict=True)
        )
    ]
    eases = [0.25 if god else 0.9 - 0.02 * min(d, 10) for _, d, _, god in tasks]
    denoms = [d for _, d, _, _ in tasks]
    units = _fit_units(rng, eases, denoms, score / 100 * len(tasks))
    cell = cells[("coding", 1)]
    broken = score <= 5
    setup_units = 0 if broken else (2 if rng.random() < 0.85 else 1)
    rows = [
        {
            "case_id": f"agentic.setup.{harness}",
            "category": "Agentic",
            "tier": 0,
            "status": "harness_error" if broken else "scored",
            "score": None if broken else setup_units / 2,
            "raw_output": json.dumps(
                {
                    "harness": harness,
                    "configured": not broken,
                    "config_path": f"~/.{harness}/config.json",
                }
            ),
            "evidence": [
                {
                    "criterion": "endpoint configured",
                    "ok": not broken,
                    "detail": "base_url and model alias written"
                    if not broken
                    else "config rejected",
                },
                {
                    "criterion": "tool call round-trip",
                    "ok": setup_units == 2,
                    "detail": "shell tool answered"
                    if setup_units == 2
                    else "no tool call observed",
                },
            ],
            "speed": {},
        }
    ]
    artifacts = []
    for (task_id, denom, kind, _), unit in zip(tasks, units, strict=True):
        score_row = 1.0 if unit == denom else round(unit / denom, 4)
        criteria = [
            {
                "criterion": f"check {i + 1} of {task_id}",
                "ok": i < unit,
                "detail": "found" if i < unit else "needle absent",
            }
            for i in range(denom)
        ]
        turns = rng.randint(3, 24)
        transcript = {
            "harness": harness,
            "task": task_id,
            "final_answer": "DONE" if unit else "I could not finish the task.",
            "files_written": [f"{task_id.split('-', 2)[-1]}.out"] if unit else [],
            "turns": turns,
            "tool_calls": turns + rng.randint(0, 12),
            "elapsed_s": round(rng.uniform(20, 400), 2),
            "transcript_tail": [f"[{harness}] step {t}: ran shell tool" for t in range(turns)],
        }
        rows.append(
            {
                "case_id": task_id,
                "category": "Agentic",
                "tier": 0,
                "status": "scored",
                "score": score_row,
                "raw_output": json.dumps(transcript)[:8000],
                "evidence": criteria,
                "speed": _row_speed(rng, cell, rng.randint(400, 6000)),
            }
        )
        if kind:
            ok = score_row >= 0.5
            artifacts.append(
                {
                    "kind": kind,
                    "prompt_id": task_id,
                    "html": _page(task_id, f"<div id=app>{kind}</div>") if ok else "",
                    "ok": ok,
                }
            )
    return rows, artifacts


def _modality_rows(model: DemoModel, modality: str, cases, seed: int, cells: dict) -> list[dict]:
    rng = _rng(model, seed, modality)
    target = min(95.0, max(5.0, model.composite + rng.uniform(-12, 8)))
    denoms = [2 if name.startswith(("describe.", "scene.", "qa.")) else 1 for name, _, _ in cases]
    units = _fit_units(rng, [_EASE[d] for _, _, d in cases], denoms, target / 100 * len(cases))
    cell = cells[("instruction", 1)]
    rows = []
    for (name, category, _), unit, denom in zip(cases, units, denoms, strict=True):
        score = round(unit / denom, 4)
        tier = 1 if denom > 1 else 0
        if tier:
            evidence = {
                "tier": 1,
                "required_failed": unit == 0,
                "criteria": [
                    {
                        "id": f"r{i + 1}",
                        "question": f"Keyword group {i + 1} present?",
                        "satisfied": i < unit,
                        "evidence": "keyword matched" if i < unit else "missing",
                        "decided_by": "tier0_shadow",
                        "required": i == 0,
                    }
                    for i in range(denom)
                ],
            }
        else:
            evidence = {
                "tier": 0,
                "checkers": [
                    {
                        "type": "closed_set",
                        "satisfied": bool(unit),
                        "evidence": "slot matched" if unit else "slot mismatch",
                    }
                ],
            }
        rows.append(
            {
                "case_id": f"{modality}.{name}",
                "category": category,
                "tier": tier,
                "status": "scored",
                "score": score,
                "creativity": None,
                "raw_output": f"<answer>{'ok' if unit else 'unsure'}</answer>",
                "evidence": evidence,
                "speed": _row_speed(rng, cell, rng.randint(8, 120)),
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Perf rows
# ---------------------------------------------------------------------------------------------


def _perf_rows(model: DemoModel, seed: int, cells: dict) -> list[dict]:
    rng = _rng(model, seed, "perf-rows")
    rows = []
    for conc in model.ladder:
        rung = [copy.deepcopy(cells[(cat, conc)]) for cat in PERF_CATEGORIES]
        wall_clock = round(
            sum(c["cell_wall_s"] for c in rung) + sum(rng.uniform(0.3, 0.8) for _ in rung), 3
        )
        for cat, evidence in zip(PERF_CATEGORIES, rung, strict=True):
            evidence["wall_clock_s"] = wall_clock
            rows.append(_perf_row(f"perf.direct.{cat}.c{conc}", evidence))
        rows.append(_perf_row(f"perf.direct.overall.c{conc}", _overall(rung, conc, wall_clock)))
    if model.agentic:
        rows.extend(_harness_rows(model, rng))
    rows.append(_sustained_row(model, rng, cells))
    return rows


def _perf_row(case_id: str, evidence: dict) -> dict:
    speed = {}
    if "decode_tps_mean" in evidence:
        speed = {
            "ttft_ms": evidence["ttft_ms_mean"],
            "decode_tps": evidence["decode_tps_mean"],
            "tpot_ms": evidence["tpot_ms_mean"],
            "e2e_ms": evidence["e2e_ms_mean"],
            "output_tokens": evidence["output_tokens_total"],
            "streamed": True,
        }
    return {
        "case_id": case_id,
        "category": "Performance",
        "tier": 0,
        "status": "perf",
        "score": None,
        "raw_output": "",
        "evidence": evidence,
        "speed": speed,
    }


def _overall(rung: list[dict], conc: int, wall_clock: float) -> dict:
    def mean(key: str, digits: int) -> float:
        return round(sum(c[key] for c in rung) / len(rung), digits)

    engine = sum(c["engine_tokens_total"] for c in rung)
    return {
        "n": sum(c["n"] for c in rung),
        "n_errors": 0,
        "ttft_ms_mean": mean("ttft_ms_mean", 2),
        "ttft_ms_p50": mean("ttft_ms_p50", 2),
        "ttft_ms_p95": round(max(c["ttft_ms_p95"] for c in rung), 2),
        "decode_tps_mean": mean("decode_tps_mean", 2),
        "prefill_tps_mean": mean("prefill_tps_mean", 2),
        "e2e_ms_mean": mean("e2e_ms_mean", 1),
        "tpot_ms_mean": mean("tpot_ms_mean", 3),
        "tpot_ms_p50": mean("tpot_ms_p50", 3),
        "tpot_ms_p95": round(max(c["tpot_ms_p95"] for c in rung), 3),
        "output_tokens_total": sum(c["output_tokens_total"] for c in rung),
        "input_tokens_total": sum(c["input_tokens_total"] for c in rung),
        "agg_decode_tps": round(engine / wall_clock, 2),
        "tokens_source": "engine",
        "engine_tokens_total": engine,
        "input_tokens_estimated": False,
        "conc": conc,
        "wall_clock_s": wall_clock,
        "scope": "overall",
    }


def _harness_rows(model: DemoModel, rng: random.Random) -> list[dict]:
    base = 2400 / model.single_stream_tps + 18
    rows = []
    for harness, _ in model.agentic or ():
        per_cat = {c: round(base * rng.uniform(0.7, 1.4), 4) for c in CATEGORIES}
        mean_s = sum(per_cat.values()) / len(per_cat)
        rows.append(
            _perf_row(
                f"perf.harness.{harness}.c1",
                {
                    "conc": 1,
                    "n_tasks": 5,
                    "mean_task_s": round(mean_s, 4),
                    "p95_task_s": max(per_cat.values()),
                    "tasks_per_min": round(60 / mean_s, 2),
                    "failures": 0,
                    "wall_clock_s": round(sum(per_cat.values()), 3),
                    "categories": {
                        c: {"n": 1, "mean_task_s": v, "p95_task_s": v} for c, v in per_cat.items()
                    },
                },
            )
        )
        if harness == model.agentic[0][0]:
            for category, value in per_cat.items():
                rows.append(
                    _perf_row(
                        f"perf.harness.{harness}.{category.lower()}.c1",
                        {
                            "n": 1,
                            "mean_task_s": value,
                            "p95_task_s": value,
                            "conc": 1,
                            "scope": category,
                            "harness": harness,
                        },
                    )
                )
    return rows


def _sustained_row(model: DemoModel, rng: random.Random, cells: dict) -> dict:
    conc = _rung_at_or_below(model, 16)
    low = sum(cells[(c, conc)]["agg_decode_tps"] for c in PERF_CATEGORIES) / len(PERF_CATEGORIES)
    measured = model.engine in ("vllm", "aeon-vllm-ultimate", "sglang")
    degradation = round(rng.uniform(4, 14), 1) if measured else None
    accept = round(rng.uniform(45, 72), 1) if model.spec_method else None
    evidence = {
        "n_samples": 1440 if measured else 0,
        "n_busy": rng.randint(1200, 1400) if measured else 0,
        "window_s": round(rng.uniform(14000, 24000), 1),
        "kv_pct_min": round(rng.uniform(0.02, 0.08), 4) if measured else None,
        "kv_pct_max": round(rng.uniform(0.7, 0.93), 4) if measured else None,
        "preemptions": 0.0 if measured else None,
        "prefix_cache_hit_pct": round(rng.uniform(28, 52), 1) if measured else None,
        "concurrency": conc,
        "tps_at_low_kv": round(low, 1),
        "tps_at_high_kv": round(low * (1 - degradation / 100), 1) if degradation else None,
        "degradation_pct": degradation,
        "accept_at_low_kv": accept,
        "accept_at_high_kv": round(accept - rng.uniform(0.5, 3), 1) if accept else None,
    }
    return _perf_row("perf.sustained.summary", evidence)


# ---------------------------------------------------------------------------------------------
# Bundles
# ---------------------------------------------------------------------------------------------

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
    recipe = _recipe(model, served_context)
    hardware = _hardware(model)
    cells = _perf_cells(model, seed)
    group = _hex(f"group|{started}|{model.hf_repo}|{model.detected_label}|{model.key}|{seed}", 24)

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
                "job_sig": _hex(f"{started}|{model.hf_repo}|{model.detected_label}|{scope}", 24),
            }
        )
        return body

    text_conc = _text_concurrency(model)
    text = bundle(
        f"text/{TEXT_SUITE_ID}",
        _text_rows(model, seed, coverage, cells),
        text_conc,
        tool_calling=False,
    )
    text["judge_model"] = None
    text["artifacts"] = _arena_artifacts(_rng(model, seed, "arena"))
    job: list[JobEntry] = [("text", TEXT_SUITE_ID, model.hf_repo, text)]

    if with_agentic:
        for harness, score in model.agentic or ():
            rows, artifacts = _agentic_rows(model, harness, score, seed, cells)
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
            rows = _modality_rows(model, modality, cases, seed, cells)
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
            _perf_rows(model, seed, cells),
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
