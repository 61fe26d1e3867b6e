"""Hostile input over every integer and string field a pod sends (docs/protocol.md): at its
limit and one past it, each answered 200 or 400 SCHEMA_INVALID with its JSON pointer, never a
5xx, with an ingest-log row for each attempt. CI runs it on PostgreSQL, which enforces the
column lengths and integer ranges that SQLite does not; the embedded default answers alike.

Nothing here is hand-picked: the probes are derived from the pydantic schemas (a new field is
probed the day it is added), and every column of the tables ingest writes must be fed by a
probed pointer or be declared server-made (a new column fails until it is classified)."""

import copy
import json
import secrets
import types
import typing
from dataclasses import dataclass, field

import pytest
from django.apps import apps
from django.db import models

from submissions import schemas
from submissions.models import IngestLogEntry
from tests.podchannel import MODEL, TEXT_EXAMPLE, TEXT_SUITE, results_path

# On whichever database the suite runs: CI's PostgreSQL enforces what SQLite would let through,
# and the embedded default must answer the same.
pytestmark = [pytest.mark.django_db]

PERF_EXAMPLE = TEXT_EXAMPLE.parent / "perf-final.json"
PERF_SUITE = "aeon-perf-v1"
BIG_TEXT = "<p>" + "x" * (256 * 1024) + "</p>"

