"""Audits anchored in the published keys (docs/trust-anchor.md §Published keys): the key
document lists the current key and every retired one with its dates; `verify_manifests` and
`verify_restore` accept a manifest version only when a published key signed it, so a version
rewritten in the database and signed with any other key is refused, and a rotation keeps the
versions signed before it verifying with the retired key."""

import json
from datetime import datetime
from io import StringIO

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command

from anchor.keys import BoardKey, load_board_key
from anchor.manifests import document_bytes, sha256_hex
from anchor.models import RunManifest
from demo.loader import prefill_hub_cache
from evidence.signing import canonical_json, verify_signature
from tests.boardjobs import core_job, read_api, submit_job
from tests.championjobs import GEMMA_816

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def submit_gemma(pod) -> list[str]:
    answers = submit_job(pod, core_job(GEMMA_816, started="2026-10-03T09:00:00Z"))
    assert all(answer.status == 200 for answer in answers)
    return [answer.body["run_id"] for answer in answers]


def verify_manifests() -> tuple[bool, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_manifests", stdout=out, stderr=err)
    except CommandError as exc:
        return False, err.getvalue() + str(exc)
    return True, out.getvalue()


def verify_restore() -> tuple[bool, str]:
    out = StringIO()
    try:
        call_command("verify_restore", "--seed", "1", "--sample", "1000", stdout=out)
    except CommandError as exc:
        return False, str(exc)
    return True, out.getvalue()


def forge_next_version(run_id: str, signer: BoardKey) -> RunManifest:
    """What an attacker with the database (and not the board key) can do: append a version that
    says the run was verified and attested, chained to the latest one, its sha256 right, signed
    with a key of their own and naming that key beside it."""
    latest = RunManifest.objects.filter(run_id=run_id).order_by("-version").first()
    document = json.loads(latest.document)
    document["version"] = latest.version + 1
    document["previous"] = {"version": latest.version, "sha256": latest.document_sha256}
    document["standing"]["trust"] = "attested"
    document["change"] = {"cause": {"kind": "update"}, "fields": []}
    data = document_bytes(document)
    return RunManifest.objects.create(
        run_id=run_id,
        version=document["version"],
        document=data.decode("ascii"),
        document_sha256=sha256_hex(data),
        signature=signer.sign(data),
        public_key=signer.public_key_b64,
        signed_at=latest.signed_at,
        change=document["change"],
    )


def test_a_version_signed_by_any_other_key_is_refused_by_both_audits(pod, tmp_path):
    run_id, *_ = submit_gemma(pod)
    assert verify_manifests()[0] and verify_restore()[0]

    intruder = BoardKey(path=tmp_path / "none.pem", private_key=Ed25519PrivateKey.generate())
    forged = forge_next_version(run_id, intruder)
    # The forgery is internally consistent: it verifies with the key stored beside it, so an
    # audit trusting that key (as both did before) would pass it.
    assert verify_signature(forged.public_key, forged.signature, forged.document.encode())

    ok, said = verify_manifests()
    assert not ok
    assert f"{run_id} v{forged.version}: signed by a key the board does not publish" in said
    ok, said = verify_restore()
    assert not ok
    assert "signed by a key the board does not publish" in said


def test_the_key_document_lists_the_current_and_every_retired_key(board_url, board_key_file):
    first = load_board_key().public_key_b64
    reply = read_api(board_url, "/.well-known/aeon-bench.json")
    assert reply.body["keys"] == [
        {"public_key": first, "status": "current", "valid_from": None, "valid_until": None}
    ]

    out = StringIO()
    call_command("rotate_board_key", "--path", str(board_key_file.parent / "k2.pem"), stdout=out)
    # Until the board runs with the new key, it still publishes the old one as its own.
    assert read_api(board_url, "/.well-known/aeon-bench.json").body["public_key"] == first

    from django.conf import settings

    settings.AEON_BOARD_KEY_FILE = str(board_key_file.parent / "k2.pem")
    second = load_board_key().public_key_b64
    call_command("rotate_board_key", "--path", str(board_key_file.parent / "k3.pem"), stdout=out)
    settings.AEON_BOARD_KEY_FILE = str(board_key_file.parent / "k3.pem")
    third = load_board_key().public_key_b64

    body = read_api(board_url, "/.well-known/aeon-bench.json").body
    assert body["public_key"] == third
    keys = body["keys"]
    assert [(k["public_key"], k["status"]) for k in keys] == [
        (third, "current"),
        (second, "retired"),
        (first, "retired"),
    ]
    # Each retired key's period ends when the next one's begins.
    assert keys[0]["valid_from"] == keys[1]["valid_until"]
    assert keys[1]["valid_from"] == keys[2]["valid_until"]
    assert keys[2]["valid_from"] is None
    assert datetime.fromisoformat(keys[2]["valid_until"]) < datetime.fromisoformat(
        keys[1]["valid_until"]
    )
    # A key is never overwritten by a rotation.
    with pytest.raises(CommandError, match="never overwritten"):
        call_command("rotate_board_key", "--path", str(board_key_file), stdout=out)


def test_a_rotation_keeps_older_versions_verifying_with_the_retired_key(
    pod, board_url, board_key_file, settings
):
    from anchor.moderation import flag_run

    run_id, *_ = submit_gemma(pod)
    old_key = load_board_key().public_key_b64
    call_command(
        "rotate_board_key", "--path", str(board_key_file.parent / "new.pem"), stdout=StringIO()
    )
    settings.AEON_BOARD_KEY_FILE = str(board_key_file.parent / "new.pem")
    new_key = load_board_key().public_key_b64
    flag_run(moderator="mod", run_id=run_id, flagged=True, reason="after the rotation")

    versions = list(RunManifest.objects.filter(run_id=run_id).order_by("version"))
    assert {v.public_key for v in versions} == {old_key, new_key}
    assert versions[-1].public_key == new_key
    ok, said = verify_manifests()
    assert ok, said
    assert verify_restore()[0]
    # Served as signed: the old version names the retired key, which the key document lists.
    old = read_api(board_url, f"/api/runs/{run_id}/manifest?version=1").body
    published = {
        k["public_key"] for k in read_api(board_url, "/.well-known/aeon-bench.json").body["keys"]
    }
    assert old["public_key"] == old_key in published
    assert verify_signature(old_key, old["signature"], canonical_json(old["manifest"]))

    # Without the retired key published, what it signed no longer passes: the audit rests on
    # the published keys, not on the key stored beside each version.
    (board_key_file.parent / "retired-board-keys.json").unlink()
    ok, said = verify_manifests()
    assert not ok
    assert f"{run_id} v1: signed by a key the board does not publish" in said
