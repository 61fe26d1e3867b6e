"""Reads of the board: what pages, the read API and the pod channel's answers show."""

import re
from dataclasses import dataclass, field

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import Count, Exists, F, Min, OuterRef, Prefetch, Q, Subquery, Sum
from django.db.models.functions import Coalesce, Length

from board.champions import Axis, Reproduction, Spread
from board.hardware import (
    Family,
    HardwareClassSpec,
    board_order_key,
    normalise_label,
    query_device_count,
)
from board.models import (
    Benchmark,
    BenchModel,
    Champion,
    ChampionReign,
    ClassSummary,
    HardwareClass,
    ModelClassSummary,
    PerfCohort,
    RecipeReproduction,
    Result,
    Run,
    SuiteKind,
    Trust,
    Verification,
)
from board.services import api_datetime
from recipes.commands import assemble_commands
from recipes.diff import diff_recipes
from recipes.models import Recipe
from recipes.policy import check_recipe, drafter_verified_by
from recipes.scrub import scrub_recipe

TRUE_WORDS = ("1", "true", "yes")


def commit_summary(run_id: str) -> dict:
    """The extra fields of a final-submit answer (docs/protocol.md §The final)."""
    return run_commit_summary(Run.objects.select_related("benchmark").get(run_id=run_id))


def run_commit_summary(run: Run) -> dict:
    """The same fields, of a run at hand (with its benchmark)."""
    return {
        "trust_tier": run.trust,
        "verification": run.verification,
        "n_results": run.n_results,
        "benchmark_id": run.benchmark.public_id if run.benchmark else None,
        "url": f"/runs/{run.run_id}/",
    }


def public_run(run_id: str) -> Run | None:
    """A run visitors may see, with its benchmark; its cases are read a page at a time
    (`run_results_page`, `run_result_batches`), never all at once."""
    return Run.objects.public().select_related("benchmark").filter(run_id=run_id).first()


def run_detail(run_id: str) -> Run | None:
    return Run.objects.public().select_related("benchmark__model").filter(run_id=run_id).first()


def _nearest_page(paginator: Paginator, number) -> int:
    """Django's `get_page` choice: the first page for junk, the last for a page past it."""
    try:
        return paginator.validate_number(number)
    except PageNotAnInteger:
        return 1
    except EmptyPage:
        return paginator.num_pages


def run_results_page(
    run: Run, number, per_page: int, *, case_id: str = "", category: str = "", strict=False
) -> Page:
    """One page of a run's cases in position order (docs/website.md §Reading a run).

    Unfiltered, a page is a range of positions (a run's cases are numbered 0 … n_results - 1)
    read from the (run, position) index and counted by `n_results`: one query, whatever the run
    holds. Filtered by case or category: a count and a page, two queries. `strict` (the API)
    raises PageNotAnInteger or EmptyPage for a page that is not one; otherwise (the HTML page)
    the nearest page is shown, as Django's `get_page` does."""
    results = Result.objects.filter(run=run).order_by("position")
    if case_id:
        results = results.filter(case_id=case_id)
    elif category:
        results = results.filter(category=category)
    paginator = Paginator(results, per_page)
    if case_id or category:
        return paginator.page(number) if strict else paginator.get_page(number)
    paginator.count = run.n_results  # known: no COUNT over the run's rows
    number = paginator.validate_number(number) if strict else _nearest_page(paginator, number)
    start = (number - 1) * per_page
    rows = list(results.filter(position__gte=start, position__lt=start + per_page))
    return Page(rows, number, paginator)


def run_result_batches(run: Run, size: int, max_bytes: int):
    """Every case of a run in position order, at most `size` at a time and, past the first
    case of a batch, at most `max_bytes` of model output: per `size` cases one query for their
    output lengths, then one per batch. One batch is held at a time (the public bundle streams
    them), so a run of a few huge answers costs no more than one of many small ones."""
    for start in range(0, run.n_results, size):
        lengths = Result.objects.filter(
            run=run, position__gte=start, position__lt=start + size
        ).values_list("position", Length("raw_output"))
        ranges, first, held = [], start, 0
        for position, length in lengths.order_by("position"):
            if position > first and held + (length or 0) > max_bytes:
                ranges.append((first, position))
                first, held = position, 0
            held += length or 0
        ranges.append((first, start + size))
        for low, high in ranges:
            yield list(
                Result.objects.filter(run=run, position__gte=low, position__lt=high).order_by(
                    "position"
                )
            )


