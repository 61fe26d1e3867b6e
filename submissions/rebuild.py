"""Rebuild the board from the evidence: every committed session's stored bundles are replayed,
in commit order, through the same recording code as ingest."""

import json

from django.db import transaction

from board import services as board_services
from submissions.blobstore import blob_store
from submissions.models import RunSession, SessionStatus
from submissions.schemas import normalise_bundle
from submissions.services import merged_rows
from submissions.weight_checks import WeightCheckDeferred, check_run_weights


def rebuild_board() -> int:
    """Re-derive every benchmark, run, cohort and score from the raw bundles, then every read
    model (champions, history, reproductions, class summaries); returns the number of runs.
    Weight verdicts come again from the per-commit cache of Hugging Face answers; moderators'
    flags are kept and applied again."""
    store = blob_store()
    sessions = (
        RunSession.objects.filter(status=SessionStatus.COMMITTED)
        .select_related("key")
        .order_by("committed_at", "pk")
    )
    with board_services.read_models_deferred():
        run_ids = _replay_sessions(store, sessions)
        for run_id in run_ids:
            try:
                check_run_weights(run_id)
            except WeightCheckDeferred:
                pass  # stays pending; `check_weights --pending` or the worker's retry settles it
    board_services.recompute_all_read_models()
    return len(run_ids)


def _replay_sessions(store, sessions) -> list[str]:
    with transaction.atomic():
        board_services.clear_board()
        run_ids = []
        for session in sessions:
            body = json.loads(store.get(session.final_bundle_sha256))
            _, bundle = normalise_bundle(body["bundle"])
            board_services.record_run(
                run_id=session.run_id,
                key_fingerprint=session.key.fingerprint,
                model=session.model,
                board=session.board,
                suite_id=session.suite_id,
                bundle=bundle,
                rows=merged_rows(session, bundle["results"]),
                bundle_sha256=session.final_bundle_sha256,
                committed_at=session.committed_at,
            )
            run_ids.append(session.run_id)
    return run_ids
