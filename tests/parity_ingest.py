"""The same pod bundles through one database, as a snapshot (tests/test_db_parity.py runs this
once per database in a process of its own and compares the two).

Run as `python -m tests.parity_ingest` with DATABASE_URL naming the database: it makes a test
database of its own (`<name>_parity`), uploads fixed bundles with a fixed device key through
Django's test client (checkpoints and finals, a duplicate, rows with NaN and NUL, a forgery, a
schema refusal), prints the answers, runs, per-case rows, benchmarks and manifests with every
database-made id, time and random run id replaced by what they stand for, and drops the
database."""

import hashlib
import json
import math
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.development")
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    test = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor != "sqlite":
        test["NAME"] = f"test_{connection.settings_dict['NAME']}_parity"
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        snapshot = _snapshot(_upload())
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)
    json.dump(snapshot, sys.stdout, sort_keys=True, default=_plain)


def _plain(value):
    if isinstance(value, memoryview | bytes):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _upload() -> list[str]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from django.test import Client

    from demo.podclient import PodClient
    from tests.podchannel import results_path, small_content
    from tests.test_ingest_complexity import open_session

    client = Client()
    pod = PodClient(
        "http://testserver", private_key=Ed25519PrivateKey.from_private_bytes(b"\1" * 32)
    )
    answers, run_ids, digests = [], [], []

    def post(session, content: dict, *, final: bool, signature: str | None = None):
        body = pod.signed_results(session, content, final=final)
        if signature is not None:
            body["signature"] = signature
        data = json.dumps(body).encode()
        digests.append(hashlib.sha256(data).hexdigest())
        answer = client.post(
            results_path(session.run_id),
            data,
            "application/json",
            HTTP_X_AEON_RUN_TOKEN=session.run_token,
        )
        answers.append((answer.status_code, answer.json()))

    hostile = small_content(5)
    hostile["results"][1] = hostile["results"][1] | {"raw_output": "a\x00b", "note": "x\x00y"}
    hostile["results"][2] = hostile["results"][2] | {"latency_s": math.nan, "peak": math.inf}
    for n, content in enumerate((small_content(6), hostile, small_content(3))):
        session = open_session(client, pod)
        run_ids.append(session.run_id)
        content = content | {"job_sig": f"{n + 1:024x}", "job_group": "a" * 24}
        post(session, content | {"results": content["results"][:2]}, final=False)
        post(session, content, final=True)
        post(session, content, final=True)  # the same final again
    session = open_session(client, pod)
    run_ids.append(session.run_id)
    post(session, small_content(2), final=True, signature="A" * 86 + "==")  # forged
    session = open_session(client, pod)
    run_ids.append(session.run_id)
    post(session, small_content(2) | {"results": [{"case_id": 1}]}, final=True)  # schema
    return answers, run_ids, digests


def _rows(queryset) -> list[dict]:
    from django.db import models

    model = queryset.model
    kept = [
        field.attname
        for field in model._meta.concrete_fields
        if not isinstance(field, models.AutoField | models.DateTimeField | models.ForeignKey)
    ]
    return [dict(zip(kept, row, strict=True)) for row in queryset.values_list(*kept)]


def _without_times(document: dict) -> dict:
    document.pop("issued_at", None)
    document["run"].pop("committed_at", None)
    return document


def _snapshot(uploaded) -> dict:
    from anchor.models import RunManifest
    from board.models import Benchmark, PerfCohort, Result, Run
    from submissions.models import CheckpointRow, QuarantinedBundle, RunSession

    answers, run_ids, digests = uploaded
    snapshot = {
        "answers": answers,
        "runs": _rows(Run.objects.order_by("run_id")),
        "results": _rows(Result.objects.order_by("run__run_id", "position")),
        "cohorts": _rows(PerfCohort.objects.order_by("run__run_id", "category", "conc")),
        "benchmarks": _rows(Benchmark.objects.order_by("public_id")),
        "sessions": [
            {k: v for k, v in row.items() if k not in ("nonce", "token_sha256")}
            for row in _rows(RunSession.objects.order_by("run_id"))
        ],
        "checkpoint_rows": _rows(CheckpointRow.objects.order_by("session__run_id", "position")),
        "quarantined": _rows(QuarantinedBundle.objects.order_by("run_id", "reason")),
        "manifests": [
            _without_times(json.loads(m.document))
            for m in RunManifest.objects.order_by("run_id", "version")
        ],
    }
    text = json.dumps(snapshot, sort_keys=True, default=_plain)
    for n, run_id in enumerate(run_ids):
        text = text.replace(run_id, f"<run {n}>")
    for n, digest in enumerate(digests):
        text = text.replace(digest, f"<body {n}>")
    snapshot = json.loads(text)
    # Listed in an order of their own, not of the random run ids they had.
    for name, rows in snapshot.items():
        if name != "answers":
            rows.sort(key=lambda row: json.dumps(row, sort_keys=True))
    return snapshot


if __name__ == "__main__":
    main()
