"""Champion replay (docs/champions.md): who holds each crown of a hardware class, who held it
before and who took it from them, and which benchmarks reproduce each other.

Pure Python on purpose: the recompute service feeds it plain entries read from the benchmark
table and writes what it returns; the unit tests drive it directly. No Django, no DB.

A crown is one axis within one scope: a hardware class as a whole, or one model on that class.
The replay walks the eligible benchmarks in the order they completed; a challenger takes the
crown only when it beats the holder by more than the axis's margin, so the history falls out of
the walk and re-running it after a flag gives the right answer without any special case.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "QUALITY_FLOOR_POINTS",
    "QUALITY_MARGIN_POINTS",
    "SINGLE_STREAM_COHORT",
    "SPEED_MARGIN",
    "Axis",
    "Entry",
    "Measure",
    "Reign",
    "Reproduction",
    "Spread",
    "beats",
    "best_composites",
    "copies",
    "measure",
    "replay",
    "reproductions",
]

SPEED_MARGIN = 0.02  # a speed crown changes hands only on a gain of more than 2 %
QUALITY_MARGIN_POINTS = 0.5  # a quality crown changes hands only on more than 0.5 points
QUALITY_FLOOR_POINTS = 5.0  # a speed champion answers within 5 points of its model's best
SINGLE_STREAM_COHORT = "5 categories @ c1"


class Axis(StrEnum):
    """What a crown is for; a str enum, so an axis is its value in JSON and DB columns."""

    THROUGHPUT = "throughput"  # peak aggregate tok/s, highest wins
    SINGLE_STREAM = "single_stream"  # mean c1 decode tok/s, highest wins
    LATENCY = "latency"  # c1 TTFT p50, lowest wins; TPOT p50 breaks a tie
    QUALITY = "quality"  # composite, highest wins

    @property
    def is_speed(self) -> bool:
        return self is not Axis.QUALITY

    @property
    def unit(self) -> str:
        return {"throughput": "tok/s", "single_stream": "tok/s", "latency": "ms"}.get(
            self.value, "points"
        )


@dataclass(frozen=True)
class Entry:
    """One benchmark as the replay sees it.

    `ranked`: complete, attested, above the context floor, not flagged. `applicable`: its recipe
    can be applied by someone else (docs/champions.md). `recipe` is the recipe id, "" if unknown.
    `pod`: who measured it — the keys submitting from one network count as one pod
    (docs/champions.md §Reproductions); `key` is the device key itself. `evidence`: digests of
    its runs' per-case evidence; `copy_of`: the earlier benchmark of another pod whose evidence it
    repeats ("" when none; see `copies`).
    """

    benchmark: str
    model: str
    pod: str
    recipe: str
    completed_at: datetime
    ranked: bool
    applicable: bool
    composite: float | None = None
    throughput: float | None = None
    throughput_cohort: str = ""
    single_stream: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    key: str = ""
    evidence: frozenset[str] = frozenset()
    copy_of: str = ""

    @property
    def order(self) -> tuple:
        """Commit order: when the benchmark became complete; its public id breaks a tie."""
        return (self.completed_at, self.benchmark)


@dataclass(frozen=True)
class Measure:
    """An entry's figure on one axis; `secondary` is the TPOT beside a latency's TTFT."""

    value: float
    cohort: str
    secondary: float | None = None


@dataclass(frozen=True)
class Reign:
    """One holder of a crown, from the day it took it until the day it lost it (None: holds it)."""

    holder: Entry
    measure: Measure
    since: datetime
    until: datetime | None = None
    dethroned_by: Entry | None = None


@dataclass(frozen=True)
class Spread:
    minimum: float
    maximum: float

    @property
    def relative(self) -> float:
        """(max − min) ÷ max: 816 and 801 tok/s are 1.8 % apart."""
        return (self.maximum - self.minimum) / self.maximum if self.maximum > 0 else 0.0


@dataclass(frozen=True)
class Reproduction:
    """The benchmarks of one recipe on one class and model; distinct pods reproduce each other."""

    recipe: str
    model: str
    benchmarks: tuple[str, ...]
    pods: int
    spreads: dict[Axis, Spread] = field(default_factory=dict)
    keys: int = 0  # distinct device keys; more than `pods` when several share a network
    copies: tuple[str, ...] = ()  # benchmarks of the recipe that repeat another pod's evidence

    def describe(self, axis: Axis) -> str:
        keys = ""
        if self.keys > self.pods:
            networks = "1 network" if self.pods == 1 else f"{self.pods} networks"
            keys = f" ({self.keys} keys, {networks})"
        if self.pods < 2:
            if keys:
                return f"reproduced by 1 pod{keys}"
            return "measured by one pod only"
        spread = self.spreads.get(axis)
        if spread is None:
            return f"reproduced by {self.pods} pods{keys}"
        return f"reproduced by {self.pods} pods{keys}, spread {100 * spread.relative:.1f} %"


def measure(entry: Entry, axis: Axis) -> Measure | None:
    """The entry's figure on `axis`, or None when it has none."""
    if axis is Axis.THROUGHPUT:
        if entry.throughput is None:
            return None
        return Measure(entry.throughput, entry.throughput_cohort)
    if axis is Axis.SINGLE_STREAM:
        if entry.single_stream is None:
            return None
        return Measure(entry.single_stream, SINGLE_STREAM_COHORT)
    if axis is Axis.LATENCY:
        if entry.ttft_ms is None:
            return None
        return Measure(entry.ttft_ms, SINGLE_STREAM_COHORT, entry.tpot_ms)
    if entry.composite is None:
        return None
    return Measure(entry.composite, "")


