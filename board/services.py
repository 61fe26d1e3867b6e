"""Writes of the board: recording committed runs, their benchmarks, cohorts and scores, and
rewriting a benchmark's summary whenever one of its runs changes (docs/trust-and-ranking.md, docs/cohorts.md)."""

import hashlib
import json
import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from datetime import UTC, datetime, timedelta
from functools import partial

from celery import current_app
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from board.answer_cache import advance_shared_generation, fresh_generation
from board.champions import (
    Axis,
    Entry,
    Reign,
    best_composites,
    copies,
    measure,
    replay,
    reproductions,
)
from board.grading import evidence_digest, suite_cases, text_quality
from board.hardware import Family, HardwareClassSpec, classify_hardware
from board.jsonsafe import storable
from board.lab_writer import write_flag_effects
from board.models import (
    AttestationMethod,
    Badge,
    Benchmark,
    BenchmarkGroup,
    BenchModel,
    BoardGeneration,
    Champion,
    ChampionReign,
    ClassSummary,
    FlagTarget,
    HardwareClass,
    HoldClearance,
    ModelClassSummary,
    ModerationFlag,
    PerfCohort,
    RecipeReproduction,
    Result,
    Run,
    SuiteKind,
    Trust,
    Verification,
)
from board.perf import PerfRowError, summarise_perf
from board.perf_marks import apply_roofline, benchmark_checks, drafter_json
from board.pods import pods_of
from board.quality import score_agentic, score_text_run
from board.suites import SuiteFacts, current_text_suites, suite_named
from config.after_answer import publish_after_answer
from recipes.argv import option_value
from recipes.commands import VLLM_ENGINES, assemble_commands
from recipes.images import offered_image
from recipes.models import Recipe
from recipes.normalise import (
    CONTEXT_FLOOR,
    RecipeSpec,
    context_len_of,
    max_num_seqs_of,
    normalise_recipe,
)
from recipes.policy import Verdict, check_recipe, drafter_verified_by
from recipes.scrub import DRAFTER_PATH, mask_host_paths, public_name
from recipes.secret_scan import find_bundle_secrets
from recipes.services import recipe_of

MIN_COVERAGE = 0.90
AGENTIC_TESTED_ABOVE = 5.0  # every harness at or below this many points: "agentic untested"
# A second job_group of the same key, model, hardware, weights and recipe within this window
# resumes a job.
RESUME_WINDOW = timedelta(hours=72)

logger = logging.getLogger("aeon.board")


class BundleRuleError(ValueError):
    """A signed bundle the board cannot record; `str()` starts with the JSON pointer."""


def check_bundle(*, board: str, bundle: dict) -> None:
    """Board rules a bundle must pass before it is committed (docs/cohorts.md §Validation)."""
    if board != "perf":
        return
    try:
        summarise_perf(bundle.get("results") or [], max_num_seqs_of(bundle.get("recipe")))
    except PerfRowError as exc:
        raise BundleRuleError(f"{exc.pointer}: {exc.message}") from None


# --- recording a committed run ----------------------------------------------------------------


@dataclass
class PreparedRun:
    """Everything a committed bundle turns into that needs no lock: the unsaved run with its
    trust, quality, perf figures and secret pointers, its hardware class and model as named, its
    weight set and recipe, and its rows. `commit_run` then only writes."""

    run: Run
    spec: HardwareClassSpec
    model_name: str
    hf_repo: str
    weight_set: str
    recipe: RecipeSpec | None
    rows: list[dict]
    perf: object | None


def prepare_run(
    *,
    run_id: str,
    key_fingerprint: str,
    model: str,
    board: str,
    suite_id: str | None,
    bundle: dict,
    rows: list[dict],
    bundle_sha256: str,
    model_output_clean: bool = False,
) -> PreparedRun:
    """The CPU half of recording a bundle: parse nothing again, read only the suite table, write
    nothing. `model_output_clean`: see `find_bundle_secrets`."""
    extras = {
        k: v for k, v in bundle.items() if k not in ("results", "run_id", "run_nonce", "final")
    }
    if isinstance(extras.get("artifacts"), list):
        extras["artifacts"] = [
            {k: v for k, v in item.items() if k != "html"} | {"has_html": bool(item.get("html"))}
            for item in extras["artifacts"]
            if isinstance(item, dict)
        ]
    recipe = bundle.get("recipe") if isinstance(bundle.get("recipe"), dict) else None
    environment = bundle.get("environment") if isinstance(bundle.get("environment"), dict) else {}
    hardware = environment.get("hardware") if isinstance(environment.get("hardware"), dict) else {}
    spec, claimed = classify_hardware(
        _text(hardware.get("detected_label")), _text(hardware.get("label"))
    )
    suite = suite_named(suite_id)
    # Every string of the bundle, checkpoint-only rows included (docs/recipes.md, "Secrets").
    secrets = find_bundle_secrets(bundle, rows, model_output_clean=model_output_clean)
    target_class = _text(bundle.get("target_class"))
    hf_repo = _text(bundle.get("hf_repo"))
    verification = (
        Verification.PENDING
        if hf_repo and target_class not in ("local_weights", "remote_api")
        else Verification.NOT_APPLICABLE
    )

    run = Run(
        run_id=run_id,
        key_fingerprint=key_fingerprint,
        model_name=storable(public_name(model))[:300],
        board=board,
        suite_id=suite_id,
        job_sig=bundle["job_sig"].lower() if isinstance(bundle.get("job_sig"), str) else None,
        job_group=bundle["job_group"].lower() if isinstance(bundle.get("job_group"), str) else None,
        bundle_sha256=bundle_sha256,
        extras=storable(extras),
        n_results=len(rows),
        kind=suite.kind if suite else (SuiteKind.PERF if board == "perf" else SuiteKind.UNKNOWN),
        harness=storable(_text(bundle.get("harness")))[:60],
        target_class=storable(target_class)[:40],
        hardware_label=storable(
            mask_host_paths(_text(hardware.get("detected_label")) or _text(hardware.get("label")))
        )[:300],
        claimed_hardware=claimed,
        hf_repo=storable(hf_repo)[:300],
        hf_revision=storable(_text(bundle.get("hf_revision")))[:300],
        weights_hash=storable(_text(bundle.get("weights_hash")))[:64],
        verification=verification,
        secret_detected=bool(secrets),
        secret_pointers=secrets,
        # A hold a moderator cleared stays cleared when the run is recorded again (a rebuild).
        secret_cleared=bool(secrets) and HoldClearance.objects.filter(run_id=run_id).exists(),
    )
    run.serves_own_weights, run.attestation_method = _serving_binding(
        bundle, recipe, run.weights_hash
    )
    run.quality = _quality_of(run, rows, suite)
    summary = None
    recipe_spec = normalise_recipe(bundle.get("recipe"))
    if board == "perf":
        summary = summarise_perf(rows, max_num_seqs_of(recipe))
        drafter = recipe_spec.drafter if recipe_spec else None
        run.perf = _perf_json(summary) | drafter_json(summary, drafter)
    run.trust = decide_trust(run)
    return PreparedRun(
        run=run,
        spec=spec,
        model_name=public_name(model),
        hf_repo=hf_repo,
        weight_set=weight_set_of(bundle, run.weights_hash),
        recipe=recipe_spec,
        rows=rows,
        perf=summary,
    )


