"""Benchmarks: their hardware class, model and recipe rows, a new benchmark of a run, and the
summary rewritten from its runs whenever one of them changes (docs/trust-and-ranking.md
§Benchmarks)."""

import hashlib
import json
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q

from board.hardware import Family, HardwareClassSpec
from board.jsonsafe import storable
from board.models import (
    Badge,
    Benchmark,
    BenchmarkGroup,
    BenchModel,
    Champion,
    ChampionReign,
    ClassSummary,
    FlagTarget,
    HardwareClass,
    ModelClassSummary,
    ModerationFlag,
    RecipeReproduction,
    Run,
    SuiteKind,
    Trust,
    Verification,
)
from board.perf_marks import benchmark_checks
from board.suites import current_text_suites
from recipes.commands import VLLM_ENGINES, assemble_commands
from recipes.models import Recipe
from recipes.normalise import (
    CONTEXT_FLOOR,
    context_len_of,
)

MIN_COVERAGE = 0.90


AGENTIC_TESTED_ABOVE = 5.0  # every harness at or below this many points: "agentic untested"


def hardware_class_fields(spec: HardwareClassSpec) -> dict:
    return {
        "name": spec.name,
        "family": str(spec.family),
        "device_count": spec.device_count,
        "memory_bandwidth_gbs": spec.memory_bandwidth_gbs,
        "memory_gb": spec.memory_gb,
        "unified_memory": spec.unified_memory,
    }


def hardware_class_for(spec: HardwareClassSpec) -> HardwareClass:
    hardware_class, _ = HardwareClass.objects.get_or_create(
        slug=spec.slug, defaults=hardware_class_fields(spec)
    )
    return hardware_class


def model_canonical_id(model_name: str, hf_repo: str) -> str:
    """docs/trust-and-ranking.md §Models: hf_repo lowercased when known, else the declared name."""
    canonical = hf_repo.strip().lower() if hf_repo else model_name.strip()
    return storable(canonical)[:300]


def model_for(model_name: str, hf_repo: str, *, frontier: bool) -> BenchModel:
    """The model row of a run's canonical id, created on first sight. docs/trust-and-ranking.md
    §Models: a model named by a repository is called by that repository (the Hub's name once a
    weight check verifies it, `name_model_from_hub`), never by the name a pod typed; only a frontier
    API without a repository is a frontier model — frontier is a property of a run's target."""
    bench_model, _ = BenchModel.objects.get_or_create(
        canonical_id=model_canonical_id(model_name, hf_repo),
        defaults={
            "hf_repo": storable(hf_repo)[:300],
            "display_name": storable(hf_repo.strip() or model_name)[:300],
            "is_frontier": frontier and not hf_repo,
        },
    )
    return bench_model


def name_model_from_hub(run: Run, hub_name: str = "") -> None:
    """A verified run's repository is as the Hub answered for it at its commit: the model takes
    the Hub's spelling of it (`hub_name`, the id the Hub answered; the pod's spelling when the
    Hub gave none, or named another repository) and is open weights."""
    if run.verification != Verification.VERIFIED or not run.benchmark_id or not run.hf_repo:
        return
    typed = run.hf_repo.strip()
    name = hub_name if hub_name and hub_name.lower() == typed.lower() else typed
    name = storable(name)[:300]
    BenchModel.objects.filter(benchmarks=run.benchmark_id).exclude(
        hf_repo=name, display_name=name, is_frontier=False
    ).update(hf_repo=name, display_name=name, is_frontier=False)


@dataclass(frozen=True)
class BenchmarkIdentity:
    """What every run of one benchmark shares beyond key, model and hardware: one weight set and
    one serving recipe (docs/recipes.md, "One benchmark, one weight set, one recipe")."""

    weight_set: str
    recipe_id: str | None

    def matches(self, benchmark: Benchmark) -> bool:
        return benchmark.weight_set == self.weight_set and benchmark.recipe_id == self.recipe_id


