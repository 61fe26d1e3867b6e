"""The board's signing key: made only by its command, never overwritten, loaded with a clear
error when missing (docs/trust-anchor.md §The board key)."""

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command

from anchor.keys import BoardKeyError, load_board_key
from evidence.signing import canonical_json, verify_signature

ROOT = Path(__file__).resolve().parent.parent


def create(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("create_board_key", *args, stdout=out)
    return out.getvalue()


def test_the_command_writes_a_pkcs8_ed25519_key_and_prints_its_public_key(tmp_path, settings):
    path = tmp_path / "keys" / "board.pem"
    output = create("--path", str(path))
    pem = path.read_bytes()
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS8, unencrypted
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, Ed25519PrivateKey)
    assert path.stat().st_mode & 0o077 == 0  # readable by its owner only
    public = base64.b64encode(
        key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    ).decode()
    assert public in output

    settings.AEON_BOARD_KEY_FILE = str(path)
    board_key = load_board_key()
    assert board_key.public_key_b64 == public
    message = canonical_json({"hello": "board"})
    assert verify_signature(public, board_key.sign(message), message)


def test_the_command_never_overwrites_a_key(tmp_path, settings):
    path = tmp_path / "board.pem"
    first = create("--path", str(path))
    pem = path.read_bytes()
    with pytest.raises(CommandError, match="already exists"):
        create("--path", str(path))
    assert path.read_bytes() == pem
    # --if-missing keeps the existing key and says which it is
    settings.AEON_BOARD_KEY_FILE = str(path)
    kept = create("--if-missing")
    assert "kept" in kept
    assert first.splitlines()[-1] == kept.splitlines()[-1]
    assert path.read_bytes() == pem


def test_the_loader_says_what_is_missing_and_how_to_make_it(tmp_path, settings):
    settings.AEON_BOARD_KEY_FILE = ""
    with pytest.raises(BoardKeyError, match="AEON_BOARD_KEY_FILE"):
        load_board_key()
    with pytest.raises(CommandError, match="AEON_BOARD_KEY_FILE"):
        create()

    settings.AEON_BOARD_KEY_FILE = str(tmp_path / "absent.pem")
    with pytest.raises(BoardKeyError, match="create_board_key --path .*absent.pem"):
        load_board_key()

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    settings.AEON_BOARD_KEY_FILE = str(garbage)
    with pytest.raises(BoardKeyError, match="not an unencrypted PEM private key"):
        load_board_key()


def board_key_setting(env: dict) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AEON_") and k != "SECRET_KEY"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(repr(settings.AEON_BOARD_KEY_FILE))",
        ],
        cwd=ROOT,
        env=clean | {"DJANGO_SETTINGS_MODULE": "config.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_only_development_has_a_default_key_file(tmp_path):
    development = board_key_setting({"AEON_ENV": "development", "AEON_DATA_DIR": str(tmp_path)})
    assert development == repr(str(tmp_path / "board-key.pem"))
    production = board_key_setting(
        {"AEON_ENV": "production", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "board.example"}
    )
    assert production == "''"
    configured = board_key_setting(
        {
            "AEON_ENV": "production",
            "SECRET_KEY": "x" * 50,
            "ALLOWED_HOSTS": "board.example",
            "AEON_BOARD_KEY_FILE": "/srv/keys/board.pem",
        }
    )
    assert configured == repr("/srv/keys/board.pem")


def test_development_makes_its_own_default_key_on_demand_and_nothing_else_does(tmp_path, settings):
    data_dir = tmp_path / "data"
    default = data_dir / "board-key.pem"
    settings.DATA_DIR = data_dir
    settings.AEON_BOARD_KEY_FILE = str(default)

    settings.DEVELOPMENT = False  # production: the same path is never made silently
    with pytest.raises(BoardKeyError, match="does not exist"):
        load_board_key()
    assert not default.exists()

    settings.DEVELOPMENT = True
    made = load_board_key()
    assert default.exists()
    assert load_board_key().public_key_b64 == made.public_key_b64  # made once, then kept

    settings.AEON_BOARD_KEY_FILE = str(tmp_path / "elsewhere.pem")  # a configured path: never
    with pytest.raises(BoardKeyError):
        load_board_key()
