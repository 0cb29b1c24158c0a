"""The fuzz of `extract diff` and `extract trace` (tests/test_fuzz_diff_trace.py runs it;
docs/fuzzing.md): hostile profiles, names, options and paths, each run of the real
command held against the promises every run keeps, whatever its input.

An `Example` is a small tree in a temporary folder: `in/` the inputs (one folder per
profile, `profile.pop` and `pva-double.json`, written by fixtures/generate.py from a
spec made hostile; the rules file), `out/` the outputs (an earlier output `old.*`, a
link to one elsewhere), `elsewhere/` the targets of links; the command runs in the
tree's root. What is drawn (`examples`; `corpus` holds each hostile piece alone):

- **names and kinds**: compute set, program and vertex names replaced by, or (keeping
  the selectors' matches) holding, hostile text (tests/support/derivedfuzz.py's names:
  ESC sequences, control characters, quotes, pipes, formula starts, non-ASCII, 100,000
  characters; and a title-setting OSC, a screen clear, C1's CSI); step kinds so
  replaced (`DoExchangé`); names and kinds turned into blobs in SQL;
- **values**: a step row's cycles, tiles or start set to 2**63 - 1 and its neighbours
  (sums past 64 bits); SQL values of tests/test_fuzz.py's mutations (text, blobs,
  fractions, 1e30, ...) and -9e999, 9e999; its other mutations (tables and columns
  dropped, rows deleted, repeated, reordered);
- **clocks**: `--clock-mhz` tiny, huge, NaN, infinite, negative; pva's
  `clockFrequency` so;
- **options**: `--block` / `--candidate-block` (huge digit strings, not `R:K`), `--top`,
  `--run` (huge, 0, negative), `--all`, `--no-pva`, `--timeout`, `--rules` (a copy of the
  installed rules, hostile stage labels, no output-begins step);
- **paths**: profile folders named with a byte that is not UTF-8, ESC, a newline,
  quotes; a profile given through a symbolic link or as an absolute path; `-o` a new
  file, one in folders that do not exist, an earlier output, a link to one, a dangling
  link, the rules file, a link to it, a profile, a link to one, `/dev/tty` (the run has
  no controlling terminal), a character device; stdout a pipe or a terminal (a pty).

The promises (`check` returns each one broken, as a sentence):

- the run ends (a time limit: EXTRACT_DIFFTRACEFUZZ_TIMEOUT seconds, default 30) with
  exit 0, or with exit 1 or 2 and exactly one stderr line `extract: error: <file>:
  <problem>` naming a path of the command (or an option, for a bad option), with no
  traceback, no "unexpected failure" and no Python type name for a value (`is str`);
  a character device is never called a FIFO; stderr is UTF-8 with no control character;
- on exit 0 the output is valid: JSON strict (outputchecks.strict_json: no NaN nor
  Infinity, orjson reads it, every whole number within 64 bits), CSV and markdown
  tables whole (derivedfuzz's checks) with every number within 64 bits; a trace keeps
  the checks of the trace format (outputchecks.trace_problems) and names each process
  after its profile as extract shows paths (a byte that is not UTF-8 as `\\xNN`); diff's JSON
  names its profiles so; what goes to a terminal holds no control character;
- nothing under `in/` ever changes (every file hashed before and after, the rules file
  included): no output is written over an input, through a link or not; no temporary
  (`.partial`) file is left anywhere, beside a link's target included; a failed run
  changes nothing at all (no folder made, nothing lost); a successful one changes only
  its output (the `-o` path or the file its link leads to, the folders made for it, and
  with `extract --blocks` its `blocks.json`).
"""

import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tty
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # run as a script
    sys.path.insert(0, str(TESTS))

from hypothesis import strategies as st  # noqa: E402
from test_fuzz import MUTATION, NEW_VALUES  # noqa: E402
from test_fuzz import apply as apply_mutations  # noqa: E402

from support.cases import NO_OUTPUT_RULES, generator  # noqa: E402
from support.cli import extract_command  # noqa: E402
from support.derivedfuzz import (  # noqa: E402
    HOSTILE_NAMES,
    check_csv,
    check_markdown,
    partials,
    print_tally,
    short,
    tally,
)
from support.diffedits import EDITS, edit_spec  # noqa: E402
from support.fsfuzz import CAN_MKNOD, NOT_UTF8, Run, shown, snapshot  # noqa: E402
from support.outputchecks import (  # noqa: E402
    markdown_cells,
    numbers_beyond_64_bits,
    strict_json,
    terminal_problems,
    trace_problems,
)
from support.paths import PVA_DOUBLE, REPO  # noqa: E402

TIMEOUT = float(os.environ.get("EXTRACT_DIFFTRACEFUZZ_TIMEOUT", "30"))  # a hang fails

# ---- the pieces ----------------------------------------------------------------------