def weight_set_of(bundle: dict, weights_hash: str) -> str:
    """The run's weight set: its weights_hash, or for a frontier API the endpoint it asked
    (provider, model and base URL, hashed so the URL itself is never stored here)."""
    if weights_hash:
        return weights_hash.lower()
    if bundle.get("target_class") != "remote_api":
        return ""
    environment = bundle.get("environment") if isinstance(bundle.get("environment"), dict) else {}
    declared = bundle.get("frontier") if isinstance(bundle.get("frontier"), dict) else {}
    seen = environment.get("frontier") if isinstance(environment.get("frontier"), dict) else {}
    endpoint = {
        "provider": declared.get("provider") or seen.get("provider"),
        "model": declared.get("model") or seen.get("model"),
        "base_url": seen.get("base_url") or declared.get("base_url"),
    }
    digest = hashlib.sha256(json.dumps(endpoint, sort_keys=True, default=str).encode()).hexdigest()
    return "endpoint:" + digest[:32]


def group_of(run: Run) -> str:
    return run.job_group or f"run:{run.run_id}"  # a bundle without job_group stands alone


def benchmark_public_id(key_fingerprint: str, group: str, *identity: str) -> str:
    """A benchmark's public id, stable across rebuilds: from key and group, and for a second
    weight set or recipe within the group, from those too."""
    return hashlib.sha256(":".join((key_fingerprint, group, *identity)).encode()).hexdigest()[:12]


def locked_benchmark(benchmark_id: int) -> Benchmark:
    """The benchmark with what its summary reads (model, class, recipe), its row alone locked
    until the transaction ends."""
    return (
        Benchmark.objects.select_related("model", "hardware_class", "recipe")
        .select_for_update(of=("self",))
        .get(pk=benchmark_id)
    )


def new_benchmark(
    run: Run,
    group: str,
    bench_model: BenchModel,
    hardware_class: HardwareClass,
    recipe: Recipe | None,
    identity: BenchmarkIdentity,
    flagged: bool,
) -> tuple[Benchmark, bool]:
    """A new benchmark of the run, inserted with its summary of that one run (`flagged`: a
    moderator's flag on its first public id), and whether this call inserted it: when its
    public id is taken by a benchmark of the same key and identity (a concurrent commit of this
    job), that one, unlocked and unsummarised. The second public id (a second weight set or
    recipe within the group) is summarised once inserted."""
    for seed in ((), (identity.weight_set, identity.recipe_id or "")):
        public_id = benchmark_public_id(run.key_fingerprint, group, *seed)
        created = Benchmark(
            public_id=public_id,
            key_fingerprint=run.key_fingerprint,
            model=bench_model,
            hardware_class=hardware_class,
            hardware_label=run.hardware_label,
            weight_set=identity.weight_set,
            recipe=recipe,
            created_at=run.committed_at,
            flagged=flagged and not seed,
        )
        if not seed:
            _summarise(created, [run])
        if _insert_unless_taken(created, job_group=group):
            if seed:
                refresh_benchmark(created.pk, locked=created, runs=[run])
            return created, True
        taken = Benchmark.objects.get(public_id=public_id)
        if taken.key_fingerprint == run.key_fingerprint and identity.matches(taken):
            # A concurrent commit of this job created it first.
            return taken, False
    raise IntegrityError(f"no free public id for {run.key_fingerprint}:{group}")


def link_group(key_fingerprint: str, job_group: str, benchmark: Benchmark) -> None:
    # A concurrent commit of this job may have linked it first.
    BenchmarkGroup.objects.bulk_create(
        [BenchmarkGroup(key_fingerprint=key_fingerprint, job_group=job_group, benchmark=benchmark)],
        ignore_conflicts=True,
    )


