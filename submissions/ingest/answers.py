"""A signed bundle on its way in, and the answers every results route shares: a duplicate, a
closed session, a committed run."""

from dataclasses import dataclass

from board.models import Run, Verification
from board.selectors import runs as run_reads
from config.api_errors import Reason
from submissions import tasks
from submissions.ingest.evidence import Evidence
from submissions.ingest.outcomes import DUPLICATE_MESSAGE, Outcome, Refusal
from submissions.models import (
    RunSession,
    SessionStatus,
)


@dataclass
class Submission:
    """A bundle whose signature verified, for its session."""

    session: RunSession
    bundle: dict  # as the schema normalised it
    evidence: Evidence  # stored before anything refers to it
    job_sig: str | None
    context: dict
    # Whether its text holds no prefixed token (recipes/secret_scan.py).
    model_output_clean: bool
    # The canonical JSON text of each of the bundle's rows, made with its signed bytes (None for
    # a body over 8 MiB: each is made when needed, `merge_rows`, `record_checkpoint`).
    row_texts: list[str] | None

    @property
    def digest(self) -> str:
        return self.evidence.digest


def committed_run_for(key_id: int, job_sig: str) -> str | None:
    """The run id of the key's committed session of this job, if any."""
    return (
        RunSession.objects.filter(key_id=key_id, job_sig=job_sig, status=SessionStatus.COMMITTED)
        .values_list("run_id", flat=True)
        .first()
    )


def duplicate(run_id: str, context: dict) -> Outcome:
    return Outcome(
        200,
        {"ok": True, "duplicate": True, "run_id": run_id, "message": DUPLICATE_MESSAGE},
        note=f"duplicate of {run_id}",
        **context,
    )


def answer_closed_session(current: RunSession, submission: Submission) -> Outcome:
    """A bundle for a session that is no longer live: the same final again is answered as
    before, anything else is a replay."""
    if current.status == SessionStatus.COMMITTED:
        if submission.job_sig and current.job_sig == submission.job_sig:
            return duplicate(current.run_id, submission.context)
        if current.final_bundle_sha256 == submission.digest:
            return committed_answer(current.run_id, submission.context)
        raise Refusal(
            Reason.REPLAY_NONCE,
            "this run is already committed with another bundle",
            **submission.context,
        )
    raise Refusal(
        Reason.RUN_CLOSED, f"this run is {current.status}; open a new run", **submission.context
    )


def committed_answer(run_id: str, context: dict, *, run: Run | None = None) -> Outcome:
    """The answer to a committed final: from the run just written, or read again.

    A run written pending had its weight check queued on commit. With eager tasks that check
    has run by now, and the answer gives its verdict, read again; with a broker the worker
    decides later and the answer says pending (tests/test_celery_worker.py), so nothing is read:
    a worker quick enough to finish first would only make the answer depend on a race."""
    if (
        run is not None
        and run.verification == Verification.PENDING
        and tasks.verify_weights.app.conf.task_always_eager
    ):
        run.refresh_from_db(fields=["trust", "verification"])
    summary = (
        run_reads.run_commit_summary(run) if run is not None else run_reads.commit_summary(run_id)
    )
    return Outcome(200, {"ok": True, "run_id": run_id, **summary}, **context)
