"""The pod channel's records: device keys, challenges, run sessions, checkpoint rows, raw
bundles, quarantine, the ingest log and rate-limit counters."""

from django.db import models
from django.db.models import Q

from config.api_errors import Reason


class KeyStatus(models.TextChoices):
    ACTIVE = "active"
    REVOKED = "revoked"


class DeviceKey(models.Model):
    public_key = models.CharField(max_length=64, unique=True)
    fingerprint = models.CharField(max_length=16, unique=True)
    status = models.CharField(max_length=8, choices=KeyStatus.choices, default=KeyStatus.ACTIVE)
    enrolled_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"{self.fingerprint} ({self.status})"

    @property
    def is_revoked(self) -> bool:
        return self.status == KeyStatus.REVOKED


class KeyAuditEntry(models.Model):
    """Every action on a key: enrolment, revocation (automatic or by a moderator), reinstatement."""

    class Action(models.TextChoices):
        ENROLLED = "enrolled"
        REVOKED = "revoked"
        REINSTATED = "reinstated"

    key = models.ForeignKey(DeviceKey, on_delete=models.CASCADE, related_name="audit")
    action = models.CharField(max_length=12, choices=Action.choices)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)


class ForgeryEvent(models.Model):
    """A forgery-class refusal counted against a key; the 5th within 24 h revokes it."""

    key = models.ForeignKey(DeviceKey, on_delete=models.CASCADE, related_name="forgery_events")
    reason = models.CharField(max_length=32, choices=Reason.choices)
    run_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)


class Challenge(models.Model):
    value = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    used_at = models.DateTimeField(null=True, blank=True)


class SessionStatus(models.TextChoices):
    OPEN = "open"  # opened, nothing received yet
    RUNNING = "running"  # checkpoints arriving
    COMMITTED = "committed"
    SUPERSEDED = "superseded"  # another session of the same job committed first
    QUARANTINED = "quarantined"  # closed after a forgery-class refusal


LIVE_SESSION_STATUSES = (SessionStatus.OPEN, SessionStatus.RUNNING)


class RunSession(models.Model):
    """One open_run: the only source of model, suite and board for the bundles sent to it."""

    run_id = models.CharField(max_length=32, unique=True)
    key = models.ForeignKey(DeviceKey, on_delete=models.PROTECT, related_name="sessions")
    model = models.CharField(max_length=300)
    suite_id = models.CharField(max_length=100, null=True, blank=True)
    board = models.CharField(max_length=32)
    nonce = models.CharField(max_length=64)
    token_sha256 = models.CharField(max_length=64)
    status = models.CharField(
        max_length=12, choices=SessionStatus.choices, default=SessionStatus.OPEN
    )
    job_sig = models.CharField(max_length=64, null=True, blank=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    last_progress_at = models.DateTimeField(null=True, blank=True)
    checkpoints = models.PositiveIntegerField(default=0)
    committed_at = models.DateTimeField(null=True, blank=True)
    final_bundle_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [
            # The job_sig dedup: one committed run per (key, job_sig), whatever races.
            models.UniqueConstraint(
                fields=["key", "job_sig"],
                condition=Q(status="committed") & Q(job_sig__isnull=False),
                name="one_committed_run_per_key_job_sig",
            )
        ]
        indexes = [
            models.Index(fields=["key", "status"]),
            models.Index(fields=["job_sig"]),
            # The key's daily upload quota counts its finals committed within 24 h.
            models.Index(fields=["key", "committed_at"], name="session_key_committed"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.board} {self.status}"


class CheckpointRow(models.Model):
    """A result row received in a checkpoint: first write per case wins."""

    session = models.ForeignKey(
        RunSession, on_delete=models.CASCADE, related_name="checkpoint_rows"
    )
    case_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    row_json = models.TextField()  # ASCII JSON of the row: NUL and any text survive losslessly
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "case_id"], name="one_row_per_case")
        ]


class RawBundle(models.Model):
    """Evidence: the signed request body, content-addressed by its sha256. A body of at most
    AEON_INLINE_EVIDENCE_BYTES is kept in `content`; a bigger one (or one stored before that
    setting) is in the blob store and `content` is null. Read either through
    `selectors.raw_bundle`."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    stored_at = models.DateTimeField(auto_now_add=True)
    # lz4-compressed by PostgreSQL where the server has it (migration 0002).
    content = models.BinaryField(null=True)


class SessionBundle(models.Model):
    """Each accepted body of a session, in arrival order: the evidence behind its checkpoint rows
    and its final."""

    session = models.ForeignKey(RunSession, on_delete=models.CASCADE, related_name="bundles")
    raw = models.ForeignKey(RawBundle, on_delete=models.PROTECT)
    final = models.BooleanField()
    received_at = models.DateTimeField(auto_now_add=True)


class QuarantinedBundle(models.Model):
    raw = models.ForeignKey(RawBundle, on_delete=models.PROTECT)
    run_id = models.CharField(max_length=64, blank=True)
    key_fingerprint = models.CharField(max_length=16, blank=True)
    reason = models.CharField(max_length=32, choices=Reason.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    reviewed = models.BooleanField(default=False)


class IngestRoute(models.TextChoices):
    CHALLENGE = "challenge"
    ENROLL = "enroll"
    OPEN_RUN = "open_run"
    RESULTS = "results"
    JOB_STATUS = "job_status"


class IngestLogEntry(models.Model):
    """One row per attempt, written outside the ingest transaction so refusals are kept."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    route = models.CharField(max_length=16, choices=IngestRoute.choices)
    status = models.PositiveSmallIntegerField()
    reason = models.CharField(max_length=32, choices=Reason.choices)
    run_id = models.CharField(max_length=64, blank=True, db_index=True)
    key_fingerprint = models.CharField(max_length=16, blank=True, db_index=True)
    bytes = models.PositiveBigIntegerField(default=0)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    note = models.TextField(blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        verbose_name_plural = "ingest log"
        ordering = ["-created_at"]


class RateCounter(models.Model):
    """Fixed-window request counters, incremented with one atomic upsert."""

    scope = models.CharField(max_length=100)
    window_start = models.BigIntegerField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "window_start"], name="one_counter_per_window")
        ]


class WeightCheckCache(models.Model):
    """Hugging Face's answer per (repo, commit): a commit never changes, so ask once."""

    repo = models.CharField(max_length=300)
    commit = models.CharField(max_length=40)
    found = models.BooleanField()  # False: the Hub refused (gated, private, deleted)
    files = models.JSONField(default=dict)  # weight path → LFS sha256 (or null)
    fetched_at = models.DateTimeField(auto_now_add=True)
    demo = models.BooleanField(
        default=False
    )  # pre-filled by the embedded demo, not asked of the Hub
    # The model facts' inputs (docs/cohorts.md §Rooflines): the weight files' sizes as the Hub
    # lists them, summed, and the commit's config.json. `config_state`: "" asked before the board
    # read facts, "listed" (config.json listed, not read yet), "none" (not listed), "found",
    # "too_large" or "unreadable".
    weight_bytes = models.BigIntegerField(null=True)
    config_size = models.BigIntegerField(null=True)
    config = models.JSONField(null=True)
    config_state = models.CharField(max_length=16, blank=True)
    # The repository's id as the Hub answered it (its own capitalisation): a verified run's model
    # is named by it (docs/trust-and-ranking.md §Models). "" for answers cached before.
    repo_id = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["repo", "commit"], name="one_answer_per_commit")
        ]