# Columns of the tables ingest writes, and where their values come from: a pointer the probes
# below cover, or why the server alone decides the value. A new column fails the test until it
# is added here.
FED = {
    ("submissions", "RunSession", "model"): ["open:/model"],
    ("submissions", "RunSession", "suite_id"): ["open:/suite_id"],
    ("submissions", "RunSession", "board"): ["open:/board"],
    ("submissions", "RunSession", "job_sig"): ["/job_sig"],
    ("submissions", "CheckpointRow", "case_id"): ["/results/0/case_id"],
    ("board", "Run", "model_name"): ["open:/model"],
    ("board", "Run", "board"): ["open:/board"],
    ("board", "Run", "suite_id"): ["open:/suite_id"],
    ("board", "Run", "job_sig"): ["/job_sig"],
    ("board", "Run", "job_group"): ["/job_group"],
    ("board", "Run", "harness"): ["/harness"],
    ("board", "Run", "target_class"): ["/target_class"],
    ("board", "Run", "hardware_label"): [
        "/environment/hardware/detected_label",
        "/environment/hardware/label",
    ],
    ("board", "Run", "hf_repo"): ["/hf_repo"],
    ("board", "Run", "hf_revision"): ["/hf_revision"],
    ("board", "Run", "weights_hash"): ["/weights_hash"],
    ("board", "Result", "case_id"): ["/results/0/case_id"],
    ("board", "Result", "category"): ["/results/0/category"],
    ("board", "Result", "tier"): ["/results/0/tier"],
    ("board", "Result", "status"): ["/results/0/status"],
    ("board", "PerfCohort", "conc"): ["perf:/results/0/case_id", "perf:/results/0/evidence/conc"],
    ("board", "PerfCohort", "n"): ["perf:/results/0/evidence/n"],
    ("board", "PerfCohort", "n_errors"): ["perf:/results/0/evidence/n_errors"],
    ("board", "PerfCohort", "label"): ["perf:/results/0/case_id"],  # "<category> @ c<conc>"
    ("board", "Benchmark", "hardware_label"): ["/environment/hardware/detected_label"],
    ("board", "Benchmark", "context_len"): ["/recipe/context_len", "/recipe/flags"],
    ("board", "Benchmark", "weight_set"): ["/weights_hash"],  # or "endpoint:" + 32 hex
    ("board", "BenchmarkGroup", "job_group"): ["/job_group"],
    ("board", "BenchModel", "canonical_id"): ["/hf_repo", "open:/model"],
    ("board", "BenchModel", "hf_repo"): ["/hf_repo"],
    ("board", "BenchModel", "display_name"): ["open:/model"],
    # The class a label names: too many devices or too long a name is Unlabeled.
    ("board", "HardwareClass", "slug"): ["/environment/hardware/detected_label"],
    ("board", "HardwareClass", "name"): ["/environment/hardware/detected_label"],
    ("board", "HardwareClass", "device_count"): ["/environment/hardware/detected_label"],
}
# Made from a fed value rather than holding it (a class from a label, a cohort label).
DERIVED = {
    ("board", "PerfCohort", "label"),
    ("board", "Benchmark", "weight_set"),
    ("board", "HardwareClass", "slug"),
    ("board", "HardwareClass", "name"),
    ("board", "HardwareClass", "device_count"),
}
SERVER_MADE = {
    ("submissions", "RunSession", "run_id"): "new_run_id()",
    # The model facts the weight check reads from the Hub at a verified commit (docs/cohorts.md
    # §Rooflines): the Hub's sizes and a state word, not the pod's.
    ("submissions", "WeightCheckCache", "weight_bytes"): "sum of the Hub's LFS sizes",
    ("submissions", "WeightCheckCache", "config_size"): "bytes of the Hub's config.json",
    ("submissions", "WeightCheckCache", "config_state"): "a state word of the fetch",
    ("submissions", "WeightCheckCache", "repo_id"): "the id the Hub answered",
    ("submissions", "RunSession", "nonce"): "token_hex(16)",
    ("submissions", "RunSession", "token_sha256"): "sha256 hex",
    ("submissions", "RunSession", "status"): "SessionStatus",
    ("submissions", "RunSession", "checkpoints"): "a counter",
    ("submissions", "RunSession", "final_bundle_sha256"): "sha256 hex",
    ("submissions", "CheckpointRow", "position"): "a row count",
    ("submissions", "CheckpointRow", "row_json"): "json.dumps: ASCII, NUL escaped",
    ("submissions", "RawBundle", "size"): "body length under the cap",
    ("submissions", "QuarantinedBundle", "run_id"): "the session's run id",
    ("submissions", "QuarantinedBundle", "key_fingerprint"): "16 hex",
    ("submissions", "QuarantinedBundle", "reason"): "Reason",
    ("submissions", "QuarantinedBundle", "note"): "our message; values quoted with repr",
    ("submissions", "IngestLogEntry", "route"): "IngestRoute",
    ("submissions", "IngestLogEntry", "status"): "an HTTP status",
    ("submissions", "IngestLogEntry", "reason"): "Reason",
    ("submissions", "IngestLogEntry", "run_id"): "storable, cut to 64",
    ("submissions", "IngestLogEntry", "key_fingerprint"): "16 hex",
    ("submissions", "IngestLogEntry", "bytes"): "bytes read under the cap",
    ("submissions", "IngestLogEntry", "note"): "storable, cut to 2000",
    ("submissions", "IngestLogEntry", "bundle_sha256"): "sha256 hex",
    ("submissions", "ForgeryEvent", "reason"): "Reason",
    ("submissions", "ForgeryEvent", "run_id"): "the session's run id",
    ("submissions", "RateCounter", "scope"): "ip:/key: and a fingerprint",
    ("submissions", "RateCounter", "window_start"): "epoch seconds",
    ("submissions", "RateCounter", "count"): "a counter",
    ("submissions", "DeviceKey", "public_key"): "checked: base64 of 32 bytes",
    ("submissions", "DeviceKey", "fingerprint"): "16 hex",
    ("submissions", "DeviceKey", "status"): "KeyStatus",
    ("submissions", "DeviceKey", "revoked_reason"): "our message, cut to 200",
    ("submissions", "Challenge", "value"): "token_urlsafe(32)",
    ("submissions", "KeyAuditEntry", "action"): "Action",
    ("submissions", "KeyAuditEntry", "note"): "our message",
    ("submissions", "WeightCheckCache", "repo"): "Run.hf_repo or a 40-hex drafter commit's repo",
    ("submissions", "WeightCheckCache", "commit"): "40 hex (is_commit)",
    ("board", "Run", "run_id"): "the session's",
    ("board", "Run", "key_fingerprint"): "16 hex",
    ("board", "Run", "bundle_sha256"): "sha256 hex",
    ("board", "Run", "n_results"): "a row count",
    ("board", "Run", "kind"): "SuiteKind",
    ("board", "Run", "commit"): "40 hex (is_commit)",
    ("board", "Run", "verification"): "Verification",
    ("board", "Run", "verification_note"): "our message, storable",
    ("board", "Run", "verification_attempts"): "a counter",
    ("board", "Run", "drafter_status"): "a fixed word",
    ("board", "Run", "attestation_method"): "AttestationMethod",
    ("board", "Run", "trust"): "Trust",
    ("board", "Result", "position"): "a row count",
    ("board", "PerfCohort", "category"): "one of board.perf.CATEGORIES",
    ("board", "Benchmark", "public_id"): "sha256 hex, cut to 12",
    ("board", "Benchmark", "key_fingerprint"): "16 hex",
    ("board", "Benchmark", "trust"): "Trust",
    ("board", "Benchmark", "verification"): "Verification",
    ("board", "Benchmark", "coverage_label"): "board.quality",
    ("board", "Benchmark", "peak_cohort"): "a cohort label",
    ("board", "Benchmark", "single_stream_cohort"): "'<n> categories @ c1'",
    ("board", "Benchmark", "latency_cohort"): "'<n> categories @ c1'",
    ("board", "Benchmark", "text_run_id"): "a run id (16 letters and digits)",
    ("board", "Benchmark", "perf_run_id"): "a run id (16 letters and digits)",
    ("board", "BenchmarkGroup", "key_fingerprint"): "16 hex",
    ("board", "HardwareClass", "family"): "Family",
}
INGEST_TABLES = {
    "submissions": (
        "RunSession",
        "CheckpointRow",
        "RawBundle",
        "QuarantinedBundle",
        "IngestLogEntry",
        "ForgeryEvent",
        "RateCounter",
        "DeviceKey",
        "Challenge",
        "KeyAuditEntry",
        "WeightCheckCache",
    ),
    "board": (
        "Run",
        "Result",
        "PerfCohort",
        "Benchmark",
        "BenchmarkGroup",
        "BenchModel",
        "HardwareClass",
    ),
}
# Lengths, integer ranges and NUL are what a database refuses (every integer type is an IntegerField).
LIMITED_COLUMNS = (models.CharField, models.TextField, models.IntegerField)


