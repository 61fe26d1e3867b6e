from django.contrib import admin

from anchor.admin_actions import EvidenceAdmin
from anchor.models import AuditEntry, AuditSubject, RunManifest


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
