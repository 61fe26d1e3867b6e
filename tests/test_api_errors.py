"""Every answer under /api/ is JSON with a reason code, Django's own 404, 405 and 500 included,
and each key has its own request limit."""

import pytest
from django.test import Client

from board.models import Result, Run


@pytest.mark.django_db
def test_unknown_api_paths_and_wrong_methods_answer_json(client):
    missing = client.get("/api/v1/no-such-thing")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NOT_FOUND"
    wrong = client.delete("/api/v1/hardware-classes")
    assert wrong.status_code == 405
    assert wrong.json()["reason"] == "METHOD_NOT_ALLOWED"


@pytest.mark.django_db
def test_an_unexpected_error_answers_json_500(db):
    from django.utils import timezone

    run = Run.objects.create(
        run_id="broken0000000001",
        key_fingerprint="f" * 16,
        model_name="m",
        board="text",
        committed_at=timezone.now(),
        bundle_sha256="0" * 64,
    )
    # A stored completion that is not UTF-8 can only come from a damaged database.
    Result.objects.create(
        run=run, position=0, case_id="c1", status="scored", raw_output=b"\xff\xfe"
    )
    response = Client(raise_request_exception=False).get("/api/v1/runs/broken0000000001")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["reason"] == "INTERNAL_ERROR"


@pytest.mark.django_db
def test_each_key_has_its_own_request_limit(make_pod, settings):
    settings.AEON_RATE_LIMIT_PER_KEY = 3
    settings.AEON_RATE_WINDOW_SECONDS = 3600  # no window boundary falls inside the test
    busy, other = make_pod(), make_pod()
    answers = [
        busy.post_json("/api/v1/runs", busy.open_run_request("org/m", "aeon-suite-v4", "text"))
        for _ in range(4)
    ]
    assert [a.status for a in answers] == [200, 200, 200, 429]
    assert answers[-1].reason == "RATE_LIMITED"
    assert int(answers[-1].headers["Retry-After"]) >= 1
    assert (
        other.post_json(
            "/api/v1/runs", other.open_run_request("org/m", "aeon-suite-v4", "text")
        ).status
        == 200
    )
