"""Reads of recipes: which ones public benchmarks use, a recipe's page and API answer (its
benchmarks, commands, diffs, reproductions and serve-flag policy), and the commands and
reproductions shown on a benchmark's page (docs/recipes.md)."""

from dataclasses import dataclass, field

from django.db.models import Count, Min, Q

from board.champions import Axis, Reproduction, Spread
from board.models import Benchmark, Champion, RecipeReproduction, Run
from board.revisions import is_commit, resolve_commit
from board.selectors.benchmarks import BenchmarkView
from recipes.commands import assemble_commands
from recipes.diff import diff_recipes
from recipes.models import Recipe
from recipes.policy import check_recipe, drafter_verified_by


def recipes_in_use():
    """Recipe ids that public benchmarks point at, with how many benchmarks and pods use each."""
    return (
        Benchmark.objects.public()
        .filter(recipe__isnull=False)
        .values("recipe_id", "recipe__engine", "recipe__context_len")
        .annotate(n_benchmarks=Count("id"), n_pods=Count("key_fingerprint", distinct=True))
        .order_by("-n_benchmarks", "recipe_id")
    )


RECIPE_BENCHMARKS_SHOWN = 100
RECIPE_MODELS_WITH_COMMANDS = 5
RECIPE_DIFF_PAIRS = 5
MANIFEST_REVISION = "extras__deployment_manifest__verification__revision"


def measured_commit(commit, hf_revision, manifest) -> str | None:
    """The commit a run's weights were measured at, lower case: the one the weight check
    verified (`Run.commit`), else the one it resolves from what the pod declared (its
    `hf_revision`, else its manifest's verified revision: submissions/weights.py
    `resolve_commit`, the one definition); None when neither names a commit."""
    if is_commit(commit):
        return commit.lower()
    return resolve_commit(hf_revision, manifest if isinstance(manifest, dict) else None)


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
            MANIFEST_REVISION,
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
        revision = measured_commit(
            row.get("commit"),
            row.get("hf_revision"),
            {"verification": {"revision": row.get(MANIFEST_REVISION)}},
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


def benchmark_commands(view: BenchmarkView) -> dict | None:
    """The commands that reproduce a benchmark's recipe with its model at the commit measured
    (docs/recipes.md §Commands); None without a recipe or a Hugging Face repository."""
    benchmark, run = view.benchmark, view.core_run
    recipe = benchmark.recipe
    if recipe is None or not benchmark.model.hf_repo:
        return None
    extras = run.extras if run else {}
    manifest = extras.get("deployment_manifest") if isinstance(extras, dict) else None
    revision = measured_commit(run.commit, run.hf_revision, manifest) if run else None
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
