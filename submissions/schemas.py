"""Pydantic schemas of what pods send (docs/protocol.md): known keys typed, unknown keys kept
inert. A failure names the offending field with a JSON pointer.

Every value that reaches a database column is bounded here, before any query, by the column it
lands in (lengths and integer ranges are read from the models): a value the database could not
hold is a 400 SCHEMA_INVALID, never a database error.
"""

import json
import math
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Model
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from board.jsonsafe import storable
from board.models import Benchmark, BenchModel, PerfCohort, Result, Run
from board.perf import INTEGER_FIELDS as PERF_INTEGER_FIELDS
from board.perf import parse_direct_id
from recipes.argv import CONTEXT_OPTIONS, option_value
from recipes.normalise import context_len_of
from submissions.models import CheckpointRow, RunSession

HEX_SIG = r"^[0-9a-fA-F]{1,64}$"
KNOWN_BOARDS = ("text", "god", "perf", "vision", "audio", "video")


def column_length(*columns: tuple[type[Model], str]) -> int:
    """The smallest max_length of the given (model, field) columns."""
    return min(model._meta.get_field(name).max_length for model, name in columns)


def column_range(model: type[Model], name: str) -> tuple[int, int]:
    """The integer range of a column, as Django states it for every backend."""
    internal_type = model._meta.get_field(name).get_internal_type()
    return BaseDatabaseOperations.integer_field_ranges[internal_type]


CASE_ID_LENGTH = column_length((Result, "case_id"), (CheckpointRow, "case_id"))
LABEL_LENGTH = column_length((Run, "hardware_label"), (Benchmark, "hardware_label"))
MODEL_LENGTH = column_length(
    (RunSession, "model"),
    (Run, "model_name"),
    (BenchModel, "display_name"),
    (BenchModel, "canonical_id"),
)
HF_REPO_LENGTH = column_length(
    (Run, "hf_repo"), (BenchModel, "hf_repo"), (BenchModel, "canonical_id")
)
COHORT_COUNT_MAX = min(column_range(PerfCohort, name)[1] for name in ("conc", "n", "n_errors"))
CONTEXT_LEN_RANGE = column_range(Benchmark, "context_len")
TIER_RANGE = column_range(Result, "tier")


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

    case_id: str = Field(min_length=1, max_length=CASE_ID_LENGTH)
    category: str | None = Field(default=None, max_length=column_length((Result, "category")))
    tier: int | None = Field(default=None, ge=0, le=min(99, TIER_RANGE[1]))
    status: str = Field(min_length=1, max_length=column_length((Result, "status")))
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


def check_row_keys(declared, columns) -> None:
    """The keys a result row declares are the columns they land in, in order; any other key of
    the row lands in `extras` (board/result_rows.py). Raises ImproperlyConfigured when not."""
    if tuple(declared) != tuple(columns):
        raise ImproperlyConfigured(
            f"ResultRow declares {tuple(declared)} but board.models.Result.ROW_FIELDS is "
            f"{tuple(columns)}: they are one list (docs/protocol.md §Result rows)"
        )


# One list of a row's keys, checked as the schema loads: the schema that bounds them and the
# rows that store them cannot disagree.
check_row_keys(ResultRow.model_fields, Result.ROW_FIELDS)


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
    job_sig: str | None = Field(
        default=None, pattern=HEX_SIG, max_length=column_length((RunSession, "job_sig"))
    )
    job_group: str | None = Field(
        default=None, pattern=HEX_SIG, max_length=column_length((Run, "job_group"))
    )
    suite_hash: str | None = None
    environment: dict | None = None
    target_class: str | None = Field(default=None, max_length=column_length((Run, "target_class")))
    hf_repo: str | None = Field(default=None, max_length=HF_REPO_LENGTH)
    hf_revision: str | None = Field(default=None, max_length=column_length((Run, "hf_revision")))
    weights_hash: str | None = Field(default=None, max_length=column_length((Run, "weights_hash")))
    weights_per_file: dict[str, str] | None = None
    recipe: dict | None = None
    deployment_manifest: dict | None = None
    judge_model: str | None = None
    harness: str | None = Field(default=None, max_length=column_length((Run, "harness")))
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


