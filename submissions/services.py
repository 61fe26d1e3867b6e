"""The pod channel's entry points (docs/protocol.md §Routes): each takes the raw request body and
returns an `Outcome` or raises `Refusal`; the views only read bodies and write answers. The work
is done in the rooms of `submissions/ingest/`."""

from submissions.ingest.checkpoints import merge_rows, merged_rows
from submissions.ingest.evidence import HELD_WHILE_WRITTEN_BYTES, store_evidence_row
from submissions.ingest.keys import (
    enroll_key,
    issue_challenge,
    mark_quarantine_reviewed,
    record_forgery,
    revoke_key,
    revoke_key_by_moderator,
)
from submissions.ingest.log import log_attempt
from submissions.ingest.outcomes import REFUSAL_STATUS, Outcome, Refusal
from submissions.ingest.rate_limits import check_rate_limit
from submissions.ingest.results import submit_results
from submissions.ingest.sessions import admit_results, job_status, new_run_id, open_run

__all__ = [
    "HELD_WHILE_WRITTEN_BYTES",
    "REFUSAL_STATUS",
    "Outcome",
    "Refusal",
    "admit_results",
    "check_rate_limit",
    "enroll_key",
    "issue_challenge",
    "job_status",
    "log_attempt",
    "mark_quarantine_reviewed",
    "merge_rows",
    "merged_rows",
    "new_run_id",
    "open_run",
    "record_forgery",
    "revoke_key",
    "revoke_key_by_moderator",
    "store_evidence_row",
    "submit_results",
]
