"""Read API shapes of the board (DRF serializers)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.models import Benchmark, HardwareClass, PerfCohort, Result, Run
from board.public import public_evidence, public_perf
from recipes.scrub import public_output, scrub_extras


class ResultSerializer(serializers.ModelSerializer):
    """One case as the pod sent it; the operator's home directories masked in model output and
    the sustained timeline's clock made relative (docs/recipes.md, "Scrubbing")."""

    raw_output = serializers.SerializerMethodField()
    evidence = serializers.SerializerMethodField()
    speed = serializers.SerializerMethodField()

    class Meta:
        model = Result
        fields = list(Result.ROW_FIELDS)

    def get_raw_output(self, result: Result) -> str:
        return public_output(result.raw_text)

    @extend_schema_field({"oneOf": [{"type": "object"}, {"type": "array"}], "nullable": True})
    def get_evidence(self, result: Result):
        return public_evidence(result)

    @extend_schema_field({"type": "object", "nullable": True})
    def get_speed(self, result: Result):
        return public_output(result.speed)


class RunSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    pod = serializers.CharField(source="key_fingerprint")
    benchmark_id = serializers.CharField(source="benchmark.public_id", default=None)
    trust_tier = serializers.CharField(source="trust")
    perf = serializers.SerializerMethodField()
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
        """Every top-level key the pod sent, scrubbed: no raw command, host paths, credentials,
        job signature, group or start stamp."""
        return scrub_extras(run.extras)

    @extend_schema_field({"type": "object"})
    def get_perf(self, run: Run) -> dict:
        return public_perf(run)


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

    class Meta(BenchmarkSerializer.Meta):
        fields = BenchmarkSerializer.Meta.fields + ["cohorts", "runs"]

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


_FLAG_CHANGE = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "flag": {"type": "string"},
            "value": {"type": "string", "nullable": True},
            "from": {"type": "string", "nullable": True},
            "to": {"type": "string", "nullable": True},
        },
    },
}
RECIPE_JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "engine": {"type": "string"},
        "image": {"type": "string", "nullable": True},
        "image_digest": {"type": "string", "nullable": True},
        "image_note": {"type": "string", "nullable": True},
        "flags": {"type": "array", "items": {"type": "string"}},
        "drafter": {
            "type": "object",
            "nullable": True,
            "properties": {
                "method": {"type": "string", "nullable": True},
                "repo": {"type": "string", "nullable": True},
                "revision": {"type": "string", "nullable": True},
                "n": {"type": "integer", "nullable": True},
            },
        },
        "context_len": {"type": "integer", "nullable": True},
    },
}
DIFF_SCHEMA = {
    "type": "object",
    "properties": {
        "added": _FLAG_CHANGE,
        "removed": _FLAG_CHANGE,
        "changed": _FLAG_CHANGE,
        "fields": {"type": "array", "items": {"type": "object"}},
        "identical": {"type": "boolean"},
    },
}


class RecipeDetailSerializer(serializers.Serializer):
    """A recipe (docs/recipes.md): its JSON, who used it, the commands that reproduce it per
    model, and how it differs from the nearest earlier recipe of each model and class."""

    id = serializers.CharField(source="recipe.id")
    recipe = serializers.SerializerMethodField()
    canonical_json = serializers.SerializerMethodField()
    used_by = serializers.SerializerMethodField()
    benchmarks = RecipeBenchmarkSerializer(many=True)
    commands = serializers.SerializerMethodField()
    diffs = serializers.SerializerMethodField()

    @extend_schema_field(RECIPE_JSON_SCHEMA)
    def get_recipe(self, usage) -> dict:
        return usage.recipe.public_json()

    @extend_schema_field({"type": "string", "nullable": True})
    def get_canonical_json(self, usage) -> str | None:
        """The bytes whose sha256 is the id (only when the image may be shown)."""
        spec = usage.recipe.spec()
        return spec.canonical_json() if spec == usage.recipe.public_spec() else None

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "benchmarks": {"type": "integer"},
                "runs": {"type": "integer"},
                "pods": {"type": "integer"},
                "summary": {"type": "string"},
            },
        }
    )
    def get_used_by(self, usage) -> dict:
        runs, pods = usage.run_count, usage.pod_count
        return {
            "benchmarks": usage.benchmark_count,
            "runs": runs,
            "pods": pods,
            "summary": f"used by {runs} run{'s' * (runs != 1)} on {pods} pod{'s' * (pods != 1)}",
        }

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "model": {"type": "string"},
                    "hf_repo": {"type": "string"},
                    "revision": {"type": "string", "nullable": True},
                    "hf_download": {"type": "string"},
                    "drafter_download": {"type": "string", "nullable": True},
                    "docker_run": {"type": "string", "nullable": True},
                    "compose": {"type": "string", "nullable": True},
                    "bare_metal": {"type": "string", "nullable": True},
                    "notes": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    )
    def get_commands(self, usage) -> list:
        return usage.commands

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "previous": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "model": {"type": "string"},
                            "hardware_class": {"type": "object"},
                            "against_recipe": {"type": "string"},
                            "against_benchmark": {"type": "string"},
                            "diff": DIFF_SCHEMA,
                        },
                    },
                }
            },
        }
    )
    def get_diffs(self, usage) -> dict:
        return {"previous": usage.previous}
