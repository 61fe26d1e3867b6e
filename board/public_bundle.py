"""The public copy of a run's bundle, streamed (docs/website.md §Bundles to download): the
run and its cases as the read API publishes them (board/serializers/runs.py), scrubbed."""

import json

from django.core.serializers.json import DjangoJSONEncoder

from board.models import Run
from board.serializers.runs import ResultSerializer, RunSerializer

PUBLIC_BUNDLE_SCHEMA = "aeon-public-bundle-v1"
PUBLIC_BUNDLE_ABOUT = (
    "A scrubbed public copy of a signed AEON Bench bundle: host paths, raw commands, "
    "credentials and job signatures removed. It does not verify against the pod's "
    "signature; signed_bundle_sha256 names the original kept as evidence."
)


def _open_object(value: dict, encoder) -> str:
    """A dict's JSON without its closing brace, to append members to."""
    return json.dumps(value, ensure_ascii=False, cls=encoder)[:-1]


def public_bundle_head(run: Run) -> str:
    """The public bundle's JSON up to the opening of `run.results`: everything but the cases
    (docs/website.md §Bundles to download). What it holds is what can change about a run after
    its commit (trust, the weight check, its benchmark), so its hash is the download's ETag."""
    outer = {"schema": PUBLIC_BUNDLE_SCHEMA, "about": PUBLIC_BUNDLE_ABOUT}
    outer["signed_bundle_sha256"] = run.bundle_sha256
    head = _open_object(outer, DjangoJSONEncoder)
    inner = _open_object(dict(RunSerializer(run).data), DjangoJSONEncoder)
    return f'{head}, "run": {inner}, "results": ['


def public_bundle_chunks(head: str, batches):
    """The public bundle as text chunks: the head, then each batch of cases (Result rows) as
    the read API publishes them, then the closing brackets. One batch in memory at a time."""
    yield head
    # to_representation, not .data: DRF's data keeps a reference cycle with its serializer, and
    # batch after batch would wait in memory for the cycle collector.
    shape = ResultSerializer(many=True)
    first = True
    for batch in batches:
        if not batch:
            continue
        text = ", ".join(
            json.dumps(row, ensure_ascii=False, cls=DjangoJSONEncoder)
            for row in shape.to_representation(batch)
        )
        batch = None  # let the rows go before the next batch is read
        yield text if first else ", " + text
        first = False
    yield "]}}"
