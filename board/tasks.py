"""Celery tasks of the board: thin wrappers of services, enqueued on commit."""

from board import services
from config.celery import durable_task


@durable_task
def recompute_read_models(hardware_class_id: int | None, model_id: int | None) -> None:
    """Rewrite the champions, history, reproductions and class summary a change can affect."""
    services.recompute_read_models(hardware_class_id=hardware_class_id, model_id=model_id)