def bounded_columns():
    for app_label, names in INGEST_TABLES.items():
        for name in names:
            for column in apps.get_model(app_label, name)._meta.concrete_fields:
                if column.primary_key or column.is_relation:
                    continue
                if isinstance(column, LIMITED_COLUMNS):
                    yield (app_label, name, column.name)


# --- probes derived from the schemas -------------------------------------------------------


@dataclass
class Probe:
    """One field: values at its limits (answered 200 unless `at_limit_refused`) and one past
    them (400 SCHEMA_INVALID at `pointer`)."""

    pointer: str  # "open:/x" on open_run, "envelope:/x" on the results envelope, "perf:/…"
    at_limit: list
    past: list = field(default_factory=list)
    nul: list = field(default_factory=list)  # NUL inside: stored (200) or refused at `pointer`
    at_limit_refused: tuple | None = None  # (status, reason) when the content itself is refused


def _kinds(annotation) -> set:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return set().union(*(_kinds(arg) for arg in typing.get_args(annotation)))
    return {annotation} if annotation in (str, int) else set()


def _constraint(info, name: str):
    """A constraint of a pydantic field (max_length, min_length, ge, le), or None."""
    return next((getattr(m, name) for m in info.metadata if hasattr(m, name)), None)


def _schema_probe(prefix: str, name: str, info) -> Probe | None:
    kinds = _kinds(info.annotation)
    pointer = f"{prefix}/{name}"
    if int in kinds:
        low, high = _constraint(info, "ge"), _constraint(info, "le")
        assert low is not None and high is not None, f"{pointer}: an integer without a range"
        return Probe(pointer, [low, high], [low - 1, high + 1])
    if str not in kinds:
        return None
    longest = _constraint(info, "max_length")
    shortest = _constraint(info, "min_length") or 0
    hex_only = any(getattr(m, "pattern", None) == schemas.HEX_SIG for m in info.metadata)
    if longest is None:  # kept in JSON only: any length
        return Probe(pointer, [BIG_TEXT], nul=["a\x00b"])
    fill = "a" if hex_only else "x"
    past = [fill * (longest + 1)] + ([""] if shortest else [])
    return Probe(pointer, [fill * longest], past, nul=[("a\x00" * longest)[:longest]])


def schema_probes() -> list[Probe]:
    probes = []
    for prefix, model in (
        ("open:", schemas.OpenRunRequest),
        ("envelope:", schemas.ResultsEnvelope),
        ("", schemas.Bundle),
        ("/results/0", schemas.ResultRow),
        ("/artifacts/0", schemas.Artifact),
    ):
        for name, info in model.model_fields.items():
            probe = _schema_probe(prefix, name, info)
            if probe is not None:
                probes.append(probe)
    return probes


