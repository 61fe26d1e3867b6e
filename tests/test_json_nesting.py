"""A pod body nested deeper than 64 is refused, whatever its containers, and only then: the
depth counts containers, never brackets inside strings (docs/protocol.md, MALFORMED_JSON)."""

import json
import random

import pytest

from submissions.jsonbody import MAX_DEPTH, WALK_CHUNK, MalformedJson, parse_json


def depth_of(value) -> int:
    """Containers on the deepest path: 0 for a scalar, 1 for [] or {}."""
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def nested(depth: int, innermost, kinds: str = "[") -> object:
    """`depth` containers around `innermost`, lists or objects in the order of `kinds`."""
    value = innermost
    for level in range(depth):
        value = [value] if kinds[level % len(kinds)] == "[" else {"k": value}
    return value


def refused(value) -> bool:
    try:
        parse_json(json.dumps(value).encode())
    except MalformedJson as exc:
        assert str(exc) == f"nesting deeper than {MAX_DEPTH}"
        return True
    return False


@pytest.mark.parametrize("kinds", ["[", "{", "[{", "{["])
@pytest.mark.parametrize("innermost", [1, "x", None, [], {}], ids=repr)
def test_it_refuses_exactly_the_bodies_nested_deeper_than_64(kinds, innermost):
    for depth in range(MAX_DEPTH - 3, MAX_DEPTH + 4):
        value = nested(depth, innermost, kinds)
        assert refused(value) == (depth_of(value) > MAX_DEPTH), (depth, kinds, innermost)


def test_the_deepest_branch_counts_wherever_it_sits_among_shallow_ones():
    for depth in (MAX_DEPTH, MAX_DEPTH + 1):
        for innermost in ([], 0):
            deep = nested(depth - 1, innermost, "{[")
            value = {"a": [1, {"b": "c"}] * 50, "z": [{"y": [deep] + [[]] * 20}] * 3}
            value = nested(0, value)
            assert refused([[1, 2], value, {"q": []}]) == (depth_of([value]) > MAX_DEPTH)


def test_brackets_and_escaped_quotes_inside_strings_do_not_nest():
    text = '"[{' * 200 + "\\" + "]}" * 300
    value = nested(MAX_DEPTH - 1, {text: [text, '"[[[', "\\", "\\[{"]})
    assert depth_of(value) == MAX_DEPTH + 1
    assert refused(value)
    shallower = nested(MAX_DEPTH - 2, {text: [text, '"[[[', "\\", "\\[{"]})
    assert not refused(shallower)
    assert parse_json(json.dumps(shallower).encode()) == shallower


def test_scalars_and_empty_containers_at_the_top_are_not_nested_too_deep():
    for value in (0, "x", None, True, 1.5, [], {}, [[]], {"a": {}}):
        assert parse_json(json.dumps(value).encode()) == value


def test_random_trees_are_refused_exactly_when_deeper_than_64():
    rng = random.Random(6)

    def tree(depth: int):
        if depth == 0:
            return rng.choice([0, "s", None, [], {}, "[[{"])
        # One branch goes on down; its siblings stay a few levels deep (the tree stays small).
        siblings = [tree(rng.randrange(min(depth, 4))) for _ in range(rng.randrange(3))]
        children = [tree(depth - 1), *siblings]
        rng.shuffle(children)
        if rng.random() < 0.5:
            return children
        return {f"k{i}": child for i, child in enumerate(children)}

    for target in list(range(MAX_DEPTH - 2, MAX_DEPTH + 3)) * 8:
        value = tree(target)
        assert refused(value) == (depth_of(value) > MAX_DEPTH), depth_of(value)


def test_levels_wider_than_one_walk_step_are_read_to_their_end():
    for depth in (MAX_DEPTH, MAX_DEPTH + 1):
        for innermost in ([], "x"):
            deep = nested(depth - 2, innermost, "[{")
            value = {"rows": [{"n": i} for i in range(2 * WALK_CHUNK)] + [[0] * 3, deep]}
            assert refused(value) == (depth_of(value) > MAX_DEPTH), (depth, innermost)
