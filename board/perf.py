"""Perf bundle rows → cohorts (docs/cohorts.md, docs/protocol.md §Perf rows).

Pure Python on purpose: ingest calls it to refuse a bundle (rule 1 raises PerfRowError), and the
board calls it to record cohorts, peaks, single-stream and latency figures. No Django, no DB.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

CATEGORIES = ("math", "instruction", "reasoning", "coding", "prose")
OVERALL = "overall"

TOLERANCE = 0.05  # rules 2 and 3: 5 %
MAX_ERROR_SHARE = 0.10  # rule 4: errors ≤ 10 % of requests
# Rule 1: no measurement of a cell comes near this (10^15 tokens, ms, tok/s …); below it, sums,
# means and products of a cell's numbers stay finite, and what still overflows (tokens ÷ a
# vanishing wall-clock) is marked `not_finite`.
MAX_NUMBER = 1e15

# Direct-cell evidence the board cannot do without; everything else numeric is optional.
REQUIRED_FIELDS = (
    "n",
    "n_errors",
    "decode_tps_mean",
    "ttft_ms_p50",
    "output_tokens_total",
    "agg_decode_tps",
)
INTEGER_FIELDS = ("n", "n_errors", "conc")
NUMERIC_FIELDS = frozenset(
    REQUIRED_FIELDS
    + INTEGER_FIELDS
    + (
        "ttft_ms_mean",
        "ttft_ms_p95",
        "prefill_tps_mean",
        "e2e_ms_mean",
        "tpot_ms_mean",
        "tpot_ms_p50",
        "tpot_ms_p95",
        "input_tokens_total",
        "engine_tokens_total",
        "cell_wall_s",
        "wall_clock_s",
    )
)

_DIRECT_ID = re.compile(r"perf\.direct\.([A-Za-z_]+)\.c([0-9]+)")


class CohortMark(StrEnum):
    """Why a cell is shown but kept out of peaks and champions, or (labels) merely annotated."""

    AGGREGATE_INCONSISTENT = "aggregate_inconsistent"
    UNVERIFIABLE_AGGREGATE = "unverifiable_aggregate"
    EXCEEDS_STREAM_CEILING = "exceeds_stream_ceiling"
    TOO_FEW_REQUESTS = "too_few_requests"
    TOO_MANY_ERRORS = "too_many_errors"
    NOT_FINITE = "not_finite"
    # Set once the weights verified and the model's facts are known (board/roofline.py).
    BEYOND_ROOFLINE = "beyond_roofline"
    # A label, never an exclusion: the rung measured queueing, which is real but worth saying.
    QUEUED_BEYOND_MAX_NUM_SEQS = "queued_beyond_max_num_seqs"

    @property
    def reason(self) -> str:
        return _REASONS[self]


_REASONS = {
    CohortMark.AGGREGATE_INCONSISTENT: "reported aggregate differs from tokens ÷ cell wall-clock by more than 5 %",
    CohortMark.UNVERIFIABLE_AGGREGATE: "no cell wall-clock: the reported aggregate cannot be checked",
    CohortMark.EXCEEDS_STREAM_CEILING: "aggregate exceeds decode tok/s × concurrency by more than 5 %",
    CohortMark.TOO_FEW_REQUESTS: "fewer requests than concurrent streams",
    CohortMark.TOO_MANY_ERRORS: "more than 10 % of requests failed",
    CohortMark.NOT_FINITE: "a derived figure (tokens ÷ cell wall-clock) is not a finite number",
    CohortMark.BEYOND_ROOFLINE: "beyond what the class's memory bandwidth allows this model (roofline)",
    CohortMark.QUEUED_BEYOND_MAX_NUM_SEQS: "queued beyond max-num-seqs",
}


class PerfRowError(ValueError):
    """A perf row breaks rule 1: the bundle is refused with SCHEMA_INVALID at `pointer`."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"{pointer}: {message}")
        self.pointer = pointer
        self.message = message


