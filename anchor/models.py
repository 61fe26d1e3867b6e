"""The trust anchor's records (docs/trust-anchor.md): signed run manifests, one row per version,
and the moderators' audit log.

Both are append-only history. A manifest version is never rewritten: a later change to a run
(a moderator's flag, a cleared hold, a revoked key, a weight verdict) adds the next version,
which names what changed. Rows name runs and benchmarks by their public ids, not by foreign
keys: `rebuild_board` re-creates runs and benchmarks from the evidence, and what the board has
signed or a moderator has done must survive that.
"""

from django.db import models


class RunManifest(models.Model):
    """One signed version of a run's manifest.

    `document` is the exact canonical JSON that was signed (protocol: sorted keys, compact
    separators, ASCII): kept as text so the bytes served are the bytes signed, whatever the
    database does to JSON numbers.
    """

    run_id = models.CharField(max_length=32)
    version = models.PositiveIntegerField()
    document = models.TextField()
    document_sha256 = models.CharField(max_length=64)
    signature = models.CharField(max_length=100)
    public_key = models.CharField(max_length=64)  # the board key that signed it
    signed_at = models.DateTimeField()
    # What this version changed against the previous one (empty for version 1), as in the
    # document's `change`; kept as a column for listing.
    change = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["run_id", "version"], name="one_manifest_version")
        ]

    def __str__(self) -> str:
        return f"manifest {self.run_id} v{self.version}"


class ModerationAction(models.TextChoices):
    FLAG_BENCHMARK = "flag_benchmark", "flagged a benchmark"
    UNFLAG_BENCHMARK = "unflag_benchmark", "unflagged a benchmark"
    FLAG_RUN = "flag_run", "flagged a run"
    UNFLAG_RUN = "unflag_run", "unflagged a run"
    REVOKE_KEY = "revoke_key", "revoked a device key"
    REVIEW_QUARANTINE = "review_quarantine", "reviewed a quarantined bundle"
    RECHECK_WEIGHTS = "recheck_weights", "re-ran a weight check"
    CLEAR_SECRET_HOLD = "clear_secret_hold", "cleared a secret-detected hold"


class AuditEntry(models.Model):
    """One moderator action: who, when, what, on which target, why, and what it did.

    The current state lives elsewhere (`board.ModerationFlag` for flags, the key's status, the
    run's hold); this log is the history and is only ever appended to.
    """

    at = models.DateTimeField(db_index=True)
    moderator = models.CharField(max_length=150)  # the username, kept if the account goes
    action = models.CharField(max_length=24, choices=ModerationAction.choices)
    target_kind = models.CharField(max_length=16)  # benchmark, run, key, quarantine
    target_id = models.CharField(max_length=64)
    reason = models.TextField()
    outcome = models.JSONField(default=dict, blank=True)  # e.g. verdicts, manifest versions

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.moderator} {self.action} {self.target_id}"


class AuditSubject(models.Model):
    """A benchmark an action concerns (a key's revocation concerns every benchmark of the key):
    the benchmark page lists the actions through these rows."""

    entry = models.ForeignKey(AuditEntry, on_delete=models.PROTECT, related_name="subjects")
    benchmark_public_id = models.CharField(max_length=16, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "benchmark_public_id"], name="one_subject_per_entry"
            )
        ]
