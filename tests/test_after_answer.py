"""Task publishes a request queues reach the broker (a real Redis) only once its response is
closed, that is after the WSGI server has written the answer; inline tasks run at once; a publish
that fails after the answer is logged and never raised (config/after_answer.py)."""

import json
import os

import pytest
from celery import Celery
from django.http import JsonResponse
from django.test import RequestFactory

from config.after_answer import AfterAnswerMiddleware, publish_after_answer

REDIS_URL = os.environ.get("AEON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15").split(",")[0]
QUEUE = "after-answer-test"


@pytest.fixture
def broker():
    """A Celery app of its own publishing to Redis (not eager), its queue empty."""
    import redis

    from tests.conftest import missing_service

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        missing_service(f"needs Redis at {REDIS_URL}")
    client.delete(QUEUE)
    app = Celery("after-answer-test", broker=REDIS_URL, set_as_current=False)
    app.conf.task_default_queue = QUEUE

    @app.task(name="tests.after_answer.note")
    def note(text):
        note.done.append(text)  # only when it runs in this process (inline)

    note.done = []

    yield client, note
    client.delete(QUEUE)
    app.close()


def queued_args(client) -> list[str]:
    """The arguments of the messages waiting in the queue, oldest first."""
    return [
        json.loads(message)["headers"]["argsrepr"]
        for message in reversed(client.lrange(QUEUE, 0, -1))
    ]


# Closing a response sends request_finished, whose handler looks at the database connection
# (Django's close_old_connections), as after any request: once an earlier test has opened it,
# that needs database access.
@pytest.mark.django_db
def test_a_publish_queued_by_a_view_waits_until_the_response_is_closed(broker):
    client, note = broker

    def view(request):
        publish_after_answer(note, "committed")
        return JsonResponse({"ok": True})

    response = AfterAnswerMiddleware(view)(RequestFactory().post("/api/v1/runs/x/results"))

    assert response.status_code == 200
    assert client.llen(QUEUE) == 0  # the answer is out before anything is published
    response.close()  # what the WSGI server does after the last byte
    assert queued_args(client) == ["('committed',)"]


def test_a_view_that_raises_still_publishes_what_it_queued(broker):
    client, note = broker

    def view(request):
        publish_after_answer(note, "before the error")
        raise RuntimeError("the view failed after its commit")

    with pytest.raises(RuntimeError):
        AfterAnswerMiddleware(view)(RequestFactory().get("/"))

    assert queued_args(client) == ["('before the error',)"]


def test_outside_a_request_the_publish_happens_at_once(broker):
    client, note = broker

    publish_after_answer(note, "from a task")

    assert queued_args(client) == ["('from a task',)"]


def test_an_inline_task_runs_before_the_answer(broker):
    client, note = broker
    note.app.conf.task_always_eager = True
    seen_in_view = []

    def view(request):
        publish_after_answer(note, "inline")
        seen_in_view.extend(note.done)
        return JsonResponse({"ok": True})

    response = AfterAnswerMiddleware(view)(RequestFactory().get("/"))

    assert seen_in_view == ["inline"]  # it ran before the view answered
    assert response._resource_closers == []  # nothing left for after the answer
    assert client.llen(QUEUE) == 0


def test_an_inline_task_once_per_request_runs_once_per_arguments_when_the_view_has_answered(
    broker,
):
    """As the read-model recompute: a final asks for it at its commit and at its weight verdict;
    with eager tasks it runs once, after both, and before the answer leaves."""
    _client, note = broker
    note.app.conf.task_always_eager = True
    note.once_per_request = True
    seen_in_view = []

    def view(request):
        publish_after_answer(note, "class 1")
        publish_after_answer(note, "class 2")
        publish_after_answer(note, "class 1")
        seen_in_view.extend(note.done)
        return JsonResponse({"ok": True})

    response = AfterAnswerMiddleware(view)(RequestFactory().get("/"))

    assert seen_in_view == []  # not while the view worked
    assert note.done == ["class 1", "class 2"]  # once each, in the order first asked
    assert response._resource_closers == []
    # Outside a request it runs at once, each time.
    publish_after_answer(note, "class 1")
    assert note.done == ["class 1", "class 2", "class 1"]


def test_an_inline_task_once_per_request_that_fails_is_logged_and_the_others_still_run(
    broker, caplog
):
    _client, note = broker
    note.app.conf.task_always_eager = True
    note.app.conf.task_eager_propagates = True
    note.once_per_request = True

    @note.app.task(name="tests.after_answer.fails", once_per_request=True)
    def fails():
        raise RuntimeError("the database is locked")

    def view(request):
        publish_after_answer(fails)
        publish_after_answer(note, "still run")
        return JsonResponse({"ok": True})

    with caplog.at_level("ERROR", logger="aeon.tasks"):
        response = AfterAnswerMiddleware(view)(RequestFactory().get("/"))

    assert response.status_code == 200
    assert "a task run inline after a committed request failed" in caplog.text
    assert note.done == ["still run"]


# As above: closing the response looks at the database connection.
@pytest.mark.django_db
def test_a_publish_that_fails_after_the_answer_is_logged_not_raised(broker, caplog):
    client, note = broker

    def view(request):
        publish_after_answer(note, object())  # JSON cannot carry it: the publish raises
        publish_after_answer(note, "still sent")
        return JsonResponse({"ok": True})

    response = AfterAnswerMiddleware(view)(RequestFactory().get("/"))
    with caplog.at_level("ERROR", logger="aeon.tasks"):
        response.close()

    assert "could not be published" in caplog.text
    assert queued_args(client) == ["('still sent',)"]
