"""JSON read strictly about its numbers: the one reader of summary.json and blocks.json.

A file's numbers are counted in SQLite's 64-bit integers (cycles, steps, bytes) or are
means of them: a whole number beyond the file's bounds is refused as it is read, before
any arithmetic (where a 400-digit number would overflow a float), its length checked
first (int() of a long text is slow, and refused beyond 4300 digits); so is a number a
float cannot hold (1e400), a fraction beyond the file's limit either way, and NaN and
Infinity, which JSON only has by name. Each file says its bounds and its words
(`NumberLimits`); the refusal is a `NumberRefused`, for the reader to word as its file's
error.
"""

import json
import math
from typing import Any, NamedTuple, NoReturn

SHOWN_DIGITS = 20  # a longer number is shown by its first 20 characters


class NumberLimits(NamedTuple):
    """The numbers a file holds, and how one beyond them is told. Each text is a
    str.format template: `{short}` is the number as written, cut to its first 20
    characters and `...`; `{counted}` the same, followed by its count of digits when
    cut; `{digits}` that count; `{name}` a constant's (NaN, Infinity, -Infinity)."""

    whole_low: int  # the least whole number held
    whole_high: int  # the greatest
    fraction_limit: float  # a fraction's magnitude at most
    whole_beyond: str  # a whole number beyond [whole_low, whole_high]
    not_held: str  # a number no float holds
    fraction_beyond: str  # a fraction beyond fraction_limit
    not_a_number: str  # NaN, Infinity or -Infinity


def short_number(number: str) -> str:
    """`number` as written, cut to its first 20 characters and `...` when longer."""
    return number if len(number) <= SHOWN_DIGITS else number[:SHOWN_DIGITS] + "..."


class NumberRefused(ValueError):
    """A number the file cannot hold, worded by its NumberLimits."""


def load_strict_json(text: str, limits: NumberLimits) -> Any:
    """json.loads of `text`, every number within `limits` (NumberRefused for the first
    one that is not; ValueError for text that is not JSON, RecursionError for JSON
    nested too deeply, as json.loads). Any: whatever JSON the text holds."""
    whole_digits = len(str(max(-limits.whole_low, limits.whole_high)))

    def refuse(template: str, number: str) -> NoReturn:
        digits = len(number.lstrip("-"))
        short = short_number(number)
        counted = short if short == number else "{} ({} digits)".format(short, digits)
        raise NumberRefused(template.format(short=short, counted=counted, digits=digits))

    def whole(number: str) -> int:
        # The length first: int() of a long text is slow.
        if len(number.lstrip("-")) > whole_digits:
            refuse(limits.whole_beyond, number)
        value = int(number)
        if not limits.whole_low <= value <= limits.whole_high:
            refuse(limits.whole_beyond, number)
        return value

    def fraction(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):  # 1e400: JSON allows it, a float cannot hold it
            refuse(limits.not_held, number)
        if abs(value) > limits.fraction_limit:
            refuse(limits.fraction_beyond, number)
        return value

    def constant(name: str) -> NoReturn:
        raise NumberRefused(limits.not_a_number.format(name=name))

    return json.loads(text, parse_int=whole, parse_float=fraction, parse_constant=constant)
