"""The derived-input fuzz layer: batch output folders built from realistic pieces and
hostile mutations, fed to the commands that read what extract itself wrote (`compare`,
`table`, `report`, `merge`), and held against the invariants every command must keep
(tests/test_fuzz_derived.py runs it; docs/fuzzing.md, "Derived inputs").

An example is a small tree in a folder of its own:

    batch/                 OUTDIR, given as the argument (or batch/runs/ is, and the index
                           sits one folder up: the batch index covering a recording)
      <name>/summary.json  a recording: a fixture's expected.json, maybe mutated, or a
      <name>/blocks.json   FIFO, a folder, a link to outside/...; blocks.json beside it
      index.jsonl          index lines, realistic or hostile; shard files beside it
    outside/               planted where a reader must never go: a summary, blocks.json,
                           index lines, a budget file, a FIFO
    budget/budget.toml     the budget file (given as --budget)
    out/                   the declared outputs (-o, --chart, --junit)
    cwd/                   the working folder of the run (empty)

Strategies draw an `Example` (a description: nothing made yet); `run_example` builds it,
runs the command (in this process through support.cli.invoke_extract, or as a subprocess
with an audit hook) and returns each broken invariant as a sentence naming it:

(a) exit 0 (or compare --budget's 3) with output that parses strictly: JSON through
    json.loads rejecting NaN and Infinity; CSV through the csv module, every row as long
    as the header, no formula cell (= + - @ tab CR leading a cell that is no number);
    markdown, every table row one line with the header's cell count; SVG and JUnit
    through xml.etree.ElementTree; HTML as UTF-8 with no more <script>, and no <img>,
    <iframe> or on* attribute, than the page of benign names has; merge's index.jsonl
    one strict JSON object per line;
(b) or exactly one stderr line `extract: error: ...`, exit 1 or 2, nothing on stdout,
    no traceback, no `unexpected failure`;
(c) never a hang: each run has a time limit (EXTRACT_DERIVEDFUZZ_TIMEOUT, default 10 s);
(d) nothing read outside the folders given: every path opened for reading (the audit
    event `open`) is inside an argument (links resolved), an index file in an argument's
    folder or an ancestor of one, or Python's, the installed packages', the repository's
    code, /dev/null, /dev/urandom, /proc, /sys, /etc, /usr/share (see ALLOWED_SYSTEM);
(e) nothing under the given folders changed (sha256 of every file, kind, inode, mode,
    before and after, but for the command's declared outputs), no `.partial` left;
(f) a summary that is not one (a wrong type at a key compare reads, `profile` not text,
    NaN, a number beyond 64 bits, nesting too deep) is refused, never read as a summary.

Run it alone to tally what a longer run finds (every problem, not the first):

    python tests/support/derivedfuzz.py survey --examples 100 [--command table-csv] [--subprocess]
"""

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # run as a script
    sys.path.insert(0, str(TESTS))

from hypothesis import strategies as st  # noqa: E402

from support.cases import golden_case_folder  # noqa: E402
from support.cli import (  # noqa: E402
    InProcessTimeout,
    extract_command,
    invoke_extract,
    without_root_privileges,
)
from support.paths import EDGE, FIXTURES, GOLDEN, PVA_DOUBLE, REPO  # noqa: E402

TIMEOUT = float(os.environ.get("EXTRACT_DERIVEDFUZZ_TIMEOUT", "10"))  # a hang fails
MEMORY_LIMIT = 2 << 30  # a subprocess reading /dev/zero stops at 2 GiB, not the machine's

# ---- the pieces ------------------------------------------------------------------------

# Valid summaries to start from, with weights, and the profile whose blocks.json goes
# beside each (vit-f8weight-b has no profile: the golden one's blocks stand in).
BASES = {
    "vit-f8weight": GOLDEN / "expected.json",
    "vit-f8weight-b": FIXTURES / "vit-f8weight-b" / "expected.json",
}
BASES.update((p.parent.name, p) for p in sorted(EDGE.glob("*/expected.json")))
BASE_WEIGHTS = {
    "vit-f8weight": 6,
    "vit-f8weight-b": 6,
    "multi-ipu": 3,
    "one-anchor": 3,
    "unicode-names": 3,
}
BLOCKS_PROFILE = {
    "vit-f8weight": golden_case_folder() / "profile.pop",
    "vit-f8weight-b": golden_case_folder() / "profile.pop",
}
BLOCKS_PROFILE.update(
    (name, EDGE / name / "profile.pop") for name in BASES if name not in BLOCKS_PROFILE
)
BENIGN_BASES = ("vit-f8weight", "vit-f8weight-b", "multi-ipu")

HOSTILE_NAMES = [
    "=2+3",
    "+7",
    "-2+3",
    "@SUM(A1:A9)",
    "|",
    "a|b|c",
    "new\nline",
    "carriage\rreturn",
    "tab\tname",
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(1)</script>",
    "\x1b[31mred\x1b[0m",
    "\ufffe",
    "\x01",
    "\ud800",
    "\udcff",
    "quote\"'",
    "]]>&amp;",
    "nul\x00byte",
    "`tick`",
    "back\\slash",
    "\u202eevil",
    "<!--",
    "x" * 100000,
]
# The names a folder may have (no "/", no NUL, at most 255 bytes, encodable).
FOLDER_NAMES = [
    n
    for n in HOSTILE_NAMES
    if "/" not in n and "\x00" not in n and "\ud800" not in n and len(os.fsencode(n)) < 200
] + ["x" * 200, "-r"]
BENIGN_NAMES = ["fp8", "fp16", "base", "run-2", "sweep_3"]


class Raw:
    """JSON text put into a document as it is (what json.dumps cannot write)."""

    def __init__(self, text: str, label: str):
        self.text, self.label = text, label

    def __repr__(self):
        return "Raw({})".format(self.label)


def big(digits: int, sign: str = "") -> Raw:
    return Raw(sign + "9" * digits, "{}{} digits".format(sign, digits))


DEEP = Raw("[" * 100000 + "]" * 100000, "100000 nested lists")
WRONG_TYPES = [[1], ["a"], 7, -1, None, {}, {"a": 1}, True, "text", 1.5]
NUMBERS = [
    big(400),
    big(400, "-"),
    Raw(str(2**64), "2**64"),
    Raw(str(-(2**64)), "-2**64"),
    -5,
    -1,
    0,
    2**63 - 1,
    float("nan"),
    float("inf"),
    float("-inf"),
    Raw("1e400", "1e400"),
    Raw("-1e400", "-1e400"),
    1e300,
    0.5,
]
SUMMARY_VALUES = WRONG_TYPES + NUMBERS + HOSTILE_NAMES + [DEEP]

# Where in a summary a mutation goes (an index picks the kernel, exchange or span).
SUMMARY_TARGETS = [
    "document",
    "profile",
    "kernels",
    "kernel.stage",
    "kernel.cycles",
    "kernel.name",
    "kernel.stage:delete",
    "attention_exchanges",
    "exchange.name",
    "exchange.maximum",
    "exchange.mean",
    "device_spans",
    "device_span",
    "qkv_executions",
    "allocated_memory",
    "allocated_memory.max(total)",
    "exchange_memory_per_tile.avg(b)",
    "delete:device_spans",
    "delete:profile",
]
NAME_TARGETS = ["profile", "kernel.stage", "kernel.name", "exchange.name"]

# What may be at a path extract reads: a file, or one of these.
FILE, FIFO, DIR, LINK_OUTSIDE, LINK_FIFO, UNREADABLE, LINK_DEVZERO = (
    "file",
    "FIFO",
    "folder",
    "link to outside",
    "link to a FIFO outside",
    "unreadable file",
    "link to /dev/zero",
)
INPROCESS_KINDS = [(FILE, 8), (FIFO, 2), (DIR, 2), (LINK_OUTSIDE, 3), (LINK_FIFO, 2)]
SUBPROCESS_KINDS = INPROCESS_KINDS + [(UNREADABLE, 2), (LINK_DEVZERO, 2)]

