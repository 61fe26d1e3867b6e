"""What the pod channel tells the apps above it (docs/README.md §Layout): submissions never
imports the trust anchor; it sends these Django signals and the anchor receives them
(anchor/receivers.py, connected in AnchorConfig.ready()) to sign the run manifests
(docs/trust-anchor.md §Run manifests).

Each is sent synchronously by the write that causes it, inside that write's transaction, but for
`board_rebuilt`, sent once the rebuild has committed and the read models are rewritten: what a
receiver writes commits or rolls back with the write (a run and its version 1, a weight verdict
and the version saying so), and a receiver's exception reaches the sender (`send`, never
`send_robust`). The sender is the model the event is about."""

from django.dispatch import Signal

# A run was committed, inside the commit's transaction. `run`: the Run as the commit wrote it,
# with its benchmark (its model, class and recipe); `key_status`: its key's status as the commit
# read it.
run_committed = Signal()

# The weight check recorded a verdict (`run_id`, `verdict`), inside the transaction recording it.
weight_verdict_recorded = Signal()

# A device key was revoked (`fingerprint`), inside the transaction revoking it: work meant for
# after the revocation commits is for the receiver to defer (`transaction.on_commit`).
key_revoked = Signal()

# The board was rebuilt from the evidence (its read models recomputed), after the rebuild's
# transaction committed.
board_rebuilt = Signal()
