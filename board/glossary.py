"""Plain-language explanations of what the board shows: badges, cohort marks, trust, weight
verdicts and attestation methods. Pages show these next to the codes (docs/trust-and-ranking.md,
docs/cohorts.md); the codes themselves stay the enums of `board.models` and `board.perf`."""

from dataclasses import dataclass

from board.models import AttestationMethod, Badge, Trust, Verification
from board.perf import CohortMark


@dataclass(frozen=True)
class Term:
    code: str
    label: str
    meaning: str


BADGES = {
    Badge.AGENTIC_UNTESTED: "No coding-agent harness scored above 5 points (or none ran): the "
    "benchmark still ranks, but its agentic ability is unknown.",
    Badge.CLAIMED_HARDWARE: "The pod could not detect its hardware; the class comes from the "
    "label its operator typed.",
    Badge.BELOW_CONTEXT_FLOOR: "The recipe serves less than a 64K-token context (or does not "
    "say how much): stored and shown, never ranked.",
    Badge.SECRET_DETECTED: "Something that looks like a credential was found in the recipe or "
    "environment: withheld until a moderator reviews it.",
    Badge.NO_PERF: "No performance sweep arrived: there are no speed figures, so it cannot rank.",
    Badge.NO_TEXT: "No run of the current quality suite arrived: there is no composite, so it "
    "cannot rank.",
    Badge.LOW_COVERAGE: "Fewer than 90 % of the suite's cases have an answer or a no-answer "
    "row: the composite is shown but does not rank.",
    Badge.SEEDED: "The quality run used a fixed sampling seed (bench_seed): a reproducibility "
    "run, not a ranked one.",
    Badge.GRADING_DISPUTED: "The board graded the deterministic cases again from the raw outputs "
    "and its composite differs from the pod's by more than 1 point: shown beside the pod's, "
    "never ranked, never a champion, never the quality floor's reference.",
    Badge.SUITE_HASH_UNKNOWN: "The quality run's suite_hash is not one the board knows for its "
    "suite: the cases it answered may not be the suite's, so it does not make the benchmark "
    "complete.",
    Badge.TIER_MISSING: "Some category and difficulty of the suite has less than 90 % of its "
    "cases answered (a tier was left out): not complete.",
    Badge.UNKNOWN_CASES: "The quality run sent rows whose case ids are not in its suite: they "
    "are shown and never counted.",
    Badge.EVIDENCE_COPY: "Its per-case evidence (outputs and timings) is another pod's earlier "
    "run signed again: it reproduces nothing and is never a champion.",
    Badge.UNKNOWN_SUITE: "A run of a suite the board does not know: stored and shown, never "
    "ranked.",
    Badge.DRAFTER_UNPINNED: "The speculative-decoding drafter is not pinned to a commit. "
    "Speculative decoding is lossless, so this does not block ranking.",
    Badge.DRAFTER_MISSING: "The drafter repository was not found on Hugging Face at the "
    "declared commit.",
    Badge.DRAFTER_BARELY_ACCEPTING: "The recipe configures a drafter, but its acceptance under "
    "sustained load is under 10 % of the tokens it drafts (figure below): the answers stay "
    "right, the speed-up is mostly lost. Shown; it still ranks.",
    Badge.BEYOND_ROOFLINE: "The peak, single-stream or latency figure rests on a cohort beyond "
    "what the hardware class's memory bandwidth allows this model (its roofline, with a 50 % "
    "tolerance; see Roofline below): not ranked, never a champion, listed for moderators.",
    Badge.WEIGHTS_PENDING: "The weight check against Hugging Face has not finished: unranked "
    "until it does.",
    Badge.WEIGHTS_MISMATCH: "The weight files the pod hashed differ from Hugging Face's at that "
    "commit: self-reported, never ranked.",
    Badge.WEIGHTS_UNVERIFIABLE: "Hugging Face would not show the weights (gated, private, "
    "deleted, or unreachable for 24 h): self-reported until a moderator re-checks.",
    Badge.SELF_REPORTED: "At least one core run is not attested: shown, never ranked, never a "
    "champion.",
    Badge.FRONTIER: "A hosted API, not open weights: shown for comparison, never ranked.",
    Badge.LOCAL_WEIGHTS: "Weights from a local folder with nothing to check against Hugging "
    "Face: self-reported.",
    Badge.UNLABELED_HARDWARE: "The hardware label was empty or unrecognised: the Unlabeled "
    "class never holds a champion.",
}

