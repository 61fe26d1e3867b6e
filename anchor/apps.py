from django.apps import AppConfig


class AnchorConfig(AppConfig):
    """The board's own signing key and what it signs: the trust anchor (docs/trust-anchor.md)."""

    name = "anchor"
    verbose_name = "Trust anchor"

    def ready(self) -> None:
        from anchor import receivers

        # The pod channel's commits, verdicts, revocations and rebuilds are signed here
        # (submissions/signals.py): submissions never imports the anchor.
        receivers.connect()
