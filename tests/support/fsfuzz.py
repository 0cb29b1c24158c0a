"""The file-system fuzz layer: random kinds of file where extract reads and writes, and
docs/errors.md's promises about them (tests/test_fuzz_fs.py runs it; docs/fuzzing.md).

An example is drawn from a seed alone (`random.Random("fsfuzz:SEED:MODE:N")`), so any
failing one is rebuilt and rerun by

    python tests/support/fsfuzz.py single 17 [--seed S] [--keep DIR]

which prints its layout, its command, what extract did and every broken promise.

A layout lives in one temporary folder: `in/` holds the inputs, `out/` the outputs,
`elsewhere/` the targets of symbolic links. At each path extract reads or writes -- the
profile (a single run's PROFILE, or every `profile.pop` of a batch's tree), the output
(`-o FILE`, and `summary.json`, `steps.csv`, `first-body.csv`, `index.jsonl` and its
lock file `.index.jsonl.lock` inside OUTDIR), and the output's folder (OUTDIR, or
`-o FILE`'s folder) -- it puts one of KINDS: nothing, a good file, a folder, a FIFO, a
character device (a private /dev/null), a symbolic link to each, a dangling link, a
link loop, an unreadable file or folder, a read-only folder; and some folder names
carry a byte that is not UTF-8.

The promises checked (`problems` returns each one broken, as a sentence):
- no hang (a subprocess time limit), exit code 0, 1 or 2;
- every stderr line is `extract: error|warning|note: ...`, a batch's progress line or its
  last line; no traceback, no `unexpected failure`; stderr is UTF-8 text; a failed single
  run prints exactly one error line, a successful one none;
- nothing outside the output area appears, changes or goes (the inputs above all);
  inside it only the tool's own files (summaries, step tables, the index, a lock) appear
  or change, no temporary file is left, and no FIFO, device or folder is ever replaced,
  nor (for `-o`) a link to one;
- a failed single run changes nothing at all (new empty folders aside);
- whatever extract writes for a good profile is that profile's exact summary (the
  fixture's expected.json with the path as typed, shown as extract shows paths, for
  `profile`) and step tables; a good profile with clean output paths is summarised, in
  a single run and in a batch beside hostile entries; a hostile "profile" is never
  summarised;
- a batch's index.jsonl holds whole JSON lines, one per profile found (a regular file
  found must have one; a FIFO, device or broken link found may instead be passed over
  with a note), none for anything else; `ok` lines have their summary (same sha256),
  `failed` lines their stderr error line; the last line's counts are the index's; a
  second run finds every `ok` profile `up to date`.
"""

import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # run as a script
    sys.path.insert(0, str(TESTS))

from support.cli import extract_command, without_root_privileges  # noqa: E402
from support.paths import EDGE, PVA_DOUBLE  # noqa: E402

NOT_UTF8 = os.fsdecode(b"\xff")  # a folder name's byte that is not UTF-8 ("\udcff")
CASES = ("one-anchor", "multi-ipu", "unicode-names")  # fixtures/edge cases used as good
CSV_NAMES = ("steps.csv", "first-body.csv")
TIMEOUT = float(os.environ.get("EXTRACT_FSFUZZ_TIMEOUT", "30"))  # a hang fails

# The kinds of file put at a path.
ABSENT, FILE, DIR = "absent", "file", "folder"
FIFO, DEVICE = "FIFO", "device"
LINK_FILE, LINK_DIR = "link to a file", "link to a folder"
LINK_FIFO, LINK_DEVICE = "link to a FIFO", "link to a device"
DANGLING, LOOP = "dangling link", "link loop"
UNREADABLE, LOCKED_DIR, READONLY_DIR = "unreadable file", "unreadable folder", "read-only folder"

LINKS = {LINK_FILE: FILE, LINK_DIR: DIR, LINK_FIFO: FIFO, LINK_DEVICE: DEVICE}
# A path extract must never replace: what these kinds are (or point to, for -o).
KEEP = (DIR, FIFO, DEVICE)

