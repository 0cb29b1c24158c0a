"""tests/README.md maps every test file and every helper: a `tests/test_*.py` file or a
`tests/support/` module it does not name fails here, and so does a name it gives that
is not a file."""

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
README = TESTS / "README.md"

# A file name in backticks, as the page's tables write them.
_NAMED = re.compile(r"`([A-Za-z0-9_]+\.py)`")


def _section(title: str) -> str:
    """The page's text under `## title`, up to the next `## ` heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## " + title + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _named(text: str) -> set:
    return set(_NAMED.findall(text))


def _test_sections() -> str:
    return "".join(_section(title) for title in ("By command", "By file format", "Across commands"))


def test_every_test_file_is_named_and_every_named_one_exists():
    named = {name for name in _named(_test_sections()) if name.startswith("test_")}
    there = {path.name for path in TESTS.glob("test_*.py")}
    assert sorted(there - named) == [], "test files tests/README.md does not name"
    assert sorted(named - there) == [], "files tests/README.md names that are not there"


def test_every_helper_is_named_and_every_named_one_exists():
    named = _named(_section("Helpers: `tests/support/`"))
    there = {path.name for path in (TESTS / "support").glob("*.py")} - {"__init__.py"}
    assert sorted(there - named) == [], "helpers tests/README.md does not name"
    assert sorted(named - there) == [], "helpers tests/README.md names that are not there"


@pytest.mark.parametrize(
    "text, names",
    [
        ("| `x` | `test_a.py`, `test_b2.py` |", {"test_a.py", "test_b2.py"}),
        ("test_plain.py and `support/cli.py`", set()),  # only a bare name in backticks
        ("`checks.py`", {"checks.py"}),
    ],
)
def test_the_name_finder(text, names):
    assert _named(text) == names
