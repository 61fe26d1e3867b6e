"""What the tests that start processes share: a free loopback port, the process tree read
from /proc (to show that stopping a server leaves nothing running; defined once, with the
benchmarks' own readings of /proc, in benchtools/procfs.py), and a script run in a fresh
interpreter (for what happens only once per process, such as a first import)."""

import os
import subprocess
import sys
from pathlib import Path

from benchtools.procfs import alive, children_of, descendants, free_port, memory_kib, reset_peak

__all__ = [
    "alive",
    "children_of",
    "descendants",
    "free_port",
    "fresh_interpreter",
    "memory_kib",
    "reset_peak",
    "spawn",
]

ROOT = Path(__file__).resolve().parent.parent


def spawn(command: list[str], env: dict) -> subprocess.Popen:
    """A server or worker a test starts from the project's folder, its output (stderr with it)
    read as text from `stdout`."""
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def fresh_interpreter(script: str, *args: str) -> str:
    """`script` run by a new Python with the development settings; its output's last line."""
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.development", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]