def nested_probes() -> list[Probe]:
    """Values deeper than the typed fields, bounded by the columns they reach."""
    label, count_max = schemas.LABEL_LENGTH, schemas.COHORT_COUNT_MAX
    low, high = schemas.CONTEXT_LEN_RANGE
    mixed = ",".join(f"nvidia {letter}" for letter in "abcdefghijklmnopqrstuv")
    return [
        Probe(
            "/environment/hardware/detected_label",
            ["x" * label, mixed, "64x RTX 5090 32GB", "65x RTX 5090 32GB"],
            ["x" * (label + 1)],
            nul=["a\x00b"],
        ),
        Probe("/environment/hardware/label", ["x" * label], ["x" * (label + 1)]),
        Probe("/recipe/context_len", [low, high], [low - 1, high + 1, 1e400]),
        Probe("/recipe/flags", [["--max-model-len", str(high)]], [["--max-model-len", "1e400"]]),
        Probe(
            "perf:/results/0/case_id",
            [f"perf.direct.coding.c{count_max}"],
            [f"perf.direct.coding.c{count_max + 1}"],
        ),
        Probe("perf:/results/0/evidence/conc", [count_max], [count_max + 1]),
        Probe("perf:/results/0/evidence/n", [count_max], [count_max + 1, 1e300]),
        Probe("perf:/results/0/evidence/n_errors", [count_max], [count_max + 1]),
    ]


# Fields whose content, not only length, is checked before the schema: the answer names them.
CONTENT_CHECKED = {
    "open:/board": (400, "SCHEMA_INVALID"),  # an unknown board
    "open:/public_key": (400, "BAD_SIG"),  # not 32 bytes of base64
    "open:/signature": (400, "BAD_SIG"),
    "envelope:/signature": (400, "BAD_SIG"),
    "/run_id": (409, "RUN_ID_MISMATCH"),  # identity is checked before the schema
    "/run_nonce": (409, "NONCE_MISMATCH"),
}


def all_probes() -> list[Probe]:
    probes = schema_probes() + nested_probes()
    for probe in probes:
        probe.at_limit_refused = CONTENT_CHECKED.get(probe.pointer)
    return probes


# --- sending ------------------------------------------------------------------------------------


def base_content(board: str) -> dict:
    example = json.loads((PERF_EXAMPLE if board == "perf" else TEXT_EXAMPLE).read_text())
    content = {k: v for k, v in example.items() if k not in ("run_id", "run_nonce", "final")}
    content["results"] = content["results"][:3]
    content["job_sig"] = secrets.token_hex(12)
    return content


def put(document: dict, pointer: str, value) -> dict:
    document = copy.deepcopy(document)
    *parents, last = [part for part in pointer.split("/")[1:]]
    target = document
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    if pointer == "/recipe/context_len":  # a context flag would speak instead
        for argv in ("flags", "command"):
            document["recipe"].pop(argv, None)
    if pointer == "/results/0/evidence/conc" or pointer.startswith("/results/0/case_id"):
        _align_cell(document, value if pointer.endswith("conc") else None)
    return document


def _align_cell(document: dict, conc) -> None:
    """A perf direct cell's case id and evidence agree on the concurrency (perf rule 1)."""
    row = document["results"][0]
    if not row["case_id"].startswith("perf.direct."):
        return
    if conc is None:
        conc = int(row["case_id"].rsplit(".c", 1)[1])
    row["evidence"]["conc"] = conc
    if isinstance(conc, int) and conc <= schemas.COHORT_COUNT_MAX:
        row["case_id"] = f"perf.direct.coding.c{conc}"
        row["evidence"]["n"] = max(row["evidence"]["n"], conc)


