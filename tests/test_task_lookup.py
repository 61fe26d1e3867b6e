"""The recompute task is found by name in a fresh web process however many threads commit at
once (board/read_models.py `_recompute_task`): each case runs in an interpreter of its own, in
which no task module has been imported yet."""

from tests.processes import fresh_interpreter

FRESH_PROCESS = """
import os, sys, threading
import django
django.setup()
import celery.loaders.base
from board.read_models import _recompute_task
assert "board.tasks" not in sys.modules
if sys.argv[1] == "inside":
    # What another thread's first commit leaves while Celery's autodiscovery imports the task
    # modules: its guard flag set (celery/loaders/base.py), the modules not yet imported.
    celery.loaders.base._RACE_PROTECTION = True
    print(_recompute_task().name)
else:
    threads = int(sys.argv[2])
    start, errors = threading.Barrier(threads), []
    def first_commit():
        start.wait()
        try:
            _recompute_task()
        except Exception as exc:
            errors.append(type(exc).__name__)
    running = [threading.Thread(target=first_commit) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    print(errors)
"""


def test_the_task_is_found_while_another_thread_is_inside_celerys_autodiscovery():
    assert fresh_interpreter(FRESH_PROCESS, "inside") == "board.tasks.recompute_read_models"


def test_thirty_two_first_commits_at_once_all_find_the_task():
    assert fresh_interpreter(FRESH_PROCESS, "threads", "32") == "[]"
