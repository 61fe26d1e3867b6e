"""Writes of the trust anchor: signing run manifests (docs/trust-anchor.md §Run manifests).

Version 1 is signed when the run commits, inside the commit's transaction. Any later change to
what the manifest says is a new version that names its cause and the fields that changed; a
stored version is never rewritten. A change that leaves the manifest's content as it is issues
nothing.
"""

import json
import logging

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from anchor.keys import BoardKeyError, load_board_key
from anchor.manifests import (
    changed_fields,
    content_of,
    document_bytes,
    document_for,
    manifest_content,
    sha256_hex,
)
from anchor.models import RunManifest
from board.models import Run, Verification
from submissions.models import DeviceKey, KeyStatus

logger = logging.getLogger("aeon.anchor")

ISSUE_ATTEMPTS = 3


def issue_manifest(run_id: str, *, cause: dict | None = None) -> RunManifest | None:
    """Sign the run's manifest as it stands now when it differs from the latest version (or
    there is none); returns the new version, or None when nothing changed. `cause` says why
    (a moderator's action, a weight verdict, a rebuild): it goes into the version's `change`
    with the fields that changed. Raises BoardKeyError when the board key cannot be used."""
    board_key = load_board_key()
    for _ in range(ISSUE_ATTEMPTS):
        try:
            with transaction.atomic():
                return _issue(run_id, cause, board_key)
        except IntegrityError:  # a concurrent issue took this version number: look again
            continue
    raise RuntimeError(f"manifest of {run_id}: versions kept moving")


def _issue(
    run_id: str, cause: dict | None, board_key, *, committed: Run | None = None
) -> RunManifest | None:
    # One query: the run with what its manifest says, its key's status, whether any version is
    # signed (the latest is read only then). `committed`: the run this transaction wrote, with
    # its benchmark and its key's status: nothing is read.
    if committed is not None:
        run = committed
    else:
        key_status = DeviceKey.objects.filter(fingerprint=OuterRef("key_fingerprint")).order_by(
            "pk"
        )
        run = (
            Run.objects.select_related(
                "benchmark__model", "benchmark__hardware_class", "benchmark__recipe"
            )
            .annotate(
                key_status=Subquery(key_status.values("status")[:1]),
                signed=Exists(RunManifest.objects.filter(run_id=OuterRef("run_id"))),
            )
            .filter(run_id=run_id)
            .first()
        )
    if run is None:
        return None
    content = manifest_content(run, key_status=run.key_status or KeyStatus.ACTIVE)
    latest = (
        RunManifest.objects.filter(run_id=run_id).order_by("-version").first()
        if run.signed
        else None
    )
    change = None
    if latest is not None:
        before = content_of(json.loads(latest.document))
        # Round-trip the new content through JSON, as the stored one was, before comparing.
        fields = changed_fields(before, json.loads(document_bytes(content)))
        if not fields:
            return None
        change = {"cause": cause or {"kind": "update"}, "fields": fields}
    now = timezone.now()
    document = document_for(
        content=content,
        run_id=run_id,
        version=latest.version + 1 if latest else 1,
        previous_sha256=latest.document_sha256 if latest else None,
        issued_at=now.isoformat(),
        change=change,
    )
    data = document_bytes(document)
    manifest = RunManifest(
        run_id=run_id,
        version=document["version"],
        document=data.decode("ascii"),
        document_sha256=sha256_hex(data),
        signature=board_key.sign(data),
        public_key=board_key.public_key_b64,
        signed_at=now,
        change=change or {},
    )
    manifest.save(force_insert=True)
    return manifest


def sign_at_commit(run: Run, *, key_status: str) -> RunManifest | None:
    """Version 1, signed inside the commit's transaction from `run` as the commit wrote it (with
    its benchmark, model, class and recipe) and its key's status as the commit read it: nothing
    is read back (the manifest of a run read back from the database says the same:
    tests/test_trust_anchor.py). A board key that cannot be used never costs a pod its run: the
    commit goes on, the failure is logged, and `manage.py sign_manifests` signs the run once the
    key is there (readiness fails meanwhile)."""
    run.key_status, run.signed = key_status, False
    try:
        board_key = load_board_key()
    except BoardKeyError as exc:
        logger.error("run %s committed without a signed manifest: %s", run.run_id, exc)
        return None
    # No savepoint: a database error aborts the commit anyway (re-raised below), and any other
    # failure happens before the one write, the manifest's INSERT, so it leaves nothing behind.
    try:
        return _issue(run.run_id, {"kind": "commit"}, board_key, committed=run)
    except DatabaseError:
        raise  # the commit itself cannot go on; the pod's retry succeeds
    except Exception:
        logger.exception("run %s committed without a signed manifest", run.run_id)
        return None


def reissue_manifests(run_ids, *, cause: dict) -> dict[str, int]:
    """A new version for each run whose manifest content changed; {run_id: version issued}."""
    issued = {}
    for run_id in run_ids:
        manifest = issue_manifest(run_id, cause=cause)
        if manifest is not None:
            issued[run_id] = manifest.version
    return issued


def sign_all_manifests(*, cause: dict) -> dict[str, int]:
    """Every run: version 1 where none was signed (runs recorded before manifests existed, or
    while the key was missing), a new version where the stored one no longer says what the board
    shows. A rebuild ends with this. A run whose weight check is still pending is left to its
    verdict, which issues the version (a rebuild re-checks weights: no pending-then-verified
    pair of versions for every run)."""
    signed = set(RunManifest.objects.values_list("run_id", flat=True).distinct())
    runs = Run.objects.order_by("committed_at", "pk").values_list("run_id", "verification")
    run_ids = [
        run_id
        for run_id, verification in runs
        if run_id not in signed or verification != Verification.PENDING
    ]
    return reissue_manifests(run_ids, cause=cause)


def manifests_of_key(fingerprint: str, *, cause: dict) -> dict[str, int]:
    """A new version for every run of a pod key whose manifest changed (its key's status)."""
    run_ids = Run.objects.filter(key_fingerprint=fingerprint).values_list("run_id", flat=True)
    try:
        return reissue_manifests(list(run_ids), cause=cause)
    except BoardKeyError as exc:
        logger.error("key %s: manifests not re-signed: %s", fingerprint, exc)
        return {}


def after_weight_verdict(run_id: str, verdict: str) -> None:
    """The weight check recorded a verdict: the manifest says so in a new version."""
    try:
        issue_manifest(run_id, cause={"kind": "weight_check", "verdict": verdict})
    except BoardKeyError as exc:
        logger.error("weight verdict of %s not in a signed manifest: %s", run_id, exc)
