"""Celery tasks of the trust anchor: thin wrappers of services."""

from anchor import services
from board.services import bump_generation
from config.celery import durable_task


@durable_task
def key_revoked(fingerprint: str) -> int:
    """A key was revoked (by a moderator or by its forgery count): every manifest of its runs
    says so in a new version. Returns the number of versions issued."""
    issued = services.manifests_of_key(fingerprint, cause={"kind": "key_revoked"})
    if issued:  # benchmark pages list the latest versions
        bump_generation()
    return len(issued)