def commit_run(prepared: PreparedRun, *, committed_at: datetime) -> Run:
    """The writing half, inside the ingest transaction (a failure rolls the whole commit back):
    attach the run to its benchmark (locked from here to the end of the transaction), write the
    run, its per-case rows in bulk and its cohorts, and rewrite the benchmark's summary. Returns
    the run, pointing at its benchmark (with its model, class and recipe)."""
    run = prepared.run
    run.committed_at = committed_at
    benchmark, summarised = _benchmark_for(run, prepared, _identity(prepared))
    run.benchmark = benchmark
    run.save(force_insert=True)
    Result.objects.bulk_create(
        [_result_of(run, position, row) for position, row in enumerate(prepared.rows)],
        batch_size=RESULTS_BATCH,
    )
    if prepared.perf is not None:
        PerfCohort.objects.bulk_create(
            [_cohort_of(run, cohort) for cohort in prepared.perf.cohorts]
        )
    if not summarised:  # an existing benchmark: its summary is rewritten from all its runs
        benchmark = refresh_benchmark(benchmark.pk, locked=benchmark)
        run.benchmark = benchmark
    read_models_changed(hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id)
    return run


def record_run(
    *,
    run_id: str,
    key_fingerprint: str,
    model: str,
    board: str,
    suite_id: str | None,
    bundle: dict,
    rows: list[dict],
    bundle_sha256: str,
    committed_at: datetime,
) -> Run:
    """Record one committed bundle with its rows, cohorts and scores, attach it to its benchmark
    and rewrite the benchmark's summary (`prepare_run`, then `commit_run`). Call inside a
    transaction."""
    prepared = prepare_run(
        run_id=run_id,
        key_fingerprint=key_fingerprint,
        model=model,
        board=board,
        suite_id=suite_id,
        bundle=bundle,
        rows=rows,
        bundle_sha256=bundle_sha256,
    )
    return commit_run(prepared, committed_at=committed_at)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _serving_binding(bundle: dict, recipe: dict | None, weights_hash: str) -> tuple[bool, str]:
    """docs/trust-and-ranking.md §Attestation: did the pod serve the weights itself, or bind an endpoint to them?"""
    if recipe is not None and recipe.get("serve_mode") != "endpoint":
        return True, AttestationMethod.HF_PULL_SERVED
    fingerprint = bundle.get("endpoint_fingerprint")
    if (
        isinstance(fingerprint, dict)
        and fingerprint.get("match") is True
        and fingerprint.get("status") == "match"
        and weights_hash
        and fingerprint.get("weights_hash") == weights_hash
    ):
        return False, AttestationMethod.ENDPOINT_FINGERPRINT
    integrity = bundle.get("serving_integrity")
    if (
        isinstance(integrity, dict)
        and integrity.get("ok") is True
        and integrity.get("weights_verified") is True
        and integrity.get("status") == "match"
        and weights_hash
        and integrity.get("weights_hash") == weights_hash
    ):
        return False, AttestationMethod.ENDPOINT_VERIFIED
    return False, ""


def decide_trust(run: Run) -> str:
    """docs/trust-and-ranking.md §Attestation: attested only when the weights verified, the serving is bound to them and
    the run is neither local nor frontier; pending while the weight check runs."""
    if run.target_class in ("local_weights", "remote_api") or not run.attestation_method:
        return Trust.SELF_REPORTED
    if run.verification == Verification.VERIFIED:
        return Trust.ATTESTED
    if run.verification == Verification.PENDING:
        return Trust.PENDING
    return Trust.SELF_REPORTED


def _quality_of(run: Run, rows: list[dict], suite: SuiteFacts | None) -> dict:
    quality = _scores_of(run, rows, suite)
    if run.kind in (SuiteKind.TEXT, SuiteKind.PERF):  # docs/champions.md §Reproductions
        quality["evidence_digest"] = evidence_digest(rows)
    return quality


def _scores_of(run: Run, rows: list[dict], suite: SuiteFacts | None) -> dict:
    if run.kind == SuiteKind.TEXT and (cases := suite_cases(run.suite_id)) is not None:
        # docs/trust-and-ranking.md §Server-side grading
        return text_quality(cases, run.extras.get("suite_hash"), rows)
    if run.kind == SuiteKind.TEXT:
        summary = score_text_run(rows, suite.case_count if suite else None)
        return {
            "composite": summary.composite,
            "coverage_label": summary.coverage_label,
            "coverage_ratio": summary.coverage_ratio,
            "covered": summary.covered,
            "suite_cases": summary.suite_cases,
            "categories": [
                {
                    "category": c.category,
                    "score": c.score,
                    "answered": c.answered,
                    "no_answer": c.no_answer,
                    "pending": c.pending,
                    "cases": c.cases,
                }
                for c in summary.categories
            ],
        }
    if run.kind == SuiteKind.AGENTIC:
        return {"score": score_agentic(rows), "harness": run.harness}
    if run.kind in (SuiteKind.VISION, SuiteKind.AUDIO, SuiteKind.VIDEO):
        scored = [row["score"] for row in rows if row.get("score") is not None]
        return {
            "score": 100 * sum(scored) / len(scored) if scored else None,
            "covered": len(scored),
            "suite_cases": suite.case_count if suite else None,
        }
    return {}


