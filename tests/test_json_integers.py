"""An integer of more than 20 digits is refused wherever it sits; its sign is not a digit, and
numbers with a fraction or an exponent are not integers (docs/protocol.md, MALFORMED_JSON)."""

import pytest

from submissions.jsonbody import MalformedJson, parse_json


@pytest.mark.parametrize("sign", ["", "-"])
def test_integers_of_up_to_20_digits_parse_and_longer_ones_are_refused(sign):
    for digits in (1, 19, 20):
        text = sign + "9" * digits
        assert parse_json(f'{{"n": [{text}]}}'.encode()) == {"n": [int(text)]}
    for digits in (21, 40):
        text = sign + "9" * digits
        with pytest.raises(MalformedJson) as refused:
            parse_json(f'{{"a": "x", "n": {{"m": {text}}}}}'.encode())
        assert str(refused.value) == f"integer of {len(text)} digits"


def test_long_numbers_with_a_fraction_or_an_exponent_and_long_digit_strings_are_not_integers():
    body = (
        b'{"f": 123456789012345678901234.5, "e": 1234567890123456789012e3, "s": "1'
        + (b"0" * 30)
        + b'"}'
    )
    assert parse_json(body)["s"] == "1" + "0" * 30
