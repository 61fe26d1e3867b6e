"""Admin actions that ask the moderator for a reason before calling a moderation service
(docs/trust-anchor.md §Moderation). No moderation logic here: the services do the work."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from anchor.moderation import ModerationError


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        max_length=2000,
        help_text="Why: kept in the audit log and shown on the benchmark page.",
    )


def reason_action(name: str, description: str, perform):
    """An admin action named `name` that asks for a reason, then calls
    `perform(moderator=<username>, obj=<object>, reason=<text>)` for each selected object."""

    def action(modeladmin, request, queryset):
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            done, refused = 0, []
            for obj in queryset:
                try:
                    perform(
                        moderator=request.user.get_username(),
                        obj=obj,
                        reason=form.cleaned_data["reason"],
                    )
                    done += 1
                except ModerationError as exc:
                    refused.append(str(exc))
            if done:
                modeladmin.message_user(request, f"{description}: {done} done.", messages.SUCCESS)
            for note in refused:
                modeladmin.message_user(request, note, messages.ERROR)
            return None
        return TemplateResponse(
            request,
            "admin/anchor/moderation_reason.html",
            {
                **modeladmin.admin_site.each_context(request),
                "title": description,
                "action_name": name,
                "description": description,
                "objects": list(queryset),
                "form": form,
                "opts": modeladmin.model._meta,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )

    action.__name__ = name
    return admin.action(description=description)(action)


class EvidenceAdmin(admin.ModelAdmin):
    """Evidence is never added, edited or deleted from the admin: every field read-only."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