# Hostile text that SQLite can store (no lone surrogates: those come as blobs).
HOSTILE_TEXT = [n for n in HOSTILE_NAMES if not any(0xD800 <= ord(c) < 0xE000 for c in n)] + [
    "\x1b]0;pwned\x07",  # sets the terminal's title
    "\x1b[2J\x1b[H",  # clears the screen
    "\x9b31m",  # C1's one-character CSI
    "DoExchang\u00e9",
    "caf\u00e9\U0001f600",
    "'",
    '"',
]
HOSTILE_KINDS = [
    "DoExchang\u00e9",
    "\x1b[2J\x1b[H",
    "Do\"Exchange'",
    "\U0001f600",
    "OnTileExecute\n",
    "",
    "\x00",
    "|",
    "=2+3",
]
# SQL for a name or kind that is not text.
BLOBS = ["x'ff00c3a9'", "x'1b5b324a'", "CAST({c} AS BLOB)", "x''", "7"]
BIG_INTS = [2**63 - 1, 2**63 - 2, 2**62, -(2**63), -(2**62), -1, 0, 10**18]
EXTRA_SQL_VALUES = ["-9e999", "9e999", "'abc'", "1.5", "-9223372036854775808", "'1e400'"]
ROW_COLUMNS = [
    "cycles",
    "active_tiles",
    "cycles_base",
    "active_cycles_from_min",
    "active_cycles_to_max",
]
BASES = ("mini", "multi-ipu", "one-anchor")
FOLDER_PARTS = ["", "", "", NOT_UTF8, "\x1b[2J", "new\nline", "quote'\"", "sp ace", "\u00e9", "|"]
PVA_CLOCKS = [None, 1.85e9, 1e-300, 1e-320, 5e-324, 0.0, -5.0, 1e308, "nan", "inf", "1e999"]
CLOCKS_MHZ = [
    "1850",
    "1e-320",
    "5e-324",
    "1e-300",
    "0.001",
    "1e6",
    "1e300",
    "1.7e308",
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "9" * 400,
]
BODIES = [
    "1:0",
    "1:1",
    "2:0",
    "0:0",
    "1:9",
    "1:-1",
    "1:" + "9" * 23,
    "1:" + "9" * 4301,
    "9" * 5000 + ":0",
    "1:0x",
    " 1:0 ",
    "",
    ":",
    "\u0661:\u0660",
]
RUNS = [1, 2, 3, 0, -1, 10**20, 2**63, int("9" * 4300)]  # typer parses up to 4300 digits
TOPS = [0, 1, 3, 20, -1, 2**63, 10**30]
TIMEOUTS = ["0", "30", "nan", "-1", "inf", "0.001"]

# Where -o goes.
STDOUT, FRESH, NESTED, EXISTING, LINK, DANGLING = (
    "stdout",
    "a new file",
    "a file in folders not there",
    "an earlier output",
    "a link to an earlier output",
    "a dangling link",
)
RULES, RULES_LINK, PROFILE, PROFILE_LINK, LAST_PROFILE = (
    "the rules file",
    "a link to the rules file",
    "the profile",
    "a link to the profile",
    "the last profile",
)
ODD_FOLDER, DEV_TTY, DEVICE = "a file in a folder named \\xff", "/dev/tty", "a character device"
OUTPUTS = [FRESH, NESTED, EXISTING, LINK, DANGLING, RULES, RULES_LINK, PROFILE, PROFILE_LINK]
OUTPUTS += [LAST_PROFILE, ODD_FOLDER, DEV_TTY, DEVICE]
INPUT_OUTPUTS = (RULES, RULES_LINK, PROFILE, PROFILE_LINK, LAST_PROFILE)

COMMANDS = ("diff-markdown", "diff-json", "diff-csv", "diff-terminal", "trace", "extract", "blocks")
EXTENSIONS = {"diff-markdown": "md", "diff-csv": "csv", "diff-terminal": "txt"}
FOCUSES = ["names", "values", "profile", "clock", "options", "paths", "everything"]


# ---- an example ----------------------------------------------------------------------


class ProfileDraw:
    """One profile: a fixtures/generate.py case made hostile. `names`: (what, index, how,
    text) with what "compute set", "program" or "vertex", how "replace" or "insert";
    `kinds`: (step index, kind); `values`: (row index, column, whole number) set in the
    spec; `sql`: tests/test_fuzz.py's mutations, made after it is written; `clock`:
    pva's clockFrequency (None: none); `folder`: a part of its folder's name; `via`:
    "relative", "absolute" or "link" (the path given on the command line)."""

    def __init__(self, base="mini", names=(), kinds=(), values=(), sql=(), clock=None):
        self.base, self.names, self.kinds, self.values = base, list(names), list(kinds), values
        self.sql, self.clock, self.folder, self.via = list(sql), clock, "", "relative"

    def where(self, folder="", via="relative"):
        self.folder, self.via = folder, via
        return self

    def __repr__(self):
        parts = [self.base]
        parts += ["{} {} {}: {}".format(w, i, h, short(t, 60)) for w, i, h, t in self.names]
        parts += ["kind of step {}: {}".format(i, short(k, 40)) for i, k in self.kinds]
        parts += ["row {} {} = {}".format(i, c, v) for i, c, v in self.values]
        parts += ["sql {}".format(short(m, 80)) for m in self.sql]
        if self.clock is not None:
            parts.append("clockFrequency {!r}".format(self.clock))
        if self.folder or self.via != "relative":
            parts.append("folder +{!r}, given {}".format(self.folder, self.via))
        return "<" + "; ".join(parts) + ">"