# `output` and `summary` values of index lines ({ROOT}: the example's folder; every
# hostile one leads outside, to a FIFO, a device, or is not a path at all).
INDEX_PATHS = [
    "../outside/summary.json",
    "r0/../../outside/summary.json",
    "{ROOT}/outside/summary.json",
    "{ROOT}/outside/fifo",
    "../outside/fifo",
    "link/summary.json",
    "link/fifo",
    "a/" * 3000 + "summary.json",
    "r0\x00/summary.json",
    "\udcff/summary.json",
    "\ud800",
    "",
    ".",
    "/",
    "..",
    "index.jsonl",
    "../outside",
    "{ROOT}/outside/r0/summary.json",
    "/etc/passwd",
    "{ROOT}/batch/link/fifo",
    "{ROOT}/batch/link/summary.json",
    "r0/../../outside/fifo",
    "x/../outside/summary.json",
    [1],
    7,
    None,
    {"a": 1},
    True,
]
DEVICE_PATHS = ["/dev/zero", "/dev/stdin", "/proc/self/fd/0"]
DELETED = "(no such key)"
STATUSES = ["ok", "up to date", "failed", "", "OK", None, 7, ["ok"]]
RAW_LINES = [
    b"not json at all",
    b"{",
    b"[1, 2, 3]",
    b'"a string"',
    b"null",
    b"{}",
    b'{"profile": 7}',
    b"\xff\xfe\x00binary\x00",
    (
        b'{"profile": "p", "profile": [1], "summary": "r0/summary.json", '
        b'"summary": "../outside/summary.json", "status": "ok", "status": "failed"}'
    ),
    b'{"profile": "p", "summary": "r0/summary.json", "status": "ok", "size": 1e400}',
    b'{"profile": "p", "summary": "r0/summary.json", "status": "ok", "size": NaN}',
    b'{"profile": "p", "summary": "r0/summary.json", "warnings": '
    + b"[" * 5000
    + b"]" * 5000
    + b"}",
    b'{"profile": "' + b"x" * (2 << 20) + b'", "summary": "r0/summary.json", "status": "ok"}',
    b'{"profile": "p", "summary": "r0/summary.json", "finished_at": ' + b"9" * 5000 + b"}",
]

BUDGET_GOOD = [
    '[budgets]\n"stage:*" = "+2%"\n"stages:total" = "+1%"\n',
    '[budgets]\n"device_span:*" = "+0.5%"\n"qkv_executions" = "="\n',
    '[budgets]\n"allocated_memory:max" = ["+1%", "<= 638976"]\n"exchange_memory:max" = "+512"\n',
    '[budgets]\n"stage:*" = "+50%"\n"stages:total" = "+50%"\n"device_span:*" = "+50%"\n',
]
BUDGET_HOSTILE = [
    '[budgets]\n"stage:*" = "+' + "9" * 4301 + '%"\n',
    '[budgets]\n"stages:total" = "<= ' + "9" * 4301 + '"\n',
    '[budgets]\n"stages:total" = "+1e999%"\n',
    '[budgets]\n"stages:total" = "+nan%"\n',
    '[budgets]\n"stages:total" = "~2%"\n',
    '[budgets]\n"stages:total" = "+-2%"\n',
    '[budgets]\n"stages:total" = "== 3"\n',
    '[budgets]\n"stages:total" = ""\n',
    '[budgets]\n"stages:total" = 2\n',
    '[budgets]\n"stages:total" = []\n',
    '[budgets]\n"[" = "+1%"\n',
    '[budgets]\n"stage:[z-a]" = "+1%"\n',
    '[budgets]\n"nothing:matches" = "+1%"\n',
    '[budgets]\n"stage:=2+3" = "+1%"\n',
    '[budgets]\n"' + "*" * 5000 + '" = "+1%"\n',
    '[budgets]\n"stage:\\u0000" = "+1%"\n',
    "not toml at all [[",
    "",
    "[budgets]\n",
    "budgets = 3\n",
    "[other]\na = 1\n",
    "a = " + "[" * 3000 + "]" * 3000 + "\n",
]
BUDGET_BINARY = [b"\xff\xfe\x00\x01binary", b"\x00" * 64, bytes(range(256))]

COMPARE_COMMANDS = (
    "compare-markdown",
    "compare-csv",
    "compare-json",
    "compare-budget",
    "compare-stat",
    "compare-chart",
)
COMMANDS = COMPARE_COMMANDS + ("table-csv", "table-jsonl", "report", "merge")


# ---- an example ------------------------------------------------------------------------


class Recording:
    """One recording folder: its name, the summary it starts from, the mutations, what
    sits at summary.json and at blocks.json (None: no blocks.json)."""

    def __init__(self, name, base, mutations, kind, blocks, blocks_kind):
        self.name, self.base, self.mutations, self.kind = name, base, mutations, kind
        self.blocks, self.blocks_kind = blocks, blocks_kind

    def __repr__(self):
        text = "{}: {}".format(short(self.name), self.base)
        if self.mutations:
            text += " with " + ", ".join(
                "{}[{}]={}".format(t, i, short(v)) for t, i, v in self.mutations
            )
        if self.kind != FILE:
            text += "; summary.json is a {}".format(self.kind)
        if self.blocks is not None:
            text += "; blocks.json {}{}".format(
                "valid" if not self.blocks else ", ".join(self.blocks),
                "" if self.blocks_kind == FILE else " ({})".format(self.blocks_kind),
            )
        return text


class Example:
    """A drawn batch folder and command (nothing made yet)."""

    def __init__(
        self,
        command,
        recordings,
        lines,
        torn,
        shards,
        index_kind,
        budget,
        budget_kind,
        nested,
        options,
        subprocess_run,
        focus="nothing",
    ):
        self.focus = focus
        self.command, self.recordings, self.lines, self.torn = command, recordings, lines, torn
        self.shards, self.index_kind, self.budget, self.budget_kind = (
            shards,
            index_kind,
            budget,
            budget_kind,
        )
        self.nested, self.options, self.subprocess = nested, options, subprocess_run

    def __repr__(self):
        out = [
            "{} example, hostile: {} ({}{})".format(
                self.command,
                self.focus,
                "subprocess with audit hook" if self.subprocess else "in-process",
                ", argument batch/runs, index one up" if self.nested else "",
            )
        ]
        out += ["  recording " + repr(r) for r in self.recordings]
        for number, line in enumerate(self.lines):
            where = (
                "index-shard-{}-of-2.jsonl".format(number % 2 + 1)
                if self.shards and number % 3 == 2
                else "index.jsonl"
            )
            out.append("  {} line: {}".format(where, short(line)))
        if self.torn:
            out.append("  index.jsonl ends in a torn line")
        if self.index_kind != FILE:
            out.append("  index.jsonl is a {}".format(self.index_kind))
        if self.budget is not None:
            out.append("  budget file ({}): {}".format(self.budget_kind, short(self.budget)))
        if self.options:
            out.append("  options: {}".format(self.options))
        return "\n".join(out)


def short(value, limit=120):
    text = repr(value)
    return (
        text
        if len(text) <= limit
        else text[: limit // 2] + "...({} chars)...".format(len(text)) + text[-limit // 4 :]
    )


# ---- strategies ------------------------------------------------------------------------


def _weighted(pairs):
    return st.sampled_from([k for k, w in pairs for _ in range(w)])


@st.composite
def summary_mutation(draw):
    target = draw(st.sampled_from(SUMMARY_TARGETS + ["profile"] * 3))
    index = draw(st.integers(0, 5))
    if target in NAME_TARGETS and draw(st.booleans()):
        value = draw(st.sampled_from(HOSTILE_NAMES) | st.text(max_size=12))
    elif target.endswith(":delete") or target.startswith("delete:"):
        value = "(deleted)"
    else:
        value = draw(st.sampled_from(SUMMARY_VALUES))
    return (target, index, value)


BLOCKS_MUTATIONS = [
    "stats a list",
    "blocks a number",
    "stages a string",
    "total text",
    "a body's cycles text",
    "a body's run null",
    "median 400 digits",
    "median NaN",
    "median 1e400",
    "median negative",
    "total median 2**64",
    "40 extra stage keys",
    "500 bodies",
    "hostile stage labels",
    "deep nesting",
    "not JSON",
    "a JSON list",
    "empty object",
]
# The mutations after which a blocks.json is not one (docs/formats/blocks.md's types; numbers
# beyond 64 bits, NaN, 1e400: no block's). The others keep it one.
BLOCKS_INVALID = set(BLOCKS_MUTATIONS) - {
    "median negative",
    "40 extra stage keys",
    "500 bodies",
    "hostile stage labels",
}


@st.composite
def recording(draw, number, focus, kinds):
    """A recording folder; `focus`: what of it may be hostile (see FOCUSES)."""

    def hostile(part):
        return focus in (part, "everything")

    name = (
        draw(st.sampled_from(FOLDER_NAMES))
        if hostile("names") and draw(st.integers(0, 2)) == 0
        else "r{}".format(number)
    )
    base = draw(_weighted([(n, BASE_WEIGHTS.get(n, 1)) for n in BASES]))
    mutations = []
    if hostile("summaries") and draw(st.integers(0, 2)):
        mutations = draw(st.lists(summary_mutation(), min_size=1, max_size=2))
    elif hostile("names") and draw(st.booleans()):
        mutations = [
            (
                draw(st.sampled_from(NAME_TARGETS)),
                draw(st.integers(0, 5)),
                draw(st.sampled_from(HOSTILE_NAMES)),
            )
        ]
    kind = draw(_weighted(kinds)) if hostile("kinds") else FILE
    blocks, blocks_kind = None, FILE
    if draw(st.integers(0, 3)):
        blocks = []
        if hostile("blocks") and draw(st.integers(0, 2)):
            blocks = draw(
                st.lists(st.sampled_from(BLOCKS_MUTATIONS), min_size=1, max_size=2, unique=True)
            )
        blocks_kind = draw(_weighted(kinds)) if hostile("kinds") else FILE
    return Recording(name, base, mutations, kind, blocks, blocks_kind)


@st.composite
def index_line(draw, names, devices):
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(RAW_LINES))
    which = draw(st.integers(0, max(0, len(names) - 1)))
    line = {"recording": which}  # filled in when built: a realistic line for it
    paths = INDEX_PATHS + (DEVICE_PATHS if devices else [])
    if draw(st.booleans()):  # a line of an earlier version: placed by its `output`
        line["summary"] = DELETED
        line["output"] = draw(st.sampled_from(paths))
    for key in draw(
        st.lists(
            st.sampled_from(
                [
                    "output",
                    "summary",
                    "status",
                    "profile",
                    "warnings",
                    "reason",
                    "summary_sha256",
                    "blocks_sha256",
                    "finished_at",
                ]
            ),
            max_size=3,
            unique=True,
        )
    ):
        if key in ("output", "summary"):
            line[key] = draw(st.sampled_from(paths))
        elif key == "status":
            line[key] = draw(st.sampled_from(STATUSES))
        elif key in ("summary_sha256", "blocks_sha256"):
            line[key] = draw(st.sampled_from(["match", "0" * 64, 7, None]))
        elif key == "finished_at":
            line[key] = draw(st.sampled_from(["9999-12-31T23:59:59", "", 7, None, [1]]))
        else:
            value = draw(st.sampled_from(HOSTILE_NAMES + WRONG_TYPES))
            line[key] = [value] if key == "warnings" and draw(st.booleans()) else value
    return line


