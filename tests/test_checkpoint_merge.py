"""A final's rows merged with its session's checkpointed rows (first write of a case wins).

The checkpointed rows are stored as their canonical text, made with the signed bytes of the
checkpoint; a final that resends them unchanged is merged from those texts without parsing a
stored row again (a final over 8 MiB has no texts from its signature check: its rows are spelled
one at a time for the comparison). Anything else (a changed row, another order, rows stored in
another spelling) is merged from the parsed stored rows, as before."""

import json

import pytest

from evidence.signing import canonical_text
from submissions.ingest.evidence import HELD_WHILE_WRITTEN_BYTES
from submissions.services import merge_rows
from tests.podchannel import MODEL, TEXT_SUITE, read_run_results, small_content

MIB = 1024 * 1024

ROWS = [
    {"case_id": f"c{i}", "status": "ok", "score": i / 4, "raw_output": f"out, {i}", "tier": 1}
    for i in range(4)
]
TEXTS = [canonical_text(row) for row in ROWS]


def merge(stored: list[str], final_rows: list[dict], texts: list[str] | None = None):
    return merge_rows(stored, final_rows, texts)


def test_a_final_resending_its_checkpointed_rows_unchanged_is_merged_from_the_texts():
    rows, clean = merge(TEXTS[:2], ROWS, TEXTS)
    assert rows is ROWS  # the final's own rows: nothing stored was parsed again
    assert clean


def test_a_changed_checkpointed_row_keeps_its_first_write():
    final_rows = [ROWS[0], ROWS[1] | {"score": 1.0, "raw_output": "rewritten"}, *ROWS[2:]]
    texts = [canonical_text(row) for row in final_rows]
    rows, clean = merge(TEXTS[:2], final_rows, texts)
    assert rows == ROWS  # case c1 as checkpointed
    assert clean


def test_rows_resent_in_another_order_are_merged_checkpointed_first():
    final_rows = [ROWS[1], ROWS[0], *ROWS[2:]]
    texts = [canonical_text(row) for row in final_rows]
    rows, clean = merge(TEXTS[:2], final_rows, texts)
    assert rows == ROWS and rows is not final_rows


def test_rows_stored_in_another_spelling_are_parsed_and_compared():
    stored = [json.dumps(row) for row in ROWS[:2]]  # as rows were stored before
    rows, clean = merge(stored, ROWS, TEXTS)
    assert rows == ROWS and rows is not ROWS
    assert clean  # resent unchanged: the final's own text scan read them


def test_a_final_whose_texts_are_not_known_makes_them_row_by_row():
    """A big body's rows get no text with its signed bytes: the rows a merge compares are
    spelled then, and resent unchanged they are still the final's own."""
    rows, clean = merge(TEXTS[:2], ROWS)
    assert rows is ROWS and clean
    changed = [ROWS[0], ROWS[1] | {"score": 1.0}, *ROWS[2:]]
    rows, clean = merge(TEXTS[:2], changed)
    assert rows == ROWS and clean


def test_more_checkpointed_rows_than_the_final_sends_are_parsed_and_kept():
    rows, clean = merge(TEXTS, ROWS[:2], TEXTS[:2])
    assert rows == ROWS and clean


def test_a_session_without_checkpointed_rows_takes_the_final_rows():
    rows, clean = merge([], ROWS, TEXTS)
    assert rows is ROWS and clean


@pytest.mark.django_db(transaction=True)
def test_a_final_over_8_mib_is_merged_with_its_checkpoints_rows(pod):
    """A big final's rows get no texts from its signature check: the merge spells each one it
    compares. Resent unchanged, the final's rows are kept; a changed checkpointed row keeps its
    first write."""
    big = "x" * (HELD_WHILE_WRITTEN_BYTES + MIB)
    for changed in (False, True):
        session = pod.open_run(MODEL, TEXT_SUITE, "text")
        assert pod.submit(session, small_content(2), final=False).status == 200
        content = small_content(3, job_sig=f"{int(changed) + 1:024x}")
        content["results"][2]["raw_output"] = big
        if changed:
            content["results"][0]["raw_output"] = "rewritten"
        answer = pod.submit(session, content)
        assert answer.status == 200 and answer.body["n_results"] == 3, answer.body
        outputs = {
            row["case_id"]: row["raw_output"] for row in read_run_results(pod, session.run_id)
        }
        assert outputs["v4.math.easy.01"] == small_content(2)["results"][0]["raw_output"]
        assert len(outputs["v4.math.easy.03"]) == len(big)
