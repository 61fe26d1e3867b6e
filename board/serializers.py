"""Read API shapes of the board (DRF serializers)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.models import Benchmark, HardwareClass, PerfCohort, Result, Run
from recipes.scrub import scrub_extras


class ResultSerializer(serializers.ModelSerializer):
    raw_output = serializers.SerializerMethodField()

    class Meta:
        model = Result
        fields = list(Result.ROW_FIELDS)

    def get_raw_output(self, result: Result) -> str:
        return result.raw_text


class RunSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    pod = serializers.CharField(source="key_fingerprint")
    benchmark_id = serializers.CharField(source="benchmark.public_id", default=None)
    trust_tier = serializers.CharField(source="trust")
    extras = serializers.SerializerMethodField()
    results = ResultSerializer(many=True)

    class Meta:
        model = Run
        fields = [
            "run_id",
            "model",
            "board",
            "suite_id",
            "kind",
            "harness",
            "pod",
            "benchmark_id",
            "job_sig",
            "job_group",
            "committed_at",
            "bundle_sha256",
            "trust_tier",
            "verification",
            "verification_note",
            "weight_differences",
            "attestation_method",
            "drafter_status",
            "quality",
            "perf",
            "n_results",
            "extras",
            "results",
        ]

    @extend_schema_field({"type": "object"})
    def get_extras(self, run: Run) -> dict:
        """Every top-level key the pod sent, scrubbed: no raw command, host paths or credentials."""
        return scrub_extras(run.extras)


class HardwareClassSerializer(serializers.ModelSerializer):
    class Meta:
        model = HardwareClass
        fields = [
            "slug",
            "name",
            "family",
            "device_count",
            "memory_bandwidth_gbs",
            "memory_gb",
            "unified_memory",
            "preset",
        ]


class HardwareClassRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = HardwareClass
        fields = ["slug", "name"]


class CohortSerializer(serializers.ModelSerializer):
    class Meta:
        model = PerfCohort
        fields = [
            "label",
            "category",
            "conc",
            "aggregate_tps",
            "reported_aggregate_tps",
            "stream_ceiling_tps",
            "scheduling_efficiency",
            "decode_tps_mean",
            "ttft_ms_p50",
            "ttft_ms_p95",
            "tpot_ms_p50",
            "tpot_ms_p95",
            "n",
            "n_errors",
            "tokens",
            "cell_wall_s",
            "valid",
            "marks",
            "labels",
        ]


class BenchmarkRunSerializer(serializers.ModelSerializer):
    trust_tier = serializers.CharField(source="trust")

    class Meta:
        model = Run
        fields = [
            "run_id",
            "board",
            "suite_id",
            "kind",
            "harness",
            "trust_tier",
            "verification",
            "committed_at",
        ]


class BenchmarkSerializer(serializers.ModelSerializer):
    """A comprehensive run: its identity, trust and summary figures, each speed with its cohort."""

    id = serializers.CharField(source="public_id")
    model = serializers.CharField(source="model.canonical_id")
    hardware_class = HardwareClassRefSerializer()
    verification = serializers.SerializerMethodField()
    coverage = serializers.SerializerMethodField()
    peak_aggregate = serializers.SerializerMethodField()
    single_stream = serializers.SerializerMethodField()
    latency = serializers.SerializerMethodField()
    pod = serializers.CharField(source="key_fingerprint")

    class Meta:
        model = Benchmark
        fields = [
            "id",
            "model",
            "hardware_class",
            "hardware_label",
            "pod",
            "trust",
            "verification",
            "complete",
            "ranked",
            "badges",
            "composite",
            "coverage",
            "categories",
            "agentic",
            "modalities",
            "peak_aggregate",
            "single_stream",
            "latency",
            "context_len",
            "recipe_id",
            "submitted_at",
        ]

    @extend_schema_field(
        {
            "type": "object",
            "properties": {"verdict": {"type": "string"}, "differences": {"type": "array"}},
        }
    )
    def get_verification(self, benchmark: Benchmark) -> dict:
        return {"verdict": benchmark.verification, "differences": benchmark.weight_differences}

    @extend_schema_field({"type": "object", "nullable": True})
    def get_coverage(self, benchmark: Benchmark) -> dict | None:
        if not benchmark.coverage_label:
            return None
        return {"label": benchmark.coverage_label, "ratio": benchmark.coverage_ratio}

    @extend_schema_field({"type": "object", "nullable": True})
    def get_peak_aggregate(self, benchmark: Benchmark) -> dict | None:
        if benchmark.peak_tps is None:
            return None
        return {"tps": benchmark.peak_tps, "cohort": benchmark.peak_cohort}

    @extend_schema_field({"type": "object", "nullable": True})
    def get_single_stream(self, benchmark: Benchmark) -> dict | None:
        if benchmark.single_stream_tps is None:
            return None
        return {"tps": benchmark.single_stream_tps, "cohort": benchmark.single_stream_cohort}

    @extend_schema_field({"type": "object", "nullable": True})
    def get_latency(self, benchmark: Benchmark) -> dict | None:
        if benchmark.ttft_ms is None:
            return None
        return {
            "ttft_ms": benchmark.ttft_ms,
            "tpot_ms": benchmark.tpot_ms,
            "cohort": benchmark.latency_cohort,
        }


class BenchmarkDetailSerializer(BenchmarkSerializer):
    runs = serializers.SerializerMethodField()
    cohorts = serializers.SerializerMethodField()

    class Meta(BenchmarkSerializer.Meta):
        fields = BenchmarkSerializer.Meta.fields + ["cohorts", "runs"]

    @extend_schema_field(BenchmarkRunSerializer(many=True))
    def get_runs(self, benchmark: Benchmark) -> list:
        return BenchmarkRunSerializer(benchmark.public_runs, many=True).data

    @extend_schema_field(CohortSerializer(many=True))
    def get_cohorts(self, benchmark: Benchmark) -> list:
        return CohortSerializer(benchmark.perf_cohorts, many=True).data


# --- champions: the shapes of the champion answers, for the OpenAPI schema ----------------------


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


class RecipeDrafterSerializer(serializers.Serializer):
    method = serializers.CharField(allow_null=True)
    repo = serializers.CharField(allow_null=True)
    revision = serializers.CharField(allow_null=True)
    n = serializers.IntegerField(allow_null=True)


class PublicRecipeSerializer(serializers.Serializer):
    engine = serializers.CharField(allow_null=True)
    image = serializers.CharField(allow_null=True)
    image_digest = serializers.CharField(allow_null=True)
    flags = serializers.ListField(child=serializers.CharField())
    drafter = RecipeDrafterSerializer(allow_null=True)
    context_len = serializers.IntegerField(allow_null=True)


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
    recipe = PublicRecipeSerializer()
    reproductions = ReproductionsSerializer()
    history = ReignSerializer(many=True)


class ChampionListSerializer(serializers.Serializer):
    champions = CrownSerializer(many=True)
