"""Rooflines per cohort (docs/cohorts.md §Rooflines): what the memory bandwidth of a hardware
class allows a weight set to decode, and which cohorts claim more.

Pure Python on purpose: the board evaluates a perf run with it once its weights verified (the
facts arrive with the verdict), the tests feed it the published figures. No Django, no DB.

Decoding is memory-bound: every step reads the weights it touches once. With the class's
bandwidth per device × devices (B), a weight set's active bytes (A) and the tokens one step of a
stream may produce (t: 1 without a drafter, at most `num_speculative_tokens` + 1 with one):

- one stream decodes at most B ÷ A × t tokens per second;
- an aggregate at concurrency c at most c × that, and at most c × t × B ÷ (the bytes a step of
  c × t tokens touches): for a mixture of experts each token picks k of E experts, so a step of T
  tokens touches the always-on part plus 1 − (1 − k/E)^T of the experts (nearly every expert at
  high concurrency); a dense model touches every byte at every step;
- the first token needs at least one pass over the active bytes (TTFT ≥ A ÷ B), and each later
  token of a stream at least 1/t of one (TPOT ≥ A ÷ B ÷ t).

A figure is beyond its bound when it exceeds it by more than TOLERANCE (floors: falls below them
by more). Unknown facts give no bound, never a mark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from board.modelfacts import ModelFacts

# A claim is marked only beyond 1.5 × its bound (or under its floor ÷ 1.5): the bound leaves out
# the KV cache, the drafter's own weights and routing that favours some experts, so real runs
# stay under it, but the arithmetic is approximate and a mark must never hit an honest run.
TOLERANCE = 1.5


@dataclass(frozen=True)
class Breach:
    """One figure of one cohort beyond its bound: the claim, the bound and how it was derived."""

    cohort: str
    figure: str
    claim: float
    bound: float
    derivation: str

    @property
    def text(self) -> str:
        beyond = "is under its floor" if self.figure.endswith(" ms") else "is beyond its roofline"
        return (
            f"{self.cohort}: {self.figure} {_num(self.claim)} {beyond} "
            f"{_num(self.bound)} ({self.derivation})"
        )


@dataclass(frozen=True)
class Roofline:
    status: str  # "unknown", "within" or "beyond"
    note: str
    bandwidth_gbs: float | None = None  # the class's, all devices
    devices: int | None = None
    active_gb: float | None = None
    weight_gb: float | None = None
    tokens_per_step: int | None = None
    single_stream_tps: float | None = None
    single_stream_derivation: str = ""
    ttft_floor_ms: float | None = None
    tpot_floor_ms: float | None = None
    aggregate_bounds: dict[str, float] = field(default_factory=dict)
    breaches: tuple[Breach, ...] = ()
    tolerance: float = TOLERANCE

    @property
    def marked(self) -> set[str]:
        return {breach.cohort for breach in self.breaches}

    def to_json(self) -> dict:
        data = asdict(self)
        data["breaches"] = [asdict(b) | {"text": b.text} for b in self.breaches]
        return data


def no_bound(note: str) -> Roofline:
    return Roofline(status="unknown", note=note)


def tokens_per_step(drafter: dict | None) -> tuple[int | None, str]:
    """1 without a drafter; `n` + 1 with one (its `num_speculative_tokens`); None when a drafter is
    configured without a readable n."""
    if not drafter:
        return 1, "no drafter: 1 token per step"
    n = drafter.get("n")
    method = drafter.get("method") or "drafter"
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return None, f"{method} without num_speculative_tokens: tokens per step unknown"
    return n + 1, f"{method} n={n}: at most {n + 1} tokens per step"


def evaluate(
    facts: ModelFacts,
    *,
    bandwidth_gbs: float | None,
    devices: int | None,
    drafter: dict | None,
    cohorts: Iterable,
) -> Roofline:
    """Bounds for a run's cohorts (objects with label, conc, aggregate_tps, decode_tps_mean,
    ttft_ms_p50, tpot_ms_p50) and the figures beyond them."""
    if not facts.known or facts.active_bytes is None:
        return no_bound(f"no bound: {facts.note}")
    if not _positive(bandwidth_gbs) or not devices or devices < 1:
        return no_bound("no bound: the hardware class has no known memory bandwidth")
    bandwidth = bandwidth_gbs * devices * 1e9  # bytes per second
    active = facts.active_bytes
    steps, step_note = tokens_per_step(drafter)
    ttft_floor = active / bandwidth * 1000
    bw_text = f"{_num(bandwidth_gbs)} GB/s × {devices} device{'s' * (devices != 1)}"
    active_text = f"{active / 1e9:.2f} GB active"
    single = single_text = None
    tpot_floor = None
    if steps is not None:
        single = bandwidth / active * steps
        single_text = f"{bw_text} ÷ {active_text} × {steps} token{'s' * (steps != 1)} per step"
        tpot_floor = ttft_floor / steps
    bounds: dict[str, float] = {}
    breaches: list[Breach] = []
    for cohort in cohorts:
        label = cohort.label
        if single is not None:
            aggregate, aggregate_text = _aggregate_bound(
                facts, cohort.conc, steps, single, bandwidth, bw_text
            )
            bounds[label] = aggregate
            if _finite(cohort.decode_tps_mean) > single * TOLERANCE:
                breaches.append(
                    Breach(
                        label,
                        "decode tok/s per stream",
                        cohort.decode_tps_mean,
                        single,
                        single_text,
                    )
                )
            if _finite(cohort.aggregate_tps) > aggregate * TOLERANCE:
                breaches.append(
                    Breach(
                        label, "aggregate tok/s", cohort.aggregate_tps, aggregate, aggregate_text
                    )
                )
            tpot = cohort.tpot_ms_p50
            if tpot is not None and tpot < tpot_floor / TOLERANCE:
                breaches.append(
                    Breach(
                        label,
                        "TPOT p50 ms",
                        tpot,
                        tpot_floor,
                        f"{active_text} ÷ {bw_text} ÷ {steps} token{'s' * (steps != 1)} per step",
                    )
                )
        if cohort.ttft_ms_p50 < ttft_floor / TOLERANCE:
            breaches.append(
                Breach(
                    label,
                    "TTFT p50 ms",
                    cohort.ttft_ms_p50,
                    ttft_floor,
                    f"one pass over {active_text} at {bw_text}",
                )
            )
    note = f"{facts.note}; {step_note}"
    return Roofline(
        status="beyond" if breaches else "within",
        note=note if single is not None else f"{note}: only the TTFT floor applies",
        bandwidth_gbs=bandwidth_gbs * devices,
        devices=devices,
        active_gb=active / 1e9,
        weight_gb=facts.weight_bytes / 1e9,
        tokens_per_step=steps,
        single_stream_tps=single,
        single_stream_derivation=single_text or "",
        ttft_floor_ms=ttft_floor,
        tpot_floor_ms=tpot_floor,
        aggregate_bounds=bounds,
        breaches=tuple(breaches),
    )


def touched_fraction(facts: ModelFacts, tokens: int) -> float | None:
    """The share of the routed experts a step of `tokens` tokens touches (1 − (1 − k/E)^T), or
    None when the experts are not known (the name fallback)."""
    if facts.kind != "moe":
        return 1.0
    if not facts.experts or not facts.experts_per_token or facts.routed_expert_params is None:
        return None
    return 1 - (1 - facts.experts_per_token / facts.experts) ** tokens


def _aggregate_bound(
    facts: ModelFacts, conc: int, steps: int, single: float, bandwidth: float, bw_text: str
) -> tuple[float, str]:
    streams = conc * single
    tokens = conc * steps
    share = touched_fraction(facts, tokens)
    if share is None:
        return streams, f"{conc} × {_num(single)} tok/s (experts unknown: one stream's bytes)"
    if facts.kind == "moe":
        routed = facts.routed_expert_params / facts.total_params
        touched_bytes = facts.weight_bytes * (1 - routed + routed * share)
        touched_text = f"{touched_bytes / 1e9:.2f} GB touched ({share:.0%} of the experts)"
    else:
        touched_bytes = facts.weight_bytes
        touched_text = f"{touched_bytes / 1e9:.2f} GB (dense: every byte)"
    by_step = tokens * bandwidth / touched_bytes
    if by_step < streams:
        return by_step, f"{tokens} tokens per step × {bw_text} ÷ {touched_text}"
    return streams, f"{conc} streams × {_num(single)} tok/s"


def percent_of(figure: float | None, bound: float | None) -> float | None:
    if figure is None or not _positive(bound) or not math.isfinite(figure):
        return None
    value = 100 * figure / bound
    return value if math.isfinite(value) else None


def _positive(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def _finite(value) -> float:
    return value if isinstance(value, int | float) and math.isfinite(value) else 0.0


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.2g}"
