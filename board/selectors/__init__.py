"""Reads of the board: what pages, the read API and the pod channel's answers show, one module
per kind of thing read: `runs`, `benchmarks`, `catalog` (hardware classes and models),
`recipes`, `crowns` (champions). Callers import the module they read from; this package
itself exports nothing."""

__all__: list[str] = []
