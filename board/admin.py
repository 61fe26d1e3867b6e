"""Moderation of what was measured (docs/trust-anchor.md §Moderation): runs and benchmarks are
evidence, read-only and never deleted here; moderators act through actions that ask for a
reason and call the moderation services (anchor/moderation.py)."""

from django.contrib import admin

from anchor import moderation
from anchor.admin_actions import EvidenceAdmin, reason_action
from board.models import Benchmark, HoldClearance, ModerationFlag, Run


def _flag_run(flagged: bool):
    def perform(*, moderator, obj, reason):
        moderation.flag_run(moderator=moderator, run_id=obj.run_id, flagged=flagged, reason=reason)

    return perform


def _flag_benchmark(flagged: bool):
    def perform(*, moderator, obj, reason):
        moderation.flag_benchmark(
            moderator=moderator, public_id=obj.public_id, flagged=flagged, reason=reason
        )

    return perform


def _clear_run_hold(*, moderator, obj, reason):
    moderation.clear_secret_hold(moderator=moderator, run_id=obj.run_id, reason=reason)


def _clear_benchmark_holds(*, moderator, obj, reason):
    held = obj.runs.filter(secret_detected=True, secret_cleared=False)
    if not held.exists():
        raise moderation.ModerationError(f"benchmark {obj.public_id} holds no secret-detected run")
    for run_id in held.values_list("run_id", flat=True):
        moderation.clear_secret_hold(moderator=moderator, run_id=run_id, reason=reason)


def _recheck(*, moderator, obj, reason):
    moderation.recheck_weights(moderator=moderator, run_id=obj.run_id, reason=reason)


@admin.register(Run)
class RunAdmin(EvidenceAdmin):
    list_display = [
        "run_id",
        "model_name",
        "board",
        "key_fingerprint",
        "trust",
        "verification",
        "flagged",
        "secret_detected",
        "secret_cleared",
        "committed_at",
    ]
    list_filter = ["board", "trust", "verification", "flagged", "secret_detected"]
    search_fields = ["run_id", "model_name", "job_sig", "job_group", "key_fingerprint"]
    exclude = ["extras"]  # raw extras hold what is never published; the raw bundle is evidence
    actions = [
        reason_action("flag_runs", "Flag the selected runs", _flag_run(True)),
        reason_action("unflag_runs", "Unflag the selected runs", _flag_run(False)),
        reason_action("clear_secret_holds", "Clear the secret-detected hold", _clear_run_hold),
        reason_action("recheck_weights", "Run the weight check again", _recheck),
    ]


class PerfPhysicsFilter(admin.SimpleListFilter):
    """For moderators (docs/cohorts.md §Rooflines, §Drafter health): benchmarks with a cohort
    beyond its roofline (unranked when a headline figure rests on one), or a drafter barely
    accepting."""

    title = "perf physics"
    parameter_name = "physics"

    def lookups(self, request, model_admin):
        return [
            ("beyond_roofline", "a cohort beyond its roofline"),
            ("barely_accepting", "drafter barely accepting"),
            ("no_bound", "no roofline (facts unknown)"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "beyond_roofline":
            return queryset.filter(roofline__status="beyond")
        if self.value() == "barely_accepting":
            return queryset.filter(drafter_health__status="barely_accepting")
        if self.value() == "no_bound":
            return queryset.filter(roofline__status="unknown")
        return queryset


@admin.register(Benchmark)
class BenchmarkAdmin(EvidenceAdmin):
    list_display = [
        "public_id",
        "model",
        "hardware_class",
        "key_fingerprint",
        "trust",
        "ranked",
        "flagged",
        "withheld",
        "created_at",
    ]
    list_filter = [
        "ranked",
        "flagged",
        "withheld",
        "trust",
        "hardware_class",
        PerfPhysicsFilter,
    ]
    search_fields = ["public_id", "model__canonical_id", "key_fingerprint"]
    actions = [
        reason_action("flag_benchmarks", "Flag the selected benchmarks", _flag_benchmark(True)),
        reason_action(
            "unflag_benchmarks", "Unflag the selected benchmarks", _flag_benchmark(False)
        ),
        reason_action(
            "clear_benchmark_holds", "Clear the secret-detected holds", _clear_benchmark_holds
        ),
    ]


@admin.register(ModerationFlag)
class ModerationFlagAdmin(EvidenceAdmin):
    """The flags in force now; their history is the audit log."""

    list_display = ["target", "target_id", "flagged_at", "note"]
    list_filter = ["target"]


@admin.register(HoldClearance)
class HoldClearanceAdmin(EvidenceAdmin):
    list_display = ["run_id", "cleared_at", "note"]
