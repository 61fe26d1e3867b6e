"""Celery tasks of the pod channel: thin wrappers of services.

Weight checks have a queue of their own (`weights`, routed in config/settings.py,
docs/operations.md §Background work): they never wait behind the read-model rewrites, and every
worker consumes both queues."""

import logging

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import InterfaceError, OperationalError

from config import coalesce
from submissions.weight_checks import (
    WeightCheckDeferred,
    check_run_weights,
    overdue_pending_run_ids,
)

logger = logging.getLogger("aeon.tasks")

# The longest wait a retry spends inside the broker (a task waiting for its countdown is held
# unacknowledged by a worker: it must stay well under the visibility timeout, or Redis hands it
# to a second worker). A longer wait ends the task; the sweep sends it again once it is due.
IN_TASK_RETRY_SECONDS = 300
DATABASE_RETRY_MAX_SECONDS = 120


@shared_task(bind=True, max_retries=None, acks_late=True)
def verify_weights(self, run_id: str, force: bool = False) -> str:
    """`force`: a moderator asks again, whatever the run's verdict."""
    try:
        return check_run_weights(run_id, force=force)
    except WeightCheckDeferred as deferred:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # No inline retry loop in eager mode; `manage.py check_weights --pending` sweeps.
            return "pending"
        if deferred.countdown > IN_TASK_RETRY_SECONDS:
            return "pending"  # the beat's sweep sends it again once its wait is over
        raise self.retry(countdown=deferred.countdown) from None
    except (OperationalError, InterfaceError) as exc:
        # The database went away (restarted, a connection cut): transient like a Hub error.
        # The verdict and its manifest version commit together, so nothing half-done stays.
        if self.request.is_eager:
            logger.warning("weight check of %s left to the sweep: %s", run_id, exc)
            return "pending"
        countdown = get_exponential_backoff_interval(
            factor=2,
            retries=self.request.retries,
            maximum=DATABASE_RETRY_MAX_SECONDS,
            full_jitter=True,
        )
        logger.warning("weight check of %s retried in %ss: %s", run_id, countdown, exc)
        raise self.retry(exc=exc, countdown=countdown) from exc


@shared_task
def sweep_pending_weight_checks() -> int:
    """The beat's sweep (docs/operations.md §Background work): send the checks that are due
    again, each at most once per `AEON_WEIGHT_SWEEP_RESEND_SECONDS` (it may still be queued)."""
    sent = 0
    for run_id in overdue_pending_run_ids():
        if coalesce.claim(f"weights-sent:{run_id}", settings.AEON_WEIGHT_SWEEP_RESEND_SECONDS):
            verify_weights.delay(run_id)
            sent += 1
    return sent


@shared_task
def clean_up_pod_channel() -> dict:
    """The scheduled cleanup (submissions/cleanup.py): counts logged and returned."""
    from dataclasses import asdict

    from submissions.cleanup import clean_up

    return asdict(clean_up())
