"""The summary as bytes: orjson's speed, `json.dumps(summary, indent=2) + "\\n"`'s text.

orjson and the standard library agree on layout (two-space indent, `": "`, `[]`, `{}`)
and on the escapes of ASCII control characters, but not on three things, which are
handed to orjson as pre-rendered `orjson.Fragment`s:

- floats: orjson writes `0.00001` and `1e16` where Python's repr is `1e-05` and `1e+16`
  (and orjson writes NaN and infinities as null);
- text beyond ASCII (and DEL): the standard library escapes it as `\\uXXXX`, astral
  characters as surrogate pairs; orjson writes UTF-8, and refuses lone surrogates;
- integers outside 64 bits, which orjson refuses.

Keys are text from a profile too (a step's kind keys the diff's `kinds`; a stage label
keys blocks' statistics): an object with a key beyond ASCII is written by the standard
library itself, as a fragment indented to its depth, since orjson can take a fragment
for a value but never for a key.
"""

import json
import math
import re
from typing import Match

import orjson

_NEEDS_ASCII_ESCAPE = re.compile(r"[^\x00-\x7e]")
_JSON_STRING_ESCAPE = re.compile(r'[^\ -~]|["\\]')
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_INT_RANGE = (-(2**63), 2**64 - 1)


def summary_bytes(summary: dict) -> bytes:
    """The exact bytes of `json.dumps(summary, indent=2) + "\\n"`, written by orjson."""
    return orjson.dumps(_as_orjson(summary, 0), option=orjson.OPT_INDENT_2) + b"\n"


def _as_orjson(value: object, depth: int) -> object:
    """`value` for orjson, at `depth` (the containers around it)."""
    # bool is an int, so it goes before int; str subclasses are treated as str.
    if isinstance(value, float):
        return orjson.Fragment(_float_text(value))
    if isinstance(value, str):
        if _NEEDS_ASCII_ESCAPE.search(value):
            return orjson.Fragment(_ascii_json_string(value))
        return value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            return value
        return orjson.Fragment(str(int(value)))
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TypeError("summary keys must be strings, not {!r}".format(key))
            if _NEEDS_ASCII_ESCAPE.search(key):
                return _standard_object(value, depth)
        return {key: _as_orjson(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_orjson(item, depth + 1) for item in value]
    raise TypeError("a summary cannot hold {}".format(type(value).__name__))


def _standard_object(value: dict, depth: int) -> "orjson.Fragment":
    """The object `value` as json.dumps(indent=2) writes it, its lines moved in to
    `depth`: the standard library's text of the object is the reference itself."""
    text = json.dumps(value, indent=2)
    return orjson.Fragment(text.replace("\n", "\n" + "  " * depth))


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _ascii_json_string(text: str) -> str:
    return '"' + _JSON_STRING_ESCAPE.sub(_escape_char, text) + '"'


def _escape_char(match: "Match[str]") -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return "\\u{:04x}\\u{:04x}".format(0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF))
    return "\\u{:04x}".format(code)