class Example:
    """A drawn command (nothing made yet). `profiles`: the ProfileDraws (diff: base and
    candidate); `candidate` (diff): "same" (the base's very path), "copy" (a copy of the
    base), "own" (its own ProfileDraw) or a list of tests/support/diffedits.py edits of
    the base's spec; `rules`: None, "installed", "no-output" or a hostile stage label;
    `options`: more arguments (diff's `--format` from the command's name unless given);
    `output`: where -o goes; `terminal`: stdout is a pty."""

    def __init__(
        self,
        command,
        profiles=None,
        candidate="copy",
        rules=None,
        options=(),
        output=FRESH,
        terminal=False,
        focus="",
    ):
        self.command, self.profiles = command, list(profiles or [ProfileDraw()])
        if command.startswith("diff") and len(self.profiles) == 1:
            self.profiles.append(ProfileDraw())
        self.candidate, self.rules, self.options = candidate, rules, [str(o) for o in options]
        self.output, self.terminal, self.focus = output, terminal, focus
        if self.command == "diff-terminal":
            self.output, self.terminal = STDOUT, True
        given = "--format" in self.options or "-f" in self.options
        if command.startswith("diff") and command != "diff-terminal" and not given:
            self.options = ["--format", command.split("-")[1]] + self.options
        if self.output in (RULES, RULES_LINK) and self.rules is None:
            self.rules = "installed"

    def __repr__(self):
        lines = ["{} example (focus: {})".format(self.command, self.focus or "-")]
        lines += ["  profile {}: {!r}".format(n, p) for n, p in enumerate(self.profiles, 1)]
        if self.command.startswith("diff"):
            lines.append("  candidate: {}".format(short(self.candidate, 200)))
        lines.append(
            "  rules: {}; options: {}; -o: {}{}".format(
                short(self.rules, 80),
                short(self.options, 200),
                self.output,
                "; stdout a terminal" if self.terminal else "",
            )
        )
        return "\n".join(lines)


# ---- strategies ----------------------------------------------------------------------


def _maybe(draw, chance_of, strategy, default):
    return draw(strategy) if draw(st.integers(0, 99)) < chance_of else default


@st.composite
def profile_draw(draw, focus):
    def on(name, chance):
        return chance if focus == name else (35 if focus == "everything" else 0)

    hostile = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=8).filter(_storable))
    names = st.tuples(
        st.sampled_from(["compute set", "program", "vertex"]),
        st.integers(0, 20),
        st.sampled_from(["insert", "insert", "replace"]),
        hostile,
    )
    kinds = st.tuples(st.integers(0, 30), st.sampled_from(HOSTILE_KINDS))
    values = st.tuples(
        st.integers(0, 40), st.sampled_from(ROW_COLUMNS[:3]), st.sampled_from(BIG_INTS)
    )
    sql_value = st.one_of(NEW_VALUES, st.sampled_from(EXTRA_SQL_VALUES))
    row_set = st.tuples(
        st.just("set"),
        st.sampled_from([("steps_by_ipu", c) for c in ROW_COLUMNS]),
        sql_value,
        st.one_of(st.none(), st.integers(1, 24)),
    )
    blob = st.tuples(
        st.just("set"),
        st.sampled_from([("steps", "type"), ("compute_sets", "name"), ("programs", "name")]),
        st.sampled_from(BLOBS),
        st.one_of(st.none(), st.integers(1, 13)),
    )
    sql = []
    sql += _maybe(draw, on("names", 30), st.lists(blob, min_size=1, max_size=2), [])
    sql += _maybe(draw, on("values", 50), st.lists(row_set, min_size=1, max_size=2), [])
    sql += _maybe(draw, on("profile", 100), st.lists(MUTATION, min_size=1, max_size=3), [])
    profile = ProfileDraw(
        draw(st.sampled_from(BASES)),
        names=_maybe(draw, on("names", 90), st.lists(names, min_size=1, max_size=3), []),
        kinds=_maybe(draw, on("names", 50), st.lists(kinds, min_size=1, max_size=2), []),
        values=_maybe(draw, on("values", 80), st.lists(values, min_size=1, max_size=3), []),
        sql=sql,
        clock=_maybe(draw, on("clock", 80), st.sampled_from(PVA_CLOCKS), None),
    )
    return profile.where(
        _maybe(draw, on("paths", 60), st.sampled_from(FOLDER_PARTS), ""),
        _maybe(draw, on("paths", 50), st.sampled_from(["absolute", "link"]), "relative"),
    )


def _storable(text: str) -> bool:
    return not any(0xD800 <= ord(c) < 0xE000 for c in text)


