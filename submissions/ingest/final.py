"""The one commit path of a final (docs/protocol.md §Ingest cost)."""

from functools import partial

from django.db import (
    IntegrityError,
    transaction,
)
from django.utils import timezone

from board import services as board_services
from board.models import Run, Verification
from config.after_answer import publish_after_answer
from submissions import signals, tasks
from submissions.ingest.answers import (
    Submission,
    answer_closed_session,
    committed_answer,
    committed_run_for,
    duplicate,
)
from submissions.ingest.checkpoints import checkpointed_texts, merge_rows
from submissions.ingest.outcomes import Outcome
from submissions.models import (
    LIVE_SESSION_STATUSES,
    RunSession,
    SessionBundle,
    SessionStatus,
)


def commit_final(submission: Submission) -> Outcome:
    """A final, committed in one transaction read top to bottom: its evidence is stored first
    (outside it); then the session's row is locked (a checkpoint or another final of it waits),
    a session no longer live is answered as it stands, the final's rows are merged with the
    checkpointed ones, the run is prepared (scores, perf cohorts, secret scan), the session
    claimed, the run written with its rows, benchmark and summary (`board_services.commit_run`)
    and its signed manifest; the weight check is queued once it commits. A concurrent commit of
    the same job from another session makes the claim fail: that final's run is the answer."""
    session = submission.session
    digest = submission.evidence.stored()  # the bundle is stored before the run refers to it
    try:
        with transaction.atomic():
            locked = RunSession.objects.select_for_update().get(pk=session.pk)
            locked.key = session.key
            if locked.status not in LIVE_SESSION_STATUSES:
                return answer_closed_session(locked, submission)
            now = timezone.now()
            stored = checkpointed_texts(locked) if locked.checkpoints else []
            rows, checkpoints_clean = merge_rows(
                stored, submission.bundle["results"], submission.row_texts
            )
            del stored
            prepared = board_services.prepare_run(
                run_id=locked.run_id,
                key_fingerprint=session.key.fingerprint,
                model=locked.model,
                board=locked.board,
                suite_id=locked.suite_id,
                rows=rows,
                bundle_sha256=digest,
                bundle=submission.bundle,
                model_output_clean=checkpoints_clean and submission.model_output_clean,
            )
            _claim(locked, digest, submission.job_sig or locked.job_sig, now)
            run = board_services.commit_run(prepared, committed_at=now)
            # The board's signed manifest, version 1, commits with the run (the trust anchor
            # signs it, told through the signal).
            signals.run_committed.send(Run, run=run, key_status=session.key.status)
            if run.verification == Verification.PENDING:
                transaction.on_commit(
                    partial(publish_after_answer, tasks.verify_weights, run.run_id)
                )
    except IntegrityError:
        # A concurrent final of this job from another session won (one committed run per key
        # and job_sig).
        current = RunSession.objects.get(pk=session.pk)
        if current.status not in LIVE_SESSION_STATUSES:
            return answer_closed_session(current, submission)
        existing = submission.job_sig and committed_run_for(session.key_id, submission.job_sig)
        if existing:
            return duplicate(existing, submission.context)
        raise
    return committed_answer(run.run_id, submission.context, run=run)


def _claim(locked: RunSession, digest: str, job_sig: str | None, now) -> None:
    """The locked session's final: the session is committed with its final bundle, and its job's
    other live sessions are superseded. The (key, job_sig) constraint makes a concurrent commit
    of the same job from another session fail (IntegrityError)."""
    locked.status = SessionStatus.COMMITTED
    locked.job_sig = job_sig
    locked.committed_at = locked.last_progress_at = now
    locked.final_bundle_sha256 = digest
    locked.save(
        update_fields=[
            "status",
            "job_sig",
            "committed_at",
            "last_progress_at",
            "final_bundle_sha256",
        ]
    )
    SessionBundle.objects.create(session=locked, raw_id=digest, final=True)
    if job_sig:
        RunSession.objects.filter(
            key_id=locked.key_id, job_sig=job_sig, status__in=LIVE_SESSION_STATUSES
        ).exclude(pk=locked.pk).update(status=SessionStatus.SUPERSEDED)
