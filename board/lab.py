"""The recipe lab (docs/lab.md): single-flag experiments found among the ranked benchmarks of
one model on one hardware class, and what each change measured.

Pure Python on purpose, like board/champions.py: the writer (board/lab_writer.py) feeds it plain
entries read from the benchmark table and writes what it returns; the unit tests drive it
directly. No Django, no database.

A **side** is what one pod measured with one recipe (one weight set, engine and image): the
median of its benchmarks' figures. Two sides of the same pod whose flags differ in exactly one
option — added, removed, or one value changed — are a **pair**. Pairs of the same change (the
same option, the same values) make its **effect**: per axis the median of the pairs' ratios (the
composite: a difference in points), their smallest and largest, how many pairs and how many
independent pods stand behind it. Pairs are found within a pod only: a pod's A/B on its own
machine measures the flag; two different machines measure the machines.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from recipes.diff import flag_map

__all__ = [
    "AXES",
    "Change",
    "CohortPoint",
    "Effect",
    "LabEntry",
    "Pair",
    "best_per_rung",
    "drafter_curves",
    "drafter_label",
    "effects_of",
    "pairs_of",
]

# Axis → (benchmark figure, how it compares): a ratio other ÷ base for the speed axes, a
# difference other − base in points for the composite. Latency is the TTFT: lower is better.
AXES: dict[str, tuple[str, str]] = {
    "throughput": ("throughput", "ratio"),
    "single_stream": ("single_stream", "ratio"),
    "latency": ("ttft_ms", "ratio"),
    "quality": ("composite", "difference"),
}
HIGHER_IS_BETTER = {"throughput": True, "single_stream": True, "latency": False, "quality": True}

# Recipe fields that follow from one flag: a pair may differ in them only when that flag is
# the one that changed (the drafter is read from the speculative config, the context from the
# context option). Engine, image and digest must be the same.
DERIVED_FIELDS = {
    "drafter": frozenset({"--speculative-config", "--speculative_config"}),
    "context_len": frozenset({"--max-model-len", "--max_model_len", "-c", "--ctx-size"}),
}


@dataclass(frozen=True)
class LabEntry:
    """One ranked benchmark as the lab sees it. `flags` are the recipe's scrubbed flags."""

    benchmark: str
    pod: str
    model: str
    weight_set: str
    recipe: str
    engine: str
    image: str
    image_digest: str
    flags: tuple[str, ...]
    drafter: str = ""  # the drafter as canonical JSON, "" for none
    context_len: int | None = None
    throughput: float | None = None
    single_stream: float | None = None
    ttft_ms: float | None = None
    composite: float | None = None


@dataclass(frozen=True)
class Change:
    """One flag's change, oriented so that a change and its reverse are the same experiment:
    an option present on one side only is always read as `added` (base: without it); a changed
    value goes from the lower to the higher (numbers as numbers, else as text)."""

    flag: str
    kind: str  # "added" | "changed"
    before: str | None  # changed: the base's value
    after: str | None  # added: the option's value (None for a switch); changed: the other's

    @property
    def key(self) -> str:
        if self.kind == "added":
            return f"{self.flag} added" + ("" if self.after is None else f" {self.after}")
        return f"{self.flag} {self.before} -> {self.after}"


@dataclass(frozen=True)
class Side:
    pod: str
    recipe: str
    benchmarks: tuple[str, ...]
    figures: dict[str, float | None]


@dataclass(frozen=True)
class Pair:
    """Two sides of one pod one flag apart: `base` without the change, `other` with it."""

    change: Change
    pod: str
    base: Side
    other: Side
    deltas: dict[str, float | None]  # axis → ratio or difference, None when a side lacks it