@dataclass(frozen=True)
class Cohort:
    category: str
    conc: int
    label: str
    aggregate_tps: float
    reported_aggregate_tps: float
    stream_ceiling_tps: float
    scheduling_efficiency: float | None
    decode_tps_mean: float
    ttft_ms_p50: float
    ttft_ms_mean: float | None
    ttft_ms_p95: float | None
    tpot_ms_p50: float | None
    tpot_ms_mean: float | None
    tpot_ms_p95: float | None
    n: int
    n_errors: int
    marks: tuple[CohortMark, ...] = ()
    labels: tuple[str, ...] = ()
    tokens: float = 0.0
    cell_wall_s: float | None = None

    @property
    def valid(self) -> bool:
        return not self.marks


@dataclass(frozen=True)
class PerfSummary:
    cohorts: tuple[Cohort, ...]
    overall: dict[int, dict] = field(default_factory=dict)
    peak: Cohort | None = None
    single_stream_tps: float | None = None
    single_stream_cohort: str = ""
    latency_ttft_ms: float | None = None
    latency_tpot_ms: float | None = None
    other_rows: dict[str, Any] = field(default_factory=dict)


def parse_direct_id(case_id: str) -> tuple[str, int] | None:
    """`perf.direct.Coding.c64` → ("coding", 64); `perf.direct.overall.c8` → ("overall", 8).

    None for anything that is not a well-formed direct id with a known category (or `overall`)
    and a positive integer concurrency; summarise_perf refuses a `perf.direct.` id that gives None.
    """
    match = _DIRECT_ID.fullmatch(case_id) if isinstance(case_id, str) else None
    if not match:
        return None
    category, conc = match.group(1).lower(), int(match.group(2))
    if (category not in CATEGORIES and category != OVERALL) or conc <= 0:
        return None
    return category, conc


def summarise_perf(results: list[dict], max_num_seqs: int | None = None) -> PerfSummary:
    """Validate the perf rows and build the run's cohorts and headline figures.

    Raises PerfRowError (rule 1) with the JSON pointer of the offending field; rules 2–4 mark
    the cell, rule 5 labels it. `overall` rows are stored as evidence, never as cohorts;
    harness and sustained rows are kept by case id.
    """
    if not isinstance(results, list):
        raise PerfRowError("/results", "must be a list")
    cohorts: dict[tuple[str, int], Cohort] = {}
    overall: dict[int, dict] = {}
    other_rows: dict[str, Any] = {}
    for index, row in enumerate(results):
        pointer = f"/results/{index}"
        if not isinstance(row, dict):
            raise PerfRowError(pointer, "must be an object")
        case_id = row.get("case_id")
        if not isinstance(case_id, str) or not case_id:
            raise PerfRowError(f"{pointer}/case_id", "must be a non-empty string")
        if not case_id.lower().startswith("perf.direct."):
            other_rows[case_id] = row.get("evidence")
            continue
        parsed = parse_direct_id(case_id)
        if parsed is None:
            raise PerfRowError(
                f"{pointer}/case_id",
                f"{case_id!r} is not perf.direct.<category|overall>.c<positive integer>",
            )
        category, conc = parsed
        evidence = row.get("evidence")
        if not isinstance(evidence, dict):
            raise PerfRowError(f"{pointer}/evidence", "must be an object")
        _check_numbers(evidence, conc, f"{pointer}/evidence")
        if category == OVERALL:
            if conc in overall:
                raise PerfRowError(f"{pointer}/case_id", f"duplicate cell {case_id!r}")
            overall[conc] = dict(evidence)
            continue
        if (category, conc) in cohorts:
            raise PerfRowError(f"{pointer}/case_id", f"duplicate cell {case_id!r}")
        for name in REQUIRED_FIELDS:
            if evidence.get(name) is None:
                raise PerfRowError(f"{pointer}/evidence/{_escape(name)}", "is required")
        cohorts[(category, conc)] = _cohort(category, conc, evidence, max_num_seqs)

    ordered = tuple(sorted(cohorts.values(), key=lambda c: (CATEGORIES.index(c.category), c.conc)))
    valid = [c for c in ordered if c.valid]
    peak = max(valid, key=lambda c: c.aggregate_tps, default=None)
    at_c1 = [c for c in valid if c.conc == 1]
    tpots = [c.tpot_ms_p50 for c in at_c1 if c.tpot_ms_p50 is not None]
    return PerfSummary(
        cohorts=ordered,
        overall=overall,
        peak=peak,
        single_stream_tps=_mean(c.decode_tps_mean for c in at_c1),
        single_stream_cohort=f"{len(at_c1)} categor{'y' if len(at_c1) == 1 else 'ies'} @ c1",
        latency_ttft_ms=_mean(c.ttft_ms_p50 for c in at_c1),
        latency_tpot_ms=_mean(tpots),
        other_rows=other_rows,
    )


