"""The recipe lab's read models (docs/lab.md): single-flag experiments, flag effects and drafter
curves, rewritten with the other read models; and the record of each dataset export (docs/lab.md
§Data to take away)."""

from django.db import models

from board.models.measured import BenchModel, HardwareClass


class FlagPair(models.Model):
    """Two recipes of one pod, one model, weight set, engine and image on one class whose flags
    differ in exactly one option (board/lab.py): `base` without the change, `other` with it.
    The benchmark page reads its "one flag away" neighbours here."""

    hardware_class = models.ForeignKey(HardwareClass, on_delete=models.CASCADE, related_name="+")
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, related_name="+")
    key_fingerprint = models.CharField(max_length=16)
    flag = models.CharField(max_length=200)
    change_key = models.CharField(max_length=2000)
    change = models.JSONField(default=dict)  # {flag, kind, before, after}
    base_recipe_id = models.CharField(max_length=64)
    other_recipe_id = models.CharField(max_length=64)
    base_benchmark_ids = models.JSONField(default=list)  # public ids
    other_benchmark_ids = models.JSONField(default=list)
    base_figures = models.JSONField(default=dict)  # axis → the side's median figure
    other_figures = models.JSONField(default=dict)
    deltas = models.JSONField(default=dict)  # axis → ratio (speed) or difference (points)

    class Meta:
        indexes = [models.Index(fields=["hardware_class", "model", "key_fingerprint"])]


class FlagEffect(models.Model):
    """What one change measured for one model on one class: per axis the median, smallest and
    largest of its pairs' deltas, and how many pairs and pods stand behind it."""

    hardware_class = models.ForeignKey(HardwareClass, on_delete=models.CASCADE, related_name="+")
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, related_name="+")
    flag = models.CharField(max_length=200, db_index=True)
    change_key = models.CharField(max_length=2000)
    change = models.JSONField(default=dict)  # {flag, kind, before, after}
    pair_count = models.PositiveIntegerField()
    pod_count = models.PositiveIntegerField()
    axes = models.JSONField(default=dict)  # axis → {how, median, min, max, n, better} or null
    pairs = models.JSONField(default=list)  # [{pod, base: [ids], other: [ids], deltas}]

    class Meta:
        ordering = ["flag", "change_key"]
        indexes = [models.Index(fields=["hardware_class", "model"])]


class DrafterCurve(models.Model):
    """For one model on one class and one drafter setting (none, or a method and its n): the
    best valid cohort of any ranked benchmark at each concurrency measured (docs/lab.md
    §Drafter × concurrency)."""

    hardware_class = models.ForeignKey(HardwareClass, on_delete=models.CASCADE, related_name="+")
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=60, blank=True)  # "" : no drafter
    n = models.PositiveIntegerField(null=True)
    label = models.CharField(max_length=100)
    # [{conc, aggregate_tps, per_stream_tps, cohort, benchmark}] by concurrency
    points = models.JSONField(default=list)

    class Meta:
        ordering = ["method", "n"]
        indexes = [models.Index(fields=["hardware_class", "model"])]


class DatasetExport(models.Model):
    """One written export of the ranked board, its cohorts and recipes (docs/lab.md §Data to take
    away): each file's bytes are in the evidence store under their sha256, listed in `files`."""

    version = models.PositiveIntegerField(unique=True)  # 1, 2, …: the download's version
    schema_version = models.CharField(max_length=60)
    created_at = models.DateTimeField()
    generation = models.BigIntegerField(null=True)  # the board's generation it was read at
    files = models.JSONField(default=dict)  # name → {sha256, bytes, rows, media_type}

    class Meta:
        ordering = ["-version"]
