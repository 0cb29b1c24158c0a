"""Benchmark: extract on big profiles against the floor, the SQL the summary needs.

    python bench/size.py            # full size: large (>= 500 MB), long-trace (1M step rows)
    python bench/size.py --smoke    # small versions of the same profiles: that it works

Profiles (fixtures/generate.py's vit_spec with its size knobs) are generated once into
bench/cache/size-<name>/ and reused while their marker (params.json: the parameters and
a hash of the generator) matches:

- `large`: 27 blocks, 2 runs, 1,472 tiles, millions of vars_info rows and an unknown table
  of 700,000 rows (over 500 MB);
- `long-trace`: 2,420 recorded runs, 1,001,880 step rows; `short-trace`: 242 runs,
  exactly 10 times fewer step rows.

Each round, in this order on the same file: the floor and `extract --no-pva` each after
dropping the file from the page cache (cold: read from disk, as a profile's first
extraction is), then with the file cached (warm) the floor, `extract --no-pva` and
`extract` with the pva stand-in (tests/pva_double). Figures are medians over the rounds;
the targets are checked on the warm figures, where a fixed cost weighs most.

- The floor: the SQL of the summary run through Python's sqlite3 in a new process, timed
  from the connection to the last row (interpreter start not counted), every row fetched
  and nothing else done: the step rows (steps joined to steps_by_ipu, in step
  order), the names of programs and compute sets, the two aggregates. The same SQL through
  the sqlite3 shell (output to /dev/null) is shown beside it when the shell is installed.
  Each statement has the cheapest shape known for its data, extract's own (ids, not
  names; the exchange-code category looked up, then a constant; no sort when the rows
  are stored in step order): the floor follows extract wherever extract found a cheaper
  way to read the same data. The spec's SQL in its obvious shape (category resolved in
  the query, rows sorted) is timed too and printed beside it, with no target.
- extract: the real CLI in a subprocess (`python -m extractor PROFILE -o FILE`), wall
  time including interpreter start, and the peak RSS of that process (getrusage of a
  small launcher's children). The package's bytecode is written first, as an install
  has it (`compile_package`).
- The floor is SQL only: the ratio shown is `extract --no-pva` / floor (its 1.3x target
  was retired with typer's upper pin: start-up is a fixed cost accepted);
  extract with pva is shown too, and pva's share is the difference (the stand-in reads
  pva-double.json, about 200 kB here, as the real pva reads the report).
- pva fetches: summarize in this process with the stand-in, counting its accesses: each
  program's codeBytesByTile and each compute set's vertices at most once.
- Fixed costs, what every extraction pays whatever the profile: the bare interpreter,
  the interpreter importing typer, and extract on the committed 53 kB fixture; printed
  beside what extract takes more than the floor on large and long-trace.
- `--baseline REV`: extract as committed at REV (exported from git into bench/cache/,
  run with the same Python and packages) is timed too, warm, in the same rounds as this
  tree's extract, and the two must write the same bytes. The ratio this tree / REV says
  what a change gained, measured in one run (BENCHMARKS.md: how the table-scan thread
  was weighed).
"""

import argparse
import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / "cache"
GENERATOR = REPO / "fixtures" / "generate.py"
PVA_DOUBLE = REPO / "tests" / "pva_double"
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

import generate  # noqa: E402  (fixtures/generate.py)

BASE = dict(blocks=27, tiles=1472, detailed_blocks=[0], code_bytes="near-misses")
PROFILES = {  # name: (full size, smoke size), keyword arguments of vit_spec
    "large": (
        dict(BASE, runs=2, seed=6, vars_per_tile=2400, unknown_rows=700000),
        dict(BASE, runs=2, seed=6, vars_per_tile=40, unknown_rows=5000),
    ),
    "long-trace": (dict(BASE, runs=2420, seed=7), dict(BASE, runs=60, seed=7)),
    "short-trace": (dict(BASE, runs=242, seed=7), dict(BASE, runs=6, seed=7)),
}

TARGET_RSS_MB = 200.0
TARGET_SCALING = 11.0  # time(long-trace) / time(short-trace), for 10x the step rows


