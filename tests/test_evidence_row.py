"""The evidence row (`store_evidence_row`, submissions/ingest/evidence.py): every byte comes
back as sent, a body in the blob store has no content, and the first row of a digest stays."""

import hashlib

import pytest

from submissions.ingest.evidence import store_evidence_row
from submissions.models import RawBundle

pytestmark = pytest.mark.django_db


def test_every_byte_value_comes_back_as_sent():
    body = bytes(range(256)) * 600 + b"\\x00'\"%s%b"
    digest = hashlib.sha256(body).hexdigest()
    store_evidence_row(digest, len(body), body)
    row = RawBundle.objects.get(sha256=digest)
    assert (bytes(row.content), row.size) == (body, len(body))
    assert row.stored_at is not None


def test_a_body_in_the_blob_store_has_no_content_and_the_first_row_stays():
    body = b'{"bundle": {}}'
    digest = hashlib.sha256(body).hexdigest()
    store_evidence_row(digest, len(body))
    store_evidence_row(digest, len(body), body)  # the same body again: the row is left as it is
    row = RawBundle.objects.get(sha256=digest)
    assert row.content is None
    assert RawBundle.objects.filter(sha256=digest).count() == 1
