"""Benchmark: `extract memory --no-pva` against the same aggregates run by the sqlite3 shell.

    python bench/memory.py            # full size, 7 rounds
    python bench/memory.py --smoke    # the small profile, one round: that it works

On bench/size.py's `large` profile (1,472 tiles, 3.5 million vars_info rows, over 500
MB; smoke: its small version), each round in turn, warm page cache:

- the baseline: the sqlite3 shell (`sqlite3 -readonly`, output to /dev/null) running
  the two queries extract memory needs, one `GROUP BY tile, category` pass over
  vars_info and one pass over memory_by_tile in row order. Without the shell, Python's
  sqlite3 module runs the same two statements in a new process (the output says which);
- `extract memory PROFILE --no-pva --format json -o FILE`, the real CLI in a subprocess,
  interpreter start included, and its peak RSS.

Interleaved round by round, so that a busy moment of a shared machine hits both;
figures are medians. Targets: extract / baseline <= 1.3x, peak RSS < 200 MB. The peak
RSS on the smoke profile (60 times fewer vars_info rows) is shown beside it: it must
not grow with the rows.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"
TARGET = 1.3
TARGET_RSS_MB = 200.0

BASELINE_SQL = (
    "SELECT tile, category, sum(size_bytes) FROM vars_info GROUP BY tile, category;",
    "SELECT total FROM memory_by_tile ORDER BY rowid;",
)
PYTHON_BASELINE = """
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for statement in sys.argv[2:]:
    for _ in db.execute(statement):
        pass
"""


def load(name: str):
    """bench/<name>.py (bench/run.py may have loaded it already)."""
    key = "bench_{}".format(name)
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, str(HERE / "{}.py".format(name)))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def baseline_command(profile: Path):
    """(what, command) of the baseline: the sqlite3 shell, else Python's sqlite3."""
    shell = shutil.which("sqlite3")
    if shell:
        return "sqlite3 shell", [shell, "-readonly", str(profile), " ".join(BASELINE_SQL)]
    return "Python's sqlite3 module (no sqlite3 shell here)", [
        sys.executable,
        "-c",
        PYTHON_BASELINE,
        str(profile),
        *(s.rstrip(";") for s in BASELINE_SQL),
    ]


def extract_memory(size, profile: Path, out: Path):
    command = [sys.executable, "-m", "extractor", "memory", str(profile), "--no-pva"]
    command += ["--format", "json", "-o", str(out), "--quiet"]
    return size.timed(command, dict(os.environ), "extract memory on {}".format(profile))


def measure(smoke: bool, rounds: int) -> dict:
    size = load("size")
    profile = size.profile_path("large", smoke)
    size.compile_package()
    out = CACHE / "memory-out.json"
    what, baseline = baseline_command(profile)
    env = dict(os.environ)
    extract_memory(size, profile, out)  # once untimed: the page cache warm for both
    times = {"baseline": [], "extract": []}
    rss = []
    for _ in range(rounds):
        times["baseline"].append(size.timed(baseline, env, what)[0])
        seconds, _cpu, peak = extract_memory(size, profile, out)
        times["extract"].append(seconds)
        rss.append(peak)
    small = size.profile_path("large", True)
    small_rss = extract_memory(size, small, out)[2]
    medians = {key: statistics.median(values) for key, values in times.items()}
    paired = statistics.median(e / b for e, b in zip(times["extract"], times["baseline"]))
    return {
        "paired": paired,
        "profile": profile,
        "megabytes": profile.stat().st_size / 1e6,
        "baseline": what,
        "medians": medians,
        "ratio": medians["extract"] / medians["baseline"],
        "rss": max(rss),
        "small_rss": small_rss,
        "rounds": times,
    }


def main(smoke: bool = False) -> int:
    result = measure(smoke, 1 if smoke else 7)
    print(
        "extract memory --no-pva on {} ({:.0f} MB): {:.2f} s (median); the baseline, {}: "
        "{:.2f} s; ratio {:.2f}x (target <= {}x{})".format(
            result["profile"].parent.name,
            result["megabytes"],
            result["medians"]["extract"],
            result["baseline"],
            result["medians"]["baseline"],
            result["ratio"],
            TARGET,
            ", not checked: --smoke" if smoke else "",
        )
    )
    print("median of the rounds' own ratios: {:.2f}x".format(result["paired"]))
    print(
        "peak RSS {:.0f} MB (target < {:.0f} MB); on the smoke profile {:.0f} MB".format(
            result["rss"], TARGET_RSS_MB, result["small_rss"]
        )
    )
    print(
        "rounds (s): extract {}; baseline {}".format(
            ", ".join("{:.2f}".format(t) for t in result["rounds"]["extract"]),
            ", ".join("{:.2f}".format(t) for t in result["rounds"]["baseline"]),
        )
    )
    if smoke:
        return 0
    met = result["ratio"] <= TARGET and result["rss"] < TARGET_RSS_MB
    print("targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small profile, one round")
    sys.exit(main(parser.parse_args().smoke))
