"""Reads of the crowns (docs/champions.md): the pods' champion list, the champions API, and the
crowns as cards and timelines on the pages; reads of the read models, never of raw results."""

import logging
from dataclasses import dataclass

from django.db.models import Q
from pydantic import ValidationError

from board.champion_shapes import (
    ChampionList,
    Crown,
    CrownHardwareClass,
    PodChampionList,
    PodChampionRecipe,
    Reign,
)
from board.champions import Axis
from board.hardware import Family, normalise_label, query_device_count
from board.models import Benchmark, BenchModel, Champion, ChampionReign, HardwareClass
from board.selectors.catalog import board_order

logger = logging.getLogger("aeon.board")


def _stale(champion: Champion, what: str, exc: Exception, stale: list | None) -> None:
    """A stored crown that no longer fits its shape (written by an older build, before its
    class was recomputed) is left out of the answer, never answered 500, and its (class, model)
    is added to `stale`, for the caller to have it recomputed (`read_models.recompute_stale`);
    `manage.py rebuild_board` rewrites them all."""
    if stale is not None:
        stale.append((champion.hardware_class_id, champion.model_id))
    logger.error(
        "stored %s of class %s (%s) does not fit its shape, left out until it is recomputed: %s",
        what,
        champion.hardware_class_id,
        champion.axis,
        " ".join(str(exc).split())[:300],
    )


def _folded(text: str) -> str:
    """Case, × and runs of spaces folded away: 'Single DGX  Spark' ~ 'single dgx spark'."""
    return " ".join(text.replace("×", "x").lower().split())


def hardware_query_matches(query: str, *, label: str, hardware_class: HardwareClass) -> bool:
    """docs/champions.md: the query equals or is contained in the raw label or the class name,
    or names the same class once normalised — never through Unlabeled. A query asking for a
    device count (a pod's label does: `RTX 5090 32GB` is one card) matches classes of that count
    only; a bare `dgx spark` asks for none and matches every Spark class."""
    wanted = _folded(query)
    if not wanted:
        return True
    count = query_device_count(query)
    if count is not None and hardware_class.device_count != count:
        return False
    if wanted in _folded(label) or wanted in _folded(hardware_class.name):
        return True
    spec = normalise_label(query)
    return spec.family != Family.UNLABELED and spec.slug == hardware_class.slug


def _model_matches(query: str, champion: Champion) -> bool:
    wanted = query.strip().lower()
    model = champion.model
    return wanted in (model.canonical_id.lower(), model.hf_repo.lower())


def pod_champion_recipes(
    *, hardware: str | None = None, model: str | None = None, stale: list | None = None
) -> PodChampionList:
    """The pods' champion list (docs/champions.md): per hardware class and model the throughput
    champion's recipe, grouped by hardware label, best throughput first. One query. `stale`
    gets the (class, model) of each stored recipe left out for not fitting its shape."""
    champions = list(
        Champion.objects.filter(axis=Axis.THROUGHPUT, model__isnull=False)
        .select_related("hardware_class", "model")
        .order_by("pk")
    )
    # A crown with no one-click recipe offers pods nothing (docs/recipes.md §The serve-flag policy).
    offered = []
    for champion in champions:
        if not champion.pod_recipe:
            continue
        try:
            offered.append((champion, PodChampionRecipe.model_validate(champion.pod_recipe)))
        except ValidationError as exc:
            _stale(champion, "pod recipe", exc, stale)
    hardwares = sorted({recipe.hardware for _champion, recipe in offered})
    if hardware:
        offered = [
            (c, recipe)
            for c, recipe in offered
            if hardware_query_matches(
                hardware, label=recipe.hardware, hardware_class=c.hardware_class
            )
        ]
    if model:
        offered = [(c, recipe) for c, recipe in offered if _model_matches(model, c)]
    entries = sorted(
        (recipe for _champion, recipe in offered),
        key=lambda e: (e.hardware.lower(), -e.peak_agg_tps, e.canonical),
    )
    return PodChampionList(hardwares=hardwares, champions=entries)


