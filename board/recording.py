"""Recording a committed run: the board's rules a bundle must pass, the run prepared from it
(trust, quality, perf cohorts, secret pointers) and written with its rows, attached to its
benchmark (docs/trust-and-ranking.md, docs/cohorts.md)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from board.benchmarks import (
    BenchmarkIdentity,
    benchmark_public_id,
    group_of,
    hardware_class_for,
    link_group,
    locked_benchmark,
    model_canonical_id,
    model_for,
    new_benchmark,
    refresh_benchmark,
    weight_set_of,
)
from board.grading import evidence_digest, suite_cases, text_quality
from board.hardware import HardwareClassSpec, classify_hardware
from board.jsonsafe import storable
from board.models import (
    AttestationMethod,
    Benchmark,
    BenchmarkGroup,
    FlagTarget,
    HoldClearance,
    ModerationFlag,
    PerfCohort,
    Run,
    SuiteKind,
    Trust,
    Verification,
)
from board.perf import PerfRowError, summarise_perf
from board.perf_marks import drafter_json
from board.quality import score_agentic, score_text_run
from board.read_models import read_models_changed
from board.result_rows import insert_results
from board.suites import SuiteFacts, suite_named
from recipes.normalise import (
    RecipeSpec,
    max_num_seqs_of,
    normalise_recipe,
)
from recipes.scrub import mask_host_paths, public_name
from recipes.secret_scan import find_bundle_secrets
from recipes.services import recipe_of

# A second job_group of the same key, model, hardware, weights and recipe within this window
# resumes a job.
RESUME_WINDOW = timedelta(hours=72)


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
    insert_results(run, prepared.rows)
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


def _identity(prepared: PreparedRun) -> BenchmarkIdentity:
    return BenchmarkIdentity(
        weight_set=prepared.weight_set,
        recipe_id=prepared.recipe.id if prepared.recipe is not None else None,
    )


def _benchmark_for(
    run: Run, prepared: PreparedRun, identity: BenchmarkIdentity
) -> tuple[Benchmark, bool]:
    """The benchmark of the run's (key, job_group) holding its weight set and recipe, locked for
    this transaction so concurrent commits of one job rewrite its summary one after the other,
    and whether this transaction inserted it with its summary. A run of the same group with
    other weights or another recipe starts its own benchmark; a job that names its group
    resumes the latest benchmark of the same key, model, hardware, weights and recipe within
    RESUME_WINDOW that holds no run of this kind yet (docs/trust-and-ranking.md §Benchmarks)."""
    group = group_of(run)
    canonical = model_canonical_id(prepared.model_name, prepared.hf_repo)
    same_identity = {"weight_set": identity.weight_set, "recipe_id": identity.recipe_id}
    # Found from what names it narrowly: the key's job group (its few links), or the key, model
    # and class (benchmark_resume_lookup); never from the recipe or the weight set alone, which
    # thousands of benchmarks may share.
    existing = (
        group_benchmarks(run.key_fingerprint, group, same_identity)
        .values_list("pk", flat=True)
        .first()
    )
    if existing is not None:
        return locked_benchmark(existing), False
    resumed = _resumed_benchmark(run, canonical, prepared.spec.slug, same_identity)
    if resumed is not None:
        link_group(run.key_fingerprint, group, Benchmark(pk=resumed))
        return locked_benchmark(resumed), False
    bench_model = model_for(
        prepared.model_name, prepared.hf_repo, frontier=run.target_class == "remote_api"
    )
    hardware_class = hardware_class_for(prepared.spec)
    # The recipe's row, created on first sight (docs/recipes.md).
    recipe = recipe_of(prepared.recipe, seen_at=run.committed_at)
    # A moderator's flags on the run and on the benchmark's first public id, in one query.
    public_id = benchmark_public_id(run.key_fingerprint, group)
    flags = set(
        ModerationFlag.objects.filter(
            Q(target=FlagTarget.RUN, target_id=run.run_id)
            | Q(target=FlagTarget.BENCHMARK, target_id=public_id)
        ).values_list("target", "target_id")
    )
    run.flagged = (FlagTarget.RUN, run.run_id) in flags
    flagged = (FlagTarget.BENCHMARK, public_id) in flags
    benchmark, created = new_benchmark(
        run, group, bench_model, hardware_class, recipe, identity, flagged
    )
    if created:
        # Inserted (and linked to the group) by this transaction with its summary: no other
        # sees it before the commit, so it needs no lock.
        return benchmark, True
    link_group(run.key_fingerprint, group, benchmark)
    return locked_benchmark(benchmark.pk), False


def _resumed_benchmark(run: Run, canonical: str, slug: str, same_identity: dict) -> int | None:
    """The benchmark a job that names its group continues, if any."""
    if not run.job_group:  # a lone bundle stands alone
        return None
    since = run.committed_at - RESUME_WINDOW
    candidate = (
        resume_candidates(run.key_fingerprint, canonical, slug, same_identity, since)
        .values_list("pk", flat=True)
        .first()
    )
    if candidate is None:
        return None
    holds_this_kind = Run.objects.filter(
        benchmark_id=candidate, board=run.board, suite_id=run.suite_id, harness=run.harness
    ).exists()
    return None if holds_this_kind else candidate


def group_benchmarks(key_fingerprint: str, group: str, same_identity: dict):
    """The benchmarks of the key's job group with this weight set and recipe, latest first."""
    linked = BenchmarkGroup.objects.filter(key_fingerprint=key_fingerprint, job_group=group)
    return Benchmark.objects.filter(pk__in=linked.values("benchmark_id"), **same_identity).order_by(
        "-created_at", "-pk"
    )


def resume_candidates(
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