@st.composite
def budget_file(draw):
    choice = draw(st.integers(0, 9))
    if choice < 3:
        return draw(st.sampled_from(BUDGET_GOOD)).encode()
    if choice < 9:
        return draw(st.sampled_from(BUDGET_HOSTILE)).encode()
    return draw(st.sampled_from(BUDGET_BINARY))


# What an example makes hostile: one part (most examples, so that a failure points at
# its cause), or everything at once.
FOCUSES = ["names", "summaries", "kinds", "index", "blocks", "budget", "everything"]


@st.composite
def examples(draw, command, subprocess_run=False):
    """A hostile example for `command` (one of COMMANDS)."""
    kinds = SUBPROCESS_KINDS if subprocess_run else INPROCESS_KINDS
    focus = draw(st.sampled_from(FOCUSES))
    if focus == "budget" and command not in ("compare-budget", "report"):
        focus = "index"
    if focus == "blocks" and command not in ("compare-stat", "report"):
        focus = "summaries"

    def hostile(part):
        return focus in (part, "everything")

    least = 2 if command.startswith("compare") else 1
    count = draw(st.integers(least, 4))
    recordings = [draw(recording(n, focus, kinds)) for n in range(count)]
    seen = set()
    for number, each in enumerate(recordings):  # folder names differ
        if each.name in seen:
            each.name = "{}_{}".format(each.name, number)
        seen.add(each.name)
    if command == "compare-stat" and not hostile("blocks") and not hostile("kinds"):
        for each in recordings:  # --stat needs blocks.json beside every summary
            each.blocks = each.blocks or []
    if hostile("index"):
        lines = draw(
            st.lists(
                index_line([r.name for r in recordings], subprocess_run), min_size=1, max_size=4
            )
        )
    else:
        lines = [{"recording": n} for n in range(count)]
    options = {}
    budget = budget_kind = None
    if command == "compare-budget" or (
        command == "report" and (hostile("budget") or draw(st.booleans()))
    ):
        budget = (
            draw(budget_file())
            if hostile("budget")
            else BUDGET_GOOD[draw(st.integers(0, len(BUDGET_GOOD) - 1))].encode()
        )
        budget_kind = draw(_weighted(kinds)) if hostile("kinds") else FILE
    if command.startswith("compare"):
        options["format"] = (
            command.split("-")[1]
            if command in ("compare-markdown", "compare-csv", "compare-json")
            else draw(st.sampled_from(["markdown", "csv", "json"]))
        )
        options["junit"] = command == "compare-budget" and draw(st.booleans())
        options["chart"] = command == "compare-chart" or draw(st.integers(0, 5)) == 0
        options["stat"] = "median" if command == "compare-stat" else None
    if command in ("table-csv", "table-jsonl", "report"):
        options["to_file"] = draw(st.booleans())
    options["split"] = command != "merge" and draw(st.integers(0, 4)) == 0
    torn = hostile("index") and draw(st.integers(0, 4)) == 0
    shards = draw(st.integers(0, 3)) == 0
    index_kind = draw(_weighted(kinds)) if hostile("kinds") else FILE
    nested = command != "merge" and draw(st.integers(0, 4)) == 0
    return Example(
        command,
        recordings,
        lines,
        torn,
        shards,
        index_kind,
        budget,
        budget_kind,
        nested,
        options,
        subprocess_run,
        focus,
    )


def benign_example(command, subprocess_run=False, nested=False) -> Example:
    """Valid fixtures, benign names, realistic index lines, a valid budget."""
    count = 2 if command.startswith("compare") else 3
    recordings = [
        Recording(BENIGN_NAMES[n], BENIGN_BASES[n], [], FILE, [], FILE) for n in range(count)
    ]
    lines = [{"recording": n} for n in range(count)]
    budget = BUDGET_GOOD[3].encode() if command in ("compare-budget", "report") else None
    options = {"split": False}
    if command.startswith("compare"):
        options.update(
            format=command.split("-")[1]
            if command in ("compare-markdown", "compare-csv", "compare-json")
            else "markdown",
            junit=command == "compare-budget",
            chart=command == "compare-chart",
            stat="median" if command == "compare-stat" else None,
        )
    if command in ("table-csv", "table-jsonl", "report"):
        options["to_file"] = True
    return Example(
        command,
        recordings,
        lines,
        False,
        command == "merge",
        FILE,
        budget,
        FILE if budget else None,
        nested and command != "merge",
        options,
        subprocess_run,
    )


# ---- the corpus: one hostile piece at a time --------------------------------------------


def _old_line(output):
    """An index line of an earlier version (no `summary`), placed by its `output`."""
    return {"recording": 0, "summary": DELETED, "output": output, "summary_sha256": "match"}


def _lines(*lines):
    def change(example):
        example.lines = example.lines + list(lines)

    return change


def _summary(target, value, at=0):
    def change(example):
        example.recordings[1].mutations = [(target, at, value)]

    return change


def _rename(name):
    def change(example):
        example.recordings[1].name = name

    return change


def _kind(what, kind):
    def change(example):
        if what == "index":
            example.index_kind = kind
        elif what == "budget":
            example.budget_kind = kind
        elif what == "blocks":
            example.recordings[1].blocks_kind = kind
        else:
            example.recordings[1].kind = kind

    return change


def _blocks(mutation):
    def change(example):
        example.recordings[1].blocks = [mutation]

    return change


def _budget(data):
    def change(example):
        example.budget = data

    return change


