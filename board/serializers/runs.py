"""The read API's shapes of a run and its cases (docs/website.md §Reading a run): a run with a
page of its cases, and what the public bundle copies of each (board/public_bundle.py)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.models import Result, Run
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