MARKS = {
    CohortMark.AGGREGATE_INCONSISTENT: (
        "aggregate does not add up",
        "The reported aggregate differs by more than 5 % from the tokens generated divided by "
        "the cell's wall-clock time. Shown, kept out of peaks and champions.",
    ),
    CohortMark.UNVERIFIABLE_AGGREGATE: (
        "aggregate unverifiable",
        "The pod sent no wall-clock time for this cell, so its aggregate cannot be checked "
        "against its tokens. Shown, kept out of peaks and champions.",
    ),
    CohortMark.EXCEEDS_STREAM_CEILING: (
        "faster than its streams",
        "The aggregate is more than 5 % above what the streams could give if none ever waited "
        "(mean per-stream decode speed × concurrency). Shown, kept out of peaks and champions.",
    ),
    CohortMark.TOO_FEW_REQUESTS: (
        "fewer requests than streams",
        "The cell completed fewer requests than its concurrency, so the pool was never full. "
        "Shown, kept out of peaks and champions.",
    ),
    CohortMark.TOO_MANY_ERRORS: (
        "too many errors",
        "More than 10 % of the cell's requests failed. Shown, kept out of peaks and champions.",
    ),
    CohortMark.NOT_FINITE: (
        "not a finite number",
        "A figure derived from the cell (its tokens divided by its wall-clock) overflows: it "
        "cannot be checked. Shown with the reported figure, kept out of peaks and champions.",
    ),
    CohortMark.BEYOND_ROOFLINE: (
        "beyond its roofline",
        "A figure of this cell is beyond what the class's memory bandwidth allows this model "
        "(decode faster than reading its active weights allows, or TTFT/TPOT under one pass "
        "over them), by more than the 50 % tolerance. Shown, kept out of peaks and champions.",
    ),
    CohortMark.QUEUED_BEYOND_MAX_NUM_SEQS: (
        "queued beyond max-num-seqs",
        "This rung asked for more concurrent streams than the recipe's --max-num-seqs lets the "
        "engine run at once, so requests waited in the engine's queue. The figure is real and "
        "counts; it measures queueing as well as decoding.",
    ),
}

TRUST = {
    Trust.ATTESTED: "Signed by an enrolled key, the weights match Hugging Face, and the pod "
    "served those weights itself (or proved the endpoint serves them). Ranks.",
    Trust.SELF_REPORTED: "Signed, but the board could not tie the figures to verified weights "
    "served by the pod. Shown and badged, never ranked.",
    Trust.PENDING: "The weight check has not finished yet.",
}

VERIFICATION = {
    Verification.VERIFIED: "Every weight file's sha256 equals the one Hugging Face lists at "
    "this commit.",
    Verification.MISMATCH: "Files or hashes differ from Hugging Face's at this commit (listed "
    "below).",
    Verification.UNVERIFIABLE: "Hugging Face would not show this repository at this commit "
    "(gated, private, deleted, or unreachable for 24 h).",
    Verification.PENDING: "The check is queued or waiting for Hugging Face.",
    Verification.NOT_APPLICABLE: "Local weights or a hosted API: nothing on Hugging Face to "
    "compare with.",
}

ATTESTATION = {
    AttestationMethod.HF_PULL_SERVED: "The pod downloaded the weights from Hugging Face and "
    "served them itself.",
    AttestationMethod.ENDPOINT_FINGERPRINT: "An existing endpoint, whose answers matched the "
    "fingerprint of these weights.",
    AttestationMethod.ENDPOINT_VERIFIED: "An existing endpoint whose serving-integrity check "
    "verified these weights.",
}


def badge_terms(codes: list[str]) -> list[Term]:
    """The badges of a benchmark, in its order, with their labels and meanings."""
    labels = dict(Badge.choices)
    return [Term(code, labels.get(code, code), BADGES.get(code, "")) for code in codes]


def mark_label(code: str) -> str:
    entry = MARKS.get(code)
    return entry[0] if entry else code


def mark_terms(codes) -> list[Term]:
    """Explanations of the marks and labels present, each once, in the enum's order."""
    present = set(codes)
    return [
        Term(code, label, meaning) for code, (label, meaning) in MARKS.items() if code in present
    ]


DRAFTER = {
    "pinned_ok": "pinned to a commit that exists on Hugging Face",
    "unpinned": "not pinned to a commit",
    "missing": "not found on Hugging Face at the declared commit",
}