def _insert_unless_taken(benchmark: Benchmark, *, job_group: str) -> bool:
    """Insert the benchmark and link it to the key's job group, unless its public id is taken
    (the only unique column of a benchmark: a savepoint keeps the transaction going then).
    Whether it inserted."""
    try:
        with transaction.atomic():
            benchmark.save(force_insert=True)
    except IntegrityError:
        benchmark.pk = None
        return False
    link_group(benchmark.key_fingerprint, job_group, benchmark)
    return True


def refresh_benchmark(
    benchmark_id: int, *, locked: Benchmark | None = None, runs: list[Run] | None = None
) -> Benchmark:
    """Rewrite a benchmark's summary from its runs (docs/trust-and-ranking.md §Benchmarks,
    docs/cohorts.md). Call inside a transaction holding the benchmark's row lock (`locked`: the
    row as read under that lock, with its class, model and recipe; `runs`: all its runs in
    commit order, when the caller holds them)."""
    benchmark = locked or Benchmark.objects.select_related("hardware_class", "model", "recipe").get(
        pk=benchmark_id
    )
    all_runs = list(benchmark.runs.order_by("committed_at", "pk")) if runs is None else runs
    _apply_flags(benchmark, all_runs)
    _summarise(benchmark, all_runs)
    benchmark.save()
    return benchmark


