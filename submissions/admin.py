"""Moderation of the pod channel: keys can be revoked; evidence is read-only."""

from django.contrib import admin, messages

from submissions import services
from submissions.models import (
    DeviceKey,
    IngestLogEntry,
    KeyAuditEntry,
    QuarantinedBundle,
    RunSession,
)


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


@admin.register(DeviceKey)
class DeviceKeyAdmin(admin.ModelAdmin):
    list_display = ["fingerprint", "status", "enrolled_at", "last_seen_at", "revoked_at"]
    list_filter = ["status"]
    search_fields = ["fingerprint", "public_key"]
    readonly_fields = [
        "public_key",
        "fingerprint",
        "status",
        "enrolled_at",
        "last_seen_at",
        "revoked_at",
        "revoked_reason",
    ]
    inlines = [KeyAuditInline]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        revoked = sum(
            services.revoke_key_by_moderator(key.pk, reason=f"revoked by moderator {request.user}")
            for key in queryset
        )
        self.message_user(request, f"{revoked} key(s) revoked.", messages.SUCCESS)


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


@admin.register(QuarantinedBundle)
class QuarantinedBundleAdmin(admin.ModelAdmin):
    list_display = ["created_at", "reason", "run_id", "key_fingerprint", "raw", "reviewed"]
    list_filter = ["reason", "reviewed"]
    readonly_fields = ["raw", "run_id", "key_fingerprint", "reason", "note", "created_at"]

    def has_add_permission(self, request):
        return False