@st.composite
def examples(draw, command):
    focus = draw(st.sampled_from(FOCUSES))
    options_on = focus in ("options", "everything")
    count = 2 if command.startswith("diff") else 1
    if command == "trace":
        count = draw(st.sampled_from([1, 1, 1, 2, 3]))
    profiles = [draw(profile_draw(focus)) for _ in range(count)]
    candidate = "own"
    if command.startswith("diff"):
        candidate = draw(
            st.one_of(
                st.sampled_from(["same", "copy", "own"]),
                st.lists(
                    st.tuples(st.sampled_from(EDITS), st.integers(0, 999), st.integers(0, 999)),
                    min_size=1,
                    max_size=4,
                ),
            )
        )
    rules = _maybe(
        draw,
        60 if options_on else 15,
        st.one_of(st.sampled_from(["installed", "no-output"]), st.sampled_from(HOSTILE_TEXT)),
        None,
    )
    options = []
    if command.startswith("diff"):
        if command == "diff-terminal":
            options += ["--format", draw(st.sampled_from(["markdown", "csv", "json"]))]
        for option in ("--block", "--candidate-block"):
            value = _maybe(draw, 40 if options_on else 0, st.sampled_from(BODIES), None)
            if value is not None:
                options += [option, value]
        top = _maybe(draw, 40 if options_on else 0, st.sampled_from(TOPS), None)
        options += ["--top", str(top)] if top is not None else []
    elif command == "trace":
        runs = _maybe(
            draw, 40 if options_on else 0, st.lists(st.sampled_from(RUNS), max_size=2), []
        )
        for run in runs:
            options += ["--run", str(run)]
        if _maybe(draw, 30 if options_on else 0, st.booleans(), False):
            options.append("--all")
        clock_on = 60 if focus in ("clock", "everything") else 0
        clock = _maybe(draw, clock_on, st.sampled_from(CLOCKS_MHZ), None)
        options += ["--clock-mhz", clock] if clock is not None else []
    elif command == "extract" and draw(st.booleans()):
        options.append("--blocks")
    if command != "blocks" and _maybe(draw, 40 if options_on else 15, st.booleans(), False):
        options.append("--no-pva")  # (blocks reads no pva)
    timeout = _maybe(draw, 30 if options_on else 0, st.sampled_from(TIMEOUTS), None)
    options += ["--timeout", timeout] if timeout is not None else []
    outputs = OUTPUTS + ([STDOUT, STDOUT] if command.startswith("diff") else [])
    output = _maybe(
        draw, 70 if focus in ("paths", "everything") else 0, st.sampled_from(outputs), None
    )
    if output is None:
        output = STDOUT if command.startswith("diff") and draw(st.booleans()) else FRESH
    terminal = output == STDOUT and draw(st.booleans())
    return Example(command, profiles, candidate, rules, options, output, terminal, focus)


# ---- building ------------------------------------------------------------------------


def base_spec(base: str):
    g = generator()
    if base == "mini":
        return g._mini_base()
    if base in LARGE:
        build, size = LARGE[base]
        return build(size)
    return {"multi-ipu": g.case_multi_ipu, "one-anchor": g.case_one_anchor}[base]()[0]


def long_body_spec(steps: int):
    """The baseline case with `steps` steps (exchanges and compute sets in turn) between
    its first anchor and its second: one body of that many steps."""
    g = generator()
    spec = g._mini_base()
    keep = [s for s in spec.steps if s.id <= 4]
    rows = [r for r in spec.steps_by_ipu if r.step_id <= 4]
    start = 400
    for number in range(steps):
        step_id = 5 + number
        if number % 2:
            keep.append(g.Step(step_id, "OnTileExecute", 32, 2))
        else:
            keep.append(g.Step(step_id, "DoExchange", 33, None))
        rows.append(g.step_row(step_id, start, start + 5, 5, 3))
        start += 5
    shift = steps - 4
    for step in spec.steps:
        if step.id >= 9:
            keep.append(g.Step(step.id + shift, step.type, step.program, step.compute_set))
    for row in spec.steps_by_ipu:
        if row.step_id >= 9:
            end = row.cycles_base + row.active_cycles_to_max + start - 900
            begin = row.cycles_base + row.active_cycles_from_min + start - 900
            rows.append(g.step_row(row.step_id + shift, begin, end, row.cycles, row.active_tiles))
    spec.steps, spec.steps_by_ipu = keep, rows
    return spec


def wide_step_spec(rows: int):
    """The baseline case whose step 7 (a kernel) has `rows` rows, one per IPU."""
    g = generator()
    spec = g._mini_base()
    wide = []
    for row in spec.steps_by_ipu:
        wide.append(row)
        if row.step_id == 7:
            for ipu in range(1, rows):
                twin = g.StepRow(**vars(row))
                twin.ipu, twin.cycles = ipu, row.cycles + ipu % 7
                wide.append(twin)
    spec.steps_by_ipu, spec.ipus = wide, rows
    return spec


LARGE = {
    "long body": (long_body_spec, 20000),
    "longer body": (long_body_spec, 150000),
    "wide step": (wide_step_spec, 16000),
}
_WRITTEN = {}


