"""The moderators' room (docs/trust-anchor.md §Moderation): the admin of the audit log and the
signed manifests, and of the evidence moderators act on, what was measured (board: runs,
benchmarks, the flags and clearances in force) and the pod channel (submissions: keys, sessions,
the ingest log, quarantine). Evidence is read-only and never deleted here; moderators act through
actions that ask for a reason and call the moderation services (anchor/moderation.py). The admin
is registered here, above board and submissions, so that neither imports the trust anchor
(docs/README.md §Layout)."""

from django.contrib import admin
from django.utils.html import format_html

from anchor import moderation
from anchor.admin_actions import EvidenceAdmin, reason_action
from anchor.models import AuditEntry, AuditSubject, RunManifest
from board.models import Benchmark, HoldClearance, ModerationFlag, Run
from evidence.blobstore import BlobStoreUnavailable
from submissions import selectors
from submissions.models import (
    DeviceKey,
    IngestLogEntry,
    KeyAuditEntry,
    QuarantinedBundle,
    RunSession,
)
from submissions.pages import REASON_MEANINGS

# --- the trust anchor's own records ------------------------------------------------------------


class AuditSubjectInline(admin.TabularInline):
    model = AuditSubject
    extra = 0
    can_delete = False
    readonly_fields = ["benchmark_public_id"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(EvidenceAdmin):
    """The moderators' history: appended by the moderation services, never edited."""

    list_display = ["at", "moderator", "action", "target_kind", "target_id", "reason"]
    list_filter = ["action", "target_kind"]
    search_fields = ["target_id", "moderator", "reason", "subjects__benchmark_public_id"]
    inlines = [AuditSubjectInline]


@admin.register(RunManifest)
class RunManifestAdmin(EvidenceAdmin):
    list_display = ["run_id", "version", "signed_at", "document_sha256", "public_key"]
    search_fields = ["run_id", "document_sha256"]


# --- what was measured (board) -------------------------------------------------------------


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


# --- the pod channel (submissions) -----------------------------------------------------------


class KeyAuditInline(admin.TabularInline):
    model = KeyAuditEntry
    extra = 0
    readonly_fields = ["action", "note", "created_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


def _revoke(*, moderator, obj, reason):
    moderation.revoke_key(moderator=moderator, key_id=obj.pk, reason=reason)


def _review(*, moderator, obj, reason):
    moderation.review_quarantined(moderator=moderator, quarantine_id=obj.pk, reason=reason)


@admin.register(DeviceKey)
class DeviceKeyAdmin(EvidenceAdmin):
    list_display = ["fingerprint", "status", "enrolled_at", "last_seen_at", "revoked_at"]
    list_filter = ["status"]
    search_fields = ["fingerprint", "public_key"]
    inlines = [KeyAuditInline]
    actions = [reason_action("revoke_keys", "Revoke the selected keys", _revoke)]


@admin.register(RunSession)
class RunSessionAdmin(EvidenceAdmin):
    list_display = [
        "run_id",
        "key",
        "board",
        "model",
        "status",
        "checkpoints",
        "opened_at",
        "committed_at",
    ]
    list_filter = ["status", "board"]
    search_fields = ["run_id", "model", "job_sig", "key__fingerprint"]
    exclude = ["token_sha256"]


@admin.register(IngestLogEntry)
class IngestLogAdmin(EvidenceAdmin):
    list_display = [
        "created_at",
        "route",
        "status",
        "reason",
        "run_id",
        "key_fingerprint",
        "bytes",
        "client_ip",
    ]
    list_filter = ["route", "reason", "status"]
    search_fields = ["run_id", "key_fingerprint", "client_ip"]


PREVIEW_BYTES = 8192


@admin.register(QuarantinedBundle)
class QuarantinedBundleAdmin(EvidenceAdmin):
    """Refused signed bundles kept for review, with the refusal's reason code."""

    list_display = ["created_at", "reason", "run_id", "key_fingerprint", "raw", "reviewed"]
    list_filter = ["reason", "reviewed"]
    search_fields = ["run_id", "key_fingerprint", "raw__sha256"]
    fields = [
        "created_at",
        "reason",
        "reason_meaning",
        "note",
        "run_id",
        "key_fingerprint",
        "raw",
        "reviewed",
        "bundle_preview",
    ]
    readonly_fields = fields
    actions = [reason_action("review_quarantined", "Mark the selected bundles reviewed", _review)]
    list_select_related = ["raw"]

    def get_queryset(self, request):
        # A small bundle's bytes are in its RawBundle row: the list and the page name the bundle,
        # only the preview reads its bytes.
        return super().get_queryset(request).select_related("raw").defer("raw__content")

    @admin.display(description="what the reason code means")
    def reason_meaning(self, obj):
        return REASON_MEANINGS.get(obj.reason, "")

    @admin.display(description=f"bundle (first {PREVIEW_BYTES} bytes)")
    def bundle_preview(self, obj):
        try:
            body = selectors.raw_bundle(obj.raw_id)
        except (FileNotFoundError, BlobStoreUnavailable):
            return "not in the evidence store"
        text = body[:PREVIEW_BYTES].decode("utf-8", errors="replace")
        return format_html("<pre style='white-space:pre-wrap'>{}</pre>", text)
