"""Celery tasks of the pod channel: thin wrappers of services."""

from celery import shared_task
from django.conf import settings

from submissions.weight_checks import (
    WeightCheckDeferred,
    check_run_weights,
    overdue_pending_run_ids,
)


@shared_task(bind=True, max_retries=None, acks_late=True)
def verify_weights(self, run_id: str, force: bool = False) -> str:
    """`force`: a moderator asks again, whatever the run's verdict."""
    try:
        return check_run_weights(run_id, force=force)
    except WeightCheckDeferred as deferred:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # No inline retry loop in eager mode; `manage.py check_weights --pending` sweeps.
            return "pending"
        raise self.retry(countdown=deferred.countdown) from None


@shared_task
def sweep_pending_weight_checks() -> int:
    """The beat's sweep (docs/operations.md §Background work): send overdue checks again."""
    run_ids = overdue_pending_run_ids()
    for run_id in run_ids:
        verify_weights.delay(run_id)
    return len(run_ids)