def hostile_spec(draw: ProfileDraw):
    """The spec of `draw`, its names, kinds and values made hostile (SQL and pva alike)."""
    spec = base_spec(draw.base)
    for what, index, how, text in draw.names:
        if what == "vertex":
            target = spec.compute_sets[index % len(spec.compute_sets)]
            target.vertices = list(target.vertices) + [text]
            continue
        items = spec.compute_sets if what == "compute set" else spec.programs
        target = items[index % len(items)]
        head, _, tail = target.name.rpartition("/")
        target.name = text if how == "replace" else "{}/{}/{}".format(head, text, tail)
    if draw.kinds:  # a kernel step of another kind: its program keeps its compute set
        owned = generator().program_compute_sets(spec)
        for program in spec.programs:
            program.compute_set = owned.get(program.id, program.compute_set)
    for index, kind in draw.kinds:
        spec.steps[index % len(spec.steps)].type = kind
    for index, column, value in draw.values:  # (idle tiles are 64-bit too)
        row = spec.steps_by_ipu[index % len(spec.steps_by_ipu)]
        setattr(row, column, max(0, value) if column == "active_tiles" else value)
    return spec


def write_profile(draw: ProfileDraw, folder: Path, spec=None) -> Path:
    if draw.base in LARGE and spec is None and not (draw.names or draw.kinds or draw.values):
        if draw.base not in _WRITTEN:  # written once, then copied
            import tempfile

            made = Path(tempfile.mkdtemp(prefix="difftracefuzz-"))
            _WRITTEN[draw.base] = generator().write_case(base_spec(draw.base), made).parent
        shutil.copytree(str(_WRITTEN[draw.base]), str(folder))
        profile = folder / "profile.pop"
    else:
        profile = generator().write_case(spec or hostile_spec(draw), folder)
    if draw.sql:
        apply_mutations(profile, draw.sql)
    if draw.clock is not None:
        double = folder / "pva-double.json"
        data = json.loads(double.read_text(encoding="ascii"))
        data.setdefault("target", {})["clockFrequency"] = draw.clock
        double.write_text(json.dumps(data), encoding="ascii")
    return profile


def rules_text(rules: str) -> str:
    if rules == "installed":
        return (REPO / "stage_rules.toml").read_text(encoding="utf-8")
    if rules == "no-output":
        return NO_OUTPUT_RULES
    label = json.dumps(rules, ensure_ascii=False)  # a TOML basic string too
    return "fallback = {0}\n[[rules]]\npattern = '/attn/'\nlabel = {0}\n".format(
        label
    ) + NO_OUTPUT_RULES.split("[[rules]]", 1)[1].replace("^no such step$", "copyToHost$")


class Built:
    """A made example: its root, the command line, the paths given (typed, for the
    error line's file), its -o path (None: stdout), and what each process is named."""

    def __init__(self, example: Example, root: Path):
        self.example, self.root = example, root
        self.inputs, self.outputs = root / "in", root / "out"
        self.paths, self.process_names, self.output = [], {}, None


def build(example: Example, root: Path) -> Built:
    built = Built(example, root)
    for folder in (built.inputs, built.outputs, root / "elsewhere"):
        folder.mkdir(parents=True)
    typed, folders, specs = [], [], []
    for number, draw in enumerate(example.profiles, 1):
        candidate = example.command.startswith("diff") and number == 2
        if candidate and example.candidate == "same":
            typed.append(typed[0])
            continue
        folder = built.inputs / "p{}{}".format(number, draw.folder)
        if candidate and example.candidate == "copy":
            shutil.copytree(str(folders[0]), str(folder))
        elif candidate and isinstance(example.candidate, list):
            # the base's spec edited; the candidate's own draw gives SQL, clock and path
            write_profile(draw, folder, edit_spec(specs[0], example.candidate))
        elif draw.base in LARGE:
            write_profile(draw, folder)
        else:
            specs.append(hostile_spec(draw))
            write_profile(draw, folder, specs[-1])
        folders.append(folder)
        path = folder / "profile.pop"
        if draw.via == "link":  # the pva stand-in reads pva-double.json beside the link
            link = built.inputs / "l{}{}".format(number, draw.folder)
            link.mkdir()
            os.symlink(str(path), str(link / "profile.pop"))
            shutil.copyfile(str(folder / "pva-double.json"), str(link / "pva-double.json"))
            path = link / "profile.pop"
        typed.append(str(path) if draw.via == "absolute" else str(path.relative_to(root)))
    args = {"trace": ["trace"], "blocks": ["blocks"], "extract": []}.get(
        example.command, ["diff"]
    ) + typed
    if example.rules is not None:
        rules = built.inputs / "rules.toml"
        rules.write_text(rules_text(example.rules), encoding="utf-8")
        args += ["--rules", "in/rules.toml"]
        built.paths.append("in/rules.toml")
    built.paths += typed
    output = _output(built, example, typed)
    if output is not None:
        args += ["-o", output]
        built.paths.append(output)
        built.output = output
    elif example.command in ("trace", "extract", "blocks"):
        raise AssertionError("{} needs -o".format(example.command))
    built.args = args + example.options
    built.process_names = {pid: shown(path) for pid, path in enumerate(typed, 1)}
    return built