def _cohort(category: str, conc: int, ev: dict, max_num_seqs: int | None) -> Cohort:
    marks: list[CohortMark] = []
    reported = float(ev["agg_decode_tps"])
    tokens = float(ev["output_tokens_total"])
    if ev.get("tokens_source") == "engine" and ev.get("engine_tokens_total") is not None:
        tokens = float(ev["engine_tokens_total"])
    wall = ev.get("cell_wall_s")
    if wall is None or wall == 0:
        # Older pods send only the sweep's wall_clock_s: keep the reported figure, never rank it.
        aggregate = reported
        marks.append(CohortMark.UNVERIFIABLE_AGGREGATE)
    else:
        aggregate = tokens / float(wall)
        if not math.isfinite(aggregate):
            # Overflowed: the cell cannot be checked; its reported figure is kept, never ranked.
            aggregate = reported
            marks.append(CohortMark.NOT_FINITE)
        elif abs(reported - aggregate) > TOLERANCE * aggregate:
            marks.append(CohortMark.AGGREGATE_INCONSISTENT)
    decode = float(ev["decode_tps_mean"])
    ceiling = decode * conc  # finite: both are at most MAX_NUMBER, conc a column-sized count
    if aggregate > ceiling * (1 + TOLERANCE):
        marks.append(CohortMark.EXCEEDS_STREAM_CEILING)
    n, n_errors = int(ev["n"]), int(ev["n_errors"])
    if n < conc:
        marks.append(CohortMark.TOO_FEW_REQUESTS)
    # n counts the cell's requests, failed ones included (the pod sends n = conc per rung).
    if n_errors > MAX_ERROR_SHARE * n:
        marks.append(CohortMark.TOO_MANY_ERRORS)
    labels: tuple[str, ...] = ()
    if max_num_seqs is not None and conc > max_num_seqs:
        labels = (CohortMark.QUEUED_BEYOND_MAX_NUM_SEQS,)
    return Cohort(
        category=category,
        conc=conc,
        label=f"{category} @ c{conc}",
        aggregate_tps=aggregate,
        reported_aggregate_tps=reported,
        stream_ceiling_tps=ceiling,
        scheduling_efficiency=aggregate / ceiling if ceiling > 0 else None,
        decode_tps_mean=decode,
        ttft_ms_p50=float(ev["ttft_ms_p50"]),
        ttft_ms_mean=_optional(ev, "ttft_ms_mean"),
        ttft_ms_p95=_optional(ev, "ttft_ms_p95"),
        tpot_ms_p50=_optional(ev, "tpot_ms_p50"),
        tpot_ms_mean=_optional(ev, "tpot_ms_mean"),
        tpot_ms_p95=_optional(ev, "tpot_ms_p95"),
        n=n,
        n_errors=n_errors,
        marks=tuple(marks),
        labels=labels,
        tokens=tokens,
        cell_wall_s=float(wall) if wall is not None else None,
    )