# The floor's SQL, as extract shapes it where the shape is cheaper than the obvious one
# (extractor/core/profile.py says why): the step rows carry ids, not names, and the names come
# from the two small tables, fetched once; the exchange-code category is looked up, then
# compared as a constant in the scan of vars_info. Rows come in the spec's order: with no
# sort when steps_by_ipu is stored in step order (checked here, untimed; extract checks
# it during its pass), else sorted by SQLite.
def floor_sql(profile: Path, as_written: bool = False) -> tuple:
    """The floor's statements; `as_written`: the spec's SQL in its obvious shape instead
    (the category resolved inside the query, the step rows always sorted), shown beside
    the floor to say what the shapes above gained; no target is set on it."""
    import sqlite3

    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:  # the id the timed lookup below will find, written into the scan as a literal
        ids = [row[0] for row in db.execute(CATEGORY_SQL)]
        steps = db.execute(
            "SELECT s.id FROM steps_by_ipu AS i JOIN steps AS s "
            "ON s.id = i.step_id ORDER BY i.rowid"
        )
        previous, in_order = None, True
        for (step,) in steps:
            if previous is not None and step < previous:
                in_order = False
                break
            previous = step
    finally:
        db.close()
    category = (
        "= {}".format(ids[0])
        if len(ids) == 1
        else "IN ({})".format(", ".join(str(i) for i in ids) or "NULL")
    )
    if as_written:
        category = "IN (SELECT id FROM var_categories WHERE name = 'internalExchangeCode')"
        in_order = False
    return (
        "SELECT s.id, s.type, i.cycles, i.active_tiles,"
        " i.cycles_base + i.active_cycles_from_min, i.cycles_base + i.active_cycles_to_max,"
        " s.program, s.compute_set FROM steps_by_ipu AS i JOIN steps AS s"
        " ON s.id = i.step_id ORDER BY " + ("i.rowid" if in_order else "s.id, i.rowid"),
        "SELECT id, name FROM programs",
        "SELECT compute_set, name FROM compute_sets",
        CATEGORY_SQL,
        "SELECT min(b), avg(b), max(b) FROM (SELECT sum(size_bytes) AS b FROM vars_info"
        " WHERE category {} GROUP BY tile)".format(category),
        "SELECT min(total), avg(total), max(total) FROM memory_by_tile",
    )


CATEGORY_SQL = "SELECT id FROM var_categories WHERE name = 'internalExchangeCode'"


def _params_text(params: dict) -> str:
    digest = hashlib.sha256(GENERATOR.read_bytes()).hexdigest()
    return (
        json.dumps({"vit_spec": params, "generator_sha256": digest}, sort_keys=True, indent=1)
        + "\n"
    )


def profile_path(name: str, smoke: bool, profiles: dict = PROFILES) -> Path:
    """The profile, generated into the cache unless a matching one is there. `profiles`:
    where `name` is found (another benchmark may have profiles of its own)."""
    params = profiles[name][1 if smoke else 0]
    folder = CACHE / "size-{}{}".format(name, "-smoke" if smoke else "")
    marker = folder / "params.json"
    profile = folder / "profile.pop"
    wanted = _params_text(params)
    if (
        marker.exists()
        and marker.read_text() == wanted
        and profile.exists()
        and (folder / "pva-double.json").exists()
    ):
        return profile
    shutil.rmtree(str(folder), ignore_errors=True)
    print("generating {} into {} ...".format(name, folder), flush=True)
    start = time.perf_counter()
    spec = generate.vit_spec(**params)
    generate.write_case(spec, folder)
    marker.write_text(wanted)  # last: a half-written profile has no marker
    print(
        "  {:.0f} s, {:.0f} MB".format(time.perf_counter() - start, profile.stat().st_size / 1e6),
        flush=True,
    )
    return profile