class Sender:
    def __init__(self, make_pod):
        self.make_pod = make_pod
        self.pod = make_pod()

    def logged(self, answer, expected: tuple) -> None:
        """The answer is the expected one, never a 5xx, and the attempt has its log row."""
        status, reason, pointer = expected
        assert answer.status < 500, answer.body
        if status == "200 or 400":
            status = answer.status
            if status == 200:
                reason = pointer = None
        assert answer.status == status, (expected, answer.body)
        if reason is not None:
            assert answer.body["reason"] == reason, (expected, answer.body)
        if pointer is not None:
            assert answer.body["note"].startswith(f"{pointer}:"), (pointer, answer.body)
        entry = IngestLogEntry.objects.order_by("-pk").first()
        assert (entry.status, entry.reason) == (status, answer.body.get("reason", "OK"))
        self.log_rows += 1

    log_rows = 0

    def open(self, probe: Probe, value, expected: tuple) -> None:
        field_name = probe.pointer.removeprefix("open:/")
        fields = {"model": MODEL, "suite_id": TEXT_SUITE, "board": "text", field_name: value}
        if field_name in ("public_key", "signature"):
            request = self.pod.open_run_request(MODEL, TEXT_SUITE, "text") | {field_name: value}
        else:
            request = self.pod.open_run_request(
                fields["model"], fields["suite_id"], fields["board"]
            )
        self.logged(self.pod.post_json("/api/v1/runs", request), expected)

    def bundle(self, probe: Probe, value, expected: tuple, *, final: bool) -> None:
        pointer = probe.pointer
        board = "perf" if pointer.startswith("perf:") else "text"
        pointer = pointer.removeprefix("perf:").removeprefix("envelope:")
        if expected[0] == 409 or probe.pointer.startswith("envelope:"):
            self.pod = self.make_pod()  # forgery-class answers count against a key
        session = self.pod.open_run(MODEL, PERF_SUITE if board == "perf" else TEXT_SUITE, board)
        content = base_content(board)
        if not probe.pointer.startswith("envelope:"):
            content = put(content, pointer, value)
        request = self.pod.signed_results(session, content, final=final)
        if probe.pointer.startswith("envelope:"):
            request[pointer.strip("/")] = value
        answer = self.pod.send(
            "POST",
            results_path(session.run_id),
            json.dumps(request).encode(),
            {"X-Aeon-Run-Token": session.run_token},
        )
        self.logged(answer, expected)


def expectations(probe: Probe):
    pointer = probe.pointer.split(":")[-1]
    refused = probe.at_limit_refused
    for value in probe.at_limit:
        yield value, (*refused, None) if refused else (200, None, None)
    for value in probe.past:
        if refused and refused[0] == 409:
            yield value, (*refused, None)
        else:
            yield value, (400, "SCHEMA_INVALID", pointer)
    for value in probe.nul:
        yield value, (*refused, None) if refused else ("200 or 400", "SCHEMA_INVALID", pointer)


# --- the tests ----------------------------------------------------------------------------------


def test_every_column_ingest_writes_is_fed_by_a_probed_field_or_made_by_the_server():
    columns = set(bounded_columns())
    unclassified = columns - FED.keys() - SERVER_MADE.keys()
    assert not unclassified, f"classify these columns in FED or SERVER_MADE: {sorted(unclassified)}"
    stale = (FED.keys() | SERVER_MADE.keys()) - columns
    assert not stale, f"stale entries: {sorted(stale)}"
    probes = {probe.pointer: probe for probe in all_probes()}
    for column, pointers in FED.items():
        assert set(pointers) <= probes.keys(), (column, set(pointers) - probes.keys())
        # A string or integer column is bounded by at least one of the fields that feed it.
        assert any(probes[p].past for p in pointers) or column[1] == "HardwareClass", column
        if column in DERIVED:
            continue
        field = apps.get_model(column[0], column[1])._meta.get_field(column[2])
        for pointer in pointers:
            for value in probes[pointer].at_limit:
                if isinstance(value, str) and field.max_length:
                    # What the schema lets through fits the column whole (nothing cut).
                    assert len(value) <= field.max_length, (column, pointer, len(value))
                if isinstance(value, int) and isinstance(field, models.IntegerField):
                    low, high = schemas.column_range(field.model, field.name)
                    assert low <= value <= high, (column, pointer, value)


def test_every_schema_string_and_integer_is_probed():
    pointers = {probe.pointer for probe in schema_probes()}
    for prefix, model in (("", schemas.Bundle), ("/results/0", schemas.ResultRow)):
        for name, info in model.model_fields.items():
            if _kinds(info.annotation):
                assert f"{prefix}/{name}" in pointers
    assert "/results/0/case_id" in pointers and "open:/model" in pointers


def test_hostile_values_at_and_past_every_limit_are_answered_200_or_400_never_5xx(
    make_pod, settings
):
    settings.AEON_RATE_LIMIT_PER_IP = 100_000
    settings.AEON_RATE_LIMIT_PER_KEY = 100_000
    settings.AEON_MAX_OPEN_RUNS_PER_KEY = 100_000
    sender = Sender(make_pod)
    tried = 0
    for probe in all_probes():
        for value, expected in expectations(probe):
            if probe.pointer.startswith("open:"):
                sender.open(probe, value, expected)
            else:
                if not probe.pointer.startswith("perf:"):
                    sender.bundle(probe, value, expected, final=False)  # a checkpoint
                sender.bundle(probe, value, expected, final=True)
            tried += 1
    assert tried >= 80
    assert sender.log_rows >= tried