def _summarise(benchmark: Benchmark, all_runs: list[Run]) -> None:
    """Set the summary fields of `benchmark` (its class, model and recipe at hand) from its runs
    in commit order, with the moderators' flags on both already applied."""
    runs = [r for r in all_runs if not r.flagged]  # a flagged run is shown, never counted
    current_suites = current_text_suites()
    text_runs = [r for r in runs if r.kind == SuiteKind.TEXT]
    current_text = [r for r in text_runs if r.suite_id in current_suites]
    perf_runs = [r for r in runs if r.kind == SuiteKind.PERF]
    text = _best_text_run(current_text) or (text_runs[-1] if text_runs else None)
    perf = _best(perf_runs)
    badges: list[str] = []

    qualifying_text = text if text in current_text and _text_qualifies(text) else None
    if text is None or text not in current_text:
        badges.append(Badge.NO_TEXT)
    elif text.extras.get("bench_seed") is not None:
        badges.append(Badge.SEEDED)
    elif (text.quality.get("coverage_ratio") or 0) < MIN_COVERAGE:
        badges.append(Badge.LOW_COVERAGE)
    badges.extend(grading_badges(text.quality if text in current_text else {}))
    if perf is None:
        badges.append(Badge.NO_PERF)

    core = [r for r in (text, perf) if r is not None] or runs
    trust = _worst_trust(core)
    if trust == Trust.SELF_REPORTED:
        badges.append(Badge.SELF_REPORTED)
    if any(r.verification == Verification.PENDING for r in core):
        badges.append(Badge.WEIGHTS_PENDING)
    if any(r.verification == Verification.MISMATCH for r in core):
        badges.append(Badge.WEIGHTS_MISMATCH)
    if any(r.verification == Verification.UNVERIFIABLE for r in core):
        badges.append(Badge.WEIGHTS_UNVERIFIABLE)
    if any(r.target_class == "local_weights" for r in core):
        badges.append(Badge.LOCAL_WEIGHTS)
    frontier = benchmark.model.is_frontier or any(r.target_class == "remote_api" for r in core)
    if frontier:  # a property of the runs' target (docs/trust-and-ranking.md §Models)
        badges.append(Badge.FRONTIER)
    if any(r.claimed_hardware for r in runs):
        badges.append(Badge.CLAIMED_HARDWARE)
    if benchmark.hardware_class.family == Family.UNLABELED:
        badges.append(Badge.UNLABELED_HARDWARE)
    withheld = any(r.secret_detected and not r.secret_cleared for r in all_runs)
    if withheld:
        badges.append(Badge.SECRET_DETECTED)
    if any(r.kind == SuiteKind.UNKNOWN and r.board != "perf" for r in runs):
        badges.append(Badge.UNKNOWN_SUITE)
    if any(r.drafter_status == "unpinned" for r in runs):
        badges.append(Badge.DRAFTER_UNPINNED)
    if any(r.drafter_status == "missing" for r in runs):
        badges.append(Badge.DRAFTER_MISSING)
    if benchmark.flagged or len(runs) < len(all_runs):
        badges.append(Badge.FLAGGED)
    checks = benchmark_checks(perf)  # docs/cohorts.md §Rooflines, §Drafter health
    badges.extend(checks.badges)

    recipe_run = text or perf
    context_len = context_len_of(recipe_run.extras.get("recipe")) if recipe_run else None
    below_floor = context_len is None or context_len < CONTEXT_FLOOR
    if below_floor:
        badges.append(Badge.BELOW_CONTEXT_FLOOR)

    agentic = [
        {"harness": r.harness, "score": r.quality.get("score"), "run_id": r.run_id}
        for r in runs
        if r.kind == SuiteKind.AGENTIC
    ]
    if not any((entry["score"] or 0) > AGENTIC_TESTED_ABOVE for entry in agentic):
        badges.append(Badge.AGENTIC_UNTESTED)

    complete = (
        qualifying_text is not None
        and qualifying_text.trust == Trust.ATTESTED
        and perf is not None
        and perf.trust == Trust.ATTESTED
    )
    ranked = (
        complete
        and not below_floor
        and Badge.SECRET_DETECTED not in badges
        and not frontier
        and not benchmark.flagged
        and Badge.GRADING_DISPUTED not in badges
        and not checks.unranked
    )

    quality = text.quality if text else {}
    perf_summary = perf.perf if perf else {}
    peak = perf_summary.get("peak") or {}
    single = perf_summary.get("single_stream") or {}
    latency = perf_summary.get("latency") or {}
    benchmark.trust = trust
    benchmark.verification = _worst_verification(core)
    benchmark.weight_differences = [
        {"run_id": r.run_id, **difference} for r in core for difference in r.weight_differences
    ]
    benchmark.withheld = withheld
    benchmark.complete = complete
    benchmark.ranked = ranked
    benchmark.badges = sorted(set(badges), key=[b.value for b in Badge].index)
    benchmark.composite = quality.get("composite")
    benchmark.coverage_label = quality.get("coverage_label") or ""
    benchmark.coverage_ratio = quality.get("coverage_ratio")
    benchmark.categories = quality.get("categories") or []
    benchmark.agentic = agentic
    benchmark.modalities = {
        r.kind: {"score": r.quality.get("score"), "run_id": r.run_id}
        for r in runs
        if r.kind in (SuiteKind.VISION, SuiteKind.AUDIO, SuiteKind.VIDEO)
    }
    benchmark.peak_tps = peak.get("tps")
    benchmark.peak_cohort = peak.get("cohort") or ""
    benchmark.single_stream_tps = single.get("tps")
    benchmark.single_stream_cohort = (
        (single.get("cohort") or "") if single.get("tps") is not None else ""
    )
    benchmark.ttft_ms = latency.get("ttft_ms")
    benchmark.tpot_ms = latency.get("tpot_ms")
    benchmark.latency_cohort = (
        (latency.get("cohort") or "") if latency.get("ttft_ms") is not None else ""
    )
    benchmark.context_len = context_len
    benchmark.submitted_at = all_runs[-1].committed_at if all_runs else None
    benchmark.text_run_id = text.run_id if text else ""
    benchmark.perf_run_id = perf.run_id if perf else ""
    # Its place in the champion replay: when the runs that made it complete had both committed.
    benchmark.completed_at = (
        max(qualifying_text.committed_at, perf.committed_at) if complete else None
    )
    benchmark.recipe_applicable = recipe_is_applicable(benchmark.recipe, benchmark.model)
    benchmark.roofline = checks.roofline
    benchmark.drafter_health = checks.drafter


