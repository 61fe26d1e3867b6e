"""supervisord as `make prod` and `make run` write it (config/supervision.py): a part's
environment reaches it exactly, whatever its values hold (quotes, `%`, `;` or `#` after a space,
commas: an ACME e-mail, a data path), and a value supervisord's parser would cut short is
refused instead of being cut."""

import json
import subprocess
import sys

import pytest

from config.supervision import ROOT, config_value

AWKWARD = {
    "ACME_EMAIL": 'ops "on call"@example.com',
    "DATA_PATH": "/srv/aeon 50%/a b ; c #d, e",
    "QUOTED_ENDS": '"it\'s"',
    "EXPANDED": "%(ENV_HOME)s",
    "EMPTY": "",
}
# The part writes down what it was given, then stops supervisord (its parent, once run_with
# exec'd).
WRITE_AND_STOP = (
    "import json, os, signal, sys; "
    f"keys = {sorted(AWKWARD)!r}; "
    "open(sys.argv[1], 'w').write(json.dumps({k: os.environ.get(k) for k in keys})); "
    "os.kill(os.getppid(), signal.SIGTERM)"
)
SUPERVISE = (
    "import json, sys; from pathlib import Path; from config.supervision import supervise; "
    "supervise(json.loads(sys.argv[1]), Path(sys.argv[2]), listener=False)"
)


def test_a_parts_environment_reaches_it_exactly(tmp_path):
    seen = tmp_path / "seen.json"
    programs = {
        "part": {
            "command": [sys.executable, "-c", WRITE_AND_STOP, str(seen)],
            "environment": AWKWARD,
            "startsecs": 0,
        }
    }
    done = subprocess.run(
        [sys.executable, "-c", SUPERVISE, json.dumps(programs), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert seen.exists(), done.stdout + done.stderr
    assert json.loads(seen.read_text()) == AWKWARD
    assert "environment=" not in (tmp_path / "supervisord.conf").read_text()


@pytest.mark.parametrize("value", ["/srv/a ; b", "--note=x #y", "two\nlines"])
def test_a_value_supervisord_would_cut_is_refused(value):
    with pytest.raises(ValueError, match="supervisord would cut"):
        config_value("command", value)
    assert config_value("command", "/srv/a;b#c 50%") == "/srv/a;b#c 50%%"