def _check_numbers(evidence: dict, conc: int, pointer: str) -> None:
    """Rule 1 on the evidence: numbers finite and non-negative, counts integral, conc agrees."""
    for key, value in evidence.items():
        where = f"{pointer}/{_escape(str(key))}"
        if value is None:
            continue
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        if not is_number:
            if key in NUMERIC_FIELDS:
                raise PerfRowError(where, "must be a number")
            continue  # tokens_source, scope, input_tokens_estimated, future extras
        if value > MAX_NUMBER:  # before isfinite: an integer beyond float range overflows it
            raise PerfRowError(where, f"must be at most {MAX_NUMBER:.0e}")
        if not math.isfinite(value):
            raise PerfRowError(where, "must be finite")
        if value < 0:
            raise PerfRowError(where, "must not be negative")
        if key in INTEGER_FIELDS and value != int(value):
            raise PerfRowError(where, "must be an integer")
    if evidence.get("conc") is not None and int(evidence["conc"]) != conc:
        raise PerfRowError(f"{pointer}/conc", f"is {evidence['conc']} but the case id says c{conc}")


def _optional(evidence: dict, key: str) -> float | None:
    value = evidence.get(key)
    return None if value is None else float(value)


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


# --- drafter health (docs/cohorts.md §Drafter health) ---------------------------------------------

# A configured drafter whose best acceptance figure is under this share of drafted tokens is
# "barely accepting": the output stays right, but the verification work is mostly wasted.
MIN_ACCEPTANCE_PCT = 10.0
SUSTAINED_SUMMARY = "perf.sustained.summary"
SUSTAINED_TIMELINE = "perf.sustained.timeline"


def acceptance_of(other_rows: dict) -> dict:
    """The drafter acceptance (percent of drafted tokens accepted) the sustained section carries:
    `accept_at_low_kv` / `accept_at_high_kv` of its summary and the mean of the timeline's
    `spec_accept_pct`. Figures that are not percentages are left out; {} when none is there."""
    rows = {str(key).lower(): value for key, value in (other_rows or {}).items()}
    summary = rows.get(SUSTAINED_SUMMARY)
    summary = summary if isinstance(summary, dict) else {}
    timeline = rows.get(SUSTAINED_TIMELINE)
    points = timeline.get("points") if isinstance(timeline, dict) else None
    samples = [
        value
        for point in (points if isinstance(points, list) else [])[:100_000]
        if isinstance(point, dict) and (value := _percent(point.get("spec_accept_pct"))) is not None
    ]
    found = {
        "at_low_kv": _percent(summary.get("accept_at_low_kv")),
        "at_high_kv": _percent(summary.get("accept_at_high_kv")),
        "timeline_mean": sum(samples) / len(samples) if samples else None,
        "timeline_points": len(samples),
    }
    return (
        found
        if any(found[k] is not None for k in ("at_low_kv", "at_high_kv", "timeline_mean"))
        else {}
    )


def drafter_health(acceptance: dict, drafter: dict | None) -> dict:
    """`none` (no drafter configured), `unknown` (a drafter, no acceptance figure), `healthy`, or
    `barely_accepting` when the best figure is under MIN_ACCEPTANCE_PCT; with the figure."""
    if not drafter:
        return {"status": "none"}
    figures = [acceptance.get(k) for k in ("at_low_kv", "at_high_kv")]
    figures = [f for f in figures if f is not None]
    if not figures and acceptance.get("timeline_mean") is not None:
        figures = [acceptance["timeline_mean"]]
    method = drafter.get("method") or "drafter"
    if not figures:
        return {"status": "unknown", "method": method, "threshold_pct": MIN_ACCEPTANCE_PCT}
    best = max(figures)
    status = "barely_accepting" if best < MIN_ACCEPTANCE_PCT else "healthy"
    return {
        "status": status,
        "method": method,
        "acceptance_pct": best,
        "threshold_pct": MIN_ACCEPTANCE_PCT,
        **{k: acceptance.get(k) for k in ("at_low_kv", "at_high_kv", "timeline_mean")},
    }


def _percent(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= 100 else None
