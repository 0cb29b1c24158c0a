"""Benchmark: `extract memory --no-pva`, and what `--memory` adds to a batch, against the
same aggregates run by the sqlite3 shell.

    python bench/memory.py            # full size, 7 rounds
    python bench/memory.py --smoke    # the small profile, one round: that it works
    python bench/memory.py --rounds 9 # more rounds

On bench/size.py's `large` profile (1,472 tiles, 3.5 million vars_info rows, over 500
MB; smoke: its small version), each round in turn, warm page cache:

- the baseline: the sqlite3 shell (`sqlite3 -readonly`, output to /dev/null) running
  the two queries extract memory needs, one `GROUP BY tile, category` pass over
  vars_info and one pass over memory_by_tile in row order. Without the shell, Python's
  sqlite3 module runs the same two statements in a new process (the output says which);
- `extract memory PROFILE --no-pva --format json -o FILE`, the real CLI in a subprocess,
  interpreter start included, and its peak RSS;
- a batch of the same file (`extract FOLDER -o OUT --no-pva --force --jobs 1`, FOLDER
  the profile's folder in the cache, which holds that one profile.pop), without and
  with `--memory` (memory.json beside the summary: what `extract memory --format json`
  writes). `--no-pva`, as the command above: pva's bytes per tile would time the pva
  stand-in's JSON file, not the SDK.

Interleaved round by round, so that a busy moment of a shared machine hits all four;
figures are medians. Targets: extract / baseline <= 1.3x, peak RSS < 200 MB; what
`--memory` adds to the batch, median(batch with it) - median(batch without), <= 1.3x
the baseline (the median of each round's own ratio is shown beside it, and the
summaries of both batches must be the same bytes). The peak RSS on the smoke profile
(60 times fewer vars_info rows) is shown beside it: it must not grow with the rows.
Exit 1 when a target is missed (full size only; --smoke checks none).
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


def batch_memory(size, profile: Path, out: Path, memory: bool) -> float:
    """Wall seconds of a batch of the folder that holds `profile`, into `out` (emptied
    first), with `--memory` or without."""
    shutil.rmtree(str(out), ignore_errors=True)
    command = [sys.executable, "-m", "extractor", str(profile.parent), "-o", str(out)]
    command += ["--no-pva", "--force", "--jobs", "1", "--quiet"]
    command += ["--memory"] if memory else []
    return size.timed(command, dict(os.environ), "a batch of {}".format(profile.parent))[0]


def measure(smoke: bool, rounds: int) -> dict:
    size = load("size")
    batch = load("batch")
    profile = size.profile_path("large", smoke)
    size.compile_package()
    out = CACHE / "memory-out.json"
    batch_out = CACHE / "memory-batch-out"
    what, baseline = baseline_command(profile)
    env = dict(os.environ)
    extract_memory(size, profile, out)  # once untimed: the page cache warm for both
    times = {"baseline": [], "extract": [], "batch": [], "batch_memory": []}
    rss = []
    for _ in range(rounds):
        times["baseline"].append(size.timed(baseline, env, what)[0])
        seconds, _cpu, peak = extract_memory(size, profile, out)
        times["extract"].append(seconds)
        rss.append(peak)
        times["batch"].append(batch_memory(size, profile, batch_out / "plain", False))
        times["batch_memory"].append(batch_memory(size, profile, batch_out / "memory", True))
    if batch.summaries(batch_out / "plain") != batch.summaries(batch_out / "memory"):
        raise SystemExit("the batches with and without --memory wrote different summaries")
    if len(list((batch_out / "memory").rglob("memory.json"))) != 1:
        raise SystemExit("the batch with --memory wrote no memory.json")
    small = size.profile_path("large", True)
    small_rss = extract_memory(size, small, out)[2]
    medians = {key: statistics.median(values) for key, values in times.items()}
    paired = statistics.median(e / b for e, b in zip(times["extract"], times["baseline"]))
    added = medians["batch_memory"] - medians["batch"]
    batch_paired = statistics.median(
        (with_ - without) / b
        for with_, without, b in zip(times["batch_memory"], times["batch"], times["baseline"])
    )
    return {
        "added": added,
        "batch_ratio": added / medians["baseline"],
        "batch_paired": batch_paired,
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


def main(smoke: bool = False, rounds: int = 0) -> int:
    result = measure(smoke, rounds or (1 if smoke else 7))
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
        "a batch of it (--no-pva --force --jobs 1), medians: without --memory {:.2f} s, "
        "with {:.2f} s: --memory adds {:.2f} s, {:.2f}x the baseline (each round's own: "
        "{:.2f}x; target <= {}x{})".format(
            result["medians"]["batch"],
            result["medians"]["batch_memory"],
            result["added"],
            result["batch_ratio"],
            result["batch_paired"],
            TARGET,
            ", not checked: --smoke" if smoke else "",
        )
    )
    print(
        "rounds (s): extract {}; baseline {}; batch {}; batch --memory {}".format(
            *(
                ", ".join("{:.2f}".format(t) for t in result["rounds"][key])
                for key in ("extract", "baseline", "batch", "batch_memory")
            )
        )
    )
    if smoke:
        return 0
    checks = (
        ("extract memory <= {}x the baseline".format(TARGET), result["ratio"] <= TARGET),
        ("peak RSS < {:.0f} MB".format(TARGET_RSS_MB), result["rss"] < TARGET_RSS_MB),
        (
            "what --memory adds to a batch <= {}x the baseline".format(TARGET),
            result["batch_ratio"] <= TARGET,
        ),
    )
    for text, met in checks:
        print("  {:<62} {}".format(text, "met" if met else "MISSED"))
    met = all(met for _, met in checks)
    print("targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small profile, one round")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 7; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
