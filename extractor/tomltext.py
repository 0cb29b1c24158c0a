"""TOML files as the rules and budget readers take them: one parse, with its problems
worded once, and one way of naming a TOML value's type in a message."""

import sys
from typing import Any, Dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on the older Pythons in CI
    import tomli as tomllib


class TomlProblem(ValueError):
    """Bytes that are not a TOML document; `str()` is the problem in a message's words."""


def parse_toml(raw: bytes) -> Dict[str, Any]:
    """The document `raw` holds, or TomlProblem. A byte-order mark (some Windows editors
    write one) is not TOML text, and is allowed."""
    try:
        return tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise TomlProblem("not UTF-8 text: {}".format(exc)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise TomlProblem("not valid TOML: {}".format(exc)) from exc
    except RecursionError:  # the TOML parser recurses once per nested array or table
        raise TomlProblem("not valid TOML: arrays or tables nested too deeply") from None


def toml_type(value: object) -> str:
    """What `value`, read from TOML, is, as a message says it: `a string`, `a table`..."""
    for kind, name in (
        (bool, "a boolean"),  # before int: a bool is an int
        (int, "an integer"),
        (float, "a float"),
        (str, "a string"),
        (list, "an array"),
        (dict, "a table"),
    ):
        if isinstance(value, kind):
            return name
    return "a " + type(value).__name__  # a date or time