def public_runs_by_id(run_ids) -> dict[str, dict]:
    """The runs among these that visitors may see, by id, with their board and model (one
    query, whatever their number)."""
    rows = (
        Run.objects.public()
        .filter(run_id__in=list(run_ids))
        .values("run_id", "board", "model_name", "benchmark__public_id")
    )
    return {row["run_id"]: row for row in rows}


def benchmarks(
    *,
    hardware: str | None = None,
    model: str | None = None,
    model_id: int | None = None,
    trust: str | None = None,
    ranked: str | None = None,
    search: str | None = None,
    pod: str | None = None,
    without_trust: str | None = None,
):
    queryset = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class")
        .order_by("-submitted_at", "-pk")
    )
    # The class and model are matched in a subquery, not a join, so that the database reads the
    # page in order from the per-class (per-model) index instead of sorting every match.
    if hardware:
        queryset = queryset.filter(
            hardware_class_id=Subquery(HardwareClass.objects.filter(slug=hardware).values("pk"))
        )
    if model:
        queryset = queryset.filter(
            model_id__in=Subquery(
                BenchModel.objects.filter(canonical_id__iexact=model).values("pk")
            )
        )
    if model_id is not None:  # one model exactly: its page
        queryset = queryset.filter(model_id=model_id)
    if trust:
        queryset = queryset.filter(trust=trust)
    if without_trust:  # the board's default: self-reported ones behind a filter
        queryset = queryset.exclude(trust=without_trust)
    if ranked not in (None, ""):
        queryset = queryset.filter(ranked=ranked.lower() in TRUE_WORDS)
    if search:
        queryset = queryset.filter(
            Q(model__canonical_id__icontains=search) | Q(model__display_name__icontains=search)
        )
    if pod:
        queryset = queryset.filter(key_fingerprint=pod)
    return queryset


# The wide JSON columns a benchmark table (board/tables.py) never prints: left in the database.
TABLE_DEFERRED = ("weight_differences", "agentic", "modalities", "categories")


def benchmark_table(*, with_categories: bool = False, **filters):
    """`benchmarks(**filters)` with only what a table row shows (and the quality categories,
    with `with_categories`)."""
    deferred = [name for name in TABLE_DEFERRED if not (with_categories and name == "categories")]
    return benchmarks(**filters).defer(*deferred)


@dataclass
class WeightFile:
    path: str
    sha256: str
    verdict: str  # "matches Hugging Face", a difference kind, or the run's verdict


@dataclass
class BenchmarkView:
    """A benchmark with what its page shows, read in a fixed number of queries."""

    benchmark: Benchmark
    runs: list[Run]
    core_run: Run | None  # the text (else perf) run whose recipe and weights speak for it
    perf_run: Run | None
    cohorts: list[PerfCohort]
    recipe: dict | None  # scrubbed: safe on any public surface
    weight_files: list[WeightFile] = field(default_factory=list)


def _speaking(runs: list[Run]) -> Run | None:
    """The run that speaks for a board: the latest attested one, else the latest (as
    refresh_benchmark decides)."""
    attested = [run for run in runs if run.trust == Trust.ATTESTED]
    return (attested or runs)[-1] if runs else None


def _weight_files(run: Run | None, differences: list[dict]) -> list[WeightFile]:
    if run is None:
        return []
    declared = run.extras.get("weights_per_file")
    if not isinstance(declared, dict):
        declared = {}
    differing = {d.get("path"): d.get("kind", "differs") for d in differences}
    if run.verification == Verification.VERIFIED:
        default = "matches Hugging Face"
    else:
        default = run.get_verification_display()
    files = [
        WeightFile(str(path), str(sha), differing.get(path, default))
        for path, sha in sorted(declared.items())
    ]
    known = set(declared)
    files += [
        WeightFile(str(path), "", kind)
        for path, kind in differing.items()
        if path is not None and path not in known
    ]
    return files


