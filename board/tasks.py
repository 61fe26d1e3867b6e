"""Celery tasks of the board: thin wrappers of services, enqueued on commit."""

from celery import shared_task
from django.db import OperationalError

from board import services


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=None,
)
def recompute_read_models(hardware_class_id: int | None, model_id: int | None) -> None:
    """Rewrite the champions, history, reproductions and class summary a change can affect."""
    services.recompute_read_models(hardware_class_id=hardware_class_id, model_id=model_id)