def _perf_json(summary) -> dict:
    peak = summary.peak
    return storable(
        {
            "peak": {"tps": peak.aggregate_tps, "cohort": peak.label} if peak else None,
            "single_stream": {
                "tps": summary.single_stream_tps,
                "cohort": summary.single_stream_cohort,
            },
            "latency": {
                "ttft_ms": summary.latency_ttft_ms,
                "tpot_ms": summary.latency_tpot_ms,
                "cohort": summary.single_stream_cohort,
            },
            "overall": {str(conc): evidence for conc, evidence in summary.overall.items()},
            "other": summary.other_rows,
        }
    )


def _cohort_of(run: Run, cohort) -> PerfCohort:
    return PerfCohort(
        run=run,
        category=cohort.category,
        conc=cohort.conc,
        label=cohort.label,
        aggregate_tps=cohort.aggregate_tps,
        reported_aggregate_tps=cohort.reported_aggregate_tps,
        stream_ceiling_tps=cohort.stream_ceiling_tps,
        scheduling_efficiency=cohort.scheduling_efficiency,
        decode_tps_mean=cohort.decode_tps_mean,
        ttft_ms_p50=cohort.ttft_ms_p50,
        ttft_ms_mean=cohort.ttft_ms_mean,
        ttft_ms_p95=cohort.ttft_ms_p95,
        tpot_ms_p50=cohort.tpot_ms_p50,
        tpot_ms_mean=cohort.tpot_ms_mean,
        tpot_ms_p95=cohort.tpot_ms_p95,
        n=cohort.n,
        n_errors=cohort.n_errors,
        tokens=cohort.tokens,
        cell_wall_s=cohort.cell_wall_s,
        marks=[str(mark) for mark in cohort.marks],
        labels=list(cohort.labels),
        valid=cohort.valid,
    )


# Per-case rows per INSERT: SQLite takes at most 32,766 parameters (12 columns a row).
RESULTS_BATCH = 1000


def _result_of(run: Run, position: int, row: dict) -> Result:
    return Result(
        run=run,
        position=position,
        case_id=storable(row["case_id"]),
        category=storable(row.get("category") or ""),
        tier=row.get("tier") if isinstance(row.get("tier"), int) else None,
        status=storable(row["status"]),
        score=row.get("score"),
        creativity=row.get("creativity"),
        raw_output=(row.get("raw_output") or "").encode("utf-8"),
        evidence=storable(row.get("evidence")),
        speed=storable(row.get("speed")),
        extras=storable({k: v for k, v in row.items() if k not in Result.ROW_FIELDS}),
    )


# --- benchmarks --------------------------------------------------------------------------------


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


def name_model_from_hub(run: Run) -> None:
    """A verified run's repository is as the Hub answered for it at its commit: the model takes
    that name and repository (and is open weights)."""
    if run.verification != Verification.VERIFIED or not run.benchmark_id or not run.hf_repo:
        return
    BenchModel.objects.filter(benchmarks=run.benchmark_id).exclude(
        hf_repo=run.hf_repo, display_name=run.hf_repo, is_frontier=False
    ).update(hf_repo=run.hf_repo, display_name=run.hf_repo, is_frontier=False)


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


def _identity(prepared: PreparedRun) -> BenchmarkIdentity:
    return BenchmarkIdentity(
        weight_set=prepared.weight_set,
        recipe_id=prepared.recipe.id if prepared.recipe is not None else None,
    )


def _group_of(run: Run) -> str:
    return run.job_group or f"run:{run.run_id}"  # a bundle without job_group stands alone


def _benchmark_for(
    run: Run, prepared: PreparedRun, identity: BenchmarkIdentity
) -> tuple[Benchmark, bool]:
    """The benchmark of the run's (key, job_group) holding its weight set and recipe, locked for
    this transaction so concurrent commits of one job rewrite its summary one after the other,
    and whether this transaction inserted it with its summary. A run of the same group with
    other weights or another recipe starts its own benchmark; a job that names its group
    resumes the latest benchmark of the same key, model, hardware, weights and recipe within
    RESUME_WINDOW that holds no run of this kind yet (docs/trust-and-ranking.md §Benchmarks)."""
    group = _group_of(run)
    canonical = model_canonical_id(prepared.model_name, prepared.hf_repo)
    same_identity = {"weight_set": identity.weight_set, "recipe_id": identity.recipe_id}
    # Found from what names it narrowly: the key's job group (its few links), or the key, model
    # and class (benchmark_resume_lookup); never from the recipe or the weight set alone, which
    # thousands of benchmarks may share.
    existing = (
        _group_benchmarks(run.key_fingerprint, group, same_identity)
        .values_list("pk", flat=True)
        .first()
    )
    if existing is not None:
        return _locked_benchmark(existing), False
    resumed = _resumed_benchmark(run, canonical, prepared.spec.slug, same_identity)
    if resumed is not None:
        _link_group(run.key_fingerprint, group, Benchmark(pk=resumed))
        return _locked_benchmark(resumed), False
    bench_model = model_for(
        prepared.model_name, prepared.hf_repo, frontier=run.target_class == "remote_api"
    )
    hardware_class = hardware_class_for(prepared.spec)
    # The recipe's row, created on first sight (docs/recipes.md).
    recipe = recipe_of(prepared.recipe, seen_at=run.committed_at)
    run.flagged = ModerationFlag.objects.filter(
        target=FlagTarget.RUN, target_id=run.run_id
    ).exists()
    flagged = ModerationFlag.objects.filter(
        target=FlagTarget.BENCHMARK, target_id=_public_id(run.key_fingerprint, group)
    ).exists()
    benchmark, created = _new_benchmark(
        run, group, bench_model, hardware_class, recipe, identity, flagged
    )
    if created:
        # Inserted (and linked to the group) by this transaction with its summary: no other
        # sees it before the commit, so it needs no lock.
        return benchmark, True
    _link_group(run.key_fingerprint, group, benchmark)
    return _locked_benchmark(benchmark.pk), False


def _resumed_benchmark(run: Run, canonical: str, slug: str, same_identity: dict) -> int | None:
    """The benchmark a job that names its group continues, if any."""
    if not run.job_group:  # a lone bundle stands alone
        return None
    since = run.committed_at - RESUME_WINDOW
    candidate = (
        _resume_candidates(run.key_fingerprint, canonical, slug, same_identity, since)
        .values_list("pk", flat=True)
        .first()
    )
    if candidate is None:
        return None
    holds_this_kind = Run.objects.filter(
        benchmark_id=candidate, board=run.board, suite_id=run.suite_id, harness=run.harness
    ).exists()
    return None if holds_this_kind else candidate