NAMED = (
    "compare-markdown",
    "compare-csv",
    "compare-json",
    "compare-chart",
    "compare-budget",
    "table-csv",
    "table-jsonl",
    "report",
)  # every output format a name reaches
TYPED = ("compare-json", "table-jsonl", "report")  # every command reading summaries
INDEXED = ("report", "merge", "compare-json", "table-csv")
KINDS = ("compare-json", "table-csv", "report")
# (what it is, how the benign example is changed, the commands it is given to)
FAMILIES = [
    (
        "index line of an earlier version placed by x/../outside/summary.json",
        _lines(_old_line("x/../outside/summary.json")),
        INDEXED,
    ),
    (
        "index line of an earlier version placed by r0/../../outside/fifo",
        _lines(_old_line("r0/../../outside/fifo")),
        INDEXED,
    ),
    (
        "index line placed through batch/link, a link inside to outside/",
        _lines(_old_line("{ROOT}/batch/link/summary.json")),
        INDEXED,
    ),
    (
        "index line whose summary is ../outside/summary.json",
        _lines({"recording": 0, "summary": "../outside/summary.json"}),
        INDEXED,
    ),
    (
        "index line with an absolute summary {ROOT}/outside/r0/summary.json",
        _lines({"recording": 0, "summary": "{ROOT}/outside/r0/summary.json"}),
        INDEXED,
    ),
    (
        "index lines of wrong types, NUL, a lone surrogate, torn, 2 MB, duplicated keys",
        _lines(
            {"recording": 0, "output": [1], "summary": None, "status": 7},
            {"recording": 1, "summary": "r0\x00/summary.json", "profile": "\ud800"},
            RAW_LINES[8],
            RAW_LINES[12],
            RAW_LINES[7],
            b'{"profile": "torn", "summ',
        ),
        INDEXED,
    ),
    ("index.jsonl a link to outside/index.jsonl", _kind("index", LINK_OUTSIDE), INDEXED),
    ("index.jsonl a FIFO", _kind("index", FIFO), INDEXED),
    ("summary.json a link to outside/summary.json", _kind("summary", LINK_OUTSIDE), KINDS),
    ("summary.json a FIFO", _kind("summary", FIFO), KINDS),
    ("summary.json a link to a FIFO outside", _kind("summary", LINK_FIFO), KINDS),
    ("recording folder named =2+3", _rename("=2+3"), NAMED),
    ("recording folder named a|b|c", _rename("a|b|c"), NAMED),
    ("recording folder named with a newline", _rename("new\nline"), NAMED),
    ("recording folder named with ESC[31m", _rename("\x1b[31mred\x1b[0m"), NAMED),
    (
        "recording folder named <img src=x onerror=alert(1)>",
        _rename("<img src=x onerror=alert(1)>"),
        NAMED,
    ),
    ("recording folder named with the byte 0xff", _rename("\udcff"), NAMED),
    ("profile =2+3", _summary("profile", "=2+3"), ("compare-csv", "table-csv", "report")),
    ("profile @SUM(A1:A9)", _summary("profile", "@SUM(A1:A9)"), ("table-csv",)),
    ("a stage named =2+3", _summary("kernel.stage", "=2+3"), NAMED),
    ("a stage named a|b|c", _summary("kernel.stage", "a|b|c"), NAMED),
    ("a stage named with a newline", _summary("kernel.stage", "new\nline"), NAMED),
    ("a stage named with a carriage return", _summary("kernel.stage", "carriage\rreturn"), NAMED),
    ("a stage named with ESC[31m", _summary("kernel.stage", "\x1b[31mred\x1b[0m"), NAMED),
    ("a stage named U+0001", _summary("kernel.stage", "\x01"), NAMED),
    ("a stage named U+FFFE", _summary("kernel.stage", "\ufffe"), NAMED),
    ("a stage named with a lone surrogate \\ud800", _summary("kernel.stage", "\ud800"), NAMED),
    (
        "a stage named <img src=x onerror=alert(1)>",
        _summary("kernel.stage", "<img src=x onerror=alert(1)>"),
        NAMED,
    ),
    (
        "a stage named </script><script>alert(1)</script>",
        _summary("kernel.stage", "</script><script>alert(1)</script>"),
        NAMED,
    ),
    ("a stage named with 100000 characters", _summary("kernel.stage", "x" * 100000), NAMED),
    (
        "an attention exchange named with a newline and a |",
        _summary("exchange.name", "cs1_/a|b\nc"),
        NAMED,
    ),
    ("profile a list", _summary("profile", [1]), TYPED),
    ("profile a number", _summary("profile", 7), TYPED),
    ("profile null", _summary("profile", None), TYPED),
    ("a stage that is a number", _summary("kernel.stage", 7), TYPED),
    ("cycles as text", _summary("kernel.cycles", "text"), TYPED),
    ("cycles true", _summary("kernel.cycles", True), TYPED),
    ("qkv_executions of 400 digits", _summary("qkv_executions", big(400)), TYPED),
    ("a device span of 2**64", _summary("device_span", Raw(str(2**64), "2**64")), TYPED),
    ("a device span NaN", _summary("device_span", float("nan")), TYPED),
    ("allocated memory max Infinity", _summary("allocated_memory.max(total)", float("inf")), TYPED),
    ("negative cycles (a summary still)", _summary("kernel.cycles", -5), TYPED),
    ("a summary nested 100000 deep", _summary("document", DEEP), TYPED),
    (
        "blocks.json: a median of 400 digits",
        _blocks("median 400 digits"),
        ("compare-stat", "report"),
    ),
    ("blocks.json: a median of 1e400", _blocks("median 1e400"), ("compare-stat", "report")),
    (
        "blocks.json: a total median of 2**64",
        _blocks("total median 2**64"),
        ("compare-stat", "report"),
    ),
    (
        "blocks.json: a body's cycles text",
        _blocks("a body's cycles text"),
        ("compare-stat", "report"),
    ),
    ("blocks.json: stats a list", _blocks("stats a list"), ("compare-stat", "report")),
    (
        "blocks.json: 40 extra stage keys",
        _blocks("40 extra stage keys"),
        ("compare-stat", "report"),
    ),
    ("blocks.json: 500 bodies", _blocks("500 bodies"), ("compare-stat", "report")),
    (
        "blocks.json: hostile stage labels",
        _blocks("hostile stage labels"),
        ("compare-stat", "report"),
    ),
    (
        "blocks.json a link to outside/blocks.json",
        _kind("blocks", LINK_OUTSIDE),
        ("compare-stat", "report"),
    ),
    (
        "budget: a 4301-digit number",
        _budget(BUDGET_HOSTILE[0].encode()),
        ("compare-budget", "report"),
    ),
    (
        "budget: a 4301-digit limit",
        _budget(BUDGET_HOSTILE[1].encode()),
        ("compare-budget", "report"),
    ),
    ("budget: a bad operator", _budget(BUDGET_HOSTILE[4].encode()), ("compare-budget", "report")),
    ("budget: a pattern [", _budget(BUDGET_HOSTILE[10].encode()), ("compare-budget", "report")),
    ("budget: not TOML", _budget(b"not toml at all [["), ("compare-budget", "report")),
    ("budget: binary", _budget(BUDGET_BINARY[2]), ("compare-budget", "report")),
    ("budget: a FIFO", _kind("budget", FIFO), ("compare-budget", "report")),
]
# Only run as a subprocess (a device read in this process could take all its memory).
SUBPROCESS_FAMILIES = [
    (
        "index line of an earlier version placed by /dev/zero",
        _lines(_old_line("/dev/zero")),
        ("report", "merge"),
    ),
    ("summary.json a link to /dev/zero", _kind("summary", LINK_DEVZERO), ("compare-json",)),
    ("summary.json unreadable", _kind("summary", UNREADABLE), ("table-csv",)),
    (
        "index line of an earlier version placed by x/../outside/summary.json",
        _lines(_old_line("x/../outside/summary.json")),
        ("report", "merge"),
    ),
    (
        "a stage named with ESC[31m",
        _summary("kernel.stage", "\x1b[31mred\x1b[0m"),
        ("compare-chart",),
    ),
    ("budget: a 4301-digit number", _budget(BUDGET_HOSTILE[0].encode()), ("compare-budget",)),
]


def corpus(subprocess_run=False):
    """[(test id, Example)]: each family given to each of its commands."""
    found = []
    for what, change, commands in SUBPROCESS_FAMILIES if subprocess_run else FAMILIES:
        for command in commands:
            example = benign_example(command, subprocess_run)
            example.focus = what
            change(example)
            found.append(("{}: {}".format(command, what), example))
    return found


# ---- making it -------------------------------------------------------------------------

_BLOCKS = {}


def valid_blocks(base: str) -> bytes:
    """blocks.json of the profile behind a base summary, made by `extract blocks` once
    per process."""
    profile = BLOCKS_PROFILE[base]
    if profile not in _BLOCKS:
        folder = Path(tempfile.mkdtemp(prefix="derivedfuzz-blocks-"))
        try:
            target = folder / "blocks.json"
            result = invoke_extract("blocks", profile, "-o", target, "-q", pva=False)
            assert result.code == 0, "extract blocks {}: {!r}".format(profile, result)
            _BLOCKS[profile] = target.read_bytes()
        finally:
            shutil.rmtree(str(folder), ignore_errors=True)
    return _BLOCKS[profile]


def dumps(document) -> str:
    """JSON text of a document that may hold Raw pieces (and NaN, lone surrogates)."""
    pieces = {}

    def swap(value):
        if isinstance(value, Raw):
            key = "@@RAW{}@@".format(len(pieces))
            pieces[key] = value.text
            return key
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return value

    text = json.dumps(swap(document), indent=2)
    for key, raw in pieces.items():
        text = text.replace('"{}"'.format(key), raw)
    return text


def mutate_summary(data, target, index, value):
    """Apply one mutation to a summary's parsed JSON; the new document."""
    if target == "document":
        return value
    if not isinstance(data, dict):
        return data
    if target.startswith("delete:"):
        data.pop(target[len("delete:") :], None)
        return data
    key, _, field = target.partition(".")
    lists = {"kernel": "kernels", "exchange": "attention_exchanges", "device_span": "device_spans"}
    if key in lists:
        items = data.get(lists[key])
        if not isinstance(items, list) or not items:
            return data
        at = index % len(items)
        if key == "device_span":
            items[at] = value
        elif isinstance(items[at], dict):
            if field.endswith(":delete"):
                items[at].pop(field[: -len(":delete")], None)
            else:
                items[at][field] = value
        return data
    if field and isinstance(data.get(key), dict):
        data[key][field] = value
    elif not field:
        data[key] = value
    return data