# What may be at a path, by its role, and how often (weights).
PROFILE_KINDS = [
    (FILE, 30),
    (LINK_FILE, 8),
    (ABSENT, 4),
    (DIR, 6),
    (FIFO, 7),
    (DEVICE, 6),
    (LINK_DIR, 4),
    (LINK_FIFO, 5),
    (LINK_DEVICE, 5),
    (DANGLING, 5),
    (LOOP, 3),
    (UNREADABLE, 6),
]
OUTPUT_KINDS = [
    (ABSENT, 40),
    (FILE, 14),
    (DIR, 6),
    (FIFO, 7),
    (DEVICE, 7),
    (LINK_FILE, 5),
    (LINK_DIR, 4),
    (LINK_FIFO, 5),
    (LINK_DEVICE, 5),
    (DANGLING, 5),
    (LOOP, 4),
    (UNREADABLE, 4),
]
FOLDER_KINDS = [
    (ABSENT, 25),
    (DIR, 40),
    (READONLY_DIR, 6),
    (LOCKED_DIR, 4),
    (FILE, 5),
    (FIFO, 5),
    (DEVICE, 5),
    (LINK_DIR, 6),
    (LINK_FILE, 2),
    (LINK_FIFO, 3),
    (LINK_DEVICE, 3),
    (DANGLING, 4),
    (LOOP, 2),
]
ENTRY_FOLDER_KINDS = [(DIR, 85), (LOCKED_DIR, 5), (LINK_DIR, 10)]

ROLES = {
    "profile": PROFILE_KINDS,
    "output": OUTPUT_KINDS,
    "folder": FOLDER_KINDS,
    "entry": ENTRY_FOLDER_KINDS,
}

STDERR_LINE = re.compile(
    r"^(extract: (error|warning|note): \S.*"
    r"|\[\d+/\d+\] (ok|up to date): .+ (->|==) .+"
    r"|\d+ extracted, \d+ up to date, \d+ failed)$"
)
LAST_LINE = re.compile(r"^(\d+) extracted, (\d+) up to date, (\d+) failed$")


# ---- who we are ---------------------------------------------------------------------


PREFIX = without_root_privileges()
CAN_MKNOD = os.geteuid() == 0


def available(kinds):
    """The kinds this machine can make: devices need root, permissions need a way to
    make them bite."""
    drop = set()
    if not CAN_MKNOD:
        drop |= {DEVICE, LINK_DEVICE}
    if PREFIX is None:
        drop |= {UNREADABLE, LOCKED_DIR, READONLY_DIR}
    return [(k, w) for k, w in kinds if k not in drop]


# ---- a layout -----------------------------------------------------------------------


class Slot:
    """One path of the layout and what is put there."""

    def __init__(self, role, path, kind, case=None, nested=False):
        self.role, self.path, self.kind, self.case, self.nested = role, path, kind, case, nested
        self.target = None  # where a link points (a path under elsewhere/)

    def __repr__(self):
        extra = " (a good profile inside)" if self.nested else ""
        case = (
            " [{}]".format(self.case)
            if self.case and self.kind in (FILE, LINK_FILE, UNREADABLE)
            else ""
        )
        return "{:8} {!r}: {}{}{}".format(self.role, str(self.path), self.kind, case, extra)


class Candidate:
    """A file a batch finds under the name profile.pop (a profile, or a hostile one)."""

    def __init__(self, token, path, kind, case, nested, searchable):
        self.token, self.path, self.kind, self.case = token, path, kind, case
        self.nested = nested  # a good profile inside a folder named profile.pop
        self.searchable = searchable  # its folder can be read
        self.regular = kind in (FILE, LINK_FILE, UNREADABLE) or nested
        self.good = kind in (FILE, LINK_FILE) or nested
        self.clean = True  # its output paths are ordinary: it must be summarised


