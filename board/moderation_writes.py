"""Writes that change a recorded run after its commit: weight verdicts and moderators' flags
and clearances (docs/trust-and-ranking.md, docs/trust-anchor.md)."""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from board.benchmarks import name_model_from_hub, refresh_benchmark
from board.jsonsafe import storable
from board.models import (
    Benchmark,
    FlagTarget,
    HoldClearance,
    ModerationFlag,
    Run,
    Verification,
)
from board.perf_marks import apply_roofline
from board.read_models import read_models_changed
from board.recording import decide_trust


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
    hub_name: str = "",
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
        name_model_from_hub(run, hub_name)
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
