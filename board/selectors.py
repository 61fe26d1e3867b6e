"""Reads of the board: what pages, the read API and the pod channel's answers show."""

from django.db.models import Prefetch, Q

from board.champions import Axis
from board.hardware import Family, HardwareClassSpec, board_order_key, normalise_label
from board.models import (
    Benchmark,
    Champion,
    ChampionReign,
    ClassSummary,
    HardwareClass,
    PerfCohort,
    RecipeReproduction,
    Run,
    SuiteKind,
)
from board.services import api_datetime

TRUE_WORDS = ("1", "true", "yes")


def commit_summary(run_id: str) -> dict:
    """The extra fields of a final-submit answer (protocol.md §3.3 Decision)."""
    run = Run.objects.select_related("benchmark").get(run_id=run_id)
    return {
        "trust_tier": run.trust,
        "verification": run.verification,
        "n_results": run.n_results,
        "benchmark_id": run.benchmark.public_id if run.benchmark else None,
        "url": f"/runs/{run.run_id}/",
    }


def public_runs_with_results():
    return Run.objects.public().select_related("benchmark").prefetch_related("results")


def run_detail(run_id: str) -> Run | None:
    return Run.objects.public().filter(run_id=run_id).first()


def benchmarks(
    *,
    hardware: str | None = None,
    model: str | None = None,
    trust: str | None = None,
    ranked: str | None = None,
):
    queryset = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .order_by("-submitted_at", "-pk")
    )
    if hardware:
        queryset = queryset.filter(hardware_class__slug=hardware)
    if model:
        queryset = queryset.filter(model__canonical_id__iexact=model)
    if trust:
        queryset = queryset.filter(trust=trust)
    if ranked not in (None, ""):
        queryset = queryset.filter(ranked=ranked.lower() in TRUE_WORDS)
    return queryset


def benchmark_detail(public_id: str) -> Benchmark | None:
    """A benchmark with its public runs and its perf run's cohorts, in three queries."""
    benchmark = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .prefetch_related(
            Prefetch(
                "runs",
                queryset=Run.objects.public().order_by("committed_at"),
                to_attr="public_runs",
            )
        )
        .filter(public_id=public_id)
        .first()
    )
    if benchmark is None:
        return None
    perf_runs = [run for run in benchmark.public_runs if run.kind == SuiteKind.PERF]
    benchmark.perf_cohorts = list(PerfCohort.objects.filter(run=perf_runs[-1])) if perf_runs else []
    return benchmark


def hardware_classes():
    return HardwareClass.objects.order_by("-preset", "device_count", "name")


# --- champions (docs/champions.md): reads of the read models, never of raw results -------------


def _folded(text: str) -> str:
    """Case, × and runs of spaces folded away: 'Single DGX  Spark' ~ 'single dgx spark'."""
    return " ".join(text.replace("×", "x").lower().split())


def hardware_query_matches(query: str, *, label: str, hardware_class: HardwareClass) -> bool:
    """docs/champions.md: the query equals or is contained in the raw label or the class name,
    or names the same class once normalised — never through Unlabeled. Containment goes one
    way only, so '2× RTX 5090 32GB' does not match a single card's 'RTX 5090 32GB'."""
    wanted = _folded(query)
    if not wanted:
        return True
    if wanted in _folded(label) or wanted in _folded(hardware_class.name):
        return True
    spec = normalise_label(query)
    return spec.family != Family.UNLABELED and spec.slug == hardware_class.slug


def _model_matches(query: str, champion: Champion) -> bool:
    wanted = query.strip().lower()
    model = champion.model
    return wanted in (model.canonical_id.lower(), model.hf_repo.lower())


def pod_champion_recipes(*, hardware: str | None = None, model: str | None = None) -> dict:
    """The pods' champion list (docs/champions.md): per hardware class and model the throughput
    champion's recipe, grouped by hardware label, best throughput first. One query."""
    champions = list(
        Champion.objects.filter(axis=Axis.THROUGHPUT, model__isnull=False)
        .select_related("hardware_class", "model")
        .order_by("pk")
    )
    hardwares = sorted({champion.pod_recipe["hardware"] for champion in champions})
    if hardware:
        champions = [
            c
            for c in champions
            if hardware_query_matches(
                hardware, label=c.pod_recipe["hardware"], hardware_class=c.hardware_class
            )
        ]
    if model:
        champions = [c for c in champions if _model_matches(model, c)]
    entries = sorted(
        (champion.pod_recipe for champion in champions),
        key=lambda e: (e["hardware"].lower(), -e["peak_agg_tps"], e["canonical"]),
    )
    return {"hardwares": hardwares, "champions": entries}


def _board_order(hardware_class: HardwareClass) -> tuple:
    summary = getattr(hardware_class, "summary", None)
    spec = HardwareClassSpec(
        slug=hardware_class.slug,
        name=hardware_class.name,
        family=Family(hardware_class.family),
        device_count=hardware_class.device_count,
    )
    return board_order_key(spec, summary.best_throughput if summary else None)


def champion_crowns(
    *, hardware: str | None = None, axis: str | None = None, model: str | None = None
) -> list[dict]:
    """`/api/v1/champions`: per class (board order) and axis, the crown with its recipe,
    reproductions and history. Class-wide crowns, or with `model` that model's crowns. Two
    queries, however many benchmarks the board holds."""
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
            _board_order(c.hardware_class),
            c.model.canonical_id if c.model else "",
            axes.index(c.axis),
        )
    )
    histories: dict[tuple, list[dict]] = {}
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
                {
                    "benchmark_id": reign.benchmark.public_id,
                    "model": reign.benchmark.model.canonical_id,
                    "value": reign.value,
                    "cohort": reign.cohort or None,
                    "tpot_ms": reign.secondary if reign.axis == Axis.LATENCY else None,
                    "since": api_datetime(reign.since),
                    "until": api_datetime(reign.until),
                    "dethroned_by": reign.dethroned_by.public_id if reign.dethroned_by else None,
                }
            )
    return [
        {
            "hardware_class": {"slug": c.hardware_class.slug, "name": c.hardware_class.name},
            "axis": c.axis,
            "crown": "model" if c.model_id else "class",
            **c.summary,
            "history": histories.get((c.hardware_class_id, c.model_id, c.axis), []),
        }
        for c in crowns
    ]


def class_summaries() -> list[ClassSummary]:
    """Every class's counts and best figures, in board order (one query)."""
    summaries = list(ClassSummary.objects.select_related("hardware_class"))
    return sorted(summaries, key=lambda s: _board_order(s.hardware_class))


def crown_history(hardware_class: HardwareClass, *, model_id: int | None = None):
    """Every reign of a class's crowns (or of one model's crowns there), axis by axis."""
    return (
        ChampionReign.objects.filter(hardware_class=hardware_class, model_id=model_id)
        .select_related("benchmark__model", "dethroned_by")
        .order_by("axis", "position")
    )


def recipe_reproductions(recipe_id: str):
    """Where a recipe was measured: per class and model, by how many pods, with the spreads."""
    return RecipeReproduction.objects.filter(recipe_id=recipe_id).select_related(
        "hardware_class", "model"
    )