def normalise_bundle(bundle: dict, *, board: str) -> tuple[Bundle, dict]:
    """Validate a signed bundle of a session on `board` and return it with its recipe parsed
    when sent as a string."""
    parsed = validate_bundle(bundle, board=board)
    if isinstance(bundle.get("recipe"), str):
        bundle = bundle | {"recipe": parsed.recipe}
    return parsed, bundle


def validate_bundle(bundle: dict, *, board: str) -> Bundle:
    try:
        parsed = Bundle.model_validate(bundle)
    except ValidationError as exc:
        raise first_error(exc) from None
    seen: set[str] = set()
    for index, row in enumerate(parsed.results):
        # Compared as stored: a NUL is kept in the raw row but shown as U+FFFD in the column.
        case_id = storable(row.case_id)
        if case_id in seen:
            raise SchemaError(f"/results/{index}/case_id", f"case {row.case_id!r} appears twice")
        seen.add(case_id)
    _check_hardware_labels(parsed.environment)
    _check_context_len(parsed.recipe)
    if board == "perf":
        _check_cohort_counts(bundle["results"])
    return parsed


def _check_hardware_labels(environment: dict | None) -> None:
    hardware = (environment or {}).get("hardware")
    if not isinstance(hardware, dict):
        return
    for name in ("detected_label", "label"):
        label = hardware.get(name)
        if isinstance(label, str) and len(label) > LABEL_LENGTH:
            raise SchemaError(
                f"/environment/hardware/{name}", f"longer than {LABEL_LENGTH} characters"
            )


def _check_context_len(recipe: dict | None) -> None:
    """The served context lands in an integer column: it must be a number in its range."""
    if not isinstance(recipe, dict):
        return
    pointer = "/recipe/context_len"
    for key in ("flags", "command"):
        if isinstance(recipe.get(key), list) and option_value(recipe[key], CONTEXT_OPTIONS):
            pointer = f"/recipe/{key}"
            break
    try:
        context_len = context_len_of(recipe)
    except (OverflowError, ValueError):
        context_len = math.inf
    low, high = CONTEXT_LEN_RANGE
    if context_len is not None and not low <= context_len <= high:
        raise SchemaError(pointer, f"the served context must be an integer in [{low}, {high}]")


def _check_cohort_counts(rows: list[dict]) -> None:
    """A perf cohort's concurrency and request counts land in integer columns."""
    for index, row in enumerate(rows):
        direct = parse_direct_id(row["case_id"])
        if direct is None:
            continue
        if direct[1] > COHORT_COUNT_MAX:
            raise SchemaError(f"/results/{index}/case_id", f"concurrency above {COHORT_COUNT_MAX}")
        evidence = row.get("evidence")
        if not isinstance(evidence, dict):
            continue
        for name in PERF_INTEGER_FIELDS:
            value = evidence.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                if value > COHORT_COUNT_MAX:
                    raise SchemaError(
                        f"/results/{index}/evidence/{name}", f"above {COHORT_COUNT_MAX}"
                    )


class EnrollRequest(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    public_key: str = Field(max_length=200)
    challenge: str = Field(max_length=200)
    signature: str = Field(max_length=200)


class OpenRunRequest(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    public_key: str = Field(max_length=200)
    signature: str = Field(max_length=200)
    model: str = Field(min_length=1, max_length=MODEL_LENGTH)
    suite_id: str | None = Field(
        max_length=column_length((RunSession, "suite_id"), (Run, "suite_id"))
    )
    board: str = Field(
        min_length=1, max_length=column_length((RunSession, "board"), (Run, "board"))
    )


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
