"""The pod channel's writes (docs/protocol.md §Routes), one room per responsibility:

- `outcomes`: the answers and refusals every route returns;
- `rate_limits`: per-IP and per-key request counts;
- `evidence`: request bodies kept before anything derived from them;
- `keys`: enrolment, revocation, forgeries and quarantine;
- `sessions`: opening a run, admitting a results POST, a job's status;
- `results`: a results POST checked in order, then recorded or committed;
- `answers`: the answers the results rooms share (duplicate, closed session, committed run);
- `checkpoints`: checkpoint rows, and a final's rows merged with them;
- `final`: the one commit path of a final;
- `log`: the ingest log.

`submissions.services` names the entry points the views, the moderation and the rebuild call.
"""