class Example:
    """A drawn layout (nothing made yet): its slots, command and expectations."""

    def __init__(self, mode: str, seed, number: int, root: Path):
        self.mode, self.seed, self.number, self.root = mode, seed, number, Path(root)
        self.rng = random.Random("fsfuzz:{}:{}:{}".format(seed, mode, number))
        self.slots, self.candidates, self.links = [], [], 0
        self.inputs, self.outputs, self.elsewhere = (
            self.root / "in",
            self.root / "out",
            self.root / "elsewhere",
        )
        self.csv = self.rng.random() < 0.3
        (self._draw_single if mode == "single" else self._draw_batch)()

    # -- drawing --

    def kind(self, role):
        kinds = available(ROLES[role])
        return self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]

    def nth(self, role, first=0):
        """The first examples go through every kind in turn (so that a short run meets
        each), from example `first` on; None after them: drawn."""
        kinds = available(ROLES[role])
        at = self.number - first
        return kinds[at][0] if 0 <= at < len(kinds) else None

    def odd_name(self, name: str, chance: float) -> str:
        return name + NOT_UTF8 if self.rng.random() < chance else name

    def slot(self, role, path, kind=None, **extra) -> Slot:
        slot = Slot(role, Path(path), kind or self.kind(role), **extra)
        if slot.kind in LINKS or slot.kind == DANGLING:
            slot.target = (
                self.elsewhere
                / "t{}".format(self.links)
                / (slot.path.name if slot.kind != DANGLING else "missing")
            )
            self.links += 1
        self.slots.append(slot)
        return slot

    def where(self, folder: Slot) -> Path:
        """Where the contents of a folder slot are made (a link's target)."""
        return folder.target if folder.kind == LINK_DIR else folder.path

    def _draw_single(self):
        self.case = self.rng.choice(CASES)
        folder = self.inputs / self.odd_name("a", 0.15)
        # The first examples go through the kinds in turn: each kind of profile (into a
        # folder), then a good profile into each kind of -o, into each kind of -o's
        # folder, and with --csv into each kind of step table; after them, drawn.
        profiles, outputs, folders = (
            len(available(ROLES[r])) for r in ("profile", "output", "folder")
        )
        at_output, at_folder = profiles, profiles + outputs
        at_table, end = at_folder + folders, at_folder + folders + outputs
        forced = self.number < end
        self.csv = self.csv or at_table <= self.number < end
        table = CSV_NAMES[self.number % 2]
        self.profile = self.slot(
            "profile",
            folder / "profile.pop",
            self.nth("profile") or (FILE if forced else None),
            case=self.case,
        )
        self.folder = self.slot(
            "folder",
            self.outputs / self.odd_name("o", 0.15),
            self.nth("folder", at_folder) or (DIR if forced else None),
        )
        self.output = self.folder.path / self.rng.choice(["summary.json", "s.json"])
        self.output_slots = []
        if self.folder.kind in (DIR, LINK_DIR, READONLY_DIR, LOCKED_DIR):
            inside = self.where(self.folder)
            names = [self.output.name] + (list(CSV_NAMES) if self.csv else [])
            self.output_slots = [
                self.slot(
                    "output",
                    inside / n,
                    self.nth("output", at_output)
                    if n == names[0]
                    else self.nth("output", at_table)
                    if n == table
                    else None,
                )
                for n in names
            ]
        self.args = [self.profile.path, "-o", self.output] + (["--csv"] if self.csv else [])

    def _draw_batch(self):
        self.jobs = self.rng.choice([1, 2])
        self.rerun = self.rng.random() < 0.25
        self.outdir = self.slot(
            "folder",
            self.outputs / self.odd_name("o", 0.1),
            self.nth("folder")  # the first: each kind in turn
            or self.rng.choices([ABSENT, DIR, None], [30, 45, 25])[0],
        )
        inside = (
            self.where(self.outdir)
            if self.outdir.kind in (DIR, LINK_DIR, READONLY_DIR, LOCKED_DIR)
            else None
        )
        self.index = (
            self.slot(
                "output",
                inside / "index.jsonl",
                self.rng.choices([ABSENT, FILE, None], [60, 15, 25])[0],
            )
            if inside
            else None
        )
        self.lock = (
            self.slot(
                "output",
                inside / ".index.jsonl.lock",
                self.rng.choices([ABSENT, FILE, None], [70, 10, 20])[0],
            )
            if inside
            else None
        )  # the index's lock
        for number in range(self.rng.randint(2, 5)):
            token = "p{}x".format(number)
            name = self.odd_name(token, 0.15)
            entry = self.slot("entry", self.inputs / name)
            first = number == 0
            profile = self.slot(
                "profile",
                entry.path / "profile.pop",
                FILE if first else None,
                case=self.rng.choice(CASES),
            )
            profile.nested = profile.kind in (DIR, LINK_DIR) and self.rng.random() < 0.5
            if profile.kind not in (ABSENT, DIR, LINK_DIR) or profile.nested:
                candidate = Candidate(
                    token,
                    profile.path / "profile.pop" if profile.nested else profile.path,
                    profile.kind,
                    profile.case,
                    profile.nested,
                    entry.kind != LOCKED_DIR,
                )
                self.candidates.append(candidate)
            else:
                candidate = None
            if inside and self.rng.random() < 0.35:  # hostile paths where it is written
                key = self.slot("folder", inside / name)
                if candidate:
                    candidate.clean = key.kind in (ABSENT, DIR)
                if key.kind in (DIR, LINK_DIR, READONLY_DIR, LOCKED_DIR):
                    names = ["summary.json"] + (list(CSV_NAMES) if self.csv else [])
                    slots = [self.slot("output", self.where(key) / n) for n in names]
                    if candidate and not candidate.nested:
                        candidate.clean = candidate.clean and all(
                            s.kind in (ABSENT, FILE) for s in slots
                        )
        clean = self.outdir.kind in (ABSENT, DIR, LINK_DIR) and all(
            s is None or s.kind in (ABSENT, FILE) for s in (self.index, self.lock)
        )
        for candidate in self.candidates:
            candidate.clean = candidate.clean and clean
        self.args = [self.inputs, "-o", self.outdir.path, "-j", self.jobs] + (
            ["--csv"] if self.csv else []
        )

    def describe(self) -> str:
        lines = [
            "{} example {} (seed {!r}) in {}".format(self.mode, self.number, self.seed, self.root)
        ]
        lines += ["  " + repr(s).replace(str(self.root) + "/", "") for s in self.slots]
        lines.append(
            "  command: extract "
            + " ".join(repr(str(a)).replace(str(self.root) + "/", "") for a in self.args)
        )
        return "\n".join(lines)

    # -- making --

    def build(self) -> None:
        for folder in (self.inputs, self.outputs, self.elsewhere):
            folder.mkdir(parents=True, exist_ok=True)
        later = []  # permissions last, so that folders can be filled first
        for slot in self.slots:
            if slot.kind == DANGLING:
                slot.target.parent.mkdir(parents=True, exist_ok=True)
                slot.path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(str(slot.target), str(slot.path))
            elif slot.kind in LINKS:
                slot.target.parent.mkdir(parents=True, exist_ok=True)
                self._make(slot, slot.target, LINKS[slot.kind], later)
                slot.path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(str(slot.target), str(slot.path))
                if slot.role == "profile":  # the pva stand-in reads beside the link
                    self._pva_double(slot.path.parent, slot.case)
            else:
                if slot.kind != ABSENT:
                    slot.path.parent.mkdir(parents=True, exist_ok=True)
                self._make(slot, slot.path, slot.kind, later)
        for path, mode in reversed(later):
            os.chmod(str(path), mode)

    def _pva_double(self, folder: Path, case: str) -> None:
        if case and not (folder / "pva-double.json").exists():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(str(EDGE / case / "pva-double.json"), str(folder / "pva-double.json"))

    def _make(self, slot: Slot, path: Path, kind: str, later: list) -> None:
        if kind == ABSENT:
            return
        if kind in (DIR, READONLY_DIR, LOCKED_DIR):
            path.mkdir(exist_ok=True)
            if slot.role == "output":  # a folder where a file goes: not empty
                (path / "keep").write_bytes(b"keep\n")
            if slot.role == "profile" and slot.nested:
                shutil.copyfile(str(EDGE / slot.case / "profile.pop"), str(path / "profile.pop"))
                self._pva_double(path, slot.case)
            if kind != DIR:
                later.append((path, 0o555 if kind == READONLY_DIR else 0))
        elif kind in (FILE, UNREADABLE):
            if slot.role == "profile":
                shutil.copyfile(str(EDGE / slot.case / "profile.pop"), str(path))
                self._pva_double(path.parent, slot.case)
            else:
                path.write_bytes(b"previous\n")
            if kind == UNREADABLE:
                later.append((path, 0))
        elif kind == FIFO:
            os.mkfifo(str(path))
        elif kind == DEVICE:
            os.mknod(str(path), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        elif kind == LOOP:
            os.symlink(path.name, str(path))
        else:
            raise AssertionError(kind)

    def tidy(self) -> None:
        """Give every folder back its permissions and remove the layout."""
        for folder, subfolders, _ in os.walk(str(self.root)):
            for name in subfolders:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755)
        shutil.rmtree(str(self.root), ignore_errors=True)


