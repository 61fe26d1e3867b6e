"""A final's commit is one transaction read top to bottom (submissions/ingest/final.py
`commit_final`): two finals committed inside one outer transaction (as a test case, or any
caller holding one, runs them) both commit, with their rows pointing at their runs; a final
whose session changed since it was admitted (a checkpoint landed) is merged with what the
session holds under its lock; and each commit moves the cache generation once and queues one
recompute, however many writes of the transaction say so."""

import json

import pytest
from django.db import connection
from django.test import Client

from board import services as board_services
from board.models import Result, Run
from demo.podclient import PodClient
from tests.podchannel import results_path, small_content
from tests.test_ingest_complexity import open_session

pytestmark = [pytest.mark.django_db]


def post(client: Client, pod: PodClient, session, content: dict, *, final: bool):
    return client.post(
        results_path(session.run_id),
        json.dumps(pod.signed_results(session, content, final=final)),
        "application/json",
        HTTP_X_AEON_RUN_TOKEN=session.run_token,
    )


def test_two_finals_in_one_outer_transaction_both_commit_with_their_rows():
    assert connection.in_atomic_block  # the test's own transaction holds both commits
    client = Client()
    for rows in (3, 5):
        pod = PodClient("http://testserver")
        session = open_session(client, pod)
        answer = post(client, pod, session, small_content(rows), final=True)
        assert answer.status_code == 200, answer.json()
        run = Run.objects.get(run_id=session.run_id)
        assert Result.objects.filter(run=run).count() == rows
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # every deferred check passes at the end, too
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_a_final_after_checkpoints_holds_every_case_once_in_checkpoint_order():
    client = Client()
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    content = small_content(6)
    first = content | {"results": content["results"][:2]}
    second = content | {"results": content["results"][1:4]}
    for part in (first, second):
        assert post(client, pod, session, part, final=False).status_code == 200
    # The final sends its rows in another order, one of them changed: first write wins.
    changed = content["results"][::-1]
    changed[4] = dict(changed[4], score=0.0)  # case 1
    answer = post(client, pod, session, content | {"results": changed}, final=True)
    assert answer.status_code == 200, answer.json()
    stored = list(
        Result.objects.filter(run__run_id=session.run_id)
        .order_by("position")
        .values_list("case_id", "score")
    )
    cases = [row["case_id"] for row in content["results"]]
    assert [case for case, _ in stored] == cases[:4] + [cases[5], cases[4]]
    assert stored[1][1] == content["results"][1].get("score")


def test_a_final_queues_one_generation_move_and_one_recompute(django_capture_on_commit_callbacks):
    client = Client()
    pod = PodClient("http://testserver")
    session = open_session(client, pod)
    with django_capture_on_commit_callbacks(execute=False) as hooks:
        answer = post(client, pod, session, small_content(4), final=True)
        assert answer.status_code == 200, answer.json()
        # A second write of the same transaction saying so adds nothing.
        run = Run.objects.select_related("benchmark").get(run_id=session.run_id)
        board_services.read_models_changed(
            hardware_class_id=run.benchmark.hardware_class_id, model_id=run.benchmark.model_id
        )
    changes = [hook.__self__ for hook in hooks if isinstance(getattr(hook, "__self__", None), set)]
    assert changes == [{(run.benchmark.hardware_class_id, run.benchmark.model_id)}]
