"""Background tasks a request queues are handed to the broker once its answer has been sent.

A commit queues the work derived from it (the weight check, the rewrite of the read models). Its
answer does not wait for that publish, which costs more than a millisecond per task with Celery's
Redis transport (docs/protocol.md §Ingest cost). The middleware attaches the queued publishes to
the response; the WSGI server calls them when it closes the response, after the last byte is
written.

When tasks run inline (eager Celery: the embedded default, the tests), the task runs at once:
its effects are part of the answer. A task marked `once_per_request` (the read-model recompute)
runs instead when the view has answered and before the answer leaves, once per distinct set of
arguments however many times the request asked: a final asks for its class and model's
recompute at its commit and again at its weight verdict, which runs inline just after, and the
first would be rewritten at once by the second. Outside a request (a task, a command), the
publish also happens at once.

A publish that fails after the answer is logged, not raised: the commit stands and the pod has
its answer. Weight checks left pending are sent again by the beat's sweep (docs/operations.md
§Background work); a lost read-model rewrite is redone by the next commit in that class (and
`manage.py rebuild_board` rewrites them all).
"""

import logging
import threading
from functools import partial

logger = logging.getLogger("aeon.tasks")

_request = threading.local()


def publish_after_answer(task, *args) -> None:
    """`task.delay(*args)` once the current answer is sent (at once when tasks run inline or
    outside a request; a `once_per_request` task run inline, once, when the view has
    answered)."""
    queued = getattr(_request, "queued", None)
    if queued is None:
        task.delay(*args)
    elif not task.app.conf.task_always_eager:
        queued.append(partial(task.delay, *args))
    elif getattr(task, "once_per_request", False):
        _request.inline.setdefault((task.name, args), partial(task.delay, *args))
    else:
        task.delay(*args)


def _publish(queued, failed: str = "a task queued by a committed request could not be published"):
    for publish in queued:
        try:
            publish()
        except Exception:
            logger.exception(failed)


def _run_inline(inline: dict) -> None:
    _publish(inline.values(), "a task run inline after a committed request failed")


class AfterAnswerMiddleware:
    """Holds the publishes a request queues until its response is closed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        _request.queued, _request.inline = queued, inline = [], {}
        try:
            response = self.get_response(request)
        except BaseException:
            _request.queued = None
            _run_inline(inline)
            _publish(queued)
            raise
        _request.queued = None
        _run_inline(inline)  # their effects are part of the answer
        if queued:
            response._resource_closers.append(partial(_publish, queued))
        return response