def _group_benchmarks(key_fingerprint: str, group: str, same_identity: dict):
    """The benchmarks of the key's job group with this weight set and recipe, latest first."""
    linked = BenchmarkGroup.objects.filter(key_fingerprint=key_fingerprint, job_group=group)
    return Benchmark.objects.filter(pk__in=linked.values("benchmark_id"), **same_identity).order_by(
        "-created_at", "-pk"
    )


def _resume_candidates(
    key_fingerprint: str, canonical: str, slug: str, same_identity: dict, since: datetime
):
    """The key's benchmarks of this model, class, weight set and recipe since `since`, latest
    first."""
    return Benchmark.objects.filter(
        key_fingerprint=key_fingerprint,
        model__canonical_id=canonical,
        hardware_class__slug=slug,
        created_at__gte=since,
        **same_identity,
    ).order_by("-created_at")


def _public_id(key_fingerprint: str, group: str, *identity: str) -> str:
    """A benchmark's public id, stable across rebuilds: from key and group, and for a second
    weight set or recipe within the group, from those too."""
    return hashlib.sha256(":".join((key_fingerprint, group, *identity)).encode()).hexdigest()[:12]


def _locked_benchmark(benchmark_id: int) -> Benchmark:
    """The benchmark with what its summary reads (model, class, recipe), its row alone locked
    until the transaction ends."""
    return (
        Benchmark.objects.select_related("model", "hardware_class", "recipe")
        .select_for_update(of=("self",))
        .get(pk=benchmark_id)
    )


