"""A class's recompute does not hold up the commits of that class (board/read_models.py
`locked_classes`): its row lock (FOR NO KEY UPDATE) orders recomputes of the class, while a
final inserting a benchmark of the class, whose foreign key takes the row's KEY SHARE lock,
commits meanwhile. Under FOR UPDATE such a final waited for the recompute's commit."""

import threading
import time

from django.db import transaction

from board.models import Run
from board.read_models import locked_classes
from tests.inprocess import pod_client
from tests.podchannel import LIVE_DB, MODEL, TEXT_SUITE, small_content

pytestmark = [LIVE_DB]


def test_a_final_of_a_class_commits_while_its_recompute_holds_the_class(postgres, board_url):
    first = pod_client(board_url, timeout=60)
    first.enroll()
    answer = first.submit(first.open_run(MODEL, TEXT_SUITE, "text"), small_content(3))
    assert answer.status == 200, answer.body
    hardware_class_id = Run.objects.get(run_id=answer.body["run_id"]).benchmark.hardware_class_id

    second = pod_client(board_url, timeout=60)  # a fresh key: its final inserts a benchmark
    second.enroll()
    session = second.open_run(MODEL, TEXT_SUITE, "text")
    answers = []
    sent = threading.Thread(
        target=lambda: answers.append(second.submit(session, small_content(3))), daemon=True
    )
    with transaction.atomic():
        assert [c.pk for c in locked_classes([hardware_class_id])] == [hardware_class_id]
        sent.start()
        # The lock is held all the while. (The answer itself may wait: the tests' Celery is
        # eager, so the final's own recompute runs before its answer and queues behind this
        # lock, as recomputes of one class do; its commit does not wait.)
        committed_meanwhile = False
        deadline = time.monotonic() + 20
        while not committed_meanwhile and time.monotonic() < deadline:
            committed_meanwhile = Run.objects.filter(run_id=session.run_id).exists()
            time.sleep(0.1)
    sent.join(timeout=60)
    assert committed_meanwhile, "the final's commit waited for the recompute's lock"
    assert answers[0].status == 200, answers[0].body
    second_run = Run.objects.get(run_id=session.run_id)
    assert second_run.benchmark.hardware_class_id == hardware_class_id
    assert second_run.benchmark_id != Run.objects.get(run_id=answer.body["run_id"]).benchmark_id
