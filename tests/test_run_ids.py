"""Run ids are url-safe, long enough to be unguessable, and never read as a command-line option."""

import re

from submissions.services import new_run_id


def test_run_ids_are_sixteen_letters_and_digits():
    ids = {new_run_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(re.fullmatch(r"[A-Za-z0-9]{16}", run_id) for run_id in ids)