def beats(challenger: Measure, holder: Measure, axis: Axis) -> bool:
    """Whether the challenger takes the crown: better than the holder by more than the margin."""
    if axis is Axis.QUALITY:
        return challenger.value > holder.value + QUALITY_MARGIN_POINTS
    if axis is not Axis.LATENCY:
        return challenger.value > holder.value * (1 + SPEED_MARGIN)
    if challenger.value < holder.value * (1 - SPEED_MARGIN):
        return True
    ttft_tied = challenger.value <= holder.value * (1 + SPEED_MARGIN)
    return (
        ttft_tied
        and challenger.secondary is not None
        and holder.secondary is not None
        and challenger.secondary < holder.secondary * (1 - SPEED_MARGIN)
    )


def best_composites(entries: Iterable[Entry]) -> dict[str, float]:
    """The quality floor's reference of each model (docs/champions.md §The quality floor), from
    its ranked benchmarks (graded by the board: a disputed grading never ranks) that copy no one:
    the best composite that a second pod reached too — each pod's best, then the second highest of
    those; with one pod only, its best. One run, or one pod, cannot move it."""
    per_pod: dict[str, dict[str, float]] = defaultdict(dict)
    for entry in entries:
        if entry.ranked and entry.composite is not None and not entry.copy_of:
            bests = per_pod[entry.model]
            bests[entry.pod] = max(bests.get(entry.pod, entry.composite), entry.composite)
    return {model: reference_composite(bests.values()) for model, bests in per_pod.items()}


def reference_composite(pod_bests: Iterable[float]) -> float:
    """The second highest of the pods' best composites (the median of the top three when there
    are three or more), or the only one."""
    ordered = sorted(pod_bests, reverse=True)
    return ordered[1] if len(ordered) > 1 else ordered[0]


def copies(entries: Iterable[Entry]) -> dict[str, str]:
    """Benchmark → the earlier benchmark of another pod whose per-case evidence it repeats: the
    same outputs and timings signed again by another key are not a second measurement."""
    first: dict[str, Entry] = {}
    found: dict[str, str] = {}
    for entry in sorted(entries, key=lambda entry: entry.order):
        for digest in sorted(entry.evidence):
            original = first.get(digest)
            if original is None:
                first[digest] = entry
            elif original.pod != entry.pod and entry.benchmark not in found:
                found[entry.benchmark] = original.benchmark
    return found


def passes_quality_floor(entry: Entry, best: dict[str, float]) -> bool:
    if entry.composite is None:
        return False
    reference = best.get(entry.model, entry.composite)
    return entry.composite >= reference - QUALITY_FLOOR_POINTS


def replay(entries: Iterable[Entry], axis: Axis, best: dict[str, float]) -> list[Reign]:
    """Every reign of the crown on `axis` among `entries`, oldest first; the last one holds it.

    `best` maps a model to its best ranked composite (see `best_composites`), for the quality
    floor of the speed axes; a model missing from it is its own reference.
    """
    contenders = []
    for entry in entries:
        if not (entry.ranked and entry.applicable) or entry.copy_of:
            continue
        if axis.is_speed and not passes_quality_floor(entry, best):
            continue
        figure = measure(entry, axis)
        if figure is not None:
            contenders.append((entry, figure))
    contenders.sort(key=lambda pair: pair[0].order)

    reigns: list[Reign] = []
    for entry, figure in contenders:
        if reigns and not beats(figure, reigns[-1].measure, axis):
            continue
        if reigns:
            last = reigns[-1]
            reigns[-1] = Reign(
                last.holder, last.measure, last.since, until=entry.completed_at, dethroned_by=entry
            )
        reigns.append(Reign(entry, figure, since=entry.completed_at))
    return reigns


def reproductions(entries: Iterable[Entry]) -> dict[tuple[str, str], Reproduction]:
    """Per (recipe, model): the ranked benchmarks that used it, how many distinct pods measured
    them and the spread of each axis. Benchmarks without a recipe id reproduce nothing."""
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    copied: dict[tuple[str, str], list[str]] = defaultdict(list)
    for entry in entries:
        if entry.ranked and entry.recipe and entry.copy_of:
            copied[(entry.recipe, entry.model)].append(entry.benchmark)
        elif entry.ranked and entry.recipe:
            groups[(entry.recipe, entry.model)].append(entry)
    found = {}
    for (recipe, model), members in groups.items():
        members.sort(key=lambda entry: entry.order)
        spreads = {}
        for axis in Axis:
            values = [m.value for m in (measure(e, axis) for e in members) if m is not None]
            if values:
                spreads[axis] = Spread(min(values), max(values))
        found[(recipe, model)] = Reproduction(
            recipe=recipe,
            model=model,
            benchmarks=tuple(entry.benchmark for entry in members),
            pods=len({entry.pod for entry in members}),
            spreads=spreads,
            keys=len({entry.key or entry.pod for entry in members}),
            copies=tuple(copied.get((recipe, model), ())),
        )
    return found
