"""Create the board's signing key (docs/trust-anchor.md §The board key). Never overwrites."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from anchor.keys import BoardKeyError, configured_key_path, create_key_file, load_board_key


class Command(BaseCommand):
    help = (
        "Create the board's ed25519 signing key (PEM, PKCS8) at --path or AEON_BOARD_KEY_FILE "
        "and print its public key. Refuses to overwrite an existing key."
    )

    def add_arguments(self, parser):
        parser.add_argument("--path", help="where to write the key (default: AEON_BOARD_KEY_FILE)")
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="when the key already exists, keep it, print its public key and succeed",
        )

    def handle(self, *args, path: str | None, if_missing: bool, **options):
        try:
            target = Path(path) if path else configured_key_path()
        except BoardKeyError as exc:
            raise CommandError(str(exc)) from None
        if target.exists():
            if not if_missing:
                raise CommandError(
                    f"{target} already exists: a board key is never overwritten "
                    "(rotation: docs/trust-anchor.md §Rotating the key)"
                )
            key = _existing(target)
            self.stdout.write(f"board key kept: {target}")
        else:
            try:
                key = create_key_file(target)
            except FileExistsError:  # made by a concurrent start
                key = _existing(target)
            self.stdout.write(f"board key created: {target}")
        self.stdout.write(f"public key (ed25519, base64): {key.public_key_b64}")


def _existing(target: Path):
    try:
        return load_board_key(target)
    except BoardKeyError as exc:
        raise CommandError(str(exc)) from None
