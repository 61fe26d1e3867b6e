"""The trust anchor's receivers of what the pod channel tells it (submissions/signals.py): thin
calls of its services, connected once in AnchorConfig.ready()."""

from functools import partial

from django.db import transaction

from anchor import services, tasks
from submissions import signals


def sign_committed_run(sender, *, run, key_status: str, **kwargs) -> None:
    """Version 1 of the run's manifest, signed inside the commit's transaction."""
    services.sign_at_commit(run, key_status=key_status)


def sign_weight_verdict(sender, *, run_id: str, verdict: str, **kwargs) -> None:
    """The verdict's manifest version, in the verdict's transaction: both commit or neither."""
    services.after_weight_verdict(run_id, verdict)


def re_sign_revoked_key(sender, *, fingerprint: str, **kwargs) -> None:
    """Every manifest of the key's runs says it is revoked, once the revocation commits."""
    transaction.on_commit(partial(tasks.key_revoked.delay, fingerprint))


def sign_rebuilt_board(sender, **kwargs) -> None:
    """Version 1 for runs recorded before manifests existed; a new version for a run the replay
    re-derived differently."""
    services.sign_all_manifests(cause={"kind": "rebuild"})


def connect() -> None:
    signals.run_committed.connect(sign_committed_run, dispatch_uid="anchor.sign_committed_run")
    signals.weight_verdict_recorded.connect(
        sign_weight_verdict, dispatch_uid="anchor.sign_weight_verdict"
    )
    signals.key_revoked.connect(re_sign_revoked_key, dispatch_uid="anchor.re_sign_revoked_key")
    signals.board_rebuilt.connect(sign_rebuilt_board, dispatch_uid="anchor.sign_rebuilt_board")
