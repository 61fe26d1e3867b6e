"""Rebuild the board from the evidence: every committed session's stored bundles (in their rows
or in the blob store) are replayed, in commit order, through the same recording code as ingest."""

from functools import partial

from django.db import transaction

from board import services as board_services
from board.models import Verification
from submissions import signals, tasks
from submissions.jsonbody import parse_json
from submissions.models import RunSession, SessionStatus
from submissions.schemas import normalise_bundle
from submissions.selectors import raw_bundle
from submissions.services import merged_rows


def rebuild_board() -> int:
    """Re-derive every benchmark, run, cohort and score from the raw bundles, then every read
    model (champions, history, reproductions, class summaries); returns the number of runs. The
    weight checks the replay leaves pending are queued through the worker once the rebuild
    commits; their verdicts come again from the per-commit cache of Hub answers (in the embedded
    default they run at once, before the read models are rewritten). Moderators' flags are kept
    and applied again."""
    sessions = (
        RunSession.objects.filter(status=SessionStatus.COMMITTED)
        .select_related("key")
        .order_by("committed_at", "pk")
    )
    count = 0
    with board_services.read_models_deferred():
        with transaction.atomic():
            board_services.clear_board()
            for session in sessions:
                # Committed evidence: decoded whatever its size (the decoded-size budget guards requests).
                body = parse_json(raw_bundle(session.final_bundle_sha256), bounded=False)
                _, bundle = normalise_bundle(body["bundle"], board=session.board)
                run = board_services.record_run(
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
                if run.verification == Verification.PENDING:
                    transaction.on_commit(partial(tasks.verify_weights.delay, run.run_id))
                count += 1
    board_services.recompute_all_read_models()
    # Runs recorded before manifests existed get version 1; a run the replay re-derived
    # differently gets a new version saying so (docs/trust-anchor.md §Run manifests): the trust
    # anchor signs them, told through the signal.
    signals.board_rebuilt.send(RunSession)
    return count