def mutate_blocks(text: bytes, mutations) -> bytes:
    data = json.loads(text.decode("utf-8"))
    for mutation in mutations:
        if not isinstance(data, dict):
            break
        stats, bodies = data.get("stats"), data.get("blocks")
        first = next(iter(stats)) if isinstance(stats, dict) and stats else None
        if mutation == "stats a list":
            data["stats"] = [1, 2]
        elif mutation == "blocks a number":
            data["blocks"] = 7
        elif mutation == "stages a string":
            data["stages"] = "PV"
        elif mutation == "total text":
            data["total"] = "lots"
        elif mutation == "a body's cycles text" and isinstance(bodies, list) and bodies:
            bodies[0]["cycles"] = "many"
        elif mutation == "a body's run null" and isinstance(bodies, list) and bodies:
            bodies[0]["run"] = None
        elif mutation.startswith("median ") and first:
            stats[first]["median"] = {
                "median 400 digits": big(400),
                "median NaN": float("nan"),
                "median 1e400": Raw("1e400", "1e400"),
                "median negative": -12345,
            }[mutation]
        elif mutation == "total median 2**64" and isinstance(data.get("total"), dict):
            data["total"]["median"] = Raw(str(2**64), "2**64")
        elif mutation == "40 extra stage keys" and isinstance(stats, dict):
            for number in range(40):
                label = "extra stage {}".format(number)
                stats[label] = dict(stats[first]) if first else {"median": number}
                if isinstance(data.get("stages"), list):
                    data["stages"].append(label)
        elif mutation == "500 bodies" and isinstance(bodies, list) and bodies:
            data["blocks"] = [dict(bodies[n % len(bodies)], block=n) for n in range(500)]
        elif mutation == "hostile stage labels" and isinstance(stats, dict):
            for label in HOSTILE_NAMES[:12]:
                stats[label] = dict(stats[first]) if first else {"median": 1}
                if isinstance(data.get("stages"), list):
                    data["stages"].append(label)
                if (
                    isinstance(bodies, list)
                    and bodies
                    and isinstance(bodies[0], dict)
                    and isinstance(bodies[0].get("cycles"), dict)
                ):
                    bodies[0]["cycles"][label] = 17
        elif mutation == "deep nesting":
            data["stats"] = DEEP
        elif mutation == "not JSON":
            return b"{ not json"
        elif mutation == "a JSON list":
            data = [data]
        elif mutation == "empty object":
            data = {}
    return dumps(data).encode("ascii")


def make_kind(path: Path, kind: str, content: bytes, root: Path, outside_name: str) -> None:
    """Put `kind` at `path` (FILE: `content`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind in (FILE, UNREADABLE):
        path.write_bytes(content)
        if kind == UNREADABLE:
            os.chmod(str(path), 0)
    elif kind == FIFO:
        os.mkfifo(str(path))
    elif kind == DIR:
        path.mkdir()
        (path / "keep").write_bytes(b"keep\n")
    elif kind == LINK_OUTSIDE:
        os.symlink(str(root / "outside" / outside_name), str(path))
    elif kind == LINK_FIFO:
        os.symlink(str(root / "outside" / "fifo"), str(path))
    elif kind == LINK_DEVZERO:
        os.symlink("/dev/zero", str(path))
    else:
        raise AssertionError(kind)


class Built:
    """What an example became on disk: paths, arguments, and what the checks need."""

    def __init__(self, example: Example, root: Path):
        self.example, self.root = example, root
        self.batch = root / "batch"  # OUTDIR: the index is here
        self.top = self.batch / "runs" if example.nested else self.batch
        self.outside, self.out, self.cwd = root / "outside", root / "out", root / "cwd"
        self.invalid = {}  # recording folder -> why its summary is not one
        self.invalid_blocks = {}  # recording folder -> why its blocks.json is not one
        self.summaries = []  # the regular summary files the command must read
        self.args, self.given, self.declared = [], [], set()
        self.budget_path = None


def plant_outside(root: Path) -> None:
    """What lies outside the folders given: files named as extract's, and a FIFO."""
    outside = root / "outside"
    (outside / "r0").mkdir(parents=True)
    planted = json.loads(BASES["vit-f8weight"].read_text())
    planted["profile"] = "PLANTED OUTSIDE: never to be read"
    text = dumps(planted).encode()
    (outside / "summary.json").write_bytes(text)
    (outside / "r0" / "summary.json").write_bytes(text)
    (outside / "blocks.json").write_bytes(valid_blocks("one-anchor"))
    line = json.dumps(
        {
            "profile": "outside",
            "summary": "r0/summary.json",
            "status": "failed",
            "reason": "PLANTED OUTSIDE",
            "output": str(outside / "r0" / "summary.json"),
        }
    )
    for name in ("index.jsonl", "index-shard-1-of-2.jsonl"):
        (outside / name).write_text(line + "\n")
    (outside / "budget.toml").write_text(BUDGET_GOOD[0])
    os.mkfifo(str(outside / "fifo"))


def summary_problem(document):
    """Why a (mutated) summary is not one, as far as its readers use it; None if it is.
    The harness's own reading of the summary's types, independent of extractor.core.model."""

    def number(value, whole=False):
        if isinstance(value, Raw):
            return False  # 1e400, 2**64, 400 digits, deep nesting: never a summary's
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if isinstance(value, float):
            return not whole and math.isfinite(value)
        return -(2**64) < value < 2**64

    def raw_anywhere(value):
        if isinstance(value, Raw):
            return True
        if isinstance(value, float) and not math.isfinite(value):
            return True
        if isinstance(value, list):
            return any(raw_anywhere(v) for v in value)
        if isinstance(value, dict):
            return any(raw_anywhere(v) for v in value.values())
        return False

    if not isinstance(document, dict):
        return "not a JSON object"
    if raw_anywhere(document):
        return (
            "a number no summary holds (NaN, Infinity, 1e400, 2**64 or more), or nesting too deep"
        )
    for key in (
        "profile",
        "kernels",
        "attention_exchanges",
        "exchange_memory_per_tile",
        "device_spans",
        "qkv_executions",
        "allocated_memory",
    ):
        if key not in document:
            return "no {!r}".format(key)
    if not isinstance(document["profile"], str):
        return "'profile' is {}, not text".format(type(document["profile"]).__name__)
    kernels = document["kernels"]
    if not isinstance(kernels, list) or not all(
        isinstance(k, dict)
        and isinstance(k.get("stage"), str)
        and "cycles" in k
        and (k["cycles"] is None or number(k["cycles"], whole=True))
        for k in kernels
    ):
        return "'kernels' is not a list of kernels with a stage and whole cycles"
    if not all(isinstance(k.get("name"), str) for k in kernels):
        return "a kernel's 'name' is not text"
    exchanges = document["attention_exchanges"]
    if exchanges is not None and not (
        isinstance(exchanges, list)
        and all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and number(e.get("maximum"))
            and number(e.get("mean"))
            for e in exchanges
        )
    ):
        return "'attention_exchanges' is neither null nor a list of {name, maximum, mean}"
    spans = document["device_spans"]
    if not isinstance(spans, list) or not all(number(s, whole=True) for s in spans):
        return "'device_spans' is not a list of whole numbers"
    if not number(document["qkv_executions"], whole=True):
        return "'qkv_executions' is not a whole number"
    for key, fields in (
        ("exchange_memory_per_tile", ("min(b)", "avg(b)", "max(b)")),
        ("allocated_memory", ("min(total)", "avg(total)", "max(total)")),
    ):
        value = document[key]
        if not isinstance(value, dict) or not all(
            f in value and (value[f] is None or number(value[f])) for f in fields
        ):
            return "{!r} is not an object of {}".format(key, ", ".join(fields))
    return None


def index_bytes(built: Built, line, names) -> bytes:
    """One index line's bytes: raw ones as they are; else a realistic entry for its
    recording with the drawn fields put over it."""
    if isinstance(line, bytes):
        return line
    example, root = built.example, str(built.root)
    recording = example.recordings[line["recording"] % len(example.recordings)]
    rel = ("runs/" if example.nested else "") + recording.name + "/summary.json"
    summary = built.top / recording.name / "summary.json"
    digest = (
        hashlib.sha256(summary.read_bytes()).hexdigest() if recording.kind == FILE else "0" * 64
    )
    entry = {
        "profile": "runs/{}/profile.pop".format(recording.name),
        "summary": rel,
        "output": str(summary),
        "status": "ok",
        "warnings": [],
        "summary_sha256": digest,
        "tool_version": "0.0.0",
        "size": 299008,
        "mtime_ns": 1764547200000000000,
        "rules_sha256": "0" * 64,
        "pva": True,
        "csv": False,
        "blocks": recording.blocks is not None,
        "device_spans": [1, 2],
        "qkv_executions": 54,
        "stage_cycles": {"PV": 1},
        "finished_at": "2026-12-01T12:00:00.000+00:00",
    }
    if recording.blocks is not None:  # as a batch with --blocks records it
        blocks = built.top / recording.name / "blocks.json"
        entry["blocks_sha256"] = (
            hashlib.sha256(blocks.read_bytes()).hexdigest()
            if blocks.is_file() and not blocks.is_symlink()
            else "0" * 64
        )
    for key, drawn in line.items():
        if key == "recording":
            continue
        if drawn == DELETED:
            entry.pop(key, None)
            continue
        value = drawn.replace("{ROOT}", root) if isinstance(drawn, str) else drawn
        if value == "match":  # the sha256 of what the hostile path leads to, if a file
            target = built.outside / "summary.json"
            value = hashlib.sha256(target.read_bytes()).hexdigest()
        entry[key] = value
    if entry["status"] == "failed":
        entry.setdefault("reason", "{}: not an SQLite database".format(entry["profile"]))
    return json.dumps(entry).encode("ascii")


