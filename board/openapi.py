"""How /api/schema/ describes the pydantic answers (board/champion_shapes.py): drf-spectacular's
own pydantic extension, with JSON Schema's `anyOf [X, {type: null}]` written the OpenAPI 3.0 way
the rest of the schema uses (`nullable: true`), so `manage.py spectacular --validate` passes."""

from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.plumbing import ResolvedComponent
from pydantic.json_schema import GenerateJsonSchema, model_json_schema


class OpenApi30Schema(GenerateJsonSchema):
    def nullable_schema(self, schema):
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:  # OpenAPI 3.0 ignores siblings of a $ref
            return {"allOf": [inner], "nullable": True}
        return {**inner, "nullable": True}


class ShapeExtension(PydanticExtension):
    target_class = "board.champion_shapes.Shape"
    priority = 1  # before drf-spectacular's own, which matches every BaseModel

    def map_serializer(self, auto_schema, _direction):  # the same schema both ways
        schema = model_json_schema(
            self.target,
            ref_template="#/components/schemas/{model}",
            mode="serialization",
            schema_generator=OpenApi30Schema,
        )
        for name, sub_schema in schema.pop("$defs", {}).items():
            auto_schema.registry.register_on_missing(
                ResolvedComponent(
                    name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub_schema
                )
            )
        return schema
