"""The read API's shapes (DRF serializers), one module per answer: `runs`, `benchmarks`,
`recipes`, `champions`. Callers import the module they need; nothing is re-exported here."""

__all__: list[str] = []