def _new_benchmark(
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
        public_id = _public_id(run.key_fingerprint, group, *seed)
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


def _link_group(key_fingerprint: str, job_group: str, benchmark: Benchmark) -> None:
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
    _link_group(benchmark.key_fingerprint, job_group, benchmark)
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


# --- weight verdicts -----------------------------------------------------------------------------


def record_weight_verdict(
    *,
    run_id: str,
    verdict: str,
    commit: str | None,
    note: str,
    differences: list[dict],
    drafter_status: str,
    attempts: int,
    checked_at: datetime,
    model_facts: dict | None = None,
) -> Run:
    """Store the weight check's verdict on a run (with the model facts of a verified commit),
    decide its trust again, mark its cohorts against their rooflines and rewrite its benchmark,
    all in one transaction."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(run_id=run_id)
        if run.benchmark_id:
            Benchmark.objects.select_for_update().get(pk=run.benchmark_id)
        run.verification = verdict
        run.commit = commit or ""
        run.verification_note = storable(note)
        run.weight_differences = storable(differences)
        run.drafter_status = drafter_status
        run.verification_attempts = attempts
        run.verified_at = checked_at if verdict != Verification.PENDING else None
        run.trust = decide_trust(run)
        run.model_facts = storable(model_facts or {})
        apply_roofline(run)
        run.save()
        name_model_from_hub(run)
        if run.benchmark_id:
            benchmark = refresh_benchmark(run.benchmark_id)
            read_models_changed(
                hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id
            )
    return run


def note_weight_attempt(*, run_id: str, attempts: int, note: str) -> None:
    """The Hub did not answer this time: count the attempt, keep the run pending."""
    Run.objects.filter(run_id=run_id).update(
        verification_attempts=attempts, verification_note=storable(note)
    )


# --- moderation ----------------------------------------------------------------------------------


def flag_benchmark(*, public_id: str, flagged: bool, note: str = "") -> Benchmark:
    """Flag (or unflag) a benchmark: it stays public, is never ranked nor champion; the crowns it
    held or challenged are recomputed. Raises Benchmark.DoesNotExist for an unknown id."""
    with transaction.atomic():
        benchmark = Benchmark.objects.select_for_update().get(public_id=public_id)
        _set_flag(FlagTarget.BENCHMARK, public_id, flagged, note)
        benchmark = refresh_benchmark(benchmark.pk)
        read_models_changed(
            hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id
        )
    return benchmark


def flag_run(*, run_id: str, flagged: bool, note: str = "") -> Run:
    """Flag (or unflag) one run: shown, never counted, so its benchmark may lose completeness
    and rank; the affected crowns are recomputed. Raises Run.DoesNotExist for an unknown id."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(run_id=run_id)
        _set_flag(FlagTarget.RUN, run_id, flagged, note)
        if run.benchmark_id:
            Benchmark.objects.select_for_update().get(pk=run.benchmark_id)
            benchmark = refresh_benchmark(run.benchmark_id)
            read_models_changed(
                hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id
            )
        else:
            Run.objects.filter(pk=run.pk).update(flagged=flagged)
            read_models_changed(hardware_class_id=None, model_id=None)
        run.refresh_from_db()
    return run


def clear_secret_hold(*, run_id: str, note: str = "") -> Run:
    """A moderator reviewed a run withheld for a detected secret and publishes it (docs/recipes.md,
    "Secrets"); its benchmark is published once none of its runs is held, and the read models
    are recomputed. Raises Run.DoesNotExist for an unknown id, ValueError when nothing is held."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(run_id=run_id)
        if not run.secret_detected or run.secret_cleared:
            raise ValueError(f"run {run_id} holds no secret-detected hold")
        HoldClearance.objects.get_or_create(
            run_id=run_id, defaults={"note": storable(note), "cleared_at": timezone.now()}
        )
        Run.objects.filter(pk=run.pk).update(secret_cleared=True)
        if run.benchmark_id:
            Benchmark.objects.select_for_update().get(pk=run.benchmark_id)
            benchmark = refresh_benchmark(run.benchmark_id)
            read_models_changed(
                hardware_class_id=benchmark.hardware_class_id, model_id=benchmark.model_id
            )
        else:
            read_models_changed(hardware_class_id=None, model_id=None)
        run.refresh_from_db()
    return run


def _set_flag(target: str, target_id: str, flagged: bool, note: str) -> None:
    if flagged:
        ModerationFlag.objects.update_or_create(
            target=target,
            target_id=target_id,
            defaults={"note": storable(note), "flagged_at": timezone.now()},
        )
    else:
        ModerationFlag.objects.filter(target=target, target_id=target_id).delete()


# --- read models (docs/champions.md) -------------------------------------------------------------

_deferred = threading.local()


@contextmanager
def read_models_deferred():
    """Within this block, commits do not recompute read models one by one (a rebuild or a bulk
    load records thousands of runs); the caller calls `recompute_all_read_models()` after."""
    previous = getattr(_deferred, "active", False)
    _deferred.active = True
    try:
        yield
    finally:
        _deferred.active = previous


def read_models_changed(*, hardware_class_id: int | None, model_id: int | None) -> None:
    """What a page or an API answer shows changed in (class, model): once the transaction
    commits, the generation moves once (raw answers are fresh now) and one recompute of the
    affected read models is queued per (class, model), however often a transaction says so
    (the recompute moves the generation again once the read models are rewritten). Neither can
    fail the transaction's answer: it committed already (`_after_commit`)."""
    if getattr(_deferred, "active", False):
        return
    changed = _changes_of_transaction()
    if hardware_class_id is not None or model_id is not None:
        changed.add((hardware_class_id, model_id))


class _Changes(set):
    """The (class, model) pairs one transaction changed, published once it commits."""

    def publish(self) -> None:
        _after_commit(bump_generation)
        recompute = _recompute_task()
        for hardware_class_id, model_id in sorted(self, key=str):
            _after_commit(partial(publish_after_answer, recompute, hardware_class_id, model_id))


RECOMPUTE_TASK = "board.tasks.recompute_read_models"


def _recompute_task():
    """The recompute task, by name from Celery's registry (board/tasks.py imports this module,
    never the other way round); the app's task modules are imported first when no one has yet
    (a web process)."""
    if RECOMPUTE_TASK not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[RECOMPUTE_TASK]


def _changes_of_transaction() -> _Changes:
    """The changes the current transaction has collected so far, published once it commits (a
    new set, registered with its commit, when it has none yet: after a commit or a rollback the
    connection's hooks are cleared, and so is the set with them)."""
    conn = transaction.get_connection()
    for _savepoints, hook, _robust in conn.run_on_commit:
        if isinstance(getattr(hook, "__self__", None), _Changes):
            return hook.__self__
    changes = _Changes()
    transaction.on_commit(changes.publish, robust=True)
    return changes


def _after_commit(work) -> None:
    """Work that follows a commit: a failure (the cache or the broker unreachable) is logged,
    never raised into the committed request's answer. A generation move lost that way is made
    good by the next one (the recompute's own, or the next commit's); a recompute lost that way
    by the next commit in that class (`manage.py rebuild_board` rewrites them all); a weight
    check by the beat's sweep (docs/operations.md §Background work)."""
    try:
        work()
    except Exception:
        logger.exception("work after a commit failed (the commit stands): %r", work)


def bump_generation() -> None:
    """A new generation number (in the database, and in the shared cache when there is one):
    every answer cached under the old one is stale."""
    if not BoardGeneration.objects.filter(pk=1).update(number=F("number") + 1):
        BoardGeneration.objects.get_or_create(pk=1, defaults={"number": fresh_generation()})
    advance_shared_generation()


def recompute_read_models(*, hardware_class_id: int | None, model_id: int | None) -> None:
    """Rewrite what a change in (class, model) can affect: the class's class-wide crowns and
    summary, and its crowns and reproductions for the model. The model's best composite sets the
    quality floor on every class, so every other class holding the model is redone as well."""
    class_ids = {hardware_class_id} if hardware_class_id is not None else set()
    if model_id is not None:
        class_ids |= set(
            Benchmark.objects.filter(model_id=model_id)
            .values_list("hardware_class_id", flat=True)
            .distinct()
        )
    with transaction.atomic():
        # One recompute per class at a time: the row lock orders concurrent tasks.
        locked = HardwareClass.objects.select_for_update().filter(pk__in=class_ids).order_by("pk")
        for hardware_class in locked:
            _recompute_class(hardware_class, None if model_id is None else {model_id})
        transaction.on_commit(partial(_after_commit, bump_generation))


def recompute_all_read_models() -> None:
    """Rewrite every read model from the benchmark table (after a rebuild or a bulk load)."""
    with transaction.atomic():
        for hardware_class in HardwareClass.objects.select_for_update().order_by("pk"):
            _recompute_class(hardware_class, None)
        transaction.on_commit(partial(_after_commit, bump_generation))


NEVER = datetime(1970, 1, 1, tzinfo=UTC)  # order of a benchmark without runs: never replayed

ENTRY_FIELDS = (
    "pk",
    "public_id",
    "model_id",
    "model__canonical_id",
    "key_fingerprint",
    "recipe_id",
    "completed_at",
    "ranked",
    "flagged",
    "recipe_applicable",
    "composite",
    "peak_tps",
    "peak_cohort",
    "single_stream_tps",
    "ttft_ms",
    "tpot_ms",
    "submitted_at",
    "text_run_id",
    "perf_run_id",
)


def _with_pods_and_copies(entries: list[Entry], rows: list[dict]) -> list[Entry]:
    """docs/champions.md §Reproductions: each entry's pod (its key's network group), the digests
    of its runs' per-case evidence, and whether it repeats an earlier pod's evidence."""
    pod = pods_of(entry.key for entry in entries)
    run_of = {row["public_id"]: (row["text_run_id"], row["perf_run_id"]) for row in rows}
    digests: dict[str, str] = dict(
        Run.objects.filter(
            run_id__in=[run_id for pair in run_of.values() for run_id in pair if run_id]
        )
        .exclude(quality__evidence_digest=None)
        .values_list("run_id", "quality__evidence_digest")
    )
    entries = [
        dataclass_replace(
            entry,
            pod=pod[entry.key],
            evidence=frozenset(
                digests[run_id] for run_id in run_of[entry.benchmark] if run_id in digests
            ),
        )
        for entry in entries
    ]
    copied = copies(entries)
    return [dataclass_replace(e, copy_of=copied.get(e.benchmark, "")) for e in entries]


def _recompute_class(hardware_class: HardwareClass, model_ids: set[int] | None) -> None:
    """Rewrite one class's read models: class-wide crowns, the summary, and the crowns and
    reproductions of `model_ids` (None: of every model). Call holding the class's row lock."""
    rows = list(
        Benchmark.objects.public()
        .filter(hardware_class=hardware_class)
        .order_by("pk")
        .values_list(*ENTRY_FIELDS)
    )
    entries: list[Entry] = []
    model_pk: dict[str, int] = {}
    benchmark_pk: dict[str, int] = {}
    by_model: dict[int, list[dict]] = {}
    for row in rows:
        data = dict(zip(ENTRY_FIELDS, row, strict=True))
        by_model.setdefault(data["model_id"], []).append(data)
        model_pk[data["model__canonical_id"]] = data["model_id"]
        benchmark_pk[data["public_id"]] = data["pk"]
        entries.append(
            Entry(
                benchmark=data["public_id"],
                model=data["model__canonical_id"],
                pod=data["key_fingerprint"],
                key=data["key_fingerprint"],
                recipe=data["recipe_id"] or "",
                completed_at=data["completed_at"] or data["submitted_at"] or NEVER,
                ranked=data["ranked"] and not data["flagged"],
                applicable=data["recipe_applicable"],
                composite=data["composite"],
                throughput=data["peak_tps"],
                throughput_cohort=data["peak_cohort"],
                single_stream=data["single_stream_tps"],
                ttft_ms=data["ttft_ms"],
                tpot_ms=data["tpot_ms"],
            )
        )
    entries = _with_pods_and_copies(
        entries, [dict(zip(ENTRY_FIELDS, row, strict=True)) for row in rows]
    )
    _mark_copies(entries)
    if model_ids is None:
        scoped = sorted(model_pk)
        crown_rows, reproduction_rows = Q(), Q()
    else:
        scoped = sorted(name for name, pk in model_pk.items() if pk in model_ids)
        crown_rows = Q(model__isnull=True) | Q(model_id__in=model_ids)
        reproduction_rows = Q(model_id__in=model_ids)
    best = _best_composites_of(model_pk.values())
    reproduced = reproductions(entry for entry in entries if entry.model in scoped)

    crowns: dict[tuple[str | None, Axis], list[Reign]] = {}
    if hardware_class.family != Family.UNLABELED:  # Unlabeled never holds a crown
        for axis in Axis:
            crowns[(None, axis)] = replay(entries, axis, best)
            for name in scoped:
                crowns[(name, axis)] = replay([e for e in entries if e.model == name], axis, best)

    Champion.objects.filter(crown_rows, hardware_class=hardware_class).delete()
    ChampionReign.objects.filter(crown_rows, hardware_class=hardware_class).delete()
    RecipeReproduction.objects.filter(reproduction_rows, hardware_class=hardware_class).delete()

    RecipeReproduction.objects.bulk_create(
        RecipeReproduction(
            recipe_id=found.recipe,
            hardware_class=hardware_class,
            model_id=model_pk[found.model],
            pods=found.pods,
            keys=found.keys,
            copies=list(found.copies),
            benchmark_ids=list(found.benchmarks),
            spreads={axis.value: _spread_json(spread) for axis, spread in found.spreads.items()},
        )
        for found in reproduced.values()
    )
    holders = {reigns[-1].holder.benchmark for reigns in crowns.values() if reigns}
    # Holders first; the other contenders of a model only when its holder is not one-click.
    verdicts = _offer_verdicts(entries, benchmark_pk, holders, {})
    refused_models = set()
    for name in scoped:
        reigns = crowns.get((name, Axis.THROUGHPUT))
        verdict = verdicts.get(reigns[-1].holder.benchmark) if reigns else None
        if reigns and not (verdict and verdict.one_click):
            refused_models.add(name)
    verdicts = _offer_verdicts(
        entries, benchmark_pk, {e.benchmark for e in entries if e.model in refused_models}, verdicts
    )
    offers = {
        name: _pods_offer(crowns[(name, Axis.THROUGHPUT)], entries, name, best, verdicts)
        for name in scoped
        if crowns.get((name, Axis.THROUGHPUT))
    }
    offered = {offer.holder.benchmark for offer in offers.values() if offer is not None}
    facts = _champion_facts(benchmark_pk[public_id] for public_id in holders | offered)
    champions, history = [], []
    for (name, axis), reigns in crowns.items():
        if not reigns:
            continue
        scope_model = model_pk[name] if name is not None else None
        current = reigns[-1]
        reproduction = reproduced.get((current.holder.recipe, current.holder.model))
        champions.append(
            Champion(
                hardware_class=hardware_class,
                model_id=scope_model,
                axis=axis.value,
                benchmark_id=benchmark_pk[current.holder.benchmark],
                value=current.measure.value,
                secondary=current.measure.secondary,
                cohort=current.measure.cohort,
                since=current.since,
                summary=_crown_summary(current, axis, facts[current.holder.benchmark], reproduction)
                | _one_click_summary(
                    current,
                    verdicts,
                    offers.get(name) if name is not None and axis is Axis.THROUGHPUT else False,
                ),
                pod_recipe=(
                    _pod_recipe(offers[name], hardware_class, facts[offers[name].holder.benchmark])
                    | _pods_offer_note(offers[name], current, verdicts)
                    if name is not None and axis is Axis.THROUGHPUT and offers.get(name)
                    else None
                ),
            )
        )
        history.extend(
            ChampionReign(
                hardware_class=hardware_class,
                model_id=scope_model,
                axis=axis.value,
                position=position,
                benchmark_id=benchmark_pk[reign.holder.benchmark],
                value=reign.measure.value,
                secondary=reign.measure.secondary,
                cohort=reign.measure.cohort,
                since=reign.since,
                until=reign.until,
                dethroned_by_id=(
                    benchmark_pk[reign.dethroned_by.benchmark] if reign.dethroned_by else None
                ),
            )
            for position, reign in enumerate(reigns)
        )
    Champion.objects.bulk_create(champions)
    ChampionReign.objects.bulk_create(history, batch_size=500)
    _write_class_summary(hardware_class, entries)
    _write_model_summaries(hardware_class, by_model, model_ids)
    write_flag_effects(hardware_class, model_ids)  # the recipe lab (docs/lab.md)


# (field, lowest wins): the figures a model page shows per class (ModelClassSummary.best_*).
MODEL_PAGE_FIGURES = {
    "best_peak": ("peak_tps", False),
    "best_single": ("single_stream_tps", False),
    "best_latency": ("ttft_ms", True),
}


def _best_by(rows: list[dict], name: str, lowest: bool) -> int | None:
    """The pk of the row with the best `name`; a tie goes to the latest submitted (one not
    submitted first), then to the highest pk: the tables' order."""
    candidates = [row for row in rows if row[name] is not None]
    candidates.sort(
        key=lambda row: (row["submitted_at"] is None, row["submitted_at"] or NEVER, row["pk"]),
        reverse=True,
    )
    pick = min if lowest else max  # both keep the first of equals
    return pick(candidates, key=lambda row: row[name])["pk"] if candidates else None


def _write_model_summaries(
    hardware_class: HardwareClass, by_model: dict[int, list[dict]], model_ids: set[int] | None
) -> None:
    """Each model's summary on this class (of `model_ids`; None: of every model)."""
    stale = ModelClassSummary.objects.filter(hardware_class=hardware_class)
    if model_ids is not None:
        stale = stale.filter(model_id__in=model_ids)
    stale.delete()
    ModelClassSummary.objects.bulk_create(
        ModelClassSummary(model_id=model_id, hardware_class=hardware_class, **summary_fields(rows))
        for model_id, rows in sorted(by_model.items())
        if model_ids is None or model_id in model_ids
    )


def summary_fields(rows: list[dict]) -> dict:
    """A model's summary on one class from its published benchmarks there (each a dict of
    pk, ranked, submitted_at and the figures); pure, so migration 0006 fills the table with it."""
    ranked = [row for row in rows if row["ranked"]]
    pool = ranked or rows
    return {
        "benchmark_count": len(rows),
        "ranked_count": len(ranked),
        "latest_at": max(
            (row["submitted_at"] for row in rows if row["submitted_at"]), default=None
        ),
        **{
            f"{field}_id": _best_by(pool, name, lowest)
            for field, (name, lowest) in MODEL_PAGE_FIGURES.items()
        },
    }


def _best_composites_of(model_ids) -> dict[str, float]:
    """The quality floor's reference of each model, from its ranked benchmarks on every hardware
    class (docs/champions.md §The quality floor: `best_composites`)."""
    rows = [
        dict(zip(ENTRY_FIELDS, row, strict=True))
        for row in Benchmark.objects.filter(
            ranked=True, flagged=False, model_id__in=list(model_ids)
        )
        .exclude(composite=None)
        .values_list(*ENTRY_FIELDS)
    ]
    entries = [
        Entry(
            benchmark=row["public_id"],
            model=row["model__canonical_id"],
            pod=row["key_fingerprint"],
            key=row["key_fingerprint"],
            recipe=row["recipe_id"] or "",
            completed_at=row["completed_at"] or row["submitted_at"] or NEVER,
            ranked=True,
            applicable=row["recipe_applicable"],
            composite=row["composite"],
        )
        for row in rows
    ]
    return best_composites(_with_pods_and_copies(entries, rows))


def _mark_copies(entries: list[Entry]) -> None:
    """Badge the benchmarks that repeat another pod's evidence (a rebuild re-derives the rest)."""
    copied = [entry.benchmark for entry in entries if entry.copy_of]
    if not copied:
        return
    for benchmark in Benchmark.objects.filter(public_id__in=copied).only("pk", "badges"):
        if Badge.EVIDENCE_COPY not in benchmark.badges:
            badges = [*benchmark.badges, Badge.EVIDENCE_COPY.value]
            Benchmark.objects.filter(pk=benchmark.pk).update(badges=badges)


def _spread_json(spread) -> dict:
    return {"min": spread.minimum, "max": spread.maximum, "relative": spread.relative}


def _write_class_summary(hardware_class: HardwareClass, entries: list[Entry]) -> None:
    """The class's counts and best ranked figures; a class holding no benchmark has none."""
    if not entries:
        ClassSummary.objects.filter(hardware_class=hardware_class).delete()
        return
    ranked = [entry for entry in entries if entry.ranked]
    best = {}
    for axis in Axis:
        figures = [(e, m) for e in ranked if (m := measure(e, axis)) is not None]
        if not figures:
            continue
        lowest_wins = axis is Axis.LATENCY
        entry, figure = (min if lowest_wins else max)(
            figures, key=lambda pair: (pair[1].value, pair[0].order)
        )
        best[axis.value] = {
            "value": figure.value,
            "cohort": figure.cohort or None,
            "benchmark_id": entry.benchmark,
            "model": entry.model,
        }
    ClassSummary.objects.update_or_create(
        hardware_class=hardware_class,
        defaults={
            "benchmark_count": len(entries),
            "ranked_count": len(ranked),
            "model_count": len({entry.model for entry in ranked}),
            "pod_count": len({entry.pod for entry in entries}),
            "best": best,
            "best_throughput": best.get(Axis.THROUGHPUT.value, {}).get("value"),
            "latest_at": max(
                (entry.completed_at for entry in entries if entry.completed_at), default=None
            ),
        },
    )


@dataclass
class _ChampionFacts:
    """What a crown's answers say about its holder beyond the replay's figures."""

    benchmark: Benchmark
    perf_run: Run | None
    peak_cell: dict | None


def _champion_facts(pks) -> dict[str, _ChampionFacts]:
    benchmarks = list(Benchmark.objects.select_related("model", "recipe").filter(pk__in=list(pks)))
    perf_runs = {
        run.run_id: run
        for run in Run.objects.filter(
            run_id__in=[b.perf_run_id for b in benchmarks if b.perf_run_id]
        ).only("run_id", "hf_revision", "committed_at")
    }
    cells = {
        (run_id, label): {"category": category, "conc": conc}
        for run_id, label, category, conc in PerfCohort.objects.filter(
            run__run_id__in=list(perf_runs)
        ).values_list("run__run_id", "label", "category", "conc")
    }
    return {
        benchmark.public_id: _ChampionFacts(
            benchmark=benchmark,
            perf_run=perf_runs.get(benchmark.perf_run_id),
            peak_cell=cells.get((benchmark.perf_run_id, benchmark.peak_cohort)),
        )
        for benchmark in benchmarks
    }


def _crown_summary(reign: Reign, axis: Axis, facts: _ChampionFacts, reproduction) -> dict:
    """The crown as `/api/v1/champions` shows it (the history is added at read time)."""
    holder = reign.holder
    if reproduction is None:  # no recipe id: nothing can reproduce it
        pods, ids, spread = 1, [holder.benchmark], None
        described = "measured by one pod only"
    else:
        pods, ids = reproduction.pods, list(reproduction.benchmarks)
        spread = reproduction.spreads.get(axis)
        described = reproduction.describe(axis)
    return {
        "value": reign.measure.value,
        "unit": axis.unit,
        "cohort": reign.measure.cohort or None,
        "tpot_ms": reign.measure.secondary if axis is Axis.LATENCY else None,
        "model": holder.model,
        "benchmark_id": holder.benchmark,
        "composite": holder.composite,
        "since": api_datetime(reign.since),
        "recipe_id": holder.recipe or None,
        "recipe": facts.benchmark.recipe.public_json() if facts.benchmark.recipe else None,
        # docs/cohorts.md §Rooflines: how much of its bandwidth bound the holder's single stream uses.
        "roofline_pct": (facts.benchmark.roofline or {}).get("single_stream_pct"),
        "reproductions": {
            "pods": pods,
            "benchmark_ids": ids,
            "spread": _spread_json(spread) if spread else None,
            "summary": described,
        },
    }


def _offer_verdicts(
    entries: list[Entry], benchmark_pk: dict[str, int], wanted, known: dict[str, Verdict]
) -> dict[str, Verdict]:
    """docs/recipes.md §The serve-flag policy: `known` with the policy's word on the recipe of
    each benchmark in `wanted` that can contend (ranked, applicable), its drafter checked on its
    runs. Two queries; one check per recipe and drafter verdict."""
    contenders = [
        e
        for e in entries
        if e.benchmark in wanted and e.benchmark not in known and e.ranked and e.applicable
    ]
    contenders = [e for e in contenders if e.recipe]
    if not contenders:
        return known
    recipes = Recipe.objects.in_bulk({e.recipe for e in contenders})
    statuses: dict[int, set[str]] = {}
    for benchmark_id, status in Run.objects.filter(
        benchmark_id__in=[benchmark_pk[e.benchmark] for e in contenders], flagged=False
    ).values_list("benchmark_id", "drafter_status"):
        statuses.setdefault(benchmark_id, set()).add(status)
    checked: dict[tuple[str, bool], Verdict] = {}
    for entry in contenders:
        recipe = recipes.get(entry.recipe)
        if recipe is None:
            continue
        verified = drafter_verified_by(statuses.get(benchmark_pk[entry.benchmark], ()))
        if (entry.recipe, verified) not in checked:
            checked[(entry.recipe, verified)] = check_recipe(
                recipe.spec(), drafter_verified=verified
            )
        known[entry.benchmark] = checked[(entry.recipe, verified)]
    return known


def _pods_offer(
    reigns: list[Reign], entries: list[Entry], model: str, best, verdicts: dict[str, Verdict]
) -> Reign | None:
    """docs/champions.md §The champion recipes pods fetch: the throughput crown holder when its
    recipe is one-click, else the holder of the same crown replayed among the one-click
    recipes of the model (same contention rules); None when none is."""
    holder = reigns[-1]
    verdict = verdicts.get(holder.holder.benchmark)
    if verdict is not None and verdict.one_click:
        return holder
    safe = [
        e
        for e in entries
        if e.model == model and (v := verdicts.get(e.benchmark)) is not None and v.one_click
    ]
    replayed = replay(safe, Axis.THROUGHPUT, best)
    return replayed[-1] if replayed else None


def _not_one_click(verdict: Verdict | None) -> list[dict]:
    if verdict is None:
        return [{"code": "no_recipe", "flag": None, "message": "no recipe the board can check"}]
    return [reason.as_json() for reason in verdict.reasons]


def _one_click_summary(reign: Reign, verdicts: dict[str, Verdict], offer) -> dict:
    """What the champion API says of the holder's recipe: one-click or not and why; for a
    model's throughput crown (`offer` not False) also which benchmark pods are offered."""
    verdict = verdicts.get(reign.holder.benchmark)
    found = {
        "one_click": bool(verdict and verdict.one_click),
        "one_click_reasons": [] if verdict and verdict.one_click else _not_one_click(verdict),
    }
    if offer is not False:
        found["pods_offered"] = (
            {
                "benchmark_id": offer.holder.benchmark,
                "recipe_id": offer.holder.recipe,
                "value": offer.measure.value,
            }
            if offer is not None
            else None
        )
    return found


def _pods_offer_note(offer: Reign, crown: Reign, verdicts: dict[str, Verdict]) -> dict:
    """Fields the pods' entry adds to the protocol's (the pod ignores them): whose recipe it is
    and, when it is not the crown holder's, why the holder is not offered."""
    if offer.holder.benchmark == crown.holder.benchmark:
        return {"benchmark_id": offer.holder.benchmark, "crown_holder": None}
    return {
        "benchmark_id": offer.holder.benchmark,
        "crown_holder": {
            "benchmark_id": crown.holder.benchmark,
            "peak_agg_tps": crown.measure.value,
            "not_offered_because": _not_one_click(verdicts.get(crown.holder.benchmark)),
        },
    }


def _pod_recipe(reign: Reign, hardware_class: HardwareClass, facts: _ChampionFacts) -> dict:
    """One entry of the pods' champion list, field for field as docs/champions.md lists them."""
    benchmark, recipe, perf_run = facts.benchmark, facts.benchmark.recipe, facts.perf_run
    drafter = recipe.drafter
    return {
        "hardware": benchmark.hardware_label,
        "hw_bucket": hardware_class.name,
        "model": benchmark.model.hf_repo or benchmark.model.display_name,
        "canonical": benchmark.model.canonical_id,
        "hf_repo": benchmark.model.hf_repo or None,
        "hf_revision": (perf_run.hf_revision if perf_run else "") or None,
        "engine": recipe.engine,
        "image": offered_image(recipe.image or None)[0],
        "serve_flags": list(recipe.flags),
        "spec_decode": drafter["method"] if drafter else None,
        "drafter": (drafter | {"uses_drafter": _uses_drafter(recipe)}) if drafter else None,
        "peak_agg_tps": reign.measure.value,
        "peak_agg_cell": facts.peak_cell,
        "quality": benchmark.composite,
        "quality_run": benchmark.text_run_id or None,
        "trust_tier": benchmark.trust,
        "run": benchmark.perf_run_id or None,
        "started_at": int(perf_run.committed_at.timestamp()) if perf_run else None,
    }


def _uses_drafter(recipe: Recipe) -> bool:
    """A drafter model is loaded: named on the Hub, or mounted at /drafter by the config."""
    if (recipe.drafter or {}).get("repo"):
        return True
    try:
        config = json.loads(option_value(recipe.flags, ("--speculative-config",)) or "{}")
    except ValueError:
        return False
    return isinstance(config, dict) and config.get("model") == DRAFTER_PATH


def api_datetime(moment: datetime | None) -> str | None:
    """ISO 8601 with a Z, as the rest of the read API writes datetimes."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


__all__ = [
    "BundleRuleError",
    "check_bundle",
    "decide_trust",
    "hardware_class_for",
    "model_for",
    "record_run",
    "record_weight_verdict",
    "refresh_benchmark",
    "flag_benchmark",
    "flag_run",
    "bump_generation",
    "read_models_changed",
    "read_models_deferred",
    "recompute_read_models",
    "recompute_all_read_models",
]
