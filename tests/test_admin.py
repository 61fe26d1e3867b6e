"""Moderators work in the Django admin: keys can be revoked; evidence is read-only."""

import pytest
from django.contrib.auth import get_user_model

from evidence.signing import key_fingerprint
from submissions import services
from submissions.models import DeviceKey, IngestLogEntry, KeyAuditEntry, KeyStatus

PUBLIC_KEY = "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="


@pytest.fixture
def moderator_client(client, db):
    get_user_model().objects.create_superuser("mod", "mod@example.org", "a-long-password-1")
    client.login(username="mod", password="a-long-password-1")
    return client


def test_the_admin_needs_a_login(client, db):
    response = client.get("/admin/submissions/devicekey/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_a_moderator_revokes_a_key_with_an_audit_entry(moderator_client):
    key = DeviceKey.objects.create(public_key=PUBLIC_KEY, fingerprint=key_fingerprint(PUBLIC_KEY))
    response = moderator_client.post(
        "/admin/submissions/devicekey/",
        {
            "action": "revoke_keys",
            "_selected_action": [key.pk],
            "reason": "leaked key",
            "apply": "1",
        },
        follow=True,
    )
    assert response.status_code == 200
    key.refresh_from_db()
    assert key.status == KeyStatus.REVOKED
    assert KeyAuditEntry.objects.filter(key=key, action=KeyAuditEntry.Action.REVOKED).count() == 1


def test_the_ingest_log_is_read_only(moderator_client):
    services.log_attempt(
        route="results", status=400, reason="BAD_SIG", run_id="r1", note="tampered"
    )
    entry = IngestLogEntry.objects.get()
    page = moderator_client.get(f"/admin/submissions/ingestlogentry/{entry.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert moderator_client.get("/admin/submissions/ingestlogentry/add/").status_code == 403