def benchmark_detail(public_id: str) -> BenchmarkView | None:
    """A benchmark with its public runs and its perf run's cohorts, in three queries."""
    benchmark = (
        Benchmark.objects.public()
        .select_related("model", "hardware_class", "recipe")
        .prefetch_related(
            Prefetch(
                "runs",
                queryset=Run.objects.public().order_by("committed_at", "pk"),
                to_attr="public_runs",
            )
        )
        .filter(public_id=public_id)
        .first()
    )
    if benchmark is None:
        return None
    runs = benchmark.public_runs
    perf_run = _speaking([run for run in runs if run.kind == SuiteKind.PERF])
    text_run = _speaking([run for run in runs if run.kind == SuiteKind.TEXT])
    core_run = text_run or perf_run
    cohorts = list(PerfCohort.objects.filter(run=perf_run)) if perf_run else []
    benchmark.perf_cohorts = cohorts  # the API serializer reads it
    recipe = scrub_recipe(core_run.extras.get("recipe")) if core_run else None
    differences = [
        d for d in benchmark.weight_differences if core_run and d.get("run_id") == core_run.run_id
    ]
    return BenchmarkView(
        benchmark=benchmark,
        runs=runs,
        core_run=core_run,
        perf_run=perf_run,
        cohorts=cohorts,
        recipe=recipe,
        weight_files=_weight_files(core_run, differences),
    )


def holds_attested(field: str) -> Exists:
    """Whether the class (`field="hardware_class"`) or model (`"model"`) holds a public attested
    benchmark: what puts a class or a model on the public lists (docs/hardware-classes.md
    §Preset classes). A label or a model name alone, or self-reported uploads of them, never do:
    anyone can enroll a key and send any text."""
    attested = Benchmark.objects.public().filter(trust=Trust.ATTESTED, **{field: OuterRef("pk")})
    return Exists(attested)


def hardware_classes():
    """The classes listed publicly: the presets, and those holding a public attested benchmark."""
    return HardwareClass.objects.filter(Q(preset=True) | holds_attested("hardware_class")).order_by(
        "-preset", "device_count", "name"
    )


def classes_with_benchmarks() -> set[int]:
    """Ids of the hardware classes holding at least one public benchmark, from the class
    summaries (a read model): one query of one row per class, whatever the number of
    benchmarks."""
    return set(
        ClassSummary.objects.filter(benchmark_count__gt=0).values_list(
            "hardware_class_id", flat=True
        )
    )


def picker_classes() -> tuple[list[HardwareClass], set[int]]:
    """The board's class picker: the Spark presets always (greyed out while empty), the other
    classes once they hold a public attested benchmark, in board order (Spark by node count, the others
    by their best throughput, Unlabeled last); and the ids of the classes holding one."""
    occupied = classes_with_benchmarks()
    listed = [
        cls
        for cls in hardware_classes().select_related("summary")
        if cls.pk in occupied or (cls.preset and cls.family == Family.DGX_SPARK)
    ]
    listed.sort(key=_board_order)
    return listed, occupied


def hardware_class(slug: str) -> HardwareClass | None:
    return HardwareClass.objects.listed().filter(slug=slug).first()


def hardware_classes_with_counts():
    """Every class with how many public and ranked benchmarks it holds, presets first: the
    counts come from the class summaries (a read model), never from counting benchmarks; the
    summary rides along for the best throughput the index shows."""
    return (
        hardware_classes()
        .select_related("summary")
        .annotate(
            n_benchmarks=Coalesce(F("summary__benchmark_count"), 0),
            n_ranked=Coalesce(F("summary__ranked_count"), 0),
        )
    )


def models_with_counts(search: str | None = None):
    """Models holding an attested published benchmark, with how many published benchmarks
    (ranked), summed over their per-class read models: a row per model and class, not per
    benchmark."""
    queryset = (
        BenchModel.objects.annotate(
            n_benchmarks=Sum("class_summaries__benchmark_count"),
            n_ranked=Sum("class_summaries__ranked_count"),
        )
        .filter(n_benchmarks__gt=0)
        .filter(holds_attested("model"))  # listed once it holds an attested benchmark
        .order_by("canonical_id")
    )
    if search:
        queryset = queryset.filter(
            Q(canonical_id__icontains=search) | Q(display_name__icontains=search)
        )
    return queryset


def model_speed_by_class(model: BenchModel) -> list[dict]:
    """Per hardware class holding public benchmarks of `model` (latest first): how many, whether
    any ranks, and the benchmark with the best peak, single-stream and latency figure among the
    ranked ones (among all of them when none ranks). One query over the read model
    (`ModelClassSummary`), whatever the number of benchmarks."""
    summaries = (
        ModelClassSummary.objects.filter(model=model)
        .select_related("hardware_class", "best_peak", "best_single", "best_latency")
        .order_by(F("latest_at").desc(nulls_last=True), "hardware_class_id")
    )
    return [
        {
            "cls": summary.hardware_class,
            "ranked": summary.ranked_count > 0,
            "count": summary.benchmark_count,
            "peak": summary.best_peak,
            "single": summary.best_single,
            "latency": summary.best_latency,
        }
        for summary in summaries
    ]