def build(example: Example, root: Path) -> Built:
    built = Built(example, root)
    for folder in (built.batch, built.out, built.cwd):
        folder.mkdir(parents=True, exist_ok=True)
    plant_outside(root)
    for recording in example.recordings:
        folder = built.top / recording.name
        data = json.loads(BASES[recording.base].read_text())
        data["profile"] = (
            "runs/{}/profile.pop".format(recording.name) if isinstance(data, dict) else data
        )
        for target, index, value in recording.mutations:
            data = mutate_summary(data, target, index, value)
        text = dumps(data).encode("ascii")
        make_kind(folder / "summary.json", recording.kind, text, root, "summary.json")
        if recording.kind == FILE:
            built.summaries.append(folder / "summary.json")
            why = summary_problem(data)
            if why:
                built.invalid[recording.name] = why
        if recording.blocks is not None:
            blocks = valid_blocks(recording.base)
            if recording.blocks:
                blocks = mutate_blocks(blocks, recording.blocks)
            make_kind(folder / "blocks.json", recording.blocks_kind, blocks, root, "blocks.json")
            bad = [m for m in recording.blocks if m in BLOCKS_INVALID]
            if bad and recording.kind == FILE and recording.blocks_kind == FILE:
                built.invalid_blocks[recording.name] = bad[0]
    if any(
        isinstance(line, dict) and isinstance(line.get(k), str) and "link/" in line[k]
        for line in example.lines
        for k in ("output", "summary")
    ):
        os.symlink(str(built.outside), str(built.batch / "link"))  # inside, to outside
    names = [r.name for r in example.recordings]
    files = {}
    for number, line in enumerate(example.lines):
        name = (
            "index-shard-{}-of-2.jsonl".format(number % 2 + 1)
            if example.shards and number % 3 == 2
            else "index.jsonl"
        )
        files.setdefault(name, []).append(index_bytes(built, line, names))
    if example.shards:
        files.setdefault("index-shard-2-of-2.jsonl", [])
    for name, lines in files.items():
        data = b"".join(line + b"\n" for line in lines)
        if example.torn and name == "index.jsonl" and data:
            data = data[: -max(2, len(lines[-1]) // 2)]
        make_kind(
            built.batch / name,
            example.index_kind if name == "index.jsonl" else FILE,
            data,
            root,
            "index.jsonl",
        )
    (built.batch / ".index.jsonl.lock").write_bytes(b"")  # as every batch leaves it
    if example.budget is not None:
        built.budget_path = root / "budget" / "budget.toml"
        make_kind(built.budget_path, example.budget_kind, example.budget, root, "budget.toml")
    built.args, built.given, built.declared = command_line(built)
    return built


def command_line(built: Built):
    """(arguments, the paths given, the declared outputs) of the example's command."""
    example, options = built.example, built.example.options
    verb = example.command.split("-")[0]
    if verb == "merge":
        return (
            ["merge", built.batch],
            [built.batch],
            {
                str(built.batch / "index.jsonl"),
                str(built.batch / ".index.jsonl.lock"),
                str(built.batch / ".index-shard-1-of-2.jsonl.lock"),
                str(built.batch / ".index-shard-2-of-2.jsonl.lock"),
            },
        )
    inputs = [built.top]
    if options.get("split"):  # each recording's folder an argument of its own
        inputs = [built.top / r.name for r in example.recordings]
    args, given, declared = [verb] + inputs, list(inputs), set()
    if verb == "compare":
        args += ["-f", options["format"]]
        if options.get("stat"):
            args += ["--stat", options["stat"]]
        if options.get("chart"):
            declared.add(str(built.out / "chart.svg"))
            args += ["--chart", built.out / "chart.svg"]
        if options.get("junit"):
            declared.add(str(built.out / "junit.xml"))
            args += ["--junit", built.out / "junit.xml"]
    elif verb == "table":
        args += ["-f", example.command.split("-")[1]]
    if options.get("to_file"):
        target = built.out / ("report.html" if verb == "report" else "table.out")
        declared.add(str(target))
        args += ["-o", target]
    if built.budget_path is not None:
        args += ["--budget", built.budget_path]
        given.append(built.budget_path)
    if declared:
        given.append(built.out)
    return args, given, declared


# ---- running ---------------------------------------------------------------------------


class Run:
    def __init__(self, code, stdout: bytes, stderr: str, hung: bool, opened):
        self.code, self.stdout, self.stderr, self.hung = code, stdout, stderr, hung
        self.opened = opened  # (path, flags, cwd) of every open for reading
        self.lines = stderr.splitlines()

    def __repr__(self):
        return "exit {}{}; stdout {} bytes; stderr: {}".format(
            self.code,
            " (killed: it hung)" if self.hung else "",
            len(self.stdout),
            "\n    ".join(short(line, 300) for line in self.lines[-8:]) or "(nothing)",
        )


# While an in-process run is watched, "events" is the list its opens go to.
_WATCH = {"events": None, "hooked": False}


def _audit(event, args):
    if event == "open" and _WATCH["events"] is not None:
        _WATCH["events"].append(args)


def _reads(events, cwd):
    """(path, cwd, flags) of the events that opened a path for reading (flags None
    when the event gave none)."""
    found = []
    for args in events:
        path = args[0]
        if isinstance(path, int):
            continue
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            continue
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else None
        if isinstance(mode, str) and mode:
            reading = "r" in mode or "+" in mode
        elif flags is not None:
            reading = flags & os.O_ACCMODE in (os.O_RDONLY, os.O_RDWR) and not (
                flags & getattr(os, "O_PATH", 0)
            )  # O_PATH reads nothing
        else:
            reading = True
        if reading:
            found.append((path, cwd, flags))
    return found


def run_inprocess(built: Built) -> Run:
    if not _WATCH["hooked"]:  # once per process: an audit hook cannot be removed
        sys.addaudithook(_audit)
        _WATCH["hooked"] = True
    events = []
    _WATCH["events"] = events
    try:
        result = invoke_extract(*built.args, cwd=built.cwd, pva=False, timeout=TIMEOUT)
        hung = False
    except InProcessTimeout:
        result, hung = None, True
    finally:
        _WATCH["events"] = None
    opened = _reads(events, str(built.cwd))
    if hung:
        return Run(None, b"", "", True, opened)
    return Run(result.code, result.stdout, result.stderr, False, opened)


SITECUSTOMIZE = '''\
"""Installed by tests/support/derivedfuzz.py: log every path opened (audit event "open")."""
import json
import os
import sys

_log = os.environ.get("EXTRACT_AUDIT_LOG")
if _log:
    import resource  # a read of /dev/zero ends in MemoryError, not the machine's memory

    _limit = int(os.environ.get("EXTRACT_AUDIT_MEMORY", "0"))
    if _limit:
        resource.setrlimit(resource.RLIMIT_AS, (_limit, _limit))
    _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def _hook(event, args, _fd=_fd, _write=os.write, _dumps=json.dumps, _getcwd=os.getcwd):
        if event != "open" or isinstance(args[0], int):
            return
        try:
            path = os.fsdecode(os.fspath(args[0]))
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else None
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else None
            _write(_fd, (_dumps([path, mode, flags, _getcwd()]) + "\\n").encode("ascii"))
        except Exception:
            pass

    sys.addaudithook(_hook)
'''

_SITE = []


def audit_site() -> Path:
    """A folder holding the sitecustomize.py above (made once per process)."""
    if not _SITE:
        folder = Path(tempfile.mkdtemp(prefix="derivedfuzz-site-"))
        (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
        _SITE.append(folder)
    return _SITE[0]


_PREFIX = []


def run_subprocess(built: Built) -> Run:
    """The real `extract` in a session of its own, the audit hook logging its opens,
    without root's permission bypass (so that an unreadable file is one)."""
    if not _PREFIX:
        _PREFIX.append(without_root_privileges() or [])  # none: as root, permissions bypassed
    log = built.root / "audit.log"  # not under a folder given
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(audit_site()), str(PVA_DOUBLE)])
    env["EXTRACT_AUDIT_LOG"] = str(log)
    env["EXTRACT_AUDIT_MEMORY"] = str(MEMORY_LIMIT)
    process = subprocess.Popen(
        _PREFIX[0] + extract_command() + [str(a) for a in built.args],
        cwd=str(built.cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    hung = False
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        hung = True
    opened = []
    if log.exists():
        for text in log.read_text().splitlines():
            path, mode, flags, cwd = json.loads(text)
            opened.extend(_reads([(path, mode, flags)], cwd))
        log.unlink()
    return Run(
        None if hung else process.returncode,
        out,
        err.decode("utf-8", "backslashreplace"),
        hung,
        opened,
    )


# ---- the checks ------------------------------------------------------------------------


def _prefixes():
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    found.add(site.getusersitepackages() if hasattr(site, "getusersitepackages") else "")
    found.update(p for p in sys.path if p and "site-packages" in p)
    found.update(os.path.dirname(os.__file__) for _ in [0])
    return [os.path.realpath(p) for p in found if p]


# Python's own files, the installed packages, the repository's code (the package, its
# templates and stage rules, the pva stand-in), and what the system gives every process.
ALLOWED_SYSTEM = [
    "/dev/null",
    "/dev/urandom",
    "/proc/",
    "/sys/",
    "/etc/",
    "/usr/share/",
    "/usr/lib/locale/",
]
_CODE = [str(REPO / "extractor"), str(REPO / "stage_rules.toml"), str(PVA_DOUBLE)]
INDEX_FILE = re.compile(
    r"^(index(-shard-\d+-of-\d+)?\.jsonl|\.index(-shard-\d+-of-\d+)?"
    r"\.jsonl\.lock)$"
)


def under(path: str, folder: str) -> bool:
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder + "/") or folder == "/"


def read_violations(built: Built, run: Run) -> list:
    """(d): the paths read that the command had no business reading."""
    given = [os.path.realpath(str(p)) for p in built.given]
    folders = [g for g in given if os.path.isdir(g)]
    system = _prefixes() + [os.path.realpath(p) for p in _CODE] + [str(audit_site())]
    bad = []
    for path, cwd, flags in run.opened:
        full = os.path.normpath(os.path.join(cwd, path))
        if not os.path.isabs(path) and not os.path.lexists(full):
            # A bare name opened relative to a folder's descriptor (os.open(name,
            # dir_fd=...): the index readers walk OUTDIR one folder at a time so that no
            # link leads out). The audit event does not carry the folder, and the run's
            # working folder is empty, so the name read nothing there; what it read is
            # held inside OUTDIR by the walk itself (tests/test_index_paths.py).
            continue
        real = os.path.realpath(full)
        if flags is not None and flags & getattr(os, "O_NOFOLLOW", 0):
            # The last link is not followed: refused (ELOOP), or read where it is.
            real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
        if any(under(real, g) for g in given):
            continue
        if os.path.isdir(real) and any(under(g, real) for g in folders):
            continue  # a folder above an argument, opened to look for an index in it
        if (
            INDEX_FILE.match(os.path.basename(real))
            and os.path.basename(real) == os.path.basename(full)
            and any(under(g, os.path.dirname(real)) for g in folders)
        ):
            continue  # an index in an argument's folder or above it
        if any(under(real, s) or under(full, s) for s in system) or any(
            full.startswith(a) or real.startswith(a) for a in ALLOWED_SYSTEM
        ):
            continue
        shown = real if real == full else "{} (that is {})".format(full, real)
        bad.append(
            shown.replace(str(built.root), "ROOT").replace(str(built.root.parent), "ROOT/..")
        )
    return sorted(set(bad))


def snapshot(root: Path, skip) -> dict:
    """Every path under root but `skip` (links not followed; FIFOs never opened)."""
    states = {}
    for folder, subfolders, files in os.walk(str(root)):
        subfolders[:] = [s for s in subfolders if os.path.join(folder, s) not in skip]
        for name in subfolders + files:
            path = os.path.join(folder, name)
            if path in skip:
                continue
            info = os.lstat(path)
            state = (stat.S_IFMT(info.st_mode), info.st_ino, stat.S_IMODE(info.st_mode))
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    state += (
                        info.st_size,
                        info.st_mtime_ns,
                        hashlib.sha256(handle.read()).hexdigest(),
                    )
            elif stat.S_ISLNK(info.st_mode):
                state += (os.readlink(path),)
            states[path] = state
    return states


def partials(root: Path) -> list:
    return sorted(
        os.path.join(f, n)
        for f, _, names in os.walk(str(root))
        for n in names
        if n.endswith(".partial")
    )


_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?%?$")


def _reject_constant(name):
    raise ValueError("{} is not JSON".format(name))


def check_json(data: bytes, what: str) -> list:
    try:
        json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return ["{} is not strict JSON: {}".format(what, short(str(exc), 200))]
    return []


def check_jsonl(data: bytes, what: str) -> list:
    if data and not data.endswith(b"\n"):
        return ["{} does not end with a newline".format(what)]
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            value = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return ["{} line {} is not strict JSON: {}".format(what, number, short(str(exc), 200))]
        if not isinstance(value, dict):
            return ["{} line {} is not a JSON object".format(what, number)]
    return []


def check_csv(data: bytes, what: str, header=None) -> list:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ["{} is not UTF-8: {}".format(what, exc)]
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        return ["{} is not CSV: {}".format(what, exc)]
    if not rows:
        return ["{} is empty".format(what)]
    problems = []
    if header is not None and rows[0] != header:
        problems.append("{}'s header is {}, not {}".format(what, short(rows[0]), header))
    width = len(rows[0])
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            problems.append(
                "{} row {} has {} cells, the header {}: {}".format(
                    what, number, len(row), width, short(row, 200)
                )
            )
            break
    for number, row in enumerate(rows, start=1):
        formula = [
            c for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.match(c)
        ]
        if formula:
            problems.append(
                "{} row {} has a formula cell (a spreadsheet runs it): {}".format(
                    what, number, short(formula[0], 100)
                )
            )
            break
    return problems


def _cells(line: str):
    """The number of cells of a markdown table row, or None if it is not one. As GitHub's
    table scanner splits a row: at each pipe not right after a backslash (a pipe is
    escaped by the backslash before it, whatever comes before that)."""
    if not line.startswith("|"):
        return None
    pipes = [
        at for at, char in enumerate(line) if char == "|" and (at == 0 or line[at - 1] != "\\")
    ]
    if pipes[-1] != len(line) - 1:
        return None
    return len(pipes) - 1


def check_markdown(data: bytes, what: str) -> list:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ["{} is not UTF-8: {}".format(what, exc)]
    lines = re.split(r"\r\n|\r|\n", text)  # CommonMark's line endings
    start = next((n for n, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ["{} has no table".format(what)]
    width = _cells(lines[start])
    if width is None:
        return [
            "{} line {} is a table's header cut short (a name split the row?): {}".format(
                what, start + 1, short(lines[start], 200)
            )
        ]
    for number in range(start, len(lines)):
        line = lines[number]
        if not line:
            break
        cells = _cells(line)
        if cells != width:
            return [
                "{} line {} is not a table row of {} cells (a name split the row?): {}".format(
                    what, number + 1, width, short(line, 200)
                )
            ]
    return []


def check_xml(data: bytes, what: str) -> list:
    try:
        ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        return ["{} is not XML: {}".format(what, exc)]
    return []


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts, self.active = 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if tag in ("img", "iframe", "object", "embed"):
            self.active.append("<{}>".format(tag))
        for name, value in attrs:
            if name.startswith("on"):
                self.active.append("<{} {}=...>".format(tag, name))
            if (
                value
                and name in ("href", "src")
                and value.strip().lower().startswith("javascript:")
            ):
                self.active.append("<{} {}=javascript:...>".format(tag, name))

    handle_startendtag = handle_starttag


def html_tags(data: bytes):
    parser = _Tags()
    parser.feed(data.decode("utf-8"))
    parser.close()
    return parser


_BENIGN_PAGE = []


def benign_scripts() -> int:
    """How many <script> elements the page of a benign batch has."""
    if not _BENIGN_PAGE:
        root = Path(tempfile.mkdtemp(prefix="derivedfuzz-benign-"))
        try:
            built = build(benign_example("report"), root / "case")
            run = run_inprocess(built)
            assert run.code == 0, run
            tags = html_tags((built.out / "report.html").read_bytes())
            assert not tags.active, tags.active
            _BENIGN_PAGE.append(tags.scripts)
        finally:
            tidy(root)
    return _BENIGN_PAGE[0]


def check_html(data: bytes, what: str) -> list:
    try:
        tags = html_tags(data)
    except UnicodeDecodeError as exc:
        return ["{} is not UTF-8: {}".format(what, exc)]
    problems = []
    if tags.scripts != benign_scripts():
        problems.append(
            "{} has {} <script> elements, the benign page {}: a name became markup".format(
                what, tags.scripts, benign_scripts()
            )
        )
    if tags.active:
        problems.append(
            "{} has {} from a name (a benign page has none)".format(
                what, ", ".join(sorted(set(tags.active)))
            )
        )
    return problems


def check_output(built: Built, run: Run) -> list:
    """(a): what a run that succeeded wrote."""
    example, options = built.example, built.example.options
    verb = example.command.split("-")[0]
    problems = []
    target = built.out / ("report.html" if verb == "report" else "table.out")
    if options.get("to_file"):
        if run.stdout:
            problems.append("{} bytes on stdout with -o".format(len(run.stdout)))
        if not target.is_file():
            return problems + ["exit {} and no -o file".format(run.code)]
        data, what = target.read_bytes(), "the -o file"
    else:
        data, what = run.stdout, "stdout"
    if verb == "compare":
        fmt = options["format"]
        problems += {"markdown": check_markdown, "csv": check_csv, "json": check_json}[fmt](
            data, "compare -f {} output".format(fmt)
        )
        for name, flag in (("chart.svg", "chart"), ("junit.xml", "junit")):
            if options.get(flag):
                path = built.out / name
                if not path.is_file():
                    problems.append("exit {} and no --{} file".format(run.code, flag))
                else:
                    problems += check_xml(path.read_bytes(), "the --{} file".format(flag))
    elif example.command == "table-csv":
        problems += check_csv(
            data, "table CSV ({})".format(what), ["recording", "profile", "metric", "value"]
        )
    elif example.command == "table-jsonl":
        problems += check_jsonl(data, "table JSON Lines ({})".format(what))
    elif verb == "report":
        problems += check_html(data, "the report ({})".format(what))
    elif verb == "merge":
        index = built.batch / "index.jsonl"
        if run.stdout:
            problems.append("{} bytes on stdout".format(len(run.stdout)))
        if not index.is_file() or index.is_symlink():
            problems.append("merge exit 0 and no regular index.jsonl")
        else:
            problems += check_jsonl(index.read_bytes(), "merged index.jsonl")
    return problems


def check_run(built: Built, run: Run, before: dict, after: dict) -> list:
    example = built.example
    problems = []
    if run.hung:
        problems.append("(c) hung: killed after {:.0f} s".format(TIMEOUT))
    else:
        ok_codes = (0, 3) if example.command == "compare-budget" else (0,)
        text = run.stderr
        if "Traceback" in text or "unexpected failure" in text:
            line = next((each for each in run.lines if "unexpected failure" in each), None) or (
                run.lines[-1] if run.lines else ""
            )
            problems.append("(b) a traceback or unexpected failure: {}".format(short(line, 300)))
        if run.code in ok_codes:
            others = [
                each
                for each in run.lines
                if not (
                    each.startswith("budget: ")
                    or each.startswith("extract: warning: ")
                    or (example.command == "merge" and each.endswith(" profiles"))
                )
            ]
            if others:
                problems.append(
                    "(a) exit {} with stderr lines: {}".format(run.code, short(others[0], 200))
                )
            problems += ["(a) " + p for p in check_output(built, run)]
            if built.invalid and example.command != "merge":  # merge reads no summary
                name, why = sorted(built.invalid.items())[0]
                problems.append(
                    "(f) exit {}: accepted {}/summary.json, which is not a summary: {}".format(
                        run.code, short(name, 60), why
                    )
                )
            if built.invalid_blocks and example.command in ("compare-stat", "report"):
                name, why = sorted(built.invalid_blocks.items())[0]
                problems.append(
                    "(f) exit {}: accepted {}/blocks.json, which is not a blocks file: {}".format(
                        run.code, short(name, 60), why
                    )
                )
        elif run.code in (1, 2):
            errors = [each for each in run.lines if each.startswith("extract: error: ")]
            if len(run.lines) != 1 or len(errors) != 1:
                problems.append(
                    "(b) exit {} with {} stderr lines, not one error line: {}".format(
                        run.code, len(run.lines), short(run.lines[:3], 300)
                    )
                )
            if run.stdout:
                problems.append(
                    "(b) exit {} and {} bytes on stdout".format(run.code, len(run.stdout))
                )
        else:
            problems.append("(b) exit code {}".format(run.code))
    bad = read_violations(built, run)
    if bad:
        problems.append(
            "(d) read outside the folders given: {}".format(
                ", ".join(short(b, 160) for b in bad[:4])
            )
        )
    folders = [os.path.realpath(str(g)) for g in built.given if os.path.isdir(str(g))]

    def own_lock(path):
        """A new empty lock file of an index the command may lock to read it (in an
        argument's folder or above it): a batch would have left it there anyway."""
        state = after.get(path)
        return (
            before.get(path) is None
            and state is not None
            and stat.S_ISREG(state[0])
            and state[3] == 0
            and INDEX_FILE.match(os.path.basename(path))
            and os.path.basename(path).endswith(".lock")
            and any(under(f, os.path.dirname(path)) for f in folders)
        )

    changed = sorted(
        p
        for p in set(before) | set(after)
        if before.get(p) != after.get(p)
        and not (
            p in built.declared
            and after.get(p) is not None
            and stat.S_ISREG(after[p][0])
            and (before.get(p) is None or stat.S_ISREG(before[p][0]))
        )
        and not own_lock(p)
    )
    if changed:
        problems.append(
            "(e) changed under the folders given: {}".format(
                ", ".join(short(p.replace(str(built.root), "ROOT"), 120) for p in changed[:4])
            )
        )
    left = partials(built.root)
    if left:
        problems.append(
            "(e) a .partial file left: {}".format(left[0].replace(str(built.root), "ROOT"))
        )
    return problems


def tidy(root: Path) -> None:
    for folder, _, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path) and os.path.isfile(path):
                os.chmod(path, 0o644)
    shutil.rmtree(str(root), ignore_errors=True)


def run_example(example: Example, keep=None):
    """Build, run and check one example; (problems, report)."""
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="derivedfuzz-"))
    case = root / "case"
    try:
        built = build(example, case)
        skip = {str(built.out), str(case / "audit.log")}
        before = snapshot(case, skip)
        run = (run_subprocess if example.subprocess else run_inprocess)(built)
        after = snapshot(case, skip)
        problems = check_run(built, run, before, after)
        report = "{!r}\n  command: extract {}\n  run: {!r}".format(
            example, " ".join(short(str(a).replace(str(case), "ROOT"), 80) for a in built.args), run
        )
    finally:
        if not keep:
            tidy(root)
    report += "".join("\n  BROKEN {}: {}".format(example.command, p) for p in problems)
    return problems, report


# ---- a survey: every problem of many examples, tallied ----------------------------------


def category(problem: str) -> str:
    """A problem without its particulars, to tally distinct ones."""
    text = re.sub(r"ROOT\S*", "ROOT/...", problem)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def print_tally(found: dict, reports: bool, width: int) -> int:
    """A survey's tally (`tally`), a line per (command, kind of failure) with its count and,
    with `reports`, one example's report; the exit code: 1 when anything was found."""
    for (command, what), (times, report) in sorted(found.items()):
        print("{:4} {:{}} {}".format(times, command, width, what))
        if reports:
            print("      " + report.replace("\n", "\n      "))
    return 1 if found else 0


def tally(strategies: dict, run, count: int, seed_value=None) -> dict:
    """Run `count` examples of each strategy (name -> strategy) through `run` (an example
    -> (problems, report, ...)): {(name, category): [times, a report]}. Derandomized
    unless a seed is given."""
    from hypothesis import HealthCheck, given, seed, settings

    found = {}

    def one_kind(name, strategy):
        @settings(
            max_examples=count,
            deadline=None,
            database=None,
            derandomize=seed_value is None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def one(example):
            problems, report = run(example)[:2]
            for problem in problems:
                key = (name, category(problem))
                found.setdefault(key, [0, report])
                found[key][0] += 1

        return seed(int(seed_value))(one) if seed_value is not None else one

    for name, strategy in strategies.items():
        one_kind(name, strategy)()
    return found


def survey(commands, count: int, subprocess_run: bool, seed_value=None) -> dict:
    strategies = {command: examples(command, subprocess_run) for command in commands}
    return tally(strategies, run_example, count, seed_value)


def main(argv) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Tally what the derived-input fuzz finds.")
    parser.add_argument("mode", choices=["survey"])
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--command", action="append", choices=COMMANDS)
    parser.add_argument("--subprocess", action="store_true")
    parser.add_argument("--seed")
    parser.add_argument("--reports", action="store_true", help="print one example each")
    options = parser.parse_args(argv)
    found = survey(options.command or COMMANDS, options.examples, options.subprocess, options.seed)
    return print_tally(found, options.reports, width=16)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
