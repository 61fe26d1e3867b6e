"""The read models (docs/champions.md §Read models): rewritten by the recompute task, read by
pages and APIs, never aggregated from raw results per request."""

from django.db import models

from board.champions import Axis
from board.models.measured import Benchmark, BenchModel, HardwareClass

AXIS_CHOICES = [(axis.value, axis.value.replace("_", " ")) for axis in Axis]


class Champion(models.Model):
    """The holder of one crown: an axis on a hardware class, or on one model on that class
    (`model` set). `summary` is the crown as the champion API shows it (recipe, reproductions);
    `pod_recipe` is the entry of the pods' champion list (per-model throughput crowns only)."""

    hardware_class = models.ForeignKey(
        HardwareClass, on_delete=models.CASCADE, related_name="champions"
    )
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, null=True, related_name="+")
    axis = models.CharField(max_length=16, choices=AXIS_CHOICES)
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    value = models.FloatField()
    secondary = models.FloatField(null=True)  # latency: the TPOT beside the TTFT
    cohort = models.CharField(max_length=60, blank=True)
    since = models.DateTimeField()
    summary = models.JSONField(default=dict)
    pod_recipe = models.JSONField(null=True)

    class Meta:
        indexes = [models.Index(fields=["hardware_class", "model", "axis"])]


class ChampionReign(models.Model):
    """One line of a crown's history: who held it, from when, until which benchmark took it."""

    hardware_class = models.ForeignKey(HardwareClass, on_delete=models.CASCADE, related_name="+")
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, null=True, related_name="+")
    axis = models.CharField(max_length=16, choices=AXIS_CHOICES)
    position = models.PositiveIntegerField()
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    value = models.FloatField()
    secondary = models.FloatField(null=True)
    cohort = models.CharField(max_length=60, blank=True)
    since = models.DateTimeField()
    until = models.DateTimeField(null=True)
    dethroned_by = models.ForeignKey(
        Benchmark, on_delete=models.CASCADE, null=True, related_name="+"
    )

    class Meta:
        ordering = ["position"]
        indexes = [models.Index(fields=["hardware_class", "model", "axis", "position"])]


class RecipeReproduction(models.Model):
    """The ranked benchmarks of one recipe on one hardware class and model: reproduced when
    distinct pods measured it. `spreads` holds min, max and relative spread per axis."""

    recipe_id = models.CharField(max_length=64)
    hardware_class = models.ForeignKey(HardwareClass, on_delete=models.CASCADE, related_name="+")
    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, related_name="+")
    pods = models.PositiveIntegerField()
    benchmark_ids = models.JSONField(default=list)  # public ids, in commit order
    spreads = models.JSONField(default=dict)
    keys = models.PositiveIntegerField(default=0)  # device keys: more than pods on one network
    copies = models.JSONField(default=list)  # benchmarks repeating another pod's evidence

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["recipe_id", "hardware_class", "model"], name="one_reproduction_row"
            )
        ]


class ClassSummary(models.Model):
    """What the board shows per hardware class: counts and the best ranked figures."""

    hardware_class = models.OneToOneField(
        HardwareClass, on_delete=models.CASCADE, related_name="summary"
    )
    benchmark_count = models.PositiveIntegerField(default=0)
    ranked_count = models.PositiveIntegerField(default=0)
    model_count = models.PositiveIntegerField(default=0)  # models with a ranked benchmark
    pod_count = models.PositiveIntegerField(default=0)
    best = models.JSONField(default=dict)  # axis → {value, cohort, benchmark_id, model}
    best_throughput = models.FloatField(null=True)  # the board orders classes by it
    latest_at = models.DateTimeField(null=True)


class ModelClassSummary(models.Model):
    """What a model page shows per hardware class holding published benchmarks of the model: the
    counts, the latest submission, and the benchmarks with the best peak, single-stream and
    latency figures among the ranked ones (among all of them when none ranks). Written with the
    class's other read models (docs/champions.md §Read models), so the page reads one row per
    class whatever the number of benchmarks."""

    model = models.ForeignKey(BenchModel, on_delete=models.CASCADE, related_name="class_summaries")
    hardware_class = models.ForeignKey(
        HardwareClass, on_delete=models.CASCADE, related_name="model_summaries"
    )
    benchmark_count = models.PositiveIntegerField(default=0)
    ranked_count = models.PositiveIntegerField(default=0)
    latest_at = models.DateTimeField(null=True)
    best_peak = models.ForeignKey(Benchmark, null=True, on_delete=models.CASCADE, related_name="+")
    best_single = models.ForeignKey(
        Benchmark, null=True, on_delete=models.CASCADE, related_name="+"
    )
    best_latency = models.ForeignKey(
        Benchmark, null=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model", "hardware_class"], name="one_summary_per_model_and_class"
            )
        ]


class BoardGeneration(models.Model):
    """One row: bumped whenever what the board shows changes; cached answers are keyed by it."""

    number = models.BigIntegerField()