def _apply_flags(benchmark: Benchmark, runs: list[Run]) -> None:
    """Copy the moderators' flags (ModerationFlag) onto the benchmark and its runs."""
    flags = set(
        ModerationFlag.objects.filter(
            Q(target=FlagTarget.BENCHMARK, target_id=benchmark.public_id)
            | Q(target=FlagTarget.RUN, target_id__in=[run.run_id for run in runs])
        ).values_list("target", "target_id")
    )
    benchmark.flagged = (FlagTarget.BENCHMARK, benchmark.public_id) in flags
    for run in runs:
        flagged = (FlagTarget.RUN, run.run_id) in flags
        if run.flagged != flagged:
            run.flagged = flagged
            Run.objects.filter(pk=run.pk).update(flagged=flagged)


def recipe_is_applicable(recipe: Recipe | None, model: BenchModel) -> bool:
    """docs/champions.md: someone else can apply the recipe — a vLLM recipe keeps flags once
    scrubbed, any other engine has a command the board can assemble."""
    if recipe is None:
        return False
    if recipe.engine in VLLM_ENGINES:
        return bool(recipe.flags)
    commands = assemble_commands(
        recipe.spec(), hf_repo=model.hf_repo or model.canonical_id, revision=None
    )
    return bool(recipe.flags) or bool(commands["docker_run"] or commands["bare_metal"])


def _text_qualifies(run: Run) -> bool:
    grading = run.quality.get("grading")
    return (
        run.extras.get("bench_seed") is None
        and (run.quality.get("coverage_ratio") or 0) >= MIN_COVERAGE
        # A suite the board holds as data: its hash known, every tier there.
        and (grading is None or (grading["suite_hash_known"] and grading["tiers_complete"]))
    )


def grading_badges(quality: dict) -> list[str]:
    """docs/trust-and-ranking.md §Server-side grading: what the board's check of a text run found."""
    grading = quality.get("grading")
    if not grading:
        return []
    return [
        badge
        for badge, found in (
            (Badge.GRADING_DISPUTED, grading["disputed"]),
            (Badge.SUITE_HASH_UNKNOWN, not grading["suite_hash_known"]),
            (Badge.TIER_MISSING, not grading["tiers_complete"]),
            (Badge.UNKNOWN_CASES, grading["unknown_ids"] > 0),
        )
        if found
    ]


TRUST_ORDER = {Trust.ATTESTED: 0, Trust.PENDING: 1, Trust.SELF_REPORTED: 2}


def _best(runs: list[Run]) -> Run | None:
    """The run that speaks for a board: the latest attested one, else the latest."""
    attested = [r for r in runs if r.trust == Trust.ATTESTED]
    return (attested or runs)[-1] if runs else None


def _best_text_run(runs: list[Run]) -> Run | None:
    qualifying = [r for r in runs if _text_qualifies(r)]
    return _best(qualifying) or _best(runs)


VERIFICATION_ORDER = [
    Verification.VERIFIED,
    Verification.NOT_APPLICABLE,
    Verification.PENDING,
    Verification.UNVERIFIABLE,
    Verification.MISMATCH,
]


def _worst_verification(runs: list[Run]) -> str:
    if not runs:
        return Verification.PENDING
    return max(
        (r.verification for r in runs), key=lambda v: VERIFICATION_ORDER.index(Verification(v))
    )


def _worst_trust(runs: list[Run]) -> str:
    if not runs:
        return Trust.PENDING
    return max((r.trust for r in runs), key=lambda trust: TRUST_ORDER[Trust(trust)])


def clear_board() -> None:
    """Delete everything derived from bundles (before a rebuild replays them). Presets and
    moderators' flags stay."""
    Champion.objects.all().delete()
    ChampionReign.objects.all().delete()
    RecipeReproduction.objects.all().delete()
    ClassSummary.objects.all().delete()
    ModelClassSummary.objects.all().delete()
    Run.objects.all().delete()
    Benchmark.objects.all().delete()
    BenchModel.objects.all().delete()
    HardwareClass.objects.filter(preset=False).delete()
