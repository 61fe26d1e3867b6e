"""The board's models, one module per part: what was measured (`measured`), moderation
(`moderation`), the read models (`read_models`) and the recipe lab's (`lab`). Django finds the
models of an app in its `models` module, and the code imports them from here."""

from board.models.lab import (
    DatasetExport,
    DrafterCurve,
    FlagEffect,
    FlagPair,
)
from board.models.measured import (
    AttestationMethod,
    Badge,
    Benchmark,
    BenchmarkGroup,
    BenchModel,
    HardwareClass,
    PerfCohort,
    Result,
    Run,
    Suite,
    SuiteKind,
    Trust,
    Verification,
)
from board.models.moderation import (
    FlagTarget,
    HoldClearance,
    ModerationFlag,
)
from board.models.read_models import (
    BoardGeneration,
    Champion,
    ChampionReign,
    ClassSummary,
    ModelClassSummary,
    RecipeReproduction,
)

__all__ = [
    "AttestationMethod",
    "Badge",
    "BenchModel",
    "Benchmark",
    "BenchmarkGroup",
    "BoardGeneration",
    "Champion",
    "ChampionReign",
    "ClassSummary",
    "DatasetExport",
    "DrafterCurve",
    "FlagEffect",
    "FlagPair",
    "FlagTarget",
    "HardwareClass",
    "HoldClearance",
    "ModelClassSummary",
    "ModerationFlag",
    "PerfCohort",
    "RecipeReproduction",
    "Result",
    "Run",
    "Suite",
    "SuiteKind",
    "Trust",
    "Verification",
]
