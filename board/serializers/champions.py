"""The shapes of the champion answers (docs/champions.md), for the OpenAPI schema: the pods'
champion list and the champions API."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.serializers.benchmarks import HardwareClassRefSerializer
from board.serializers.recipes import RECIPE_JSON_SCHEMA


class PeakCellSerializer(serializers.Serializer):
    category = serializers.CharField()
    conc = serializers.IntegerField()


class PodDrafterSerializer(serializers.Serializer):
    method = serializers.CharField(allow_null=True)
    repo = serializers.CharField(allow_null=True)
    revision = serializers.CharField(allow_null=True)
    n = serializers.IntegerField(allow_null=True)
    uses_drafter = serializers.BooleanField()


class PodChampionRecipeSerializer(serializers.Serializer):
    """One champion recipe as pods read it: the throughput champion of a class and model."""

    hardware = serializers.CharField(help_text="the champion's raw hardware label")
    hw_bucket = serializers.CharField(help_text="the hardware class name")
    model = serializers.CharField()
    canonical = serializers.CharField()
    hf_repo = serializers.CharField(allow_null=True)
    hf_revision = serializers.CharField(allow_null=True)
    engine = serializers.CharField(allow_null=True)
    image = serializers.CharField(allow_null=True)
    serve_flags = serializers.ListField(child=serializers.CharField())
    spec_decode = serializers.CharField(allow_null=True)
    drafter = PodDrafterSerializer(allow_null=True)
    peak_agg_tps = serializers.FloatField()
    peak_agg_cell = PeakCellSerializer(allow_null=True)
    quality = serializers.FloatField(allow_null=True)
    quality_run = serializers.CharField(allow_null=True)
    trust_tier = serializers.CharField()
    run = serializers.CharField(allow_null=True)
    started_at = serializers.IntegerField(allow_null=True, help_text="epoch seconds")


class PodChampionListSerializer(serializers.Serializer):
    hardwares = serializers.ListField(child=serializers.CharField())
    champions = PodChampionRecipeSerializer(many=True)


@extend_schema_field(RECIPE_JSON_SCHEMA)
class RecipeJsonField(serializers.JSONField):
    """A recipe's public JSON (docs/recipes.md)."""


class SpreadSerializer(serializers.Serializer):
    min = serializers.FloatField()
    max = serializers.FloatField()
    relative = serializers.FloatField(help_text="(max − min) ÷ max")


class ReproductionsSerializer(serializers.Serializer):
    pods = serializers.IntegerField(help_text="distinct pods that measured this recipe here")
    benchmark_ids = serializers.ListField(child=serializers.CharField())
    spread = SpreadSerializer(allow_null=True)
    summary = serializers.CharField(help_text="e.g. 'reproduced by 2 pods, spread 1.8 %'")


class ReignSerializer(serializers.Serializer):
    benchmark_id = serializers.CharField()
    model = serializers.CharField()
    value = serializers.FloatField()
    cohort = serializers.CharField(allow_null=True)
    tpot_ms = serializers.FloatField(allow_null=True)
    since = serializers.DateTimeField()
    until = serializers.DateTimeField(allow_null=True)
    dethroned_by = serializers.CharField(allow_null=True)


class CrownSerializer(serializers.Serializer):
    """The holder of one crown: an axis on a hardware class (or on one model there)."""

    hardware_class = HardwareClassRefSerializer()
    axis = serializers.ChoiceField(choices=["throughput", "single_stream", "latency", "quality"])
    crown = serializers.ChoiceField(choices=["class", "model"])
    value = serializers.FloatField()
    unit = serializers.CharField()
    cohort = serializers.CharField(allow_null=True, help_text="e.g. 'coding @ c64'")
    tpot_ms = serializers.FloatField(allow_null=True, help_text="latency: TPOT p50 beside TTFT")
    model = serializers.CharField()
    benchmark_id = serializers.CharField()
    composite = serializers.FloatField(allow_null=True)
    since = serializers.DateTimeField()
    recipe_id = serializers.CharField(allow_null=True)
    recipe = RecipeJsonField(allow_null=True)
    reproductions = ReproductionsSerializer()
    history = ReignSerializer(many=True)


class ChampionListSerializer(serializers.Serializer):
    champions = CrownSerializer(many=True)
