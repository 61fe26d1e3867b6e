"""Atom feeds (Django's syndication framework; docs/lab.md §Data to take away): the crowns taken
on a hardware class, newest first, and the public benchmarks of a model, newest first. Each a
fixed number of queries; titles and summaries are escaped by the feed generator."""

from django.contrib.syndication.views import Feed
from django.http import Http404
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from board.champions import Axis
from board.models import Benchmark, BenchModel, ChampionReign, HardwareClass

FEED_ITEMS = 50
UNITS = {axis.value: axis.unit for axis in Axis}


class ClassChampionsFeed(Feed):
    """Every time a class-wide crown of the class changed hands (ChampionReign), newest first."""

    feed_type = Atom1Feed

    def get_object(self, request, slug: str):
        found = HardwareClass.objects.filter(slug=slug).first()
        if found is None:
            raise Http404("no such hardware class")
        return found

    def title(self, obj):
        return f"New champions on {obj.name} · AEON Board"

    def link(self, obj):
        return reverse("hardware", args=[obj.slug])

    def subtitle(self, obj):
        return f"Each crown taken on {obj.name}: throughput, single-stream, latency, quality."

    def items(self, obj):
        return (
            ChampionReign.objects.filter(hardware_class=obj, model__isnull=True)
            .select_related("benchmark__model")
            .order_by("-since", "-pk")[:FEED_ITEMS]
        )

    def item_title(self, item):
        unit = UNITS.get(item.axis, "")
        cohort = f" ({item.cohort})" if item.cohort else ""
        axis = item.axis.replace("_", "-")
        return (
            f"{axis} crown: {item.benchmark.model.canonical_id}, {item.value:,.1f} {unit}{cohort}"
        )

    def item_description(self, item):
        return f"Benchmark {item.benchmark.public_id} took the {item.axis.replace('_', ' ')} crown."

    def item_link(self, item):
        return reverse("benchmark", args=[item.benchmark.public_id]) + f"#crown-{item.axis}"

    def item_guid(self, item):
        return (
            f"crown:{item.hardware_class_id}:{item.axis}:{item.benchmark.public_id}:{item.since:%s}"
        )

    item_guid_is_permalink = False

    def item_pubdate(self, item):
        return item.since

    def item_updateddate(self, item):
        return item.since


class ModelBenchmarksFeed(Feed):
    """The model's public benchmarks, newest submitted first."""

    feed_type = Atom1Feed

    def get_object(self, request, canonical_id: str):
        found = BenchModel.objects.filter(canonical_id__iexact=canonical_id).first()
        if found is None:
            raise Http404("no such model")
        return found

    def title(self, obj):
        return f"New benchmarks of {obj.canonical_id} · AEON Board"

    def link(self, obj):
        return reverse("model", args=[obj.canonical_id])

    def subtitle(self, obj):
        return f"Every public benchmark of {obj.canonical_id}, on every hardware class."

    def items(self, obj):
        return (
            Benchmark.objects.public()
            .filter(model=obj)
            .select_related("hardware_class")
            .defer("weight_differences", "agentic", "modalities", "categories")
            .order_by("-submitted_at", "-pk")[:FEED_ITEMS]
        )

    def item_title(self, item):
        peak = f", {item.peak_tps:,.1f} tok/s ({item.peak_cohort})" if item.peak_tps else ""
        quality = f", composite {item.composite:.1f}" if item.composite is not None else ""
        return f"{item.hardware_class.name}{peak}{quality}"

    def item_description(self, item):
        state = "ranked" if item.ranked else "not ranked"
        return f"Benchmark {item.public_id}: {item.get_trust_display().lower()}, {state}."

    def item_link(self, item):
        return reverse("benchmark", args=[item.public_id])

    def item_pubdate(self, item):
        return item.submitted_at or item.created_at

    def item_updateddate(self, item):
        return item.submitted_at or item.created_at