def bench_model(canonical_id: str) -> BenchModel | None:
    return BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()


def recipes_in_use():
    """Recipe ids that public benchmarks point at, with how many benchmarks and pods use each."""
    return (
        Benchmark.objects.public()
        .filter(recipe__isnull=False)
        .values("recipe_id", "recipe__engine", "recipe__context_len")
        .annotate(n_benchmarks=Count("id"), n_pods=Count("key_fingerprint", distinct=True))
        .order_by("-n_benchmarks", "recipe_id")
    )


# --- recipes ------------------------------------------------------------------------------------

RECIPE_BENCHMARKS_SHOWN = 100
RECIPE_MODELS_WITH_COMMANDS = 5
RECIPE_DIFF_PAIRS = 5
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass
class RecipeUsage:
    """A recipe with what the public may see of its use (docs/recipes.md, "The recipe API")."""

    recipe: Recipe
    benchmarks: list[Benchmark]
    benchmark_count: int
    run_count: int
    pod_count: int
    commands: list[dict] = field(default_factory=list)
    previous: list[dict] = field(default_factory=list)
    champions: list[dict] = field(default_factory=list)
    reproductions: list[dict] = field(default_factory=list)
    policy: dict = field(default_factory=dict)  # docs/recipes.md §The serve-flag policy


def recipe_usage(recipe_id: str) -> RecipeUsage | None:
    """A recipe used by at least one published benchmark, with its benchmarks (newest first),
    counts, commands per model and its diffs. The number of queries is bounded: it does not grow
    with the number of benchmarks that used the recipe."""
    recipe = Recipe.objects.filter(pk=recipe_id).first()
    if recipe is None:
        return None
    published = Benchmark.objects.public().filter(recipe=recipe)
    totals = published.aggregate(
        benchmarks=Count("pk"), pods=Count("key_fingerprint", distinct=True)
    )
    if not totals["benchmarks"]:
        return None  # only withheld benchmarks used it: nothing to show
    # The runs counted, and their drafter checks (docs/recipes.md §The serve-flag policy).
    runs_seen = (
        Run.objects.public()
        .filter(benchmark__in=published)
        .aggregate(
            runs=Count("pk"),
            pinned=Count("pk", filter=Q(drafter_status="pinned_ok")),
            refused=Count("pk", filter=Q(drafter_status__in=("unpinned", "missing"))),
        )
    )
    runs = runs_seen["runs"]
    shown = list(
        published.select_related("model", "hardware_class").order_by("-created_at", "-pk")[
            :RECIPE_BENCHMARKS_SHOWN
        ]
    )
    usage = RecipeUsage(recipe, shown, totals["benchmarks"], runs, totals["pods"])
    usage.commands = _recipe_commands(recipe, shown)
    usage.previous = _previous_recipes(recipe, published)
    usage.champions = _champion_diffs(recipe, published)
    usage.reproductions = recipe_reproductions(recipe.pk)
    usage.policy = recipe_policy(
        recipe,
        ["pinned_ok"] * bool(runs_seen["pinned"]) + ["missing"] * bool(runs_seen["refused"]),
    )
    return usage


