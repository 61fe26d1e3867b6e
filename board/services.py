"""The board's writes, by room: `board.recording` (a committed run and its rows),
`board.benchmarks` (benchmarks and their summaries), `board.moderation_writes` (weight verdicts,
flags, clearances), `board.read_models` (what follows a change: the generation move and the
recompute), `board.class_recompute` and `board.crowns` (the read models of a class). This module
names the entry points the other apps, the commands and the tests call."""

from board.benchmarks import (
    clear_board,
    hardware_class_fields,
)
from board.moderation_writes import (
    clear_secret_hold,
    flag_benchmark,
    flag_run,
    note_weight_attempt,
    record_weight_verdict,
)
from board.read_models import (
    bump_generation,
    read_models_changed,
    read_models_deferred,
    recompute_all_read_models,
    recompute_read_models,
)
from board.recording import (
    BundleRuleError,
    check_bundle,
    commit_run,
    prepare_run,
    record_run,
)

__all__ = [
    "BundleRuleError",
    "bump_generation",
    "check_bundle",
    "clear_board",
    "clear_secret_hold",
    "commit_run",
    "flag_benchmark",
    "flag_run",
    "hardware_class_fields",
    "note_weight_attempt",
    "prepare_run",
    "read_models_changed",
    "read_models_deferred",
    "recompute_all_read_models",
    "recompute_read_models",
    "record_run",
    "record_weight_verdict",
]
