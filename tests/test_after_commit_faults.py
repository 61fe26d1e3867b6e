"""Nothing after a commit turns its answer into a 500 (issue 20 point 11, docs/protocol.md §Ingest
cost, step 5): with the shared cache's Redis unreachable while a final commits, the generation
move after the commit fails, is logged, and the pod still gets its committed answer; the run,
its rows and its session's commit stand, and the same final again is answered as a duplicate."""

import json
import logging

import pytest
from django.test import Client

from board.models import Result, Run
from demo.podclient import PodClient
from submissions.models import RunSession, SessionStatus
from tests.podchannel import job_sig, results_path, small_content
from tests.test_ingest_complexity import open_session

# The hooks of a commit run only when it really commits: no test transaction around it.
pytestmark = pytest.mark.django_db(transaction=True)

UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def cache_down(settings):
    settings.CACHE_URL = UNREACHABLE
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": UNREACHABLE,
        }
    }


def post_final(client: Client, pod: PodClient, session, content: dict):
    return client.post(
        results_path(session.run_id),
        json.dumps(pod.signed_results(session, content, final=True)),
        "application/json",
        HTTP_X_AEON_RUN_TOKEN=session.run_token,
    )


def test_a_final_committed_while_the_cache_is_down_is_answered_as_committed(cache_down, caplog):
    client = Client()
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(4) | {"job_sig": job_sig("cache-down")}

    with caplog.at_level(logging.ERROR, logger="aeon.board"):
        answer = post_final(client, pod, session, content)

    assert answer.status_code == 200, answer.content
    assert answer.json()["ok"] is True and answer.json()["run_id"] == session.run_id
    assert "work after a commit failed" in caplog.text
    run = Run.objects.get(run_id=session.run_id)
    assert Result.objects.filter(run=run).count() == 4
    assert RunSession.objects.get(run_id=session.run_id).status == SessionStatus.COMMITTED

    again = post_final(client, pod, session, content)
    assert again.status_code == 200 and again.json()["duplicate"] is True