def _recipe_commands(recipe: Recipe, shown: list[Benchmark]) -> list[dict]:
    """Commands for each model (newest first, a few) the recipe served, at the commit measured."""
    latest: dict[str, Benchmark] = {}
    for benchmark in shown:
        if benchmark.model.hf_repo and benchmark.model.hf_repo.lower() not in latest:
            latest[benchmark.model.hf_repo.lower()] = benchmark
        if len(latest) == RECIPE_MODELS_WITH_COMMANDS:
            break
    facts: dict[int, dict] = {}
    drafters: dict[int, list[str]] = {}
    for row in (
        Run.objects.public()
        .filter(benchmark__in=[b.pk for b in latest.values()])
        .order_by("committed_at")
        .values(
            "benchmark_id",
            "commit",
            "hf_revision",
            "extras__deployment_manifest__verification__revision",
            "extras__weights_per_file",
            "drafter_status",
        )
    ):
        facts.setdefault(row["benchmark_id"], row)
        drafters.setdefault(row["benchmark_id"], []).append(row["drafter_status"])
    spec = recipe.spec()  # assemble_commands offers only allowlisted images
    commands = []
    for benchmark in latest.values():
        row = facts.get(benchmark.pk, {})
        revision = next(
            (
                value.lower()
                for value in (
                    row.get("commit"),
                    row.get("hf_revision"),
                    row.get("extras__deployment_manifest__verification__revision"),
                )
                if isinstance(value, str) and _COMMIT.fullmatch(value.lower())
            ),
            None,
        )
        commands.append(
            {
                "model": benchmark.model.canonical_id,
                "hf_repo": benchmark.model.hf_repo,
                "revision": revision,
                **assemble_commands(
                    spec,
                    hf_repo=benchmark.model.hf_repo,
                    revision=revision,
                    model_file=_gguf_file(row.get("extras__weights_per_file")),
                    drafter_verified=drafter_verified_by(drafters.get(benchmark.pk, ())),
                ),
            }
        )
    return commands


def _gguf_file(per_file) -> str | None:
    """The GGUF file llama.cpp loads (the first part of a split model)."""
    if not isinstance(per_file, dict):
        return None
    ggufs = sorted(str(path) for path in per_file if str(path).endswith(".gguf"))
    return ggufs[0] if ggufs else None


def _previous_recipes(recipe: Recipe, published) -> list[dict]:
    """Per model and hardware class the recipe ran on (a few), the diff against the recipe of
    the nearest earlier benchmark of that model and class that used another recipe."""
    pairs = (
        published.values("model_id", "hardware_class_id")
        .annotate(first=Min("created_at"))
        .order_by("-first")[:RECIPE_DIFF_PAIRS]
    )
    previous = []
    for pair in pairs:
        earlier = (
            Benchmark.objects.public()
            .filter(
                model_id=pair["model_id"],
                hardware_class_id=pair["hardware_class_id"],
                created_at__lt=pair["first"],
                recipe__isnull=False,
            )
            .exclude(recipe=recipe)
            .select_related("recipe", "model", "hardware_class")
            .order_by("-created_at", "-pk")
            .first()
        )
        if earlier is None:
            continue
        previous.append(
            {
                "model": earlier.model.canonical_id,
                "hardware_class": {
                    "slug": earlier.hardware_class.slug,
                    "name": earlier.hardware_class.name,
                },
                "against_recipe": earlier.recipe_id,
                "against_benchmark": earlier.public_id,
                "diff": diff_recipes(earlier.recipe.public_spec(), recipe.public_spec()),
            }
        )
    return previous


# --- champions (docs/champions.md): reads of the read models, never of raw results -------------


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


def pod_champion_recipes(*, hardware: str | None = None, model: str | None = None) -> dict:
    """The pods' champion list (docs/champions.md): per hardware class and model the throughput
    champion's recipe, grouped by hardware label, best throughput first. One query."""
    champions = list(
        Champion.objects.filter(axis=Axis.THROUGHPUT, model__isnull=False)
        .select_related("hardware_class", "model")
        .order_by("pk")
    )
    # A crown with no one-click recipe offers pods nothing (docs/recipes.md §The serve-flag policy).
    champions = [champion for champion in champions if champion.pod_recipe]
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


def recipe_reproductions(recipe_id: str) -> list[dict]:
    """Where a recipe was measured by ranked benchmarks: per class and model, by how many pods,
    with the spread of each axis (docs/champions.md, "Reproductions"). One query."""
    rows = (
        RecipeReproduction.objects.filter(recipe_id=recipe_id)
        .select_related("hardware_class", "model")
        .order_by("hardware_class__slug", "model__canonical_id")
    )
    found = []
    for row in rows:
        spreads = {
            Axis(axis): Spread(spread["min"], spread["max"]) for axis, spread in row.spreads.items()
        }
        reproduction = Reproduction(
            row.recipe_id,
            row.model.canonical_id,
            tuple(row.benchmark_ids),
            row.pods,
            spreads,
            keys=row.keys,
        )
        found.append(
            {
                "hardware_class": {
                    "slug": row.hardware_class.slug,
                    "name": row.hardware_class.name,
                },
                "model": row.model.canonical_id,
                "pods": row.pods,
                "benchmark_ids": row.benchmark_ids,
                "spreads": row.spreads,
                "summary": reproduction.describe(Axis.THROUGHPUT),
            }
        )
    return found


