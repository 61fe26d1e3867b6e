"""The recipe API's shape (docs/recipes.md §The recipe API): a recipe's JSON, its benchmarks,
commands, diffs, reproductions and serve-flag policy."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from board.serializers.benchmarks import RecipeBenchmarkSerializer

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
