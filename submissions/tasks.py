"""Celery tasks of the pod channel: thin wrappers of services."""

from celery import shared_task
from django.conf import settings

from submissions.weight_checks import WeightCheckDeferred, check_run_weights


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
