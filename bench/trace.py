"""Benchmark: what `extract trace --all` costs against `extract --no-pva`, side by side.

    python bench/trace.py            # full size, 5 rounds
    python bench/trace.py --smoke    # small profiles, one round: that it works

`extract trace --all PROFILE -o trace.json --no-pva` (every step row as a slice) against
`extract PROFILE --no-pva` on bench/size.py's `long-trace` (2,420 runs, 1,001,880 step
rows; smoke: its small version), both the real CLI in a subprocess, warm page cache,
interleaved round by round so that a busy moment hits both; target <= 3x on the medians.
Peak RSS of `extract trace --all` on long-trace and on short-trace (10x fewer rows) is
shown too: it must not grow with the trace (the events are written as the rows are read).
The default window (the first inference) is timed once: it must be instant.

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
TARGET = 3.0

# The helpers that time an extract process, bench/blocks.py's, beside this file.
sys.path.insert(0, str(HERE))
from blocks import extract_timed, load  # noqa: E402


def measure(smoke: bool, rounds: int) -> dict:
    size = load("size")
    long_trace = size.profile_path("long-trace", smoke)
    short_trace = size.profile_path("short-trace", smoke)
    size.compile_package()
    out = CACHE / "trace-out"
    out.mkdir(parents=True, exist_ok=True)
    plain, traced = [], []
    for _ in range(rounds):
        plain.append(extract_timed(long_trace, "-o", out / "summary.json", "--no-pva"))
        traced.append(
            extract_timed("trace", long_trace, "-o", out / "trace.json", "--all", "--no-pva")
        )
    short = extract_timed("trace", short_trace, "-o", out / "trace-short.json", "--all", "--no-pva")
    first = extract_timed("trace", long_trace, "-o", out / "trace-first.json", "--no-pva")
    result = {
        "step_rows": size.step_row_count(long_trace),
        "extract_no_pva_s": statistics.median(wall for wall, _, _ in plain),
        "extract_trace_all_s": statistics.median(wall for wall, _, _ in traced),
        "extract_trace_first_s": first[0],
        "trace_mb": (out / "trace.json").stat().st_size / 1e6,
        "rss_trace_long_mb": max(rss for _, _, rss in traced),
        "rss_trace_short_mb": short[2],
        "rss_no_pva_long_mb": max(rss for _, _, rss in plain),
    }
    result["ratio"] = result["extract_trace_all_s"] / result["extract_no_pva_s"]
    return result


def main(smoke: bool = False, rounds: int = 0) -> int:
    rounds = rounds or (1 if smoke else 5)
    print(
        "bench/trace.py: {} size, {} round(s), {} CPUs, Python {}".format(
            "smoke" if smoke else "full", rounds, os.cpu_count(), sys.version.split()[0]
        ),
        flush=True,
    )
    result = measure(smoke, rounds)
    print(
        "long-trace ({} step rows), medians: extract --no-pva {:.2f} s, extract trace --all "
        "{:.2f} s ({:.0f} MB of JSON): {:.2f}x (target <= {}x{})".format(
            result["step_rows"],
            result["extract_no_pva_s"],
            result["extract_trace_all_s"],
            result["trace_mb"],
            result["ratio"],
            TARGET,
            "; smoke: no target" if smoke else "",
        )
    )
    print(
        "the default window (first inference): {:.2f} s; peak RSS of extract trace --all: "
        "{:.1f} MB on long-trace, {:.1f} MB on short-trace (10x fewer rows); extract "
        "--no-pva {:.1f} MB on long-trace".format(
            result["extract_trace_first_s"],
            result["rss_trace_long_mb"],
            result["rss_trace_short_mb"],
            result["rss_no_pva_long_mb"],
        ),
        flush=True,
    )
    return 0 if smoke or result["ratio"] <= TARGET else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
