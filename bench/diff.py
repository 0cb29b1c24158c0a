"""Benchmark: `extract diff` against `extract blocks` on each of its two profiles.

    python bench/diff.py            # full size, 7 rounds
    python bench/diff.py --smoke    # small profiles, one round: that it works

The default diff (the first bodies, markdown; `--no-pva`, as blocks reads no pva) of
bench/size.py's `long-trace` (2,420 runs, 1,001,880 step rows) and `long-trace-b` (the
same model and size, another seed: other cycles) against `extract blocks` on long-trace
then on long-trace-b, one after the other: the real CLI in subprocesses, warm page
cache, interleaved round by round; target <= 1x on the medians (the diff no slower than
the two blocks runs). Peak RSS of the diff on the long traces and on the short ones (10x
fewer rows) is shown too: only the two bodies' rows are kept, so it must not grow with
the trace.

Profiles are generated once into bench/cache/ and reused.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cache"
TARGET = 1.0

# The helpers that time an extract process, bench/blocks.py's, beside this file.
sys.path.insert(0, str(HERE))
from blocks import extract_timed, load  # noqa: E402


def profiles(smoke: bool):
    """(long-trace, long-trace-b, short-trace, short-trace-b), generated when missing."""
    size = load("size")
    ours = {
        name + "-b": tuple(dict(params, seed=params["seed"] + 1) for params in size.PROFILES[name])
        for name in ("long-trace", "short-trace")
    }
    return (
        size.profile_path("long-trace", smoke),
        size.profile_path("long-trace-b", smoke, ours),
        size.profile_path("short-trace", smoke),
        size.profile_path("short-trace-b", smoke, ours),
    )


def main(smoke: bool = False, rounds: int = 0) -> int:
    rounds = rounds or (1 if smoke else 7)
    print(
        "bench/diff.py: {} size, {} round(s), {} CPUs, Python {}".format(
            "smoke" if smoke else "full", rounds, os.cpu_count(), sys.version.split()[0]
        ),
        flush=True,
    )
    size = load("size")
    base, candidate, short_base, short_candidate = profiles(smoke)
    size.compile_package()
    out = CACHE / "diff-out"
    out.mkdir(parents=True, exist_ok=True)
    diffs, pairs = [], []
    for _ in range(rounds):
        diffs.append(extract_timed("diff", base, candidate, "-o", out / "diff.md", "--no-pva"))
        one = extract_timed("blocks", base, "-o", out / "blocks.json")
        two = extract_timed("blocks", candidate, "-o", out / "blocks-b.json")
        pairs.append((one[0] + two[0], max(one[2], two[2])))
    short = extract_timed(
        "diff", short_base, short_candidate, "-o", out / "diff-short.md", "--no-pva"
    )
    diff_s = statistics.median(wall for wall, _, _ in diffs)
    blocks_s = statistics.median(wall for wall, _ in pairs)
    last = (out / "diff.md").read_text(encoding="utf-8").splitlines()[-1]
    print(
        "long-trace ({} step rows) against long-trace-b, medians: extract diff {:.2f} s, "
        "extract blocks on each, one after the other, {:.2f} s: {:.2f}x (target <= {}x{})".format(
            size.step_row_count(base),
            diff_s,
            blocks_s,
            diff_s / blocks_s,
            TARGET,
            "; smoke: no target" if smoke else "",
        )
    )
    print(
        "peak RSS of extract diff: {:.1f} MB on the long traces, {:.1f} MB on the short "
        "ones (10x fewer rows); extract blocks {:.1f} MB".format(
            max(rss for _, _, rss in diffs), short[2], max(rss for _, rss in pairs)
        )
    )
    print("the diff's last line: " + last, flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 7; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
