"""Celery tasks of the trust anchor: thin wrappers of services."""

from celery import shared_task
from django.db import OperationalError

from anchor import services


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=None,
)
def key_revoked(fingerprint: str) -> int:
    """A key was revoked (by a moderator or by its forgery count): every manifest of its runs
    says so in a new version. Returns the number of versions issued."""
    return len(services.manifests_of_key(fingerprint, cause={"kind": "key_revoked"}))
