"""Moderation: a moderator's flags and cleared holds. Not derived from bundles, so a rebuild
keeps them and applies them again to what it re-derives."""

from django.db import models


class FlagTarget(models.TextChoices):
    BENCHMARK = "benchmark"
    RUN = "run"


class ModerationFlag(models.Model):
    """A moderator's flag on a benchmark (by public id) or a run (by run id). Not derived from
    bundles, so a rebuild keeps it and re-applies it to what it re-derives."""

    target = models.CharField(max_length=10, choices=FlagTarget.choices)
    target_id = models.CharField(max_length=32)
    note = models.TextField(blank=True)
    flagged_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["target", "target_id"], name="one_flag_per_target")
        ]


class HoldClearance(models.Model):
    """A moderator cleared a run's secret-detected hold (docs/recipes.md, "Secrets"): the run is
    published. Not derived from bundles, so a rebuild keeps it and applies it again."""

    run_id = models.CharField(max_length=32, unique=True)
    note = models.TextField(blank=True)
    cleared_at = models.DateTimeField()


# --- read models (docs/champions.md): rewritten by the recompute task, read by pages and APIs ----
