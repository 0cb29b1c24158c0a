"""The one strict JSON number reader (extractor/jsonnumbers.py), at the edges of both
files' bounds: summary.json's whole numbers are within 2**64 - 1 either way, blocks.json's
within a signed 64-bit integer (-2**63 to 2**63 - 1); both take fractions up to 2**64 in
magnitude. Each file's whole wording is tested through the CLI (test_model.py,
test_bounds.py); here, the numbers on each side of each edge."""

import pytest

from extractor.core.blockformats import BLOCKS_NUMBERS
from extractor.core.model import SUMMARY_NUMBERS
from extractor.jsonnumbers import NumberRefused, load_strict_json

FILES = {"summary": SUMMARY_NUMBERS, "blocks": BLOCKS_NUMBERS}
# (file, the number's text): read as that value.
HELD = [
    ("summary", str(2**64 - 1)),
    ("summary", str(-(2**64) + 1)),
    ("blocks", str(2**63 - 1)),
    ("blocks", str(-(2**63))),
    ("summary", "18446744073709551616.0"),  # 2**64 as a fraction: at the limit
    ("blocks", "-18446744073709551616.0"),
    ("summary", "0.5"),
]
# (file, the number's text, the refusal).
REFUSED = [
    (
        "summary",
        str(2**64),
        (
            "the whole number 18446744073709551616 (20 digits) is beyond the 64 bits of a "
            "summary's numbers"
        ),
    ),
    (
        "summary",
        str(-(2**64)),
        (
            "the whole number -1844674407370955161... (20 digits) is beyond the 64 bits of a "
            "summary's numbers"
        ),
    ),
    ("blocks", str(2**63), "the whole number 9223372036854775808 is beyond 64 bits"),
    ("blocks", str(-(2**63) - 1), "the whole number -9223372036854775809 is beyond 64 bits"),
    (
        "blocks",
        "1" * 25,
        "the whole number 11111111111111111111... (25 digits) is beyond 64 bits",
    ),
    (
        "summary",
        "18446744073709555712.0",  # the next float above 2**64
        "the number 18446744073709555712... is beyond the 64 bits of a summary's numbers",
    ),
    (
        "blocks",
        "-18446744073709555712.0",  # 22 characters after the sign, each counted
        "the number -1844674407370955571... (22 digits) is beyond 2**64, more than any cycle count",
    ),
    ("summary", "1e400", "the number 1e400 is beyond what a float holds"),
    ("blocks", "-1e400", "the number -1e400 is beyond what a float holds"),
    ("summary", "NaN", "NaN, which is not a JSON number (a summary's numbers are finite)"),
    ("blocks", "Infinity", "Infinity, which is not a JSON number (its numbers are finite)"),
]


@pytest.mark.parametrize("kind,number", HELD)
def test_a_number_within_the_bounds_is_read_as_it_is(kind, number):
    value = load_strict_json("[{}]".format(number), FILES[kind])
    expected = float(number) if "." in number else int(number)
    assert value == [expected] and type(value[0]) is type(expected)


@pytest.mark.parametrize("kind,number,problem", REFUSED)
def test_a_number_beyond_them_is_refused_in_the_files_words(kind, number, problem):
    with pytest.raises(NumberRefused) as refused:
        load_strict_json('{{"deep": [1, {{"x": {}}}]}}'.format(number), FILES[kind])
    assert str(refused.value) == problem


def test_text_that_is_not_json_is_a_value_error_not_a_refusal():
    with pytest.raises(ValueError) as raised:
        load_strict_json("[1,", SUMMARY_NUMBERS)
    assert not isinstance(raised.value, NumberRefused)