CHAMPION_DIFF_CLASSES = 5


def _champion_diffs(recipe: Recipe, published) -> list[dict]:
    """Per hardware class the recipe ran on (a few), the diff against the recipe holding that
    class's throughput crown, when another recipe holds it. One query."""
    crowns = (
        Champion.objects.filter(
            hardware_class__in=published.values("hardware_class_id"),
            model__isnull=True,
            axis=Axis.THROUGHPUT,
        )
        .exclude(benchmark__recipe=recipe)
        .select_related("hardware_class", "benchmark__recipe", "benchmark__model")
        .order_by("hardware_class__slug")[:CHAMPION_DIFF_CLASSES]
    )
    return [
        {
            "hardware_class": {"slug": c.hardware_class.slug, "name": c.hardware_class.name},
            "model": c.benchmark.model.canonical_id,
            "against_recipe": c.benchmark.recipe_id,
            "against_benchmark": c.benchmark.public_id,
            "diff": diff_recipes(c.benchmark.recipe.public_spec(), recipe.public_spec()),
        }
        for c in crowns
        if c.benchmark.recipe is not None
    ]


# --- pages: crowns as cards, histories as timelines (docs/website.md §Pages) ---------------------

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
    crown: dict | None  # Champion.summary: value, unit, cohort, model, recipe_id, reproductions

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


def benchmark_reproductions(benchmark: Benchmark) -> dict | None:
    """Where this benchmark's recipe was measured on its class and model by ranked benchmarks,
    as the recipe API shows it; None when it has no recipe or nothing ranked used it."""
    if not benchmark.recipe_id:
        return None
    row = (
        RecipeReproduction.objects.filter(
            recipe_id=benchmark.recipe_id,
            hardware_class_id=benchmark.hardware_class_id,
            model_id=benchmark.model_id,
        )
        .values("pods", "benchmark_ids", "spreads", "keys", "copies")
        .first()
    )
    if row is None:
        return None
    spreads = {
        Axis(axis): Spread(spread["min"], spread["max"]) for axis, spread in row["spreads"].items()
    }
    described = Reproduction(
        benchmark.recipe_id,
        "",
        tuple(row["benchmark_ids"]),
        row["pods"],
        spreads,
        keys=row["keys"],
    ).describe(Axis.THROUGHPUT)
    return row | {"summary": described}


def benchmark_commands(view: "BenchmarkView") -> dict | None:
    """The commands that reproduce a benchmark's recipe with its model at the commit measured
    (docs/recipes.md §Commands); None without a recipe or a Hugging Face repository."""
    benchmark, run = view.benchmark, view.core_run
    recipe = benchmark.recipe
    if recipe is None or not benchmark.model.hf_repo:
        return None
    extras = run.extras if run else {}
    manifest = extras.get("deployment_manifest") if isinstance(extras, dict) else None
    manifest_revision = (
        ((manifest or {}).get("verification") or {}).get("revision")
        if isinstance(manifest, dict)
        else None
    )
    revision = next(
        (
            value.lower()
            for value in (
                run.commit if run else None,
                run.hf_revision if run else None,
                manifest_revision,
            )
            if isinstance(value, str) and _COMMIT.fullmatch(value.lower())
        ),
        None,
    )
    return {
        "revision": revision,
        **assemble_commands(
            recipe.spec(),
            hf_repo=benchmark.model.hf_repo,
            revision=revision,
            model_file=_gguf_file(extras.get("weights_per_file") if extras else None),
            drafter_verified=drafter_verified_by(run.drafter_status for run in view.runs),
        ),
    }


def recipe_policy(recipe: Recipe, drafter_statuses) -> dict:
    """docs/recipes.md §The serve-flag policy: whether pods may apply the recipe in one click,
    why not, and each flag's status (what the pages show beside the commands)."""
    verdict = check_recipe(recipe.spec(), drafter_verified=drafter_verified_by(drafter_statuses))
    return verdict.as_json() | {
        "flags": [flag.as_json() for flag in verdict.statuses],
        "offered_flags": verdict.offered_flags,
    }


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
    rows = sorted(by_class.values(), key=lambda entry: _board_order(entry["cls"]))
    for row in rows:
        row["cards"] = [CrownCard(axis, row["axes"].get(axis.value)) for axis in Axis]
    return rows
