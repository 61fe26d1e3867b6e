"""Bounded memory per request (issue 20 point 2; docs/protocol.md §Decoded size): a body is
refused before it is decoded when what decoding builds would exceed the body (1×) + the
allowance, by counts made at C speed; the counts bound what the decoder really builds, every
bundle the demo and the fixtures send still passes, and the worker's resident memory grows by at
most 2.5× the body for a shape refused, and 4× for the costliest body decoded (see the RSS
test)."""

import json
import tracemalloc
from pathlib import Path

import pytest

from demo.bundles import job_bundles
from demo.catalogue import DEMO_MODELS
from submissions.jsonbody import (
    DECODED_ALLOWANCE,
    DECODED_FACTOR,
    MAX_STRINGS_READ,
    SURROGATE_ESCAPE,
    WORST_BYTES_PER_BYTE,
    DecodedTooLarge,
    MalformedJson,
    check_decoded_size,
    decoded_limit,
    estimate_decoded,
    parse_json,
)
from tests.podchannel import MODEL, TEXT_SUITE, raw_request, results_path
from tests.processes import children_of, memory_kib
from tests.test_token_before_body import gunicorn_board  # noqa: F401

MIB = 1024 * 1024
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def array_of(item: bytes, size: int) -> bytes:
    return b"[" + b",".join([item] * (size // (len(item) + 1))) + b"]"


# The hostile shapes of issue 20 point 2, each made about `size` bytes long by its maker.
SHAPES = {
    "objects": lambda size: array_of(b"{}", size),
    "arrays": lambda size: array_of(b"[]", size),
    "short strings": lambda size: array_of(b'"ab"', size),
    "floats": lambda size: array_of(b"1.5", size),
    "integers": lambda size: array_of(b"1000", size),
    "objects with keys": lambda size: array_of(b'{"a": 1.5, "bb": 2.5}', size),
    "many keys": lambda size: b"{" + b",".join(b'"k%08d":0' % i for i in range(size // 14)) + b"}",
    "deep nesting": lambda size: b"[" * (size // 2) + b"]" * (size // 2),
    "escaped quotes": lambda size: array_of(b'"a\\"b"', size),
    "wide strings": lambda size: array_of(b'"\\u0100abcdefghij"', size),
    "one long string": lambda size: b'["' + b"a" * size + b'"]',
    "one long wide string": lambda size: b'["\\u0100' + b"a" * size + b'"]',
    "one long astral string": lambda size: b'["\\ud83d\\ude00' + b"a" * size + b'"]',
}


def shapes(size: int) -> dict[str, bytes]:
    """Every hostile shape, each about `size` bytes."""
    return {name: make(size) for name, make in SHAPES.items()}


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_estimate_bounds_what_the_decoder_builds(name):
    body = SHAPES[name](2 * MIB)
    estimate = estimate_decoded(body, surrogates=SURROGATE_ESCAPE.search(body) is not None)
    tracemalloc.start()
    try:
        value = parse_json(body, bounded=False)
    except Exception:  # deep nesting: refused by the decoder itself, nothing kept
        value = None
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del value
    built = peak - len(body)  # the decoded text is not part of the tree
    assert estimate.bytes >= built, (name, estimate, built)


CODE = 'def f(x):\n    return {"a": [x, 2], "b": {"c": (x, x)}}, [x, {}]\n'
# Structural bytes inside strings, which build nothing (model output that is code or prose):
# bodies over the quick estimate's limit, of at most MAX_STRINGS_READ strings, counted again.
IN_STRINGS = {
    "code in strings": lambda size: array_of(json.dumps(CODE * 4).encode(), size),
    "one string of structure": lambda size: b'["' + b"{[,:" * (size // 4) + b'"]',
    # Each string holds braces and ends in an escaped backslash: the quote after it closes the
    # string, and the object after that is real (read as inside the string, it would be left
    # out, and the estimate would fall short of the tree).
    "escaped backslashes before objects": lambda size: array_of(
        b'"' + b"x{" * 50 + b'\\\\",{"k":[1,{}]}', size
    ),
}


@pytest.mark.parametrize("name", list(IN_STRINGS))
def test_structure_inside_strings_is_left_out_and_the_estimate_still_bounds_the_tree(name):
    body = IN_STRINGS[name](8 * MIB)
    estimate = estimate_decoded(body, surrogates=False)
    assert estimate.strings <= MAX_STRINGS_READ
    tracemalloc.start()
    value = parse_json(body, bounded=False)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if name == "escaped backslashes before objects":
        assert value[1] == {"k": [1, {}]} and value[0].endswith("x{\\")
    # Counted again, the objects and arrays are exactly the decoded tree's: none of the strings'
    # braces and brackets, every real one (a string read past its end would hide some).
    assert (
        (estimate.objects, estimate.arrays)
        == containers(value)
        != (
            body.count(b"{"),
            body.count(b"["),
        )
    )
    del value
    assert estimate.bytes >= peak - len(body), (name, estimate, peak - len(body))


def containers(value) -> tuple[int, int]:
    """The objects and the arrays of a decoded tree."""
    objects = arrays = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            objects += 1
            pending.extend(item.values())
        elif isinstance(item, list):
            arrays += 1
            pending.extend(item)
    return objects, arrays


def test_a_final_of_code_outputs_is_decoded_not_refused():
    """Coding cases answer in code, full of braces, brackets, commas and colons: counted as
    structure, 500 such outputs (a 1.5 MiB final) were refused as decoding to 9.5 MiB."""
    rows = [
        {"case_id": f"v4.coding.{i}", "raw_output": CODE * 40, "evidence": {}, "speed": {}}
        for i in range(2000)
    ]
    body = json.dumps({"bundle": {"results": rows}, "signature": "A" * 88}).encode()
    assert len(body) > 5 * MIB
    check_decoded_size(body, surrogates=False)
    parse_json(body)


@pytest.mark.parametrize("name", list(SHAPES))
def test_hostile_shapes_past_the_budget_are_refused_before_decoding(name):
    body = SHAPES[name](24 * MIB)  # only this one: all of them take 2.4 s to make
    if name == "one long string":
        check_decoded_size(body, surrogates=False)  # about 1× the body: within
        return
    with pytest.raises(DecodedTooLarge, match="would decode to about"):
        parse_json(body)


def test_small_bodies_are_not_counted_and_build_less_than_the_allowance():
    """A body below the allowance's reach (WORST_BYTES_PER_BYTE) is decoded without counting,
    and whatever its shape builds less than the allowance."""
    for name, body in shapes(DECODED_ALLOWANCE // WORST_BYTES_PER_BYTE - 64).items():
        tracemalloc.start()
        try:
            value = parse_json(body)
        except MalformedJson:  # deep nesting
            value = None
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del value
        assert peak - len(body) < DECODED_ALLOWANCE, (name, peak)
        assert decoded_limit(len(body)) > DECODED_ALLOWANCE


def test_every_demo_and_fixture_bundle_passes():
    bodies = [
        json.dumps({"bundle": bundle, "signature": "A" * 88}).encode()
        for model in DEMO_MODELS
        for _board, _suite, _name, bundle in job_bundles(model, started="2026-03-01T09:00:00Z")
    ]
    bodies += [path.read_bytes() for path in FIXTURES.rglob("*.json")]
    assert len(bodies) > 20
    for body in bodies:
        parse_json(body)


def test_the_bench_64_mib_final_passes_and_only_its_structure_is_counted():
    from benchtools.management.commands.bench_ingest import Command, big_text_bundle

    bundle = big_text_bundle(Command._text_bundle(0, False))
    body = json.dumps({"bundle": bundle, "signature": "A" * 88}).encode()
    check_decoded_size(body, surrogates=False)
    estimate = estimate_decoded(body, surrogates=False)
    assert estimate.bytes < 1.1 * len(body)


def test_a_refusal_is_413_size_exceeded_with_its_reason(pod, db):
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    body = json.dumps(
        {"bundle": {"run_id": session.run_id, "results": [{}] * (2 * MIB)}, "signature": "A"}
    ).encode()
    answer = raw_request(
        pod.base_url,
        "POST",
        results_path(session.run_id),
        body,
        {
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "X-Aeon-Run-Token": session.run_token,
        },
    )
    assert answer.status == 413
    assert answer.body["reason"] == "SIZE_EXCEEDED"
    assert "would decode to about" in answer.body["note"]


def _post(url: str, run_id: str, token: str, body: bytes):
    return raw_request(
        url,
        "POST",
        results_path(run_id),
        body,
        {
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "X-Aeon-Run-Token": token,
        },
    )


def near_the_limit(size: int) -> bytes:
    """A long string and as many floats as the budget lets through: the costliest body that is
    decoded."""
    # 16 + 32 bytes a float (the whole body is counted as string bytes), a little below the limit
    floats = int(((DECODED_FACTOR - 1) * size + DECODED_ALLOWANCE) * 0.97) // 48
    assert floats > 100_000
    return b'["' + b"a" * (size - 4 * floats) + b'", ' + b",".join([b"1.5"] * floats) + b"]"


def test_worker_memory_grows_at_most_4x_the_body_for_any_shape(gunicorn_board):  # noqa: F811
    from demo.podclient import PodClient

    url, master = gunicorn_board
    pod = PodClient(url, timeout=120)
    size = 24 * MIB
    # The costliest decoded body first, on a worker that has held nothing of this size yet.
    cases = {"near the limit": near_the_limit(size)} | shapes(size)
    grown = {}
    session = pod.open_run(MODEL, TEXT_SUITE, "text")
    for name, results in cases.items():
        body = (
            b'{"bundle": {"run_id": "%s", "run_nonce": "%s", "final": false, "results": '
            % (session.run_id.encode(), session.run_nonce.encode())
            + results
            + b'}, "signature": "AAAA"}'
        )
        workers = children_of(master)
        before = {pid: memory_kib(pid)["VmRSS"] for pid in workers}
        for pid in workers:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        answer = _post(url, session.run_id, session.run_token, body)
        assert answer.status in (400, 413), (name, answer.status, answer.payload[:300])
        if answer.status == 400:  # decoded, and quarantined for its signature: the session is shut
            session = pod.open_run(MODEL, TEXT_SUITE, "text")
        grown[name] = max(memory_kib(pid)["VmHWM"] - before[pid] for pid in workers) * 1024
    print({name: round(growth / size, 2) for name, growth in grown.items()})
    decoded = ("near the limit", "one long string")
    for name, growth in grown.items():
        if name not in decoded:  # refused before decoding: the body and the count's copy
            assert growth <= 2.5 * size, (name, growth / size)
    # Decoded bodies (within the budget) reach the signature check, which spells a big body's
    # canonical bytes a piece at a time into one buffer and makes no row texts beside them
    # (submissions/ingest/results.py `_signature_check`, signing.py `canonical_json_in_pieces`):
    # 3.45-3.48x measured on a fresh worker (4.27x when the bytes were the encoder's chunks, their
    # joined text and its encoding, and each row's text a second copy of the row).
    for name in decoded:
        assert grown[name] <= 4 * size, (name, grown[name] / size)