# ---- running ------------------------------------------------------------------------


class Run:
    def __init__(self, code, stdout: bytes, stderr: bytes, hung: bool):
        self.code, self.stdout, self.raw_stderr, self.hung = code, stdout, stderr, hung
        self.stderr = stderr.decode("utf-8", "backslashreplace")
        self.lines = self.stderr.splitlines()

    def __repr__(self):
        return "exit {}{}\n  stderr: {}".format(
            self.code,
            " (killed: it hung)" if self.hung else "",
            "\n          ".join(self.lines[-30:]) or "(nothing)",
        )


def run_extract(args, cwd: Path) -> Run:
    """Run the real `extract` (without the permission-bypassing capabilities) in a new
    session, so that a hang kills it and every worker it started."""
    env = dict(os.environ, PYTHONPATH=str(PVA_DOUBLE))
    process = subprocess.Popen(
        (PREFIX or []) + extract_command() + [str(a) for a in args],
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=TIMEOUT)
        return Run(process.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return Run(process.returncode, out, err, True)


# ---- the state of the folder --------------------------------------------------------


def entry_state(path: str):
    """What a path is: kind and identity, plus the bytes of a regular file (None if
    nothing is there). FIFOs and devices are never opened."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    kind = stat.S_IFMT(info.st_mode)
    state = {"kind": kind, "ino": info.st_ino, "mode": stat.S_IMODE(info.st_mode)}
    if kind == stat.S_IFREG:
        with open(path, "rb") as handle:
            data = handle.read()
        state.update(
            size=info.st_size, mtime_ns=info.st_mtime_ns, sha256=hashlib.sha256(data).hexdigest()
        )
        if os.path.basename(path).startswith("index"):
            state["data"] = data  # an index's lines from before a run are not its
    elif kind == stat.S_IFLNK:
        state["target"] = os.readlink(path)
    elif kind in (stat.S_IFCHR, stat.S_IFBLK):
        state["rdev"] = info.st_rdev
    return state


def snapshot(root: Path) -> dict:
    """Every path under root (links not followed) -> entry_state."""
    states = {}
    for folder, subfolders, files in os.walk(str(root)):
        for name in subfolders + files:
            path = os.path.join(folder, name)
            states[path] = entry_state(path)
    return states


def kind_name(state) -> str:
    if state is None:
        return "nothing"
    return {
        stat.S_IFREG: "a regular file",
        stat.S_IFDIR: "a folder",
        stat.S_IFIFO: "a FIFO",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFLNK: "a symbolic link",
        stat.S_IFSOCK: "a socket",
    }[state["kind"]]


def kept(before, after) -> bool:
    """A FIFO, device or folder is still the same one."""
    return after is not None and after["kind"] == before["kind"] and after["ino"] == before["ino"]


def is_under(path: str, folder) -> bool:
    folder = str(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def read(path):
    try:
        with open(str(path), "rb") as handle:
            return handle.read()
    except OSError:
        return None


# ---- what a good profile gives --------------------------------------------------------


def shown(path) -> str:
    """A path as extract shows it (docs/errors.md, "Paths that are not UTF-8"): each byte that
    is not UTF-8 as `\\xNN`."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def expected_summary(case: str, label) -> bytes:
    """The fixture's summary with this `profile` value."""
    lines = (EDGE / case / "expected.json").read_bytes().split(b"\n")
    assert lines[1].startswith(b'  "profile": ')
    lines[1] = b'  "profile": ' + json.dumps(shown(label)).encode("ascii") + b","
    return b"\n".join(lines)


_TABLES = {}


def expected_tables(case: str) -> dict:
    """steps.csv and first-body.csv of a fixture case (they carry no label), as the
    command writes them for a plain copy of it."""
    if case not in _TABLES:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            profile = Path(tmp, "in", "profile.pop")
            profile.parent.mkdir()
            for name in ("profile.pop", "pva-double.json"):
                shutil.copyfile(str(EDGE / case / name), str(profile.parent / name))
            done = subprocess.run(
                extract_command() + [str(profile), "-o", str(Path(tmp, "s.json")), "--csv"],
                env=dict(os.environ, PYTHONPATH=str(PVA_DOUBLE)),
                capture_output=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            _TABLES[case] = {n: Path(tmp, n).read_bytes() for n in CSV_NAMES}
    return _TABLES[case]


# ---- the checks ---------------------------------------------------------------------


def check_stderr(run: Run, root: Path, problems: list) -> list:
    """The checks every run gets; the error lines."""
    if run.hung:
        problems.append("hung: killed after {:.0f} s".format(TIMEOUT))
        return []
    if run.code not in (0, 1, 2):
        problems.append("exit code {}".format(run.code))
    if run.stdout:
        problems.append("{} bytes on stdout, where nothing goes".format(len(run.stdout)))
    try:
        run.raw_stderr.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("stderr is not UTF-8 text (a path's raw bytes?)")
    for line in run.lines:
        if "Traceback" in line or "unexpected failure" in line:
            problems.append("stderr: {}".format(line[:300]))
        elif not STDERR_LINE.match(line):
            problems.append("stderr line of no known form: {!r}".format(line[:300]))
    errors = [line for line in run.lines if line.startswith("extract: error: ")]
    for line in errors:  # every path of a layout is under its root, given absolute
        if (
            not line.startswith("extract: error: {}/".format(root))
            or ": " not in line[len("extract: error: {}/".format(root)) :]
        ):
            problems.append(
                "an error line not of the form <file>: <problem>: {!r}".format(line[:300])
            )
    return errors


def check_changes(before: dict, after: dict, allowed, problems: list) -> dict:
    """Compare the trees: `allowed(path, before, after)` says whether a change there is
    extract's to make (None: yes; else why not). Returns the changes."""
    changes = {
        p: (before.get(p), after.get(p))
        for p in set(before) | set(after)
        if before.get(p) != after.get(p)
    }
    for path in sorted(changes):
        old, new = changes[path]
        if (
            old is not None
            and old["kind"] in (stat.S_IFIFO, stat.S_IFCHR, stat.S_IFDIR)
            and not kept(old, new)
        ):
            problems.append(
                "{} was {} and is now {}: replaced".format(path, kind_name(old), kind_name(new))
            )
            continue
        if old is not None and old["kind"] == stat.S_IFDIR:
            continue  # a folder's own entries changed: they are checked one by one
        why = allowed(path, old, new)
        if why:
            problems.append("{}: {} -> {}: {}".format(path, kind_name(old), kind_name(new), why))
    return changes


def points_to_keep(slot: Slot) -> bool:
    return slot.kind in (LINK_DIR, LINK_FIFO, LINK_DEVICE)


def check_single(example: Example, run: Run, before: dict, after: dict) -> list:
    problems = []
    errors = check_stderr(run, example.root, problems)
    if run.hung:
        return problems
    good = example.profile.kind in (FILE, LINK_FILE)
    clean = example.folder.kind in (ABSENT, DIR, LINK_DIR) and all(
        s.kind in (ABSENT, FILE) for s in example.output_slots
    )
    if run.code == 0 and errors:
        problems.append("exit 0 with an error line")
    if run.code != 0 and len(errors) != 1:
        problems.append("a failed run printed {} error lines, not one".format(len(errors)))
    if run.code != 0 and good and clean:
        problems.append("a good profile, ordinary output paths, and it failed")
    if run.code == 0 and not good:
        problems.append("exit 0 for a profile that is a {}".format(example.profile.kind))

    # Where extract may write: -o and the step tables (through the folder's link, or
    # through a link of theirs to a file); the folder itself if it was missing.
    names = [example.output.name] + (list(CSV_NAMES) if example.csv else [])
    writable = {str(example.folder.path / n) for n in names}
    if example.folder.kind == LINK_DIR:
        writable |= {str(example.folder.target / n) for n in names}
    for slot in example.output_slots:
        if slot.kind in (LINK_FILE, DANGLING):
            writable.add(str(slot.target))
    keep_links = {str(s.path) for s in example.output_slots if points_to_keep(s)}
    created = {str(example.folder.path)} if example.folder.kind == ABSENT else set()

    def allowed(path, old, new):
        if path in created and new is not None and new["kind"] == stat.S_IFDIR:
            return None
        if path not in writable:
            return "changed outside the output ({} is {})".format(
                "an input" if is_under(path, example.inputs) else "not extract's to write", path
            )
        if run.code != 0:
            return "changed by a failed run"
        if path in keep_links:
            return "a link to a folder, FIFO or device at an output path was replaced"
        if new is not None and new["kind"] != stat.S_IFREG:
            return "not a regular file now"
        return None

    check_changes(before, after, allowed, problems)
    if run.code == 0 and good:
        label = str(example.profile.path)
        wanted = [(example.output, "summary")] + (
            [(example.output.parent / n, n) for n in CSV_NAMES] if example.csv else []
        )
        for path, what in wanted:
            state = entry_state(os.path.realpath(str(path)))
            if state is None:
                problems.append("exit 0 and no {} at {}".format(what, path))
            elif state["kind"] == stat.S_IFREG:
                data = read(os.path.realpath(str(path)))
                right = (
                    data == expected_summary(example.case, label)
                    if what == "summary"
                    else data == expected_tables(example.case)[what]
                )
                if not right:
                    problems.append("{} at {} is not the profile's".format(what, path))
    return problems


def check_batch(example: Example, run: Run, before: dict, after: dict, previous=None):
    """The problems of one batch run; and its index entries by candidate token (for a
    second run: `previous`, the first run's)."""
    problems = []
    errors = check_stderr(run, example.root, problems)
    if run.hung:
        return problems, {}
    outdir = example.outdir
    areas = [str(outdir.path)] + ([str(outdir.target)] if outdir.kind == LINK_DIR else [])

    def area_of(path):
        return next((a for a in areas if is_under(path, a)), None)

    def allowed(path, old, new):
        area = area_of(path)
        if area is None:
            return "changed outside OUTDIR ({} is {})".format(
                "an input" if is_under(path, example.inputs) else "not extract's to write", path
            )
        if path == area:
            return None if old is None and new["kind"] == stat.S_IFDIR else "OUTDIR itself"
        if new is None:
            return "removed"
        if new["kind"] == stat.S_IFDIR and old is None:
            return None
        name = os.path.basename(path)
        top = os.path.dirname(path) == area
        ours = name in ("summary.json",) + CSV_NAMES or (
            top
            and re.match(
                r"^(index(-shard-\d+-of-\d+)?\.jsonl|\.index(-shard-\d+-of-\d+)?\.jsonl\.lock)$",
                name,
            )
        )
        if not ours or new["kind"] != stat.S_IFREG:
            return "not one of extract's files (a temporary file left?)"
        return None

    changes = check_changes(before, after, allowed, problems)
    if run.code == 0 and errors:
        problems.append("exit 0 with error lines")
    summaries = {
        p: n
        for p, (_, n) in changes.items()
        if n is not None and n["kind"] == stat.S_IFREG and os.path.basename(p) == "summary.json"
    }
    index_path = str(Path(areas[-1], "index.jsonl"))
    state = after.get(index_path)
    if (
        state is None
        or state == before.get(index_path)
        or state["kind"] != stat.S_IFREG
        or run.code == 2
    ):  # no index written: nothing else may have been
        if run.code == 0:
            problems.append("exit 0 and no index")
        elif len(errors) != 1:
            problems.append(
                "a batch that wrote no index printed {} error lines, not one".format(len(errors))
            )
        if summaries:
            problems.append("summaries written, and no index of them")
        if any(c.good and c.clean and c.searchable for c in example.candidates) and run.code != 2:
            problems.append("no index: good profiles beside hostile ones were not summarised")
        return problems, {}

    entries = read_index(index_path, before.get(index_path), problems)
    by_token = {}
    for entry in entries:
        match = [
            c
            for c in example.candidates
            if "/{}".format(c.token) in entry["profile"]
            and entry["profile"].count("profile.pop") == (2 if c.nested else 1)
        ]
        if len(match) != 1:
            problems.append(
                "index line for something that is no profile found: {!r}".format(entry["profile"])
            )
        elif match[0].token in by_token:
            problems.append("two index lines for {!r}".format(entry["profile"]))
        else:
            by_token[match[0].token] = entry
    # An error of the batch's own (no profile's: the index cannot be written, say) stops
    # it: index lines may then be missing, and there is no last line.
    reasons = {e.get("reason") for e in entries if e.get("status") == "failed"}
    stopped = [line for line in errors if line[len("extract: error: ") :] not in reasons]
    if reasons and run.code != 1:
        problems.append("profiles failed, and exit code {}".format(run.code))
    summary_at = {
        s["sha256"]: p
        for p, s in after.items()
        if s and s["kind"] == stat.S_IFREG and os.path.basename(p) == "summary.json"
    }
    for candidate in example.candidates:
        problems += check_candidate(
            example,
            candidate,
            by_token.get(candidate.token),
            run,
            stopped,
            summary_at,
            (previous or {}).get(candidate.token),
        )

    # What was written agrees with the index: a summary only for an ok line; nothing
    # (new folders aside) for a failed one, not even a step table.
    ok_sums = {e.get("summary_sha256") for e in entries if e.get("status") in ("ok", "up to date")}
    for path, state in sorted(summaries.items()):
        if state["sha256"] not in ok_sums:
            problems.append("{}: a summary no ok index line has".format(path))
    failed = [c for c in example.candidates if by_token.get(c.token, {}).get("status") == "failed"]
    for path, (old, new) in sorted(changes.items()):
        area = area_of(path)
        if area is None or path == area or (old is None and new and new["kind"] == stat.S_IFDIR):
            continue
        top = os.path.relpath(path, area).split(os.sep)[0]
        for candidate in failed:
            if top.startswith(candidate.token):
                problems.append("{}: failed, and {} was written".format(candidate.path, path))

    counts = [sum(e.get("status") == s for e in entries) for s in ("ok", "up to date", "failed")]
    last = LAST_LINE.match(run.lines[-1]) if run.lines else None
    if last and [int(n) for n in last.groups()] != counts:
        problems.append(
            "last line {!r}, the index says {} ok, {} up to date, {} failed".format(
                run.lines[-1], *counts
            )
        )
    if not last and not stopped:
        problems.append("no last line")
    return problems, by_token


def read_index(path: str, old, problems: list) -> list:
    """The entries of an index, less the lines it had before the run."""
    data = read(path) or b""
    if data and not data.endswith(b"\n"):
        problems.append("index.jsonl ends in a torn line")
    old_lines = set(old["data"].split(b"\n")) if old and "data" in old else set()
    entries = []
    for line in data.split(b"\n"):
        if not line or line in old_lines:
            continue
        try:
            entry = json.loads(line.decode("utf-8"))
            assert isinstance(entry, dict) and isinstance(entry.get("profile"), str)
            entries.append(entry)
        except (ValueError, AssertionError):
            problems.append(
                "index line is not a JSON object with a profile: {!r}".format(line[:200])
            )
    return entries


def check_candidate(example, candidate, entry, run, stopped, summary_at, first_run) -> list:
    """A file the batch may find as profile.pop: its index line, status and summary."""
    label = candidate.path
    if entry is None:
        if not candidate.searchable or stopped:
            return []
        if candidate.regular:
            return ["{}: a profile found, and no index line".format(label)]
        noted = any(
            line.startswith("extract: note: ") and "/{}".format(candidate.token) in line
            for line in run.lines
        )
        return (
            []
            if noted
            else [
                "{}: a {} named profile.pop: neither indexed nor noted".format(
                    label, candidate.kind
                )
            ]
        )
    problems = []
    if not candidate.searchable:
        problems.append("{}: indexed, though its folder cannot be read".format(label))
    if entry["profile"] != shown(label):
        problems.append("{}: indexed as {!r}".format(label, entry["profile"]))
    status = entry.get("status")
    if status == "failed":
        reason = entry.get("reason")
        if not isinstance(reason, str) or "\n" in reason or not reason:
            problems.append("{}: failed without a one-line reason".format(label))
        elif "extract: error: " + reason not in run.lines:
            problems.append("{}: its reason is not on stderr: {!r}".format(label, reason))
        if candidate.good and candidate.clean:
            problems.append(
                "{}: a good profile beside hostile ones failed: {}".format(label, reason)
            )
        return problems
    if status not in ("ok", "up to date"):
        return problems + ["{}: status {!r}".format(label, status)]
    if first_run is not None and first_run.get("status") == "ok" and status != "up to date":
        problems.append("{}: ok in the first run, {!r} in the second".format(label, status))
    if not candidate.good:
        return problems + ["{}: a {} summarised as a profile".format(label, candidate.kind)]
    where = summary_at.get(entry.get("summary_sha256"))
    if where is None:
        return problems + [
            "{}: status {}, and no summary with its summary_sha256".format(label, status)
        ]
    if read(where) != expected_summary(candidate.case, label):
        problems.append("{}: its summary is not the profile's".format(label))
    if example.csv:
        for name, want in expected_tables(candidate.case).items():
            if read(Path(where).parent / name) != want:
                problems.append(
                    "{}: {} beside its summary is not the profile's".format(label, name)
                )
    return problems


def run_example(mode: str, seed, number: int, root: Path, keep=False):
    """Build, run and check one example; (problems, report)."""
    example = Example(mode, seed, number, root)
    report = [example.describe()]
    problems = []
    try:
        example.build()
        before = snapshot(example.root)
        run = run_extract(example.args, example.root)
        after = snapshot(example.root)
        report.append("  run: {!r}".format(run))
        if mode == "single":
            problems = check_single(example, run, before, after)
        else:
            problems, entries = check_batch(example, run, before, after)
            if example.rerun and not run.hung:
                again = run_extract(example.args, example.root)
                report.append("  second run: {!r}".format(again))
                more, _ = check_batch(example, again, after, snapshot(example.root), entries)
                problems += ["second run: " + p for p in more]
    finally:
        if not keep:
            example.tidy()
    report += ["  PROBLEM: " + p for p in problems]
    report.append(
        "  rerun: python tests/support/fsfuzz.py {} {} --seed {}".format(mode, number, seed)
    )
    return problems, "\n".join(report)


def main(argv) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Rerun one file-system fuzz example.")
    parser.add_argument("mode", choices=["single", "batch"])
    parser.add_argument("number", type=int)
    parser.add_argument("--seed", default=os.environ.get("EXTRACT_FSFUZZ_SEED", "0"))
    parser.add_argument("--keep", metavar="DIR", help="build it here and leave it")
    options = parser.parse_args(argv)
    root = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="fsfuzz-"))
    problems, report = run_example(
        options.mode, options.seed, options.number, root / "case", keep=bool(options.keep)
    )
    if not options.keep:
        os.rmdir(str(root))
    print(report)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
