"""Celery tasks of the board: thin wrappers of its services (board/read_models.py), enqueued on
commit."""

from celery import Task

from board import read_models
from config import coalesce
from config.celery import durable_task

# How long a queued recompute's marker stands at most (a task lost with its marker's Redis
# needs none; this only bounds a marker whose task was lost otherwise).
RECOMPUTE_MARKER_SECONDS = 600


def recompute_key(hardware_class_id: int | None, model_id: int | None) -> str:
    return f"recompute:{hardware_class_id}:{model_id}"


class CoalescedRecompute(Task):
    """At most one recompute queued per (class, model) (docs/operations.md §Background work):
    every commit asks for one, and with several pods uploading hundreds of identical ones piled
    up in the queue. A publish while one is queued and not yet started is dropped: that one
    rewrites what the commit changed. A retry goes through here too. Run inline (eager), once
    per (class, model) a request, when its view has answered (config/after_answer.py)."""

    once_per_request = True

    def apply_async(self, args=None, kwargs=None, **options):
        if self.app.conf.task_always_eager:
            return super().apply_async(args, kwargs, **options)
        key = recompute_key(*_class_and_model(args, kwargs))
        if not coalesce.claim(key, RECOMPUTE_MARKER_SECONDS):
            return None
        try:
            return super().apply_async(args, kwargs, **options)
        except BaseException:
            coalesce.release(key)
            raise


def _class_and_model(args, kwargs) -> tuple:
    names = ("hardware_class_id", "model_id")
    values = {**dict(zip(names, args or (), strict=False)), **(kwargs or {})}
    return values.get("hardware_class_id"), values.get("model_id")


@durable_task(base=CoalescedRecompute)
def recompute_read_models(hardware_class_id: int | None, model_id: int | None) -> None:
    """Rewrite the champions, history, reproductions and class summary a change can affect."""
    # Cleared before reading anything: a commit from now on queues the next recompute.
    coalesce.release(recompute_key(hardware_class_id, model_id))
    read_models.recompute_read_models(hardware_class_id=hardware_class_id, model_id=model_id)


@durable_task
def export_dataset() -> None:
    """Write a new version of the data to take away (docs/lab.md §Data to take away)."""
    from board.datasets import write_dataset

    write_dataset()