@dataclass
class Effect:
    change: Change
    pairs: list[Pair] = field(default_factory=list)

    @property
    def pods(self) -> int:
        return len({pair.pod for pair in self.pairs})

    def axes(self) -> dict[str, dict | None]:
        """Per axis: median, smallest and largest of the pairs' deltas, and how many pairs had
        the figure on both sides; None when no pair had it."""
        out: dict[str, dict | None] = {}
        for axis, (_, how) in AXES.items():
            values = [p.deltas[axis] for p in self.pairs if p.deltas.get(axis) is not None]
            if not values:
                out[axis] = None
                continue
            out[axis] = {
                "how": how,
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
                "n": len(values),
                "better": _better(axis, statistics.median(values)),
            }
        return out


def _better(axis: str, value: float) -> bool | None:
    """Whether the change helped on this axis (None: it made no difference)."""
    neutral = 1.0 if AXES[axis][1] == "ratio" else 0.0
    if value == neutral:
        return None
    return (value > neutral) == HIGHER_IS_BETTER[axis]


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _ordered(a: str | None, b: str | None) -> bool:
    """Whether a → b is the canonical direction of a value change."""
    if a is None or b is None:
        return a is None
    x, y = _number(a), _number(b)
    if x is not None and y is not None and x != y:
        return x < y
    return a < b


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _sides(entries: Iterable[LabEntry]) -> dict[tuple, dict[str, list[LabEntry]]]:
    """Entries grouped by (pod, model, weight set, engine, image, digest), then by recipe."""
    groups: dict[tuple, dict[str, list[LabEntry]]] = defaultdict(lambda: defaultdict(list))
    for entry in entries:
        if not entry.recipe or not entry.weight_set:
            continue
        scope = (entry.pod, entry.model, entry.weight_set, entry.engine, entry.image)
        groups[scope + (entry.image_digest,)][entry.recipe].append(entry)
    return groups


def _side(pod: str, recipe: str, entries: list[LabEntry]) -> Side:
    ordered = sorted(entries, key=lambda e: e.benchmark)
    return Side(
        pod=pod,
        recipe=recipe,
        benchmarks=tuple(e.benchmark for e in ordered),
        figures={
            axis: _median([getattr(e, name) for e in ordered if getattr(e, name) is not None])
            for axis, (name, _) in AXES.items()
        },
    )


def _delta(axis: str, base: float | None, other: float | None) -> float | None:
    if base is None or other is None:
        return None
    if AXES[axis][1] == "difference":
        return other - base
    return other / base if base > 0 else None


def _derived_ok(a: LabEntry, b: LabEntry, flag: str) -> bool:
    """Engine, image and digest are the group's; a derived field may differ only when the flag
    it follows from is the one that changed."""
    for name, flags in DERIVED_FIELDS.items():
        if getattr(a, name) != getattr(b, name) and flag not in flags:
            return False
    return True


def _make_pair(change: Change, base: Side, other: Side) -> Pair:
    return Pair(
        change=change,
        pod=base.pod,
        base=base,
        other=other,
        deltas={axis: _delta(axis, base.figures[axis], other.figures[axis]) for axis in AXES},
    )