def _output(built: Built, example: Example, typed):
    """The -o path for `example.output` (made ready), or None for stdout."""
    kind, root = example.output, built.root
    extension = EXTENSIONS.get(example.command, "json")
    if kind == STDOUT:
        return None
    if kind == FRESH:
        return "out/r.{}".format(extension)
    if kind == NESTED:
        return "out/new/sub/r.{}".format(extension)
    if kind == ODD_FOLDER:
        (built.outputs / ("o" + NOT_UTF8)).mkdir()
        return "out/o{}/r.{}".format(NOT_UTF8, extension)
    if kind == EXISTING:
        (built.outputs / "old.{}".format(extension)).write_bytes(b"previous\n")
        return "out/old.{}".format(extension)
    if kind in (LINK, DANGLING):
        target = root / "elsewhere" / ("target.json" if kind == LINK else "gone/missing.json")
        if kind == LINK:
            target.write_bytes(b"previous\n")
        os.symlink(str(target), str(built.outputs / "link.json"))
        return "out/link.json"
    if kind == RULES:
        return "in/rules.toml"
    if kind in (RULES_LINK, PROFILE_LINK):
        target = root / ("in/rules.toml" if kind == RULES_LINK else typed[0])
        os.symlink(str(target), str(built.outputs / "input-link"))
        return "out/input-link"
    if kind == PROFILE:
        return typed[0]
    if kind == LAST_PROFILE:
        return typed[-1]
    if kind == DEV_TTY:
        return "/dev/tty"
    if kind == DEVICE:
        if not CAN_MKNOD:
            return "/dev/null"
        os.mknod(str(built.outputs / "null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return "out/null"
    raise AssertionError(kind)


# ---- running -------------------------------------------------------------------------


def run_extract(args, cwd: Path, terminal=False, timeout=TIMEOUT) -> Run:
    """The real `extract ARGS` in a session of its own (no controlling terminal), killed
    with everything it started after `timeout` seconds; stdout a pipe or (`terminal`) a
    pty in raw mode, so that its bytes arrive as written. The Run's `cpu`: the seconds
    of CPU the process and its children used."""
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    master = None
    stdout = subprocess.PIPE
    if terminal:
        master, stdout = pty.openpty()
        tty.setraw(stdout)
    process = subprocess.Popen(
        extract_command() + [os.fsencode(a) for a in args],
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    hung, out = False, b""
    try:
        if terminal:
            os.close(stdout)
            out, hung = _read_terminal(master, timeout)
        if hung:
            os.killpg(process.pid, signal.SIGKILL)
        piped, err = process.communicate(timeout=None if hung else timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        piped, err = process.communicate()
        hung = True
    finally:
        if master is not None:
            os.close(master)
    run = Run(process.returncode, out if terminal else piped, err, hung)
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
    return run


def _read_terminal(master: int, timeout: float):
    """What the pty's other end was sent until it closed (bytes, hung)."""
    import time

    chunks, deadline = [], time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([master], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed it
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)


# ---- the checks ----------------------------------------------------------------------

_PYTHON_TYPES = re.compile(r"\bis (str|float|int|bytes|bool|NoneType|memoryview)\b|<class ")
_FIFO = re.compile(r"FIFO|named pipe", re.IGNORECASE)


def check(built: Built, run: Run, before: dict, after: dict) -> list:
    problems = []
    if run.hung:
        return ["hung: killed at its time limit"]
    if run.code not in (0, 1, 2):
        problems.append("exit code {}".format(run.code))
    try:
        run.raw_stderr.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("stderr is not UTF-8 text (a path's raw bytes?)")
    problems += terminal_problems(run.raw_stderr, "stderr")
    if run.code == 0:
        problems += [
            "stderr on success: {}".format(short(line, 300))
            for line in run.lines
            if not line.startswith(("extract: warning: ", "extract: note: "))
        ]
        problems += output_problems(built, run)
    else:
        problems += error_problems(built, run)
    problems += tree_problems(built, run, before, after)
    return problems


def displayed(path) -> str:
    """A path as a terminal must be shown it: as `shown`, its runs of white space one
    space, each other control character a visible `\\xNN`."""
    text = re.sub(r"\s+", " ", shown(path)).strip()
    return re.sub("[\x00-\x1f\x7f-\x9f]", lambda m: "\\x{:02x}".format(ord(m.group())), text)


def error_problems(built: Built, run: Run) -> list:
    problems = []
    if run.stdout:
        problems.append("{} bytes on stdout from a failed run".format(len(run.stdout)))
    if len(run.lines) != 1 or run.stderr.count("\n") != 1:
        return problems + ["{} lines on stderr, not one error line".format(len(run.lines))]
    line = run.lines[0]
    if "Traceback" in line or "unexpected failure" in line:
        return problems + ["stderr: {}".format(short(line, 300))]
    if not line.startswith("extract: error: "):
        return problems + ["stderr line not an error line: {}".format(short(line, 300))]
    problem = line[len("extract: error: ") :]
    absolute = [str(built.root / p) for p in built.paths]
    absolute += [os.path.realpath(p) for p in absolute]
    files = [f for p in built.paths + absolute for f in (shown(p), displayed(p))]
    if not any(problem.startswith(f + ": ") for f in files) and not problem.startswith("-"):
        problems.append("the error line names no file of the command: {}".format(short(line, 300)))
    if _PYTHON_TYPES.search(problem):
        problems.append("the error line names a Python type: {}".format(short(line, 300)))
    output = built.output
    if output is not None and _FIFO.search(problem):
        try:
            fifo = stat.S_ISFIFO(os.stat(os.fsencode(str(built.root / output))).st_mode)
        except OSError:
            fifo = False
        if not fifo:
            problems.append("an output that is no FIFO called one: {}".format(short(line, 300)))
    return problems


def _read_output(built: Built, run: Run):
    if built.output is None:
        return run.stdout
    path = os.fsencode(str(built.root / built.output))
    if not os.path.isfile(path):
        return None  # a device: what was written is gone
    with open(path, "rb") as handle:
        return handle.read()


def output_problems(built: Built, run: Run) -> list:
    command = built.example.command
    data = _read_output(built, run)
    if built.example.terminal:
        return terminal_problems(data, "the diff")
    if data is None:
        return []
    fmt = "markdown" if command.startswith("diff") else "json"
    for option in ("--format", "-f"):
        if option in built.args:
            fmt = built.args[built.args.index(option) + 1]
    if fmt == "csv":
        problems = check_csv(data, "the CSV")
        rows = data.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")
        return problems + numbers_beyond_64_bits(
            [c for row in rows for c in row.split(",")], "the CSV"
        )
    if fmt == "markdown":
        problems = check_markdown(data, "the markdown")
        text = data.decode("utf-8", "replace")
        return problems + numbers_beyond_64_bits(list(markdown_cells(text)), "the markdown")
    document, problems = strict_json(data, "the {} output".format(command))
    if document is None:
        return problems
    if command == "trace":
        try:
            problems += trace_problems(document, built.process_names)[:6]
        except (KeyError, TypeError, AttributeError) as exc:
            problems.append("the trace's events are not as the trace format says: {!r}".format(exc))
    elif command.startswith("diff"):
        for pid, side in ((1, "base"), (2, "candidate")):
            profile = document.get(side, {}).get("profile")
            if profile != built.process_names[pid]:
                problems.append(
                    "the diff's {} is {!r}, not {!r}".format(
                        side, profile, built.process_names[pid]
                    )
                )
    elif command == "extract" and "--blocks" in built.args:
        beside = os.path.dirname(str(built.root / built.output))
        with open(os.path.join(beside, "blocks.json"), "rb") as handle:
            problems += strict_json(handle.read(), "blocks.json")[1]
    return problems


def tree_problems(built: Built, run: Run, before: dict, after: dict) -> list:
    problems = []
    inputs = str(built.inputs)
    for path in sorted(set(before) | set(after)):
        if path.startswith(inputs + "/") and before.get(path) != after.get(path):
            what = "changed" if path in before and path in after else "appeared or went"
            problems.append("an input {}: {}".format(what, _relative(built, path)))
    left = partials(built.root)
    if left:
        problems.append("temporary files left: {}".format([_relative(built, p) for p in left]))
    allowed = set()
    if run.code == 0 and built.output is not None:
        output = str(built.root / built.output)
        allowed = {output, os.path.realpath(output)}
        for path in list(allowed):
            allowed.add(os.path.join(os.path.dirname(path), "blocks.json"))
            folder = os.path.dirname(path)
            while folder not in before and len(folder) > len(str(built.root)):
                allowed.add(folder)
                folder = os.path.dirname(folder)
    for path in sorted(set(before) | set(after)):
        if path.startswith(inputs + "/") or path in allowed:
            continue
        if before.get(path) != after.get(path):
            state = "made" if path not in before else "lost" if path not in after else "changed"
            problems.append(
                "{} {}{}".format(
                    _relative(built, path), state, "" if run.code == 0 else " by a failed run"
                )
            )
    return problems


def _relative(built: Built, path: str) -> str:
    return shown(os.path.relpath(path, str(built.root)))


def run_example(example: Example, root: Path, timeout=TIMEOUT):
    """Build, run and check `example` in `root` (made afresh); (problems, report, run)."""
    if root.exists():
        shutil.rmtree(str(root))
    built = build(example, root)
    before = snapshot(root)
    run = run_extract(built.args, root, example.terminal, timeout)
    after = snapshot(root)
    problems = check(built, run, before, after)
    report = "{!r}\n  command: extract {}\n  run: {!r}".format(
        example, " ".join(short(a, 60) for a in built.args), run
    )
    if problems:
        report += "\n  broken:\n" + "\n".join("    - " + p for p in problems)
    return problems, report, run


# ---- the corpus: each hostile piece alone ----------------------------------------------

# A changed step in the candidate (its rows' cycles), so that a body's steps are listed.
CHANGED = [("cycles", 6, 7)]  # step 7, the kernel of compute set 3 (index 2)
BODY_KERNEL_ROWS = (3, 6)  # the mini case's rows of steps 4 and 7, kernels of its body


def _named(text, what="compute set", index=0, how="insert"):
    return [ProfileDraw(names=[(what, index, how, text)]), ProfileDraw()]


def corpus():
    """(name, Example) for each hostile piece alone, given to the commands it reaches."""
    cases = []
    big = [ProfileDraw(values=[(row, "cycles", 2**63 - 1) for row in BODY_KERNEL_ROWS])]

    def add(command, name, **fields):
        if command.startswith("diff"):
            fields.setdefault("candidate", CHANGED)
        elif command != "trace" or name != "three profiles":
            fields["profiles"] = fields.get("profiles", [ProfileDraw()])[:1]
        if command == "extract" and fields.get("output") not in (DEV_TTY, DEVICE):
            fields["options"] = list(fields.get("options", ())) + ["--blocks"]
        cases.append(("{}:{}".format(command, name), Example(command, focus=name, **fields)))

    outputs = {
        "diff-markdown": (RULES, PROFILE_LINK, NESTED, DEV_TTY),
        "diff-json": (LINK, RULES_LINK),
        "diff-csv": (LAST_PROFILE,),
        "trace": (RULES, RULES_LINK, PROFILE, PROFILE_LINK, NESTED, LINK, DEV_TTY, DEVICE),
        "extract": (RULES, RULES_LINK, DEV_TTY),
        "blocks": (RULES, RULES_LINK, DEV_TTY),
    }
    for command, kinds in outputs.items():
        for kind in kinds:
            add(command, "-o " + kind, output=kind)
    pieces = [
        ("benign", {}, COMMANDS),
        ("cycles 2**63-1 on two kernels", {"profiles": big}, COMMANDS),
        ("folder \\xff", {"profiles": [ProfileDraw().where(NOT_UTF8)]}, ("diff-json", "trace")),
        ("folder ESC", {"profiles": [ProfileDraw().where("\x1b[2J")]}, ("diff-terminal",)),
        (
            "kind DoExchang\u00e9",
            {"profiles": [ProfileDraw(kinds=[(5, "DoExchang\u00e9")])] * 2},
            ("diff-json", "diff-markdown", "trace"),
        ),
        ("kind a blob", {"profiles": [ProfileDraw(sql=[BLOB_KIND])] * 2}, ("diff-json", "trace")),
        ("label ESC \u00e9", {"rules": "\x1b[2J\u00e9"}, ("diff-json", "diff-csv", "trace")),
        ("name ESC", {"profiles": _named("\x1b]0;pwned\x07\x1b[2J", index=2)}, COMMANDS[:5]),
        ("name a|b", {"profiles": _named("a|b", index=2)}, ("diff-markdown", "diff-csv")),
        ("name =2+3", {"profiles": _named("=2+3", index=2, how="replace")}, ("diff-csv",)),
        ("tiles text", {"profiles": [ProfileDraw(sql=[TEXT_TILES])]}, ("diff-json", "trace")),
        (
            "start -inf",
            {"profiles": [ProfileDraw(sql=[MINUS_INFINITE_BASE])]},
            ("diff-json", "trace"),
        ),
        ("--block 4301 digits", {"options": ["--block", "1:" + "9" * 4301]}, ("diff-json",)),
        ("--block 23 digits", {"options": ["--block", "1:" + "9" * 23]}, ("diff-json",)),
        ("--top 2**63", {"options": ["--top", str(2**63)]}, ("diff-markdown",)),
        (
            "csv",
            {"options": ["-f", "csv"], "profiles": _named("\x1b[2J", index=2)},
            ("diff-terminal",),
        ),
        (
            "json",
            {"options": ["-f", "json"], "profiles": _named("\x1b[2J", index=2)},
            ("diff-terminal",),
        ),
        ("three profiles", {"profiles": [ProfileDraw(b) for b in BASES]}, ("trace",)),
        ("--run 7 into new folders", {"options": ["--run", "7"], "output": NESTED}, ("trace",)),
        (
            "no steps_by_ipu into new folders",
            {"profiles": [ProfileDraw(sql=[DROP])], "output": NESTED},
            ("trace",),
        ),
    ]
    pieces += [
        ("--clock-mhz " + c, {"options": ["--clock-mhz", c]}, ("trace",))
        for c in ("1e-320", "5e-324", "nan")
    ]
    pieces += [
        ("clockFrequency {}".format(hz), {"profiles": [ProfileDraw(clock=hz)]}, ("trace",))
        for hz in (1e-300, "nan")
    ]
    for name, fields, commands in pieces:
        for command in commands:
            add(command, name, **dict(fields))
    return cases


BLOB_KIND = ("set", ("steps", "type"), "x'ff00c3a9'", 6)
TEXT_TILES = ("set", ("steps_by_ipu", "active_tiles"), "'abc'", 4)
MINUS_INFINITE_BASE = ("set", ("steps_by_ipu", "cycles_base"), "-9e999", 4)
DROP = ("drop table", "steps_by_ipu")


# ---- a survey: every failure of many examples, tallied -----------------------------------


def main(argv) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Tally what the diff and trace fuzz finds.")
    parser.add_argument("mode", choices=["survey"])
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--command", action="append", choices=COMMANDS)
    parser.add_argument("--seed")
    parser.add_argument("--reports", action="store_true", help="print one example each")
    options = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="difftracefuzz-survey-"))
    strategies = {command: examples(command) for command in options.command or COMMANDS}
    found = tally(
        strategies,
        lambda drawn: run_example(drawn, root / "example"),
        options.examples,
        options.seed,
    )
    shutil.rmtree(str(root), ignore_errors=True)
    return print_tally(found, options.reports, width=14)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
