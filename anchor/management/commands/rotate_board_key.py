"""Rotate the board's signing key (docs/trust-anchor.md §Rotating the key): a new key at a new
path, and the current key published as retired from now on. Never overwrites a key."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from anchor.keyring import record_rotation, retired_keys_path
from anchor.keys import BoardKeyError, create_key_file, load_board_key


class Command(BaseCommand):
    help = (
        "Make a new board key at --path and record the current one (AEON_BOARD_KEY_FILE) as "
        "retired, so that what it signed keeps verifying; then point AEON_BOARD_KEY_FILE at "
        "the new key and restart."
    )

    def add_arguments(self, parser):
        parser.add_argument("--path", required=True, help="where to write the new key")

    def handle(self, *args, path: str, **options):
        target = Path(path)
        try:
            current = load_board_key()
        except BoardKeyError as exc:
            raise CommandError(f"the current key must load to be retired: {exc}") from None
        if target.exists():
            raise CommandError(f"{target} already exists: a board key is never overwritten")
        keyring = retired_keys_path(target)
        new = create_key_file(target)
        try:
            record_rotation(
                old_public_key=current.public_key_b64,
                new_public_key=new.public_key_b64,
                at=timezone.now(),
                to=keyring,
            )
        except (OSError, BoardKeyError) as exc:
            target.unlink(missing_ok=True)  # no new key without its predecessor published
            raise CommandError(
                f"the retired keys file {keyring} cannot be written: {exc}"
            ) from None
        self.stdout.write(f"board key created: {target}")
        self.stdout.write(f"public key (ed25519, base64): {new.public_key_b64}")
        self.stdout.write(f"retired: {current.public_key_b64} (listed in {keyring})")
        self.stdout.write(f"now set AEON_BOARD_KEY_FILE={target} and restart every process")
