"""The read API's shapes (DRF serializers), one module per answer: `runs`, `benchmarks`,
`recipes` (the champion answers are pydantic models: board/champion_shapes.py). Callers import
the module they need; nothing is re-exported here."""

__all__: list[str] = []