# The floor, run in a process of its own: SQLite through Python's sqlite3, every row
# fetched and dropped, timed from the connection to the last row (interpreter start is
# not counted). argv: the profile, then the SQL statements.
FLOOR_CHILD = """
import sqlite3, sys, time
start, cpu = time.perf_counter(), time.process_time()
db = sqlite3.connect("file:{}?mode=ro".format(sys.argv[1]), uri=True)
for sql in sys.argv[2:]:
    cursor = db.execute(sql)
    while cursor.fetchmany(1000):
        pass
db.close()
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def floor_seconds(profile: Path, as_written: bool = False):
    """(wall, CPU) seconds of the floor's SQL through Python's sqlite3, every row fetched.

    In a new process each time, as extract runs: on this benchmark's VM, new processes
    reading the profile were at times slower together (the sqlite3 shell and extract,
    by up to half) while the long-lived benchmark process was not; a floor timed in it
    would then leave that slowness to extract's side of the ratio alone."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOR_CHILD, str(profile)] + list(floor_sql(profile, as_written)),
        stdout=subprocess.PIPE,
        check=True,
    )
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def shell_floor_seconds(profile: Path):
    """The same SQL through the sqlite3 shell, or None when it is not installed."""
    shell = shutil.which("sqlite3")
    if shell is None:
        return None
    script = ";\n".join(floor_sql(profile)) + ";\n"
    start = time.perf_counter()
    subprocess.run(
        [shell, "-readonly", str(profile)],
        input=script.encode(),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


# Runs the command given and prints its wall time and peak RSS. A child's peak RSS counts
# the memory of the process it was forked from, so extract is started from this small
# launcher, not from the benchmark (which holds the generator and its data).
LAUNCHER = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code)
"""


def compile_package(tree: Path = REPO) -> None:
    """Write extractor's bytecode (__pycache__, not committed) before timing it.

    An install from a wheel has it (pip compiles at install time). A checkout run under
    PYTHONDONTWRITEBYTECODE (set in some CI and sandboxes) would otherwise compile every
    module at every run of extract: about 25 ms that no installed copy pays."""
    import compileall

    if not compileall.compile_dir(str(tree / "extractor"), quiet=1):
        raise SystemExit("could not compile extractor/ to bytecode")


def baseline_tree(revision: str):
    """(commit, folder) of extractor as committed at `revision`, exported from git into
    the cache once (the package and the default rules) and compiled to bytecode."""
    commit = (
        subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--verify", revision + "^{commit}"],
            stdout=subprocess.PIPE,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = CACHE / "baseline-{}".format(commit[:12])
    if not (tree / "extractor" / "__init__.py").exists():
        archive = subprocess.run(
            [
                "git",
                "-C",
                str(REPO),
                "archive",
                "--format=tar",
                commit,
                "extractor",
                "stage_rules.toml",
            ],
            stdout=subprocess.PIPE,
            check=True,
        ).stdout
        shutil.rmtree(str(tree), ignore_errors=True)
        tree.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(str(tree))
    compile_package(tree)
    return commit, tree


def extract_run(profile: Path, out: Path, use_pva: bool, tree: Path = REPO):
    """(wall seconds, CPU seconds, peak RSS in MB) of `python -m extractor PROFILE -o out`,
    run in `tree` (this checkout, or a baseline's): `-m` finds the package there first."""
    command = [sys.executable, "-m", "extractor", str(profile), "-o", str(out), "--quiet"]
    env = dict(os.environ)
    if use_pva:
        env["PYTHONPATH"] = str(PVA_DOUBLE)
    else:
        command.append("--no-pva")
    return timed(command, env, "extract on {}".format(profile), tree)


def timed(command: list, env: dict, what: str, cwd: Path = REPO):
    """(wall seconds, CPU seconds, peak RSS in MB) of a command run from the launcher."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", LAUNCHER] + command,
        env=env,
        cwd=str(cwd),
        capture_output=True,
        check=False,
    )
    try:
        seconds, cpu, max_rss_kib, code = done.stdout.split()
    except ValueError:
        code = b"?"
    if done.returncode != 0 or code != b"0":
        raise SystemExit("{} failed: {}".format(what, done.stderr.decode(errors="replace")[-2000:]))
    return float(seconds), float(cpu), int(max_rss_kib) / 1024.0  # ru_maxrss: KiB


# The committed fixture profile (53 kB, one model, one inference): extract's fixed cost.
SMALL = (
    REPO
    / "fixtures"
    / "vit-f8weight"
    / "poprt"
    / "profile_logs_f8weight"
    / "inference"
    / "profile.pop"
)


def fixed_costs(rounds: int) -> dict:
    """Median wall seconds of what every extraction pays whatever the profile: the bare
    interpreter, the interpreter importing typer (the CLI library), and extract on the
    committed 53 kB fixture (everything: imports, checks, pass, writing)."""
    env = dict(os.environ)
    commands = {
        "python_s": [sys.executable, "-c", "pass"],
        "python_typer_s": [sys.executable, "-c", "import typer"],
        "extract_small_s": [
            sys.executable,
            "-m",
            "extractor",
            str(SMALL),
            "-o",
            str(CACHE / "size-out" / "small.json"),
            "--quiet",
            "--no-pva",
        ],
    }
    times = {key: [] for key in commands}
    for _ in range(max(rounds, 5)):
        for key, command in commands.items():
            times[key].append(timed(command, env, key)[0])
    return {key: statistics.median(values) for key, values in times.items()}


def pva_fetches(profile: Path) -> dict:
    """Accesses to the stand-in's per-tile arrays and vertex lists during one summary."""
    if str(PVA_DOUBLE) not in sys.path:
        sys.path.insert(0, str(PVA_DOUBLE))
    import pva

    from extractor.core.summary import summarize

    pva.reset_access_counts()
    summarize(profile, pva=pva)
    counts = pva.access_counts
    return {
        "code_bytes_fetched": sum(1 for key in counts if key[0] == "codeBytesByTile"),
        "vertices_fetched": sum(1 for key in counts if key[0] == "vertices"),
        "most_fetches_of_one": max(counts.values()) if counts else 0,
    }


def evict(profile: Path) -> None:
    """Drop the file's pages from the page cache, so that the next run reads the disk, as
    the first extraction of a profile does (posix_fadvise: this file only, no root)."""
    fd = os.open(str(profile), os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def step_row_count(profile: Path) -> int:
    import sqlite3

    db = sqlite3.connect("file:{}?mode=ro".format(profile), uri=True)
    try:
        return db.execute("SELECT count(*) FROM steps_by_ipu").fetchone()[0]
    finally:
        db.close()


def measure(name: str, profile: Path, rounds: int, baseline=None) -> dict:
    """`baseline`: None, or (commit, tree) of baseline_tree, timed beside this tree."""
    out = CACHE / "size-out" / name
    out.mkdir(parents=True, exist_ok=True)
    floors, shells, plain, with_pva, cold_floors, cold_plain = [], [], [], [], [], []
    written = []  # the spec's SQL as written
    based = []  # extract --no-pva of the baseline
    for _ in range(rounds):  # interleaved, so that a busy moment hits all of them
        evict(profile)
        cold_floors.append(floor_seconds(profile)[0])
        evict(profile)
        cold_plain.append(extract_run(profile, out / "summary-no-pva.json", use_pva=False)[0])
        floors.append(floor_seconds(profile))
        written.append(floor_seconds(profile, as_written=True)[0])
        shell = shell_floor_seconds(profile)
        if shell is not None:
            shells.append(shell)
        plain.append(extract_run(profile, out / "summary-no-pva.json", use_pva=False))
        if baseline is not None:
            based.append(
                extract_run(profile, out / "baseline-no-pva.json", use_pva=False, tree=baseline[1])
            )
        with_pva.append(extract_run(profile, out / "summary.json", use_pva=True))
    floor = statistics.median(wall for wall, _ in floors)
    result = {
        "profile": str(profile.relative_to(REPO)),
        "megabytes": round(profile.stat().st_size / 1e6, 1),
        "step_rows": step_row_count(profile),
        "rounds": rounds,
        "floor_s": floor,
        "floor_cpu_s": statistics.median(cpu for _, cpu in floors),
        "shell_floor_s": statistics.median(shells) if shells else None,
        "as_written_s": statistics.median(written),
        "extract_no_pva_s": statistics.median(wall for wall, _, _ in plain),
        "extract_no_pva_cpu_s": statistics.median(cpu for _, cpu, _ in plain),
        "extract_pva_s": statistics.median(wall for wall, _, _ in with_pva),
        "cold_floor_s": statistics.median(cold_floors),
        "cold_extract_no_pva_s": statistics.median(cold_plain),
        "rss_no_pva_mb": max(rss for _, _, rss in plain),
        "rss_pva_mb": max(rss for _, _, rss in with_pva),
    }
    result["cold_ratio_no_pva"] = result["cold_extract_no_pva_s"] / result["cold_floor_s"]
    result["cpu_ratio_no_pva"] = result["extract_no_pva_cpu_s"] / result["floor_cpu_s"]
    result["ratio_no_pva"] = result["extract_no_pva_s"] / floor
    result["ratio_pva"] = result["extract_pva_s"] / floor
    if baseline is not None:
        if (out / "baseline-no-pva.json").read_bytes() != (
            out / "summary-no-pva.json"
        ).read_bytes():
            raise SystemExit(
                "{}: the baseline {} wrote other bytes than this tree".format(
                    name, baseline[0][:12]
                )
            )
        result["baseline"] = baseline[0]
        result["baseline_no_pva_s"] = statistics.median(wall for wall, _, _ in based)
        result["baseline_no_pva_cpu_s"] = statistics.median(cpu for _, cpu, _ in based)
        result["ratio_to_baseline"] = result["extract_no_pva_s"] / result["baseline_no_pva_s"]
    result.update(pva_fetches(profile))
    return result


def report(results: dict, smoke: bool, fixed: dict) -> list:
    """Print the figures and the targets; return the targets missed (full size only)."""
    print(
        "{:<12} {:>7} {:>9} {:>8} {:>8} {:>9} {:>7} {:>9} {:>7} {:>8} {:>8}".format(
            "profile",
            "MB",
            "step rows",
            "floor s",
            "shell s",
            "no-pva s",
            "ratio",
            "pva s",
            "ratio",
            "RSS MB",
            "pva RSS",
        )
    )
    for name, r in results.items():
        shell = (
            "{:8.2f}".format(r["shell_floor_s"])
            if r["shell_floor_s"] is not None
            else "{:>8}".format("-")
        )
        print(
            "{:<12} {:7.1f} {:9d} {:8.2f} {} {:9.2f} {:6.2f}x {:9.2f} {:6.2f}x {:8.1f} "
            "{:8.1f}".format(
                name,
                r["megabytes"],
                r["step_rows"],
                r["floor_s"],
                shell,
                r["extract_no_pva_s"],
                r["ratio_no_pva"],
                r["extract_pva_s"],
                r["ratio_pva"],
                r["rss_no_pva_mb"],
                r["rss_pva_mb"],
            )
        )
    long, short = results["long-trace"], results["short-trace"]
    scaling = long["extract_no_pva_s"] / short["extract_no_pva_s"]
    rows = long["step_rows"] / short["step_rows"]
    floor_scaling = long["floor_s"] / short["floor_s"]
    for name, r in results.items():
        print(
            "the spec's SQL as written on {}: {:.2f} s; extract --no-pva / it: {:.2f}x "
            "(no target)".format(name, r["as_written_s"], r["extract_no_pva_s"] / r["as_written_s"])
        )
    for name, r in results.items():
        print(
            "CPU seconds on {}: floor {:.2f}, extract --no-pva {:.2f} ({:.2f}x)".format(
                name, r["floor_cpu_s"], r["extract_no_pva_cpu_s"], r["cpu_ratio_no_pva"]
            )
        )
    for name, r in results.items():
        print(
            "cold page cache on {}: floor {:.2f} s, extract --no-pva {:.2f} s ({:.2f}x)".format(
                name, r["cold_floor_s"], r["cold_extract_no_pva_s"], r["cold_ratio_no_pva"]
            )
        )
    print(
        "long-trace / short-trace: {:.1f}x the step rows, extract {:.2f}x the time "
        "(floor {:.2f}x)".format(rows, scaling, floor_scaling)
    )
    for name, r in results.items():
        if "baseline" in r:
            print(
                "against the baseline {} on {}: extract --no-pva {:.3f} s there, {:.3f} s "
                "here ({:.3f}x; CPU {:.2f} s there, {:.2f} s here); same bytes".format(
                    r["baseline"][:12],
                    name,
                    r["baseline_no_pva_s"],
                    r["extract_no_pva_s"],
                    r["ratio_to_baseline"],
                    r["baseline_no_pva_cpu_s"],
                    r["extract_no_pva_cpu_s"],
                )
            )
    for name, r in results.items():
        print(
            "pva fetches on {}: codeBytesByTile of {} programs, vertices of {} compute "
            "sets, at most {} fetch(es) of any one".format(
                name, r["code_bytes_fetched"], r["vertices_fetched"], r["most_fetches_of_one"]
            )
        )
    print(
        "fixed costs, paid by every extraction: interpreter {:.3f} s; interpreter and "
        "import typer {:.3f} s; extract --no-pva on the committed 53 kB fixture {:.3f} s".format(
            fixed["python_s"], fixed["python_typer_s"], fixed["extract_small_s"]
        )
    )
    for name in ("large", "long-trace"):
        r = results[name]
        print(
            "on {}: extract --no-pva takes {:.3f} s more than the floor (no target: the "
            "1.3x one was retired with typer's pin)".format(
                name, r["extract_no_pva_s"] - r["floor_s"]
            )
        )
    rss = [r[key] for r in results.values() for key in ("rss_no_pva_mb", "rss_pva_mb")]
    # Growth with size, in the two directions the profiles vary: the largest file against
    # the smallest, and 10x the step rows (long-trace against short-trace). Each may grow
    # by 10% at most. (Profiles of another kind may differ by a fixed amount: a trace of
    # 100,000 rows or more fills SQLite's bounded buffers, the sorter's and the 2 MB page
    # cache of each connection, which a trace of 828 rows does not: the floor alone
    # shows 2 of extract's 3.3 MB.)
    smallest, largest = (
        min(results.values(), key=lambda r: r["megabytes"]),
        max(results.values(), key=lambda r: r["megabytes"]),
    )
    growths = [
        (bigger["rss_no_pva_mb"] - smaller["rss_no_pva_mb"], smaller["rss_no_pva_mb"])
        for smaller, bigger in ((smallest, largest), (short, long))
    ]
    checks = [
        ("peak RSS <= {:.0f} MB on every profile".format(TARGET_RSS_MB), max(rss) <= TARGET_RSS_MB),
        (
            "peak RSS not growing with size ({:+.1f} MB at {:.0f}x the file, {:+.1f} MB at "
            "10x the step rows)".format(
                growths[0][0], largest["megabytes"] / smallest["megabytes"], growths[1][0]
            ),
            all(growth <= 0.1 * base for growth, base in growths),
        ),
        (
            "10x the step rows <= {:.0f}x the time".format(TARGET_SCALING),
            scaling <= TARGET_SCALING * rows / 10,
        ),
        (
            "each pva array and vertex list fetched at most once",
            all(r["most_fetches_of_one"] <= 1 for r in results.values()),
        ),
    ]
    missed = []
    for text, met in checks:
        print(
            "  {:<62} {}".format(
                text, "(smoke: no target)" if smoke else "met" if met else "MISSED"
            )
        )
        if not met:
            missed.append(text)
    return missed


def main(smoke: bool = False, rounds: int = 0, baseline: Optional[str] = None) -> int:
    rounds = rounds or (1 if smoke else 9)
    print(
        "bench/size.py: {} size, {} round(s), {} CPUs, Python {}, SQLite {}".format(
            "smoke" if smoke else "full",
            rounds,
            os.cpu_count(),
            sys.version.split()[0],
            __import__("sqlite3").sqlite_version,
        ),
        flush=True,
    )
    profiles = {name: profile_path(name, smoke) for name in PROFILES}
    compile_package()
    based = baseline_tree(baseline) if baseline else None
    results = {name: measure(name, profile, rounds, based) for name, profile in profiles.items()}
    (CACHE / "size-out").mkdir(parents=True, exist_ok=True)
    fixed = fixed_costs(rounds)
    report(results, smoke, fixed)
    (CACHE / "size-results{}.json".format("-smoke" if smoke else "")).write_text(
        json.dumps(dict(results, fixed_costs=fixed), indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 9; smoke 1)")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time extract as committed at REV, in the same rounds",
    )
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds, arguments.baseline))
