"""Reads of the board: what pages, the read API and the pod channel's answers show, one module
per kind of thing read: `runs`, `benchmarks`, `catalog` (hardware classes and models),
`recipes`, `crowns` (champions). Callers import the module they read from.

The two names below are re-exported for `submissions/ingest/answers.py`, which reads them as
`board.selectors.…`; they leave once it imports `board.selectors.runs`."""

from board.selectors.runs import commit_summary, run_commit_summary

__all__ = ["commit_summary", "run_commit_summary"]
