"""The demo's performance model (shared by the perf bundle and the per-row speed of the other
bundles) and the perf bundle's rows: per category and concurrency, the cells a pod measures."""

from __future__ import annotations

import copy
import math
import random
from fractions import Fraction

from demo.bundles.common import section_rng
from demo.catalogue import (
    CATEGORIES,
    PERF_CATEGORIES,
    DemoModel,
)

OUTPUT_TOKENS = {"math": 620, "instruction": 430, "reasoning": 910, "coding": 780, "prose": 540}
_INPUT_TOKENS = {"math": 190, "instruction": 520, "reasoning": 350, "coding": 460, "prose": 240}
_TTFT_GROWTH = 1.35  # TTFT grows with queueing: about 23 s at c64 for an 83 ms c1 prompt


def _exact_wall(agg: float, tokens_guess: float) -> tuple[float, float]:
    """A 3-decimal wall-clock and integral token count with tokens ÷ wall == agg exactly."""
    rate = Fraction(str(agg))
    step = Fraction(1000 * rate.denominator, math.gcd(rate.numerator, 1000 * rate.denominator))
    steps = max(1, round(Fraction(tokens_guess) / rate * 1000 / step))
    wall = Fraction(steps) * step / 1000
    return float(wall), float(wall * rate)


def perf_cells(model: DemoModel, seed: int) -> dict[tuple[str, int], dict]:
    """Evidence of every direct cohort cell, keyed by (lowercase category, conc)."""
    rng = section_rng(model, seed, "perf")
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
    out = int(OUTPUT_TOKENS[cat] * rng.uniform(0.9, 1.1))
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
    out = sum(int(OUTPUT_TOKENS[cat] * rng.uniform(0.75, 1.25)) for _ in range(conc))
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
        "wall_clock_s": None,  # the rung's wall-clock, filled in by perf_rows
        "scope": cat.capitalize(),
    }


def text_concurrency(model: DemoModel) -> int:
    if model.engine in ("llama.cpp", "mlx"):
        return min(4, max(model.ladder))
    return min(16, model.max_num_seqs or 16, max(model.ladder))


def rung_at_or_below(model: DemoModel, conc: int) -> int:
    return max(c for c in model.ladder if c <= conc)


def row_speed(rng: random.Random, cell: dict, output_tokens: int) -> dict:
    ttft = cell["ttft_ms_p50"] * rng.uniform(0.7, 1.4)
    decode = cell["decode_tps_mean"] * rng.uniform(0.88, 1.12)
    return {
        "ttft_ms": round(ttft, 1),
        "decode_tps": round(decode, 1),
        "e2e_ms": round(ttft + output_tokens / decode * 1000, 1),
        "output_tokens": output_tokens,
        "streamed": True,
    }


def perf_rows(model: DemoModel, seed: int, cells: dict) -> list[dict]:
    rng = section_rng(model, seed, "perf-rows")
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
    conc = rung_at_or_below(model, 16)
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
