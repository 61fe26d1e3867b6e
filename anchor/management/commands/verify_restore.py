"""Check a restored board before trusting the backup it came from (docs/operations.md §Backup
and restore).

Run against the restored database and blob store. It checks that every raw bundle the database
names and does not hold in its own row is in the store; re-reads a sample of committed bundles
(from their rows or the store), re-hashes them and verifies each signature against the key
pinned when its run was opened; verifies a sample of the signed run manifests (sha256 and the
board's signature, by one of the keys the board publishes: its own key file and retired keys,
and the live board's `/.well-known/aeon-bench.json` with `--live`); and asks the restored board for its champions through its own URL routes,
comparing them, when `--live` names the live board, with the live board's answers. Prints one
JSON report; exits non-zero on any failure.
"""

import json
import random
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from anchor.keyring import public_keys_of_document, published_public_keys
from anchor.keys import BoardKeyError
from anchor.models import RunManifest
from evidence.blobstore import blob_store, sha256_hex
from evidence.signing import canonical_json, verify_signature
from submissions.jsonbody import parse_json
from submissions.models import RawBundle, RunSession, SessionStatus
from submissions.selectors import raw_bundle

CHAMPION_ROUTES = ("/api/v1/champions", "/api/recipes/champions")


class Command(BaseCommand):
    help = "Verify a restored board: evidence present, sampled signatures, champions as live."

    def add_arguments(self, parser):
        parser.add_argument("--sample", type=int, default=50, help="bundles and manifests")
        parser.add_argument("--live", help="the live board's URL, to compare champions with")
        parser.add_argument("--seed", type=int, default=None, help="sample seed (repeatable)")

    def handle(self, *args, sample: int, live: str | None, seed: int | None, **options):
        chooser = random.Random(seed)
        report = {
            "bundles_named": RawBundle.objects.count(),
            "bundles_missing": self._missing_bundles(),
            "bundles_verified": self._verify_bundles(chooser, sample),
            "manifests_verified": self._verify_manifests(chooser, sample, live),
            "champions": self._champions(live),
        }
        self.stdout.write(json.dumps(report, indent=2))
        failures = []
        if report["bundles_missing"]:
            failures.append(f"{len(report['bundles_missing'])} bundles missing from the store")
        if live and not all(route["same_as_live"] for route in report["champions"].values()):
            failures.append("the restored champions differ from the live board's")
        if failures:
            raise CommandError("; ".join(failures))
        self.stdout.write(self.style.SUCCESS("restore verified"))

    def _missing_bundles(self) -> list[str]:
        """Bundles named but found nowhere: a body kept in its row is there by construction."""
        store = blob_store()
        in_store = RawBundle.objects.filter(content__isnull=True).order_by("sha256")
        digests = in_store.values_list("sha256", flat=True)
        return [digest for digest in digests.iterator() if not store.exists(digest)][:20]

    def _verify_bundles(self, chooser: random.Random, sample: int) -> int:
        sessions = list(
            RunSession.objects.filter(status=SessionStatus.COMMITTED)
            .exclude(final_bundle_sha256="")
            .select_related("key")
        )
        for session in chooser.sample(sessions, min(sample, len(sessions))):
            data = raw_bundle(session.final_bundle_sha256)
            if sha256_hex(data) != session.final_bundle_sha256:
                raise CommandError(f"run {session.run_id}: its bundle does not hash to its name")
            body = parse_json(data, bounded=False)  # committed evidence, whatever its size
            message = canonical_json(body["bundle"])
            if not verify_signature(session.key.public_key, body["signature"], message):
                raise CommandError(f"run {session.run_id}: the pod's signature does not verify")
        return min(sample, len(sessions))

    def _verify_manifests(self, chooser: random.Random, sample: int, live: str | None) -> int:
        """Signed run manifests (docs/trust-anchor.md): each signed by a published key (never
        merely the key stored beside it) and verifying with it."""
        ids = list(RunManifest.objects.values_list("pk", flat=True))
        chosen = RunManifest.objects.filter(pk__in=chooser.sample(ids, min(sample, len(ids))))
        published = self._published_keys(live) if ids else set()
        for manifest in chosen:
            document = manifest.document.encode("utf-8")
            if sha256_hex(document) != manifest.document_sha256:
                raise CommandError(f"manifest {manifest}: its document does not hash to its sum")
            if manifest.public_key not in published:
                raise CommandError(
                    f"manifest {manifest}: signed by a key the board does not publish"
                )
            if not verify_signature(manifest.public_key, manifest.signature, document):
                raise CommandError(f"manifest {manifest}: the board's signature does not verify")
        return len(chosen)

    def _published_keys(self, live: str | None) -> set[str]:
        """docs/trust-anchor.md §Published keys: this board's (key file and retired keys file),
        and the live board's key document with `--live`."""
        keys, error = set(), None
        try:
            keys = published_public_keys()
        except BoardKeyError as exc:
            error = exc
        if live:
            url = live.rstrip("/") + "/.well-known/aeon-bench.json"
            with urllib.request.urlopen(url, timeout=30) as answer:
                keys |= public_keys_of_document(json.load(answer))
        if not keys:
            raise CommandError(f"no published board keys to check the manifests with: {error}")
        return keys

    def _champions(self, live: str | None) -> dict:
        host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*", "")), "localhost")
        client = Client(HTTP_HOST=host.lstrip("."))
        found = {}
        for route in CHAMPION_ROUTES:
            response = client.get(route)
            if response.status_code != 200:
                raise CommandError(f"the restored board answers {response.status_code} on {route}")
            restored = response.json()
            entry = {"count": len(restored.get("champions", []))}
            if live:
                with urllib.request.urlopen(live.rstrip("/") + route, timeout=30) as answer:
                    entry["same_as_live"] = json.load(answer) == restored
            found[route] = entry
        return found
