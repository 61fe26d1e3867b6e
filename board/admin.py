from django.contrib import admin

from board.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "run_id",
        "model_name",
        "board",
        "suite_id",
        "key_fingerprint",
        "n_results",
        "committed_at",
    ]
    list_filter = ["board"]
    search_fields = ["run_id", "model_name", "job_sig", "job_group", "key_fingerprint"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
