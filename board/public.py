"""What a public surface shows of a stored result: one place for the API and the pages."""

from board.models import Result, Run
from recipes.scrub import public_output, public_timeline, public_value

SUSTAINED_TIMELINE = "perf.sustained.timeline"


def public_evidence(result: Result):
    """A case's evidence with home directories masked and the sustained timeline's clock made
    relative (docs/recipes.md, "Scrubbing")."""
    evidence = public_output(result.evidence)
    return public_timeline(evidence) if result.case_id == SUSTAINED_TIMELINE else evidence


def public_perf(run: Run) -> dict:
    """A perf run's summary; its harness and sustained rows scrubbed like any pod value."""
    perf = dict(run.perf or {})
    other = perf.get("other")
    if isinstance(other, dict):
        perf["other"] = {
            case_id: public_timeline(evidence) if case_id == SUSTAINED_TIMELINE else evidence
            for case_id, evidence in public_value(other).items()
        }
    return perf
