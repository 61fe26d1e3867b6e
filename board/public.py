"""What a public surface shows of a stored result: one place for the API and the pages."""

from board.models import Result, Run
from recipes.scrub import public_output, public_timeline, public_value

SUSTAINED_TIMELINE = "perf.sustained.timeline"


def public_evidence(result: Result):
    """A case's evidence with home directories masked and the sustained timeline's clock made
    relative (docs/recipes.md, "Scrubbing")."""
    evidence = public_output(result.evidence)
    return public_timeline(evidence) if result.case_id == SUSTAINED_TIMELINE else evidence


def public_perf(run: Run) -> dict:
    """A perf run's summary; its harness and sustained rows scrubbed like any pod value."""
    perf = dict(run.perf or {})
    other = perf.get("other")
    if isinstance(other, dict):
        perf["other"] = {
            case_id: public_timeline(evidence) if case_id == SUSTAINED_TIMELINE else evidence
            for case_id, evidence in public_value(other).items()
        }
    return perf


PUBLIC_BUNDLE_SCHEMA = "aeon-public-bundle-v1"


def public_bundle(run: Run) -> dict:
    """The copy of a run's bundle anyone may download (docs/website.md §Bundles to download):
    every result and figure as the read API
    publishes them (recipes and extras scrubbed, evidence masked), beside the sha256 of the signed
    original that moderators keep. Not signed: scrubbing changes the bytes."""
    from board.serializers import RunSerializer  # it imports this module

    return {
        "schema": PUBLIC_BUNDLE_SCHEMA,
        "about": (
            "A scrubbed public copy of a signed AEON Bench bundle: host paths, raw commands, "
            "credentials and job signatures removed. It does not verify against the pod's "
            "signature; signed_bundle_sha256 names the original kept as evidence."
        ),
        "signed_bundle_sha256": run.bundle_sha256,
        "run": RunSerializer(run).data,
    }
