"""The published vectors (tests/fixtures/vectors.json) verify with our canonical JSON and signatures.

No Django and no database: `evidence.signing` is the exact byte contract of docs/protocol.md §Canonical JSON and signatures.
"""

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from evidence.signing import (
    canonical_json,
    canonical_json_in_pieces,
    canonical_json_with_items,
    canonical_text,
    decode_public_key,
    json_encoder,
    key_fingerprint,
    verify_signature,
)

VECTORS_PATH = Path(__file__).resolve().parent / "fixtures" / "vectors.json"
VECTORS = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
PUBLIC_KEY = VECTORS["public_key"]


def flip_byte(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def flip_signature_byte(signature_b64: str, index: int) -> str:
    raw = base64.b64decode(signature_b64)
    return base64.b64encode(flip_byte(raw, index)).decode("ascii")


def test_the_public_key_is_the_one_of_the_published_seed():
    seed = bytes.fromhex(VECTORS["private_seed_hex"])
    assert seed == bytes(range(32))
    raw = (
        Ed25519PrivateKey.from_private_bytes(seed)
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
    )
    assert base64.b64encode(raw).decode("ascii") == PUBLIC_KEY
    assert decode_public_key(PUBLIC_KEY) == raw


def test_the_enroll_signature_verifies_over_the_challenge_bytes():
    challenge = VECTORS["enroll"]["challenge"]
    signature = VECTORS["enroll"]["signature"]
    assert verify_signature(PUBLIC_KEY, signature, challenge.encode("utf-8"))
    # The challenge is signed as text, not as JSON.
    assert not verify_signature(PUBLIC_KEY, signature, json.dumps(challenge).encode("utf-8"))


@pytest.mark.parametrize("vector", ["open_run", "bundle"])
def test_canonical_json_equals_the_published_bytes(vector):
    case = VECTORS[vector]
    assert canonical_json(case["object"]) == case["canonical"].encode("utf-8")


def test_canonical_json_keeps_floats_escapes_non_ascii_and_allows_nan():
    assert canonical_json({"b": 1.0, "a": "É"}) == b'{"a":"\\u00c9","b":1.0}'
    assert canonical_json({"s": float("nan")}) == b'{"s":NaN}'


@pytest.mark.parametrize(
    "value",
    [
        {"b": [1, -0.0, 1e16, 5e-324, 10**40, float("inf"), -float("inf")], "a": None},
        {"s": '\x00\x1f\u2028É😀"\\/', "t": True, "f": False, "e": [], "o": {}},
        "top-level text",
        [[[[{"deep": [1.25]}]]]],
        {2: "int keys", 1: "sorted as numbers"},
    ],
)
def test_canonical_text_spells_as_json_dumps_spells(value):
    # The reusable encoder must spell exactly what the pods' json.dumps call spells.
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert canonical_text(value) == expected
    assert canonical_json(value) == expected.encode("utf-8")


SPELLINGS = [
    ({"sort_keys": False, "compact": False, "allow_nan": False}, {"allow_nan": False}),
    ({"sort_keys": True, "compact": False, "default": str}, {"sort_keys": True, "default": str}),
]


@pytest.mark.parametrize(("options", "dumps_options"), SPELLINGS)
@pytest.mark.parametrize(
    "value",
    [
        {"b": [1, -0.0, 1e16, 5e-324, 10**40], "a": None, "c": {"y": 1, "x": [True, False]}},
        {"s": '\x00\x1f\u2028É😀"\\/', "e": [], "o": {}},
        "top-level text",
        [[[[{"deep": [1.25]}]]]],
    ],
)
def test_a_made_once_encoder_spells_as_json_dumps_with_its_options(options, dumps_options, value):
    # board/result_rows.py and board/grading.py store what json.dumps spelled before them.
    assert json_encoder(**options)(value) == json.dumps(value, **dumps_options)


def test_a_strict_encoder_refuses_nan_as_json_dumps_does():
    strict = json_encoder(sort_keys=False, compact=False, allow_nan=False)
    for value in (float("nan"), {"a": [float("inf")]}):
        with pytest.raises(ValueError, match="Out of range float"):
            strict(value)
    lenient = json_encoder(sort_keys=True, compact=False, default=str)
    assert (
        lenient({"a": float("nan"), "b": {1, 2}.__class__}) == '{"a": NaN, "b": "<class \'set\'>"}'
    )


def test_canonical_text_refuses_what_json_cannot_spell():
    with pytest.raises(TypeError, match="not JSON serializable"):
        canonical_text({"a": object()})
    with pytest.raises(TypeError):  # keys of mixed kinds do not sort
        canonical_text({1: "a", "b": 2})


EXAMPLES = Path(__file__).resolve().parent / "fixtures" / "examples"
SPLICED = [
    VECTORS["bundle"]["object"],
    *(json.loads((EXAMPLES / name).read_text()) for name in ("text-final.json", "perf-final.json")),
    {"results": [{"b": 1.5, "a": [float("nan"), "É\x00", None]}, 3, "x", [], {}], "a": "results"},
    {"a": {"results": [1, 2]}, "results": [{"results": [0]}], "z": [{"y": 1, "x": 2}]},
    {"results": [1]},
]


@pytest.mark.parametrize("bundle", SPLICED)
def test_the_bytes_spliced_from_the_rows_texts_are_the_canonical_bytes(bundle):
    message, texts = canonical_json_with_items(bundle, "results")
    assert message == canonical_json(bundle)
    assert texts == [canonical_text(row) for row in bundle["results"]]
    assert [json.loads(text) for text in texts] == json.loads(canonical_json(bundle))["results"]


@pytest.mark.parametrize("results", [None, [], "rows", {"a": 1}])
def test_without_rows_to_splice_the_canonical_bytes_are_made_whole(results):
    bundle = {"run_id": "r", "results": results}
    assert canonical_json_with_items(bundle, "results") == (canonical_json(bundle), None)


@pytest.mark.parametrize("vector", ["open_run", "bundle"])
def test_the_published_signature_verifies_over_the_canonical_bytes(vector):
    case = VECTORS[vector]
    assert verify_signature(PUBLIC_KEY, case["signature"], canonical_json(case["object"]))


@pytest.mark.parametrize("vector", ["open_run", "bundle"])
def test_a_flipped_byte_in_the_message_does_not_verify(vector):
    case = VECTORS[vector]
    message = canonical_json(case["object"])
    for index in (0, len(message) // 2, len(message) - 1):
        assert not verify_signature(PUBLIC_KEY, case["signature"], flip_byte(message, index))


@pytest.mark.parametrize("vector", ["enroll", "open_run", "bundle"])
def test_a_flipped_byte_in_the_signature_does_not_verify(vector):
    case = VECTORS[vector]
    message = (
        case["challenge"].encode("utf-8") if vector == "enroll" else canonical_json(case["object"])
    )
    for index in (0, 31, 63):
        assert not verify_signature(
            PUBLIC_KEY, flip_signature_byte(case["signature"], index), message
        )


def test_a_changed_field_in_the_bundle_does_not_verify():
    case = VECTORS["bundle"]
    tampered = json.loads(json.dumps(case["object"]))
    tampered["results"][1]["score"] = 0.0
    assert not verify_signature(PUBLIC_KEY, case["signature"], canonical_json(tampered))


def test_another_key_does_not_verify_the_published_signature():
    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    other_b64 = base64.b64encode(other).decode("ascii")
    case = VECTORS["bundle"]
    assert not verify_signature(other_b64, case["signature"], canonical_json(case["object"]))


@pytest.mark.parametrize(
    "public_key",
    [
        PUBLIC_KEY.rstrip("="),  # unpadded
        base64.b64encode(bytes(31)).decode("ascii"),  # 31 bytes
        base64.urlsafe_b64encode(bytes([251] * 32)).decode("ascii"),  # url-safe alphabet
        "not base64 at all!",
        None,
    ],
)
def test_a_key_that_is_not_padded_standard_base64_of_32_bytes_is_refused(public_key):
    assert decode_public_key(public_key) is None
    case = VECTORS["bundle"]
    assert not verify_signature(public_key, case["signature"], canonical_json(case["object"]))


def test_the_fingerprint_is_the_first_16_hex_of_sha256_of_the_key_text():
    expected = hashlib.sha256(PUBLIC_KEY.encode("ascii")).hexdigest()[:16]
    assert key_fingerprint(PUBLIC_KEY) == expected


IN_PIECES = [
    *SPLICED,
    {"a": {1: "int keys", 2: "at the top levels"}, "b": [{3: 4}]},
    {"results": ["x" * 3_000_000, 1.5, float("-inf"), {"raw_output": '\u00e9"' * 600_000}]},
    {"artifacts": [{"html": "<p>\t" * 400_000, "ok": True}], "deep": [[[["d", {"z": 1}]]]]},
    [],
    {},
    "a string",
]


@pytest.mark.parametrize("value", IN_PIECES)
def test_the_bytes_spelled_in_pieces_are_the_canonical_bytes(value):
    assert canonical_json_in_pieces(value) == canonical_json(value)
