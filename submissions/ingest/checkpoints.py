"""Checkpoints: their rows stored first-write-wins, and a final's rows merged with them."""

import json

from django.db import (
    transaction,
)
from django.utils import timezone

from board.jsonsafe import storable
from evidence.signing import (
    canonical_text,
)
from recipes.secret_scan import json_may_hold_token
from submissions.ingest.answers import Submission, answer_closed_session
from submissions.ingest.outcomes import Outcome
from submissions.models import (
    LIVE_SESSION_STATUSES,
    CheckpointRow,
    RunSession,
    SessionBundle,
    SessionStatus,
)


def record_checkpoint(submission: Submission) -> Outcome:
    """Store the cases not stored yet (first write wins), under the session's row lock."""
    session = submission.session
    # The column holds the storable id (no NUL), as board results do; row_json the original, in
    # its canonical text (made with the signed bytes).
    rows = submission.bundle["results"]
    texts = submission.row_texts or [canonical_text(row) for row in rows]
    sent = {storable(row["case_id"]): text for row, text in zip(rows, texts, strict=True)}
    submission.evidence.stored()
    now = timezone.now()
    with transaction.atomic():
        locked = RunSession.objects.select_for_update().get(pk=session.pk)
        if locked.status not in LIVE_SESSION_STATUSES:
            return answer_closed_session(locked, submission)
        stored = set(CheckpointRow.objects.filter(session=locked).values_list("case_id", flat=True))
        new_ids = [case_id for case_id in sent if case_id not in stored]
        CheckpointRow.objects.bulk_create(
            [
                CheckpointRow(
                    session=locked,
                    case_id=case_id,
                    position=len(stored) + i,
                    row_json=sent[case_id],
                )
                for i, case_id in enumerate(new_ids)
            ]
        )
        SessionBundle.objects.create(session=locked, raw_id=submission.digest, final=False)
        locked.status = SessionStatus.RUNNING
        locked.job_sig = locked.job_sig or submission.job_sig
        locked.last_progress_at = now
        locked.checkpoints += 1
        locked.save(update_fields=["status", "job_sig", "last_progress_at", "checkpoints"])
    return Outcome(
        200,
        {
            "ok": True,
            "run_id": locked.run_id,
            "final": False,
            "n_results": len(stored) + len(new_ids),
        },
        **submission.context,
    )


def checkpointed_texts(session: RunSession) -> list[str]:
    """The session's checkpointed rows as stored: their JSON texts, in the order received."""
    return list(
        CheckpointRow.objects.filter(session_id=session.pk)
        .order_by("position")
        .values_list("row_json", flat=True)
    )


def merged_rows(session: RunSession, final_rows: list[dict]) -> list[dict]:
    """Checkpointed rows first (first write per case wins), then the final's new cases."""
    stored = checkpointed_texts(session) if session.checkpoints else []
    return merge_rows(stored, final_rows)[0]


def merge_rows(
    stored: list[str], final_rows: list[dict], final_texts: list[str] | None = None
) -> tuple[list[dict], bool]:
    """The final's rows merged after the checkpointed ones (`stored`: their stored texts,
    `checkpointed_texts`), first write of a case winning; and whether the checkpointed ones hold
    no prefixed token the final's own text scan did not read (each one the final sent again
    unchanged, or one pass over their stored text finds none: recipes/secret_scan.py).
    `final_texts`: the canonical text of each of the final's rows when the signature check made
    them (a body up to 8 MiB); otherwise each is made here, one row at a time, only for the rows
    compared (a big body's rows are never all held as text beside the bundle)."""
    if not stored:
        return final_rows, True
    # The final resends its checkpointed rows first, unchanged (as pods do): the stored texts
    # are then the texts of the final's first rows, and the merged rows are the final's own (no
    # row is parsed again).
    if _resent_first(stored, final_rows, final_texts):
        return final_rows, True
    # Each row_json is the board's own JSON text of one row: joined as json.dumps joins list
    # items, they are the array's text.
    joined = ", ".join(stored)
    rows = json.loads(f"[{joined}]")
    seen = {row["case_id"] for row in rows}
    # The final resends its checkpointed rows: unchanged, their strings are the final's own.
    final_by_case = {row["case_id"]: row for row in final_rows}
    resent = all(final_by_case.get(row["case_id"]) == row for row in rows)
    rows.extend(row for row in final_rows if row["case_id"] not in seen)
    return rows, resent or not json_may_hold_token(joined)


def _resent_first(stored: list[str], final_rows: list[dict], final_texts: list[str] | None) -> bool:
    """Whether each stored text is the canonical text of the final's row at its position."""
    if len(stored) > len(final_rows):
        return False
    for index, text in enumerate(stored):
        sent = final_texts[index] if final_texts is not None else canonical_text(final_rows[index])
        if sent != text:
            return False
    return True
