"""Pydantic schemas of what pods send (protocol.md §3–§4): known keys typed, unknown keys kept
inert. A failure names the offending field with a JSON pointer."""

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

HEX_SIG = r"^[0-9a-fA-F]{1,64}$"
KNOWN_BOARDS = ("text", "god", "perf", "vision", "audio", "video")


class SchemaError(Exception):
    def __init__(self, pointer: str, message: str):
        super().__init__(f"{pointer}: {message}")
        self.pointer = pointer
        self.message = message


def pointer_of(loc: tuple) -> str:
    return (
        "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in loc)
        if loc
        else ""
    )


def first_error(exc: ValidationError) -> SchemaError:
    error = exc.errors(include_url=False)[0]
    return SchemaError(pointer_of(error["loc"]), error["msg"])


def _finite_or_none(value: Any, field: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{field} must be a number or null")
    if not math.isfinite(value):
        raise ValueError(f"{field} must be finite")
    if not low <= value <= high:
        raise ValueError(f"{field} {value} is outside [{low:g}, {high:g}]")
    return float(value)


class ResultRow(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    case_id: str = Field(min_length=1, max_length=200)
    category: str | None = Field(default=None, max_length=100)
    tier: int | None = Field(default=None, ge=0, le=99)
    status: str = Field(min_length=1, max_length=40)
    score: Any = None
    creativity: Any = None
    raw_output: str = ""
    evidence: dict | list | None = None
    speed: dict | None = None

    @field_validator("score", mode="before")
    @classmethod
    def score_in_unit_range(cls, value):
        return _finite_or_none(value, "score", 0.0, 1.0)

    @field_validator("creativity", mode="before")
    @classmethod
    def creativity_in_range(cls, value):
        return _finite_or_none(value, "creativity", 0.0, 3.0)


class Artifact(BaseModel):
    model_config = ConfigDict(extra="allow")

    kind: str | None = None
    prompt_id: str | None = None
    title: str | None = None
    html: str = ""
    ok: bool | None = None


class Bundle(BaseModel):
    """The signed `bundle` object. Model, suite and board come from the session, never here."""

    model_config = ConfigDict(extra="allow")

    run_id: str = Field(min_length=1, max_length=64)
    run_nonce: str = Field(min_length=1, max_length=64)
    final: bool = Field(strict=True)
    results: list[ResultRow]
    job_sig: str | None = Field(default=None, pattern=HEX_SIG)
    job_group: str | None = Field(default=None, pattern=HEX_SIG)
    suite_hash: str | None = None
    environment: dict | None = None
    target_class: str | None = None
    hf_repo: str | None = Field(default=None, max_length=300)
    hf_revision: str | None = Field(default=None, max_length=300)
    weights_hash: str | None = None
    weights_per_file: dict[str, str] | None = None
    recipe: dict | None = None
    deployment_manifest: dict | None = None
    judge_model: str | None = None
    harness: str | None = None
    harness_version: str | None = None
    artifacts: list[Artifact] | None = None
    endpoint_fingerprint: dict | None = None
    serving_integrity: dict | None = None

    @field_validator("recipe", mode="before")
    @classmethod
    def recipe_may_be_a_json_string(cls, value):
        # Older pods send the recipe as a JSON string.
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValueError("recipe string is not JSON") from exc
        return value


def normalise_bundle(bundle: dict) -> tuple[Bundle, dict]:
    """Validate a signed bundle and return it with its recipe parsed when sent as a string."""
    parsed = validate_bundle(bundle)
    if isinstance(bundle.get("recipe"), str):
        bundle = bundle | {"recipe": parsed.recipe}
    return parsed, bundle


def validate_bundle(bundle: dict) -> Bundle:
    try:
        parsed = Bundle.model_validate(bundle)
    except ValidationError as exc:
        raise first_error(exc) from None
    seen: set[str] = set()
    for index, row in enumerate(parsed.results):
        if row.case_id in seen:
            raise SchemaError(f"/results/{index}/case_id", f"case {row.case_id!r} appears twice")
        seen.add(row.case_id)
    return parsed


class EnrollRequest(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    public_key: str = Field(max_length=200)
    challenge: str = Field(max_length=200)
    signature: str = Field(max_length=200)


class OpenRunRequest(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    public_key: str = Field(max_length=200)
    signature: str = Field(max_length=200)
    model: str = Field(min_length=1, max_length=300)
    suite_id: str | None = Field(max_length=100)
    board: str = Field(min_length=1, max_length=32)


class ResultsEnvelope(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    bundle: dict
    signature: str = Field(max_length=200)


def parse_request(schema: type[BaseModel], data: Any) -> BaseModel:
    if not isinstance(data, dict):
        raise SchemaError("", "the body must be a JSON object")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc) from None
