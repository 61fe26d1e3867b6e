from django.apps import AppConfig


class AnchorConfig(AppConfig):
    """The board's own signing key and what it signs: the trust anchor (docs/trust-anchor.md)."""

    name = "anchor"
    verbose_name = "Trust anchor"
