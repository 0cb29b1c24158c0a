"""Benchmark: what `extract breakdown` costs against `extract --no-pva`, side by side.

    python bench/breakdown.py            # full size, 5 rounds
    python bench/breakdown.py --smoke    # small profiles, one round: that it works

On bench/size.py's `long-trace` (2,420 runs, 1,001,880 step rows; smoke: its small
version), the real CLI in subprocesses, warm page cache, interleaved round by round so
that a busy moment hits all three:

- `extract PROFILE --no-pva` (the baseline: one walk over every row);
- `extract breakdown PROFILE --no-pva --format json` (the default window, inference 1:
  the rows of one run, read by a range of steps);
- `extract breakdown PROFILE --no-pva --all --format json` (every row of the trace as
  one window: the breakdown's consumer on each of the million rows).

Target <= 1.5x `extract --no-pva` on the medians of wall time, for both (the default
window must be far below). The medians of CPU time are shown too (a busy machine
disturbs them less). Peak RSS of `--all` on long-trace and on short-trace (10x fewer
rows) is shown: it must not grow with the trace (sums per op, never rows).

Profiles are generated once into bench/cache/ (by bench/size.py) and reused.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"
TARGET = 1.5

# The helpers that time an extract process, bench/blocks.py's, beside this file.
sys.path.insert(0, str(HERE))
from blocks import extract_timed, load  # noqa: E402


def measure(smoke: bool, rounds: int) -> dict:
    size = load("size")
    long_trace = size.profile_path("long-trace", smoke)
    short_trace = size.profile_path("short-trace", smoke)
    size.compile_package()
    out = CACHE / "breakdown-out"
    out.mkdir(parents=True, exist_ok=True)
    times = {"plain": [], "first": [], "all": []}
    for _ in range(rounds):
        times["plain"].append(extract_timed(long_trace, "-o", out / "summary.json", "--no-pva"))
        times["first"].append(
            extract_timed(
                "breakdown", long_trace, "-o", out / "first.json", "-f", "json", "--no-pva"
            )
        )
        times["all"].append(
            extract_timed(
                "breakdown", long_trace, "-o", out / "all.json", "-f", "json", "--all", "--no-pva"
            )
        )
    short = extract_timed(
        "breakdown", short_trace, "-o", out / "short.json", "-f", "json", "--all", "--no-pva"
    )
    result = {"step_rows": size.step_row_count(long_trace)}
    for name, runs in times.items():
        result[name + "_s"] = statistics.median(wall for wall, _, _ in runs)
        result[name + "_cpu_s"] = statistics.median(cpu for _, cpu, _ in runs)
    for name in ("first", "all"):
        result[name + "_ratio"] = result[name + "_s"] / result["plain_s"]
        result[name + "_cpu_ratio"] = result[name + "_cpu_s"] / result["plain_cpu_s"]
    result["rss_all_long_mb"] = max(rss for _, _, rss in times["all"])
    result["rss_all_short_mb"] = short[2]
    result["rss_plain_long_mb"] = max(rss for _, _, rss in times["plain"])
    return result


def main(smoke: bool = False, rounds: int = 0) -> int:
    rounds = rounds or (1 if smoke else 5)
    print(
        "bench/breakdown.py: {} size, {} round(s), {} CPUs, Python {}".format(
            "smoke" if smoke else "full", rounds, os.cpu_count(), sys.version.split()[0]
        ),
        flush=True,
    )
    r = measure(smoke, rounds)
    print(
        "long-trace ({} step rows), medians (wall / CPU): extract --no-pva {:.2f} / {:.2f} s; "
        "extract breakdown (inference 1) {:.2f} / {:.2f} s: {:.2f}x / {:.2f}x; extract "
        "breakdown --all {:.2f} / {:.2f} s: {:.2f}x / {:.2f}x (target <= {}x{})".format(
            r["step_rows"],
            r["plain_s"],
            r["plain_cpu_s"],
            r["first_s"],
            r["first_cpu_s"],
            r["first_ratio"],
            r["first_cpu_ratio"],
            r["all_s"],
            r["all_cpu_s"],
            r["all_ratio"],
            r["all_cpu_ratio"],
            TARGET,
            "; smoke: no target" if smoke else "",
        )
    )
    print(
        "peak RSS of extract breakdown --all: {:.1f} MB on long-trace, {:.1f} MB on "
        "short-trace (10x fewer rows); extract --no-pva {:.1f} MB on long-trace".format(
            r["rss_all_long_mb"], r["rss_all_short_mb"], r["rss_plain_long_mb"]
        ),
        flush=True,
    )
    met = r["first_ratio"] <= TARGET and r["all_ratio"] <= TARGET
    return 0 if smoke or met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