def champion_crowns(
    *,
    hardware: str | None = None,
    axis: str | None = None,
    model: str | None = None,
    stale: list | None = None,
) -> ChampionList:
    """`/api/v1/champions`: per class (board order) and axis, the crown with its recipe,
    reproductions and history. Class-wide crowns, or with `model` that model's crowns. Two
    queries, however many benchmarks the board holds. `stale` gets the (class, model) of each
    stored crown left out for not fitting its shape."""
    crowns = Champion.objects.select_related("hardware_class", "hardware_class__summary")
    if model:
        crowns = crowns.filter(
            Q(model__canonical_id__iexact=model.strip()) | Q(model__hf_repo__iexact=model.strip())
        )
    else:
        crowns = crowns.filter(model__isnull=True)
    if axis:
        crowns = crowns.filter(axis=axis)
    crowns = list(crowns.select_related("benchmark", "model"))
    if hardware:
        crowns = [
            c
            for c in crowns
            if c.hardware_class.slug == hardware
            or hardware_query_matches(
                hardware, label=c.benchmark.hardware_label, hardware_class=c.hardware_class
            )
        ]
    axes = [a.value for a in Axis]
    crowns.sort(
        key=lambda c: (
            board_order(c.hardware_class),
            c.model.canonical_id if c.model else "",
            axes.index(c.axis),
        )
    )
    histories: dict[tuple, list[Reign]] = {}
    if crowns:
        reigns = (
            ChampionReign.objects.filter(
                hardware_class__in={c.hardware_class_id for c in crowns},
                axis__in={c.axis for c in crowns},
            )
            .filter(
                Q(model__isnull=True) if not model else Q(model__in={c.model_id for c in crowns})
            )
            .select_related("benchmark__model", "dethroned_by")
            .order_by("position")
        )
        for reign in reigns:
            histories.setdefault((reign.hardware_class_id, reign.model_id, reign.axis), []).append(
                Reign(
                    benchmark_id=reign.benchmark.public_id,
                    model=reign.benchmark.model.canonical_id,
                    value=reign.value,
                    cohort=reign.cohort or None,
                    tpot_ms=reign.secondary if reign.axis == Axis.LATENCY else None,
                    since=reign.since,
                    until=reign.until,
                    dethroned_by=reign.dethroned_by.public_id if reign.dethroned_by else None,
                )
            )

    def crown_of(c: Champion) -> Crown | None:
        try:
            return Crown(
                **c.summary,
                hardware_class=CrownHardwareClass(
                    slug=c.hardware_class.slug, name=c.hardware_class.name
                ),
                axis=c.axis,
                crown="model" if c.model_id else "class",
                history=histories.get((c.hardware_class_id, c.model_id, c.axis), []),
            )
        except (ValidationError, TypeError) as exc:  # TypeError: a stored key named as above
            _stale(c, "crown", exc, stale)
            return None

    return ChampionList(champions=[crown for c in crowns if (crown := crown_of(c)) is not None])


def crown_history(hardware_class: HardwareClass, *, model_id: int | None = None):
    """Every reign of a class's crowns (or of one model's crowns there), axis by axis."""
    return (
        ChampionReign.objects.filter(hardware_class=hardware_class, model_id=model_id)
        .select_related("benchmark__model", "dethroned_by")
        .order_by("axis", "position")
    )


AXIS_TITLES = {
    Axis.THROUGHPUT: "Throughput",
    Axis.SINGLE_STREAM: "Single stream",
    Axis.LATENCY: "Latency",
    Axis.QUALITY: "Quality",
}
AXIS_MEANINGS = {
    Axis.THROUGHPUT: "best peak aggregate tok/s of one cohort",
    Axis.SINGLE_STREAM: "mean decode tok/s of one stream at c1",
    Axis.LATENCY: "lowest time to first token at c1",
    Axis.QUALITY: "best composite of the five categories",
}


