"""Reads of the hardware classes and models the board lists: the class picker, the class and
model indexes and pages, and the board order of classes (docs/hardware-classes.md)."""

from django.db.models import Exists, F, OuterRef, Q, Sum
from django.db.models.functions import Coalesce

from board.hardware import Family, HardwareClassSpec, board_order_key
from board.models import (
    Benchmark,
    BenchModel,
    ClassSummary,
    HardwareClass,
    ModelClassSummary,
    Trust,
)


def holds_attested(field: str) -> Exists:
    """Whether the class (`field="hardware_class"`) or model (`"model"`) holds a public attested
    benchmark: what puts a class or a model on the public lists (docs/hardware-classes.md
    §Preset classes). A label or a model name alone, or self-reported uploads of them, never do:
    anyone can enroll a key and send any text."""
    attested = Benchmark.objects.public().filter(trust=Trust.ATTESTED, **{field: OuterRef("pk")})
    return Exists(attested)


def hardware_classes():
    """The classes listed publicly: the presets, and those holding a public attested benchmark."""
    return HardwareClass.objects.filter(Q(preset=True) | holds_attested("hardware_class")).order_by(
        "-preset", "device_count", "name"
    )


def classes_with_benchmarks() -> set[int]:
    """Ids of the hardware classes holding at least one public benchmark, from the class
    summaries (a read model): one query of one row per class, whatever the number of
    benchmarks."""
    return set(
        ClassSummary.objects.filter(benchmark_count__gt=0).values_list(
            "hardware_class_id", flat=True
        )
    )


def picker_classes() -> tuple[list[HardwareClass], set[int]]:
    """The board's class picker: the Spark presets always (greyed out while empty), the other
    classes once they hold a public attested benchmark, in board order (Spark by node count, the others
    by their best throughput, Unlabeled last); and the ids of the classes holding one."""
    occupied = classes_with_benchmarks()
    listed = [
        cls
        for cls in hardware_classes().select_related("summary")
        if cls.pk in occupied or (cls.preset and cls.family == Family.DGX_SPARK)
    ]
    listed.sort(key=board_order)
    return listed, occupied


def hardware_class(slug: str) -> HardwareClass | None:
    return HardwareClass.objects.listed().filter(slug=slug).first()


def hardware_classes_with_counts():
    """Every class with how many public and ranked benchmarks it holds, presets first: the
    counts come from the class summaries (a read model), never from counting benchmarks; the
    summary rides along for the best throughput the index shows."""
    return (
        hardware_classes()
        .select_related("summary")
        .annotate(
            n_benchmarks=Coalesce(F("summary__benchmark_count"), 0),
            n_ranked=Coalesce(F("summary__ranked_count"), 0),
        )
    )


def models_with_counts(search: str | None = None):
    """Models holding an attested published benchmark, with how many published benchmarks
    (ranked), summed over their per-class read models: a row per model and class, not per
    benchmark."""
    queryset = (
        BenchModel.objects.annotate(
            n_benchmarks=Sum("class_summaries__benchmark_count"),
            n_ranked=Sum("class_summaries__ranked_count"),
        )
        .filter(n_benchmarks__gt=0)
        .filter(holds_attested("model"))  # listed once it holds an attested benchmark
        .order_by("canonical_id")
    )
    if search:
        queryset = queryset.filter(
            Q(canonical_id__icontains=search) | Q(display_name__icontains=search)
        )
    return queryset


def model_speed_by_class(model: BenchModel) -> list[dict]:
    """Per hardware class holding public benchmarks of `model` (latest first): how many, whether
    any ranks, and the benchmark with the best peak, single-stream and latency figure among the
    ranked ones (among all of them when none ranks). One query over the read model
    (`ModelClassSummary`), whatever the number of benchmarks."""
    summaries = (
        ModelClassSummary.objects.filter(model=model)
        .select_related("hardware_class", "best_peak", "best_single", "best_latency")
        .order_by(F("latest_at").desc(nulls_last=True), "hardware_class_id")
    )
    return [
        {
            "cls": summary.hardware_class,
            "ranked": summary.ranked_count > 0,
            "count": summary.benchmark_count,
            "peak": summary.best_peak,
            "single": summary.best_single,
            "latency": summary.best_latency,
        }
        for summary in summaries
    ]


def bench_model(canonical_id: str) -> BenchModel | None:
    return BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()


def board_order(hardware_class: HardwareClass) -> tuple:
    summary = getattr(hardware_class, "summary", None)
    spec = HardwareClassSpec(
        slug=hardware_class.slug,
        name=hardware_class.name,
        family=Family(hardware_class.family),
        device_count=hardware_class.device_count,
    )
    return board_order_key(spec, summary.best_throughput if summary else None)


def class_summaries() -> list[ClassSummary]:
    """Every class's counts and best figures, in board order (one query)."""
    summaries = list(ClassSummary.objects.select_related("hardware_class"))
    return sorted(summaries, key=lambda s: board_order(s.hardware_class))
