"""Stage rules: which step names belong to which stage, and the summary's selectors.

The defaults live in `stage_rules.toml` (data, not code). A rules file is validated as a
whole when it is loaded, so a typo is reported before any profile is read.
"""

import re
from pathlib import Path
from typing import NamedTuple, NoReturn, Optional, Pattern, Tuple

from ..errors import RulesError, StrPath
from ..inputs import read_input
from ..tomltext import TomlProblem, parse_toml, toml_type

SELECTORS = ("kernel", "anchor", "attention_exchange", "input_delivered", "output_begins")


class StageRule(NamedTuple):
    pattern: Pattern
    label: str


class StageRules(NamedTuple):
    """A validated rules file: ordered stage rules, fallback label and five selectors."""

    rules: Tuple[StageRule, ...]
    fallback: str
    kernel: Pattern
    anchor: Pattern
    attention_exchange: Pattern
    input_delivered: Pattern
    output_begins: Pattern
    source: str
    content: bytes  # the file as read, for its digest

    @property
    def sha256(self) -> str:
        """The rules file's SHA-256 (hex), which a batch's index records."""
        import hashlib  # here: only a batch needs it, and it costs start-up time

        return hashlib.sha256(self.content).hexdigest()

    def stage_of(self, name: str) -> str:
        """The label of the first rule whose pattern is found in `name`, else the fallback."""
        for rule in self.rules:
            if rule.pattern.search(name):
                return rule.label
        return self.fallback


#: The deepest nesting of groups a pattern may have. re's parser recurses once per group;
#: how deep it can go before the C stack runs out depends on the interpreter and on the
#: recursion limit in force (a test framework may raise it), so a pattern nested deeper
#: than any real one is refused before it is parsed.
MAX_GROUP_DEPTH = 100


def _group_depth(pattern: str) -> int:
    """The deepest nesting of parentheses in a regular expression (escaped ones and those
    inside a character class do not count)."""
    depth = deepest = 0
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[index + 1 : index + 2] == "]":  # a literal ] first in the class
                index += 1
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(0, depth - 1)
        index += 1
    return deepest


def default_rules_path() -> Path:
    """`stage_rules.toml` as installed in the wheel, else the repository's copy."""
    package = Path(__file__).resolve().parent.parent  # extractor/, above core/
    for candidate in (package / "stage_rules.toml", package.parent / "stage_rules.toml"):
        if candidate.is_file():
            return candidate
    raise RulesError(package / "stage_rules.toml", "the default stage rules are not installed")


def load_rules(path: Optional[StrPath] = None) -> StageRules:
    """Read and check a rules file (the defaults when `path` is None)."""
    path = Path(path) if path is not None else default_rules_path()
    raw = read_input(path, RulesError)  # a FIFO or a device is refused, never waited on
    try:
        data = parse_toml(raw)
    except TomlProblem as exc:
        raise RulesError(path, str(exc)) from exc
    return parse_rules(data, source=str(path), content=raw)


def parse_rules(data: dict, source: str = "<rules>", content: bytes = b"") -> StageRules:
    """Check the TOML document `data` and compile its patterns."""

    def fail(problem: str) -> NoReturn:
        raise RulesError(source, problem)

    def text(value: object, where: str) -> str:
        if not isinstance(value, str):
            fail("{} must be a string, not {}".format(where, toml_type(value)))
        return value

    def regex(value: object, where: str) -> Pattern:
        pattern = text(value, where)
        try:
            if _group_depth(pattern) > MAX_GROUP_DEPTH:
                raise RecursionError  # told before re's parser recurses that deep
            return re.compile(pattern)
        except (re.error, OverflowError) as exc:  # OverflowError: a{99999999999}
            fail("{} is not a valid regular expression ({!r}: {})".format(where, value, exc))
        except RecursionError:  # re's parser recurses once per nested group
            fail(
                "{} is not a valid regular expression ({}: groups nested too deeply)".format(
                    where, _shown(pattern)
                )
            )

    unknown = sorted(set(data) - {"fallback", "rules", "selectors"})
    if unknown:
        fail("unknown key {!r} (expected fallback, [[rules]], [selectors])".format(unknown[0]))
    if "fallback" not in data:
        fail("missing key 'fallback' (the label of steps no rule matches)")
    fallback = text(data["fallback"], "'fallback'")

    entries = data.get("rules")
    if entries is None:
        fail("no [[rules]]: at least one stage rule is needed")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        fail("'rules' must be an array of tables ([[rules]] with pattern and label)")
    if not entries:
        fail("'rules' is empty: at least one stage rule is needed")
    rules = []
    for number, entry in enumerate(entries, start=1):
        where = "rule {}".format(number)
        extra = sorted(set(entry) - {"pattern", "label"})
        if extra:
            fail("{}: unknown key {!r} (a rule has pattern and label)".format(where, extra[0]))
        for key in ("pattern", "label"):
            if key not in entry:
                fail("{}: missing key {!r}".format(where, key))
        rules.append(
            StageRule(
                regex(entry["pattern"], "{}: pattern".format(where)),
                text(entry["label"], "{}: label".format(where)),
            )
        )

    selectors = data.get("selectors")
    if not isinstance(selectors, dict):
        fail("missing table [selectors] ({})".format(", ".join(SELECTORS)))
    extra = sorted(set(selectors) - set(SELECTORS))
    if extra:
        fail(
            "[selectors]: unknown selector {!r} (known: {})".format(extra[0], ", ".join(SELECTORS))
        )
    compiled = {}
    for key in SELECTORS:
        if key not in selectors:
            fail("[selectors]: missing selector {!r}".format(key))
        compiled[key] = regex(selectors[key], "selector {!r}".format(key))

    return StageRules(
        rules=tuple(rules), fallback=fallback, source=source, content=content, **compiled
    )


def _shown(text: str, limit: int = 40) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[:limit] + "..."