def pairs_of(entries: Iterable[LabEntry]) -> list[Pair]:
    """Every single-flag pair among `entries` (ranked benchmarks of one class), in a stable
    order. Found by hashing, not by comparing every two recipes: each recipe is filed under its
    flags and under its flags minus each option in turn, so two recipes one flag apart meet in
    one bucket; the cost grows with recipes × flags, not recipes squared."""
    pairs: list[Pair] = []
    for scope, by_recipe in sorted(_sides(entries).items()):
        pod = scope[0]
        maps = {recipe: flag_map(group[0].flags) for recipe, group in by_recipe.items()}
        sides = {recipe: _side(pod, recipe, group) for recipe, group in by_recipe.items()}
        first = {recipe: group[0] for recipe, group in by_recipe.items()}
        whole: dict[frozenset, list[str]] = defaultdict(list)
        without: dict[tuple[str, frozenset], list[str]] = defaultdict(list)
        for recipe in sorted(maps):
            options = maps[recipe]
            whole[frozenset(options.items())].append(recipe)
            for name in options:
                rest = frozenset((k, v) for k, v in options.items() if k != name)
                without[(name, rest)].append(recipe)
        seen: set[tuple[str, str]] = set()
        # One value changed: two recipes filed under the same (option, the rest).
        for (name, _), recipes in sorted(
            without.items(), key=lambda item: (item[0][0], sorted(item[1]))
        ):
            for i, a in enumerate(recipes):
                for b in recipes[i + 1 :]:
                    va, vb = maps[a][name], maps[b][name]
                    if va == vb or not _derived_ok(first[a], first[b], name):
                        continue
                    base, other = (a, b) if _ordered(va, vb) else (b, a)
                    if (base, other) in seen:
                        continue
                    seen.add((base, other))
                    change = Change(name, "changed", maps[base][name], maps[other][name])
                    pairs.append(_make_pair(change, sides[base], sides[other]))
        # One option added: a recipe whose flags minus that option are another recipe's flags.
        for recipe in sorted(maps):
            for name, value in maps[recipe].items():
                rest = frozenset((k, v) for k, v in maps[recipe].items() if k != name)
                for base in whole.get(rest, []):
                    if (base, recipe) in seen or not _derived_ok(first[base], first[recipe], name):
                        continue
                    seen.add((base, recipe))
                    change = Change(name, "added", None, value)
                    pairs.append(_make_pair(change, sides[base], sides[recipe]))
    return pairs


def effects_of(pairs: Iterable[Pair]) -> list[Effect]:
    """The pairs grouped by change, in the order of the flag and then the change's key."""
    grouped: dict[Change, Effect] = {}
    for pair in pairs:
        grouped.setdefault(pair.change, Effect(pair.change)).pairs.append(pair)
    return [grouped[change] for change in sorted(grouped, key=lambda c: (c.flag, c.key))]


# --- drafter × concurrency (docs/lab.md §Drafter × concurrency) -------------------------------


@dataclass(frozen=True)
class CohortPoint:
    """One valid cohort of a ranked benchmark's perf run, with the drafter of its recipe."""

    benchmark: str
    method: str  # "" : no drafter
    n: int | None
    category: str
    conc: int
    aggregate_tps: float


def drafter_label(method: str, n: int | None) -> str:
    if not method:
        return "no drafter"
    return f"{method} n={n}" if n is not None else method


def drafter_curves(points: Iterable[CohortPoint]) -> list[dict]:
    """Per drafter setting (method and n; none first), the best cohort at each concurrency: its
    aggregate, the per-stream share (aggregate ÷ streams), the cohort's name and its benchmark.
    A tie keeps the lower benchmark id, so the answer does not depend on the order read."""
    best: dict[tuple[str, int | None], dict[int, CohortPoint]] = defaultdict(dict)
    for point in points:
        rungs = best[(point.method, point.n)]
        held = rungs.get(point.conc)
        if (
            held is None
            or point.aggregate_tps > held.aggregate_tps
            or (point.aggregate_tps == held.aggregate_tps and point.benchmark < held.benchmark)
        ):
            rungs[point.conc] = point
    curves = []
    for (method, n), rungs in sorted(best.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        curves.append(
            {
                "method": method,
                "n": n,
                "label": drafter_label(method, n),
                "points": [
                    {
                        "conc": conc,
                        "aggregate_tps": p.aggregate_tps,
                        "per_stream_tps": p.aggregate_tps / conc,
                        "cohort": f"{p.category} @ c{conc}",
                        "benchmark": p.benchmark,
                    }
                    for conc, p in sorted(rungs.items())
                ],
            }
        )
    return curves


def best_per_rung(curves: list[dict]) -> dict[int, str]:
    """Concurrency → the label of the setting with the highest aggregate there."""
    winners: dict[int, tuple[float, str]] = {}
    for curve in curves:
        for point in curve["points"]:
            held = winners.get(point["conc"])
            if held is None or point["aggregate_tps"] > held[0]:
                winners[point["conc"]] = (point["aggregate_tps"], curve["label"])
    return {conc: label for conc, (_, label) in sorted(winners.items())}
