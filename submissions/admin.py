"""Moderation of the pod channel (docs/trust-anchor.md §Moderation): keys can be revoked and
quarantined bundles reviewed, through the moderation services; evidence is read-only and never
deleted here."""

from django.contrib import admin
from django.utils.html import format_html

from anchor import moderation
from anchor.admin_actions import reason_action
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


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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
class DeviceKeyAdmin(ReadOnlyAdmin):
    list_display = ["fingerprint", "status", "enrolled_at", "last_seen_at", "revoked_at"]
    list_filter = ["status"]
    search_fields = ["fingerprint", "public_key"]
    inlines = [KeyAuditInline]
    actions = [reason_action("revoke_keys", "Revoke the selected keys", _revoke)]


@admin.register(RunSession)
class RunSessionAdmin(ReadOnlyAdmin):
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
class IngestLogAdmin(ReadOnlyAdmin):
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
class QuarantinedBundleAdmin(ReadOnlyAdmin):
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
