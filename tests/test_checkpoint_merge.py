"""A final's rows merged with its session's checkpointed rows (first write of a case wins).

The checkpointed rows are stored as their canonical text, made with the signed bytes of the
checkpoint; a final that resends them unchanged is merged from those texts without parsing a
stored row again. Anything else (a changed row, another order, rows stored in another spelling)
is merged from the parsed stored rows, as before."""

import json

from evidence.signing import canonical_text
from submissions.services import merge_rows

ROWS = [
    {"case_id": f"c{i}", "status": "ok", "score": i / 4, "raw_output": f"out, {i}", "tier": 1}
    for i in range(4)
]
TEXTS = [canonical_text(row) for row in ROWS]


def merge(stored: list[str], final_rows: list[dict], texts: list[str] | None = None):
    return merge_rows(", ".join(stored) or None, final_rows, texts)


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


def test_a_final_whose_texts_are_not_known_is_merged_from_the_parsed_rows():
    rows, clean = merge(TEXTS[:2], ROWS)
    assert rows == ROWS and rows is not ROWS


def test_a_session_without_checkpointed_rows_takes_the_final_rows():
    rows, clean = merge([], ROWS, TEXTS)
    assert rows is ROWS and clean