@dataclass
class CrownCard:
    """One axis of a class as a card: the holder's figure and where to copy its recipe, or the
    empty state when nobody holds it (`crown` None)."""

    axis: Axis
    crown: dict | None  # Champion.summary: a CrownRecord's JSON (board/champion_shapes.py)

    @property
    def title(self) -> str:
        return AXIS_TITLES[self.axis]

    @property
    def meaning(self) -> str:
        return AXIS_MEANINGS[self.axis]


def crown_cards_by_class(class_ids) -> dict[int, list[CrownCard]]:
    """The four class-wide crowns of each class as cards, axes in their fixed order (one query:
    the summaries carry everything a card shows)."""
    held: dict[int, dict[str, dict]] = {}
    for class_id, axis, summary in Champion.objects.filter(
        model__isnull=True, hardware_class_id__in=list(class_ids)
    ).values_list("hardware_class_id", "axis", "summary"):
        held.setdefault(class_id, {})[axis] = summary
    return {
        class_id: [CrownCard(axis, crowns.get(axis.value)) for axis in Axis]
        for class_id, crowns in held.items()
    }


def crown_cards(hardware_class: HardwareClass) -> list[CrownCard]:
    found = crown_cards_by_class([hardware_class.pk]).get(hardware_class.pk)
    return found or [CrownCard(axis, None) for axis in Axis]


@dataclass
class CrownHistory:
    """The reigns of one axis of a class, oldest first (the last one holds the crown)."""

    axis: Axis
    reigns: list[ChampionReign]

    @property
    def title(self) -> str:
        return AXIS_TITLES[self.axis]


def crown_histories(hardware_class: HardwareClass) -> list[CrownHistory]:
    """Every axis's history of a class's class-wide crowns (one query)."""
    by_axis: dict[str, list[ChampionReign]] = {}
    for reign in crown_history(hardware_class):
        by_axis.setdefault(reign.axis, []).append(reign)
    return [CrownHistory(axis, by_axis[axis.value]) for axis in Axis if axis.value in by_axis]


def pods_offer_for(benchmark: Benchmark) -> dict | None:
    """When this benchmark holds its model's throughput crown on its class: what the pods of the
    class are handed for the model (its recipe, or another one and why). One query."""
    found = (
        Champion.objects.filter(benchmark=benchmark, model_id=benchmark.model_id)
        .filter(axis=Axis.THROUGHPUT)
        .values_list("summary", flat=True)
        .first()
    )
    if found is None or "pods_offered" not in found:
        return None
    return {"pods_offered": found["pods_offered"], "reasons": found.get("one_click_reasons", [])}


def crowns_held(benchmark: Benchmark) -> list[str]:
    """The titles of the class-wide crowns this benchmark holds, in axis order (one query)."""
    held = set(
        Champion.objects.filter(benchmark=benchmark, model__isnull=True).values_list(
            "axis", flat=True
        )
    )
    return [AXIS_TITLES[axis] for axis in Axis if axis.value in held]


def model_crowns(bench_model: BenchModel) -> list[dict]:
    """Per hardware class (board order) the crowns of one model there: which of its benchmarks
    and recipes is best on each axis (docs/champions.md §Crowns). One query."""
    by_class: dict[int, dict] = {}
    for crown in Champion.objects.filter(model=bench_model).select_related(
        "hardware_class", "hardware_class__summary"
    ):
        entry = by_class.setdefault(
            crown.hardware_class_id, {"cls": crown.hardware_class, "axes": {}}
        )
        entry["axes"][crown.axis] = crown.summary
    rows = sorted(by_class.values(), key=lambda entry: board_order(entry["cls"]))
    for row in rows:
        row["cards"] = [CrownCard(axis, row["axes"].get(axis.value)) for axis in Axis]
    return rows
