"""Read API shapes of the board (DRF serializers)."""

from rest_framework import serializers

from board.models import Result, Run


class ResultSerializer(serializers.ModelSerializer):
    raw_output = serializers.SerializerMethodField()

    class Meta:
        model = Result
        fields = [
            "case_id",
            "category",
            "tier",
            "status",
            "score",
            "creativity",
            "raw_output",
            "evidence",
            "speed",
        ]

    def get_raw_output(self, result: Result) -> str:
        return result.raw_text


class RunSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    pod = serializers.CharField(source="key_fingerprint")
    results = ResultSerializer(many=True)

    class Meta:
        model = Run
        fields = [
            "run_id",
            "model",
            "board",
            "suite_id",
            "pod",
            "job_sig",
            "job_group",
            "committed_at",
            "bundle_sha256",
            "n_results",
            "extras",
            "results",
        ]
