"""Read API shapes of the board (DRF serializers)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.models import Benchmark, HardwareClass, PerfCohort, Result, Run
from board.public import public_evidence, public_perf
from recipes.policy import check_recipe, drafter_verified_by
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
    """A run without its cases: they are read a page at a time (RunPageSerializer, and the
    public bundle streams them batch by batch)."""

    model = serializers.CharField(source="model_name")
    pod = serializers.CharField(source="key_fingerprint")
    benchmark_id = serializers.CharField(source="benchmark.public_id", default=None)
    trust_tier = serializers.CharField(source="trust")
    perf = serializers.SerializerMethodField()
    extras = serializers.SerializerMethodField()

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
        ]

    @extend_schema_field({"type": "object"})
    def get_extras(self, run: Run) -> dict:
        """Every top-level key the pod sent, scrubbed: no raw command, host paths, credentials,
        job signature, group or start stamp."""
        return scrub_extras(run.extras)

    @extend_schema_field({"type": "object"})
    def get_perf(self, run: Run) -> dict:
        return public_perf(run)


class ResultsPageSerializer(serializers.Serializer):
    """Where a page of a run's cases stands: links are relative to the site, null at the ends."""

    page = serializers.IntegerField(help_text="this page, from 1")
    page_size = serializers.IntegerField(help_text="cases per page (at most 200)")
    pages = serializers.IntegerField(help_text="pages in all (1 for a run without cases)")
    count = serializers.IntegerField(help_text="the run's cases (n_results)")
    next = serializers.CharField(allow_null=True, help_text="the next page's path and query")
    previous = serializers.CharField(allow_null=True, help_text="the previous page's")


class RunPageSerializer(RunSerializer):
    """`/api/v1/runs/{run_id}`: the run and one page of its cases in position order
    (docs/website.md §Reading a run). Give it the page as `context["page"]` (a Django Page of
    Result rows) and its links as `context["links"]`."""

    results = serializers.SerializerMethodField()
    results_page = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "results", "results_page"]

    @extend_schema_field(ResultSerializer(many=True))
    def get_results(self, run: Run) -> list:
        return ResultSerializer(self.context["page"].object_list, many=True).data

    @extend_schema_field(ResultsPageSerializer)
    def get_results_page(self, run: Run) -> dict:
        page = self.context["page"]
        return {
            "page": page.number,
            "page_size": page.paginator.per_page,
            "pages": page.paginator.num_pages,
            "count": page.paginator.count,
            **self.context["links"],
        }


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
    reproductions = serializers.SerializerMethodField()
    one_click = serializers.SerializerMethodField()

    @extend_schema_field(RECIPE_JSON_SCHEMA)
    def get_recipe(self, usage) -> dict:
        return usage.recipe.public_json()

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "one_click": {"type": "boolean"},
                "reasons": {"type": "array", "items": {"type": "object"}},
                "flags": {"type": "array", "items": {"type": "object"}},
                "offered_flags": {"type": "array", "items": {"type": "string"}},
            },
        }
    )
    def get_one_click(self, usage) -> dict:
        """docs/recipes.md §The serve-flag policy: whether pods may apply it in one click, why
        not, and each flag's status."""
        return usage.policy

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "hardware_class": {"type": "object"},
                    "model": {"type": "string"},
                    "pods": {"type": "integer"},
                    "benchmark_ids": {"type": "array", "items": {"type": "string"}},
                    "spreads": {"type": "object"},
                    "summary": {"type": "string"},
                },
            },
        }
    )
    def get_reproductions(self, usage) -> list:
        """docs/champions.md: per class and model, how many pods measured it, with the spreads."""
        return usage.reproductions

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
                },
                "champion": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "hardware_class": {"type": "object"},
                            "model": {"type": "string"},
                            "against_recipe": {"type": "string"},
                            "against_benchmark": {"type": "string"},
                            "diff": DIFF_SCHEMA,
                        },
                    },
                },
            },
        }
    )
    def get_diffs(self, usage) -> dict:
        return {"previous": usage.previous, "champion": usage.champions}


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
