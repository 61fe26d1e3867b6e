"""The read API's shapes of benchmarks: a hardware class, a perf cohort, a benchmark in a list,
on its own (with its runs and cohorts) and as a recipe's answer lists it."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.models import Benchmark, HardwareClass, PerfCohort, Run
from recipes.policy import check_recipe, drafter_verified_by


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
            "weight_set",
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
    roofline = serializers.SerializerMethodField()
    drafter = serializers.SerializerMethodField()
    one_click = serializers.SerializerMethodField()

    class Meta(BenchmarkSerializer.Meta):
        fields = BenchmarkSerializer.Meta.fields + [
            "roofline",
            "drafter",
            "cohorts",
            "runs",
            "one_click",
        ]

    @extend_schema_field({"type": "object", "nullable": True})
    def get_one_click(self, benchmark: Benchmark) -> dict | None:
        """docs/recipes.md §The serve-flag policy: whether pods may apply this benchmark's recipe
        in one click, why not, and each flag's status; null without a recipe."""
        if benchmark.recipe is None:
            return None
        statuses = [run.drafter_status for run in benchmark.public_runs]
        verdict = check_recipe(
            benchmark.recipe.spec(), drafter_verified=drafter_verified_by(statuses)
        )
        return verdict.as_json() | {"flags": [flag.as_json() for flag in verdict.statuses]}

    @extend_schema_field(
        {
            "type": "object",
            "description": "docs/cohorts.md §Rooflines: status (unknown, within, beyond), the "
            "single-stream bound and % of it the single-stream figure reaches, floors, the "
            "figures beyond their bounds with the derivation.",
        }
    )
    def get_roofline(self, benchmark: Benchmark) -> dict:
        return benchmark.roofline or {"status": "unknown", "note": "no verified perf run"}

    @extend_schema_field(
        {
            "type": "object",
            "description": "docs/cohorts.md §Drafter health: status (none, unknown, healthy, "
            "barely_accepting), acceptance_pct and the threshold.",
        }
    )
    def get_drafter(self, benchmark: Benchmark) -> dict:
        return benchmark.drafter_health or {"status": "none"}

    @extend_schema_field(BenchmarkRunSerializer(many=True))
    def get_runs(self, benchmark: Benchmark) -> list:
        return BenchmarkRunSerializer(benchmark.public_runs, many=True).data

    @extend_schema_field(CohortSerializer(many=True))
    def get_cohorts(self, benchmark: Benchmark) -> list:
        return CohortSerializer(benchmark.perf_cohorts, many=True).data


class RecipeBenchmarkSerializer(BenchmarkSerializer):
    """A benchmark that used a recipe, in brief."""

    class Meta(BenchmarkSerializer.Meta):
        fields = [
            "id",
            "model",
            "hardware_class",
            "pod",
            "trust",
            "complete",
            "ranked",
            "composite",
            "peak_aggregate",
            "single_stream",
            "latency",
            "submitted_at",
        ]
