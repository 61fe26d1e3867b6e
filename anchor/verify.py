"""Checking stored manifest versions (docs/trust-anchor.md §Checking a manifest): what a restore
or an audit runs to know the signed history is intact."""

import json
from dataclasses import dataclass

from anchor.keyring import published_public_keys
from anchor.manifests import document_bytes, sha256_hex
from anchor.models import RunManifest
from evidence.signing import verify_signature


@dataclass(frozen=True)
class Problem:
    run_id: str
    version: int
    what: str


def check_versions(versions: list[RunManifest], published: set[str]) -> list[Problem]:
    """Problems in one run's versions (oldest first): a version signed by a key the board does
    not publish (`published`: docs/trust-anchor.md §Published keys) or whose signature does not
    verify with its key, bytes that are not the canonical JSON of themselves, a hash that does
    not match, or a broken chain (gap, or `previous` not naming the version before). The key
    stored beside a version is only a claim: a version rewritten in the database and signed
    with any other key fails here."""
    problems = []
    previous: RunManifest | None = None
    for manifest in versions:

        def problem(what: str, manifest=manifest) -> None:
            problems.append(Problem(manifest.run_id, manifest.version, what))

        data = manifest.document.encode("utf-8")
        if manifest.public_key not in published:
            problem("signed by a key the board does not publish")
        elif not verify_signature(manifest.public_key, manifest.signature, data):
            problem("signature does not verify")
        if sha256_hex(data) != manifest.document_sha256:
            problem("sha256 does not match the stored bytes")
        try:
            document = json.loads(data)
        except ValueError:
            problem("not JSON")
            previous = manifest
            continue
        if document_bytes(document) != data:
            problem("not canonical JSON")
        if document.get("version") != manifest.version:
            problem("version inside differs from the row")
        expected = (
            {"version": previous.version, "sha256": previous.document_sha256} if previous else None
        )
        if (previous is None and manifest.version != 1) or (
            previous is not None and manifest.version != previous.version + 1
        ):
            problem("version chain has a gap")
        elif document.get("previous") != expected:
            problem("previous does not name the version before")
        previous = manifest
    return problems


def check_all(*, sample: int | None = None) -> tuple[int, list[Problem]]:
    """Check every run's versions, or those of `sample` runs picked at random; returns the
    number of versions checked and the problems found. BoardKeyError when the board's
    published keys cannot be read (nothing can be checked then)."""
    published = published_public_keys()
    runs = RunManifest.objects.values_list("run_id", flat=True).distinct()
    run_ids = list(runs.order_by("?")[:sample] if sample else runs.order_by("run_id"))
    checked, problems = 0, []
    for run_id in run_ids:
        versions = list(RunManifest.objects.filter(run_id=run_id).order_by("version"))
        checked += len(versions)
        problems += check_versions(versions, published)
    return checked, problems
