"""What was measured: runs committed by pods and their per-case results."""

from django.db import models


class Run(models.Model):
    """One committed bundle of one board (text, perf, vision …), as its pod signed it.

    `key_fingerprint` names the pod; `board` never imports the pod channel's tables.
    """

    run_id = models.CharField(max_length=32, unique=True)
    key_fingerprint = models.CharField(max_length=16, db_index=True)
    model_name = models.CharField(max_length=300)
    board = models.CharField(max_length=32)
    suite_id = models.CharField(max_length=100, null=True, blank=True)
    job_sig = models.CharField(max_length=64, null=True, blank=True)
    job_group = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    committed_at = models.DateTimeField(db_index=True)
    bundle_sha256 = models.CharField(max_length=64)
    extras = models.JSONField(
        default=dict
    )  # every top-level key but results (artifact html left in the raw bundle)
    n_results = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-committed_at"]

    def __str__(self) -> str:
        return f"{self.run_id} {self.board} {self.model_name}"


class Result(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveIntegerField()
    case_id = models.CharField(max_length=200)
    category = models.CharField(max_length=100, blank=True)
    tier = models.SmallIntegerField(null=True)
    status = models.CharField(max_length=40)
    score = models.FloatField(null=True)
    creativity = models.FloatField(null=True)
    # UTF-8 bytes: completions may hold NUL, which PostgreSQL text cannot store.
    raw_output = models.BinaryField(default=b"")
    evidence = models.JSONField(null=True)
    speed = models.JSONField(null=True)
    extras = models.JSONField(default=dict)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case_id"], name="one_result_per_case")
        ]

    @property
    def raw_text(self) -> str:
        return bytes(self.raw_output).decode("utf-8")
