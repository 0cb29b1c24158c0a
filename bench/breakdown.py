"""Benchmark: what `extract breakdown` costs, against `extract --no-pva`, against itself
on one profile at a time, and inside a batch (`--breakdown`), side by side.

    python bench/breakdown.py            # full size, 5 rounds
    python bench/breakdown.py --smoke    # small profiles, one round: that it works
    python bench/breakdown.py --rounds 9 # more rounds

Every figure comes from the real CLI in subprocesses (interpreter start included), warm
page cache, every command `--no-pva --format json` (a batch: `--no-pva`; pva's one fact
here, tile_balance, is the same lookup in both, and the pva stand-in would time a JSON
file, not the SDK), interleaved round by round so that a busy moment of a shared machine
hits every side; figures are medians over the rounds. Three measurements, the three
speed points of the command:

1. One profile: on bench/size.py's `long-trace` (2,420 runs, 1,001,880 step rows;
   smoke: its small version), each round `extract PROFILE --no-pva` (the baseline: one
   walk over every row), `extract breakdown PROFILE` (the default window, inference 1:
   the rows of one run, read by a range of steps) and `extract breakdown PROFILE --all`
   (every row of the trace as one window: the breakdown's consumer on each of the
   million rows). Target <= 1.5x `extract --no-pva` on the medians of wall time, for
   both (the default window must be far below). The medians of CPU time are shown too
   (a busy machine disturbs them less). Peak RSS of `--all` on long-trace and on
   short-trace (10x fewer rows) is shown: it must not grow with the trace (sums per op,
   never rows).
2. Two profiles: `extract breakdown A B` (what changed from A to B) against `extract
   breakdown A` plus `extract breakdown B`, one after the other, with A long-trace and
   B bench/diff.py's long-trace-b (the same model and size, another seed: other
   cycles); for the default window and for `--all`, in the same rounds as 1 (whose
   single runs of A are reused). Target: the pair <= 1x the sum of the two single runs,
   on the medians of wall time (the pair saves one interpreter start and pays for the
   join of the tables, a few hundred rows). With --all the pair is two walks, as the
   single runs are, so its only slack is the start-up saved, about 5% of the sum: on a
   busy machine a run can land on 1.0x, hence the CPU figures and the median of each
   round's own ratio beside it.
3. A batch: `extract FOLDER -o OUT --no-pva --force --jobs 1 --breakdown` against the
   same batch without `--breakdown`, and against `extract breakdown PROFILE` (inference
   1, what --breakdown writes) on each of the batch's profiles one after the other, on
   bench/blocks.py's batch (16 profiles: 4 ViTs of 24 to 27 runs, every block detailed,
   about 60,000 step rows each; smoke: bench/batch.py's 8 small ones). `--jobs 1`: the
   single commands run one at a time, so the batch does its added work on one core
   too (with two jobs the difference would be halved by a second core that a shared
   machine may or may not have free). Target: what --breakdown adds, median(batch with
   it) - median(batch without), <= 1x the median of the sum of the single commands.
   The median of each round's own ratio is shown beside it; the summaries of both
   batches must be the same bytes, and the batch must write a breakdown.json for every
   profile.

Exit 1 when a target is missed (full size only; --smoke checks none). Profiles are
generated once into bench/cache/ (by bench/size.py, bench/diff.py and bench/batch.py)
and reused.
"""

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"
TARGET = 1.5
TARGET_PAIR = 1.0  # extract breakdown A B / (extract breakdown A + extract breakdown B)
TARGET_BATCH = 1.0  # what --breakdown adds to a batch / the commands on its profiles

# The helpers that time an extract process, bench/blocks.py's, beside this file.
sys.path.insert(0, str(HERE))
from blocks import extract_timed, load  # noqa: E402

JSON = ("-f", "json", "--no-pva")


def measure(smoke: bool, rounds: int) -> dict:
    size = load("size")
    long_trace, long_trace_b, short_trace, _ = load("diff").profiles(smoke)
    size.compile_package()
    out = CACHE / "breakdown-out"
    out.mkdir(parents=True, exist_ok=True)
    keys = ("plain", "first", "all", "first_b", "all_b", "pair_first", "pair_all")
    times = {key: [] for key in keys}
    for _ in range(rounds):
        times["plain"].append(extract_timed(long_trace, "-o", out / "summary.json", "--no-pva"))
        for window, options in (("first", ()), ("all", ("--all",))):
            times[window].append(
                extract_timed(
                    "breakdown", long_trace, "-o", out / (window + ".json"), *JSON, *options
                )
            )
            times["pair_" + window].append(
                extract_timed(
                    "breakdown",
                    long_trace,
                    long_trace_b,
                    "-o",
                    out / ("pair-" + window + ".json"),
                    *JSON,
                    *options,
                )
            )
            times[window + "_b"].append(
                extract_timed(
                    "breakdown", long_trace_b, "-o", out / (window + "-b.json"), *JSON, *options
                )
            )
    short = extract_timed("breakdown", short_trace, "-o", out / "short.json", *JSON, "--all")
    result = {"step_rows": size.step_row_count(long_trace)}
    for name, runs in times.items():
        result[name + "_s"] = statistics.median(wall for wall, _, _ in runs)
        result[name + "_cpu_s"] = statistics.median(cpu for _, cpu, _ in runs)
    for name in ("first", "all"):
        result[name + "_ratio"] = result[name + "_s"] / result["plain_s"]
        result[name + "_cpu_ratio"] = result[name + "_cpu_s"] / result["plain_cpu_s"]
        # the two single runs of each round, added, then their median
        singles = [a[0] + b[0] for a, b in zip(times[name], times[name + "_b"])]
        singles_cpu = [a[1] + b[1] for a, b in zip(times[name], times[name + "_b"])]
        result["singles_" + name + "_s"] = statistics.median(singles)
        result["singles_" + name + "_cpu_s"] = statistics.median(singles_cpu)
        result["pair_" + name + "_ratio"] = (
            result["pair_" + name + "_s"] / result["singles_" + name + "_s"]
        )
        result["pair_" + name + "_cpu_ratio"] = (
            result["pair_" + name + "_cpu_s"] / result["singles_" + name + "_cpu_s"]
        )
        result["pair_" + name + "_paired"] = statistics.median(
            pair[0] / single for pair, single in zip(times["pair_" + name], singles)
        )
    result["rss_all_long_mb"] = max(rss for _, _, rss in times["all"])
    result["rss_all_short_mb"] = short[2]
    result["rss_plain_long_mb"] = max(rss for _, _, rss in times["plain"])
    return result


def batch_measure(smoke: bool, rounds: int) -> dict:
    """A batch with --breakdown, the same batch without, and `extract breakdown` on each
    of its profiles one after the other, interleaved round by round."""
    batch = load("batch")
    variants, copies, runs_from = (2, 4, 2) if smoke else (4, 4, 24)
    folder = batch.batch_folder(variants, copies, runs_from)
    profiles = sorted(folder.rglob("profile.pop"))
    out = CACHE / "breakdown-batch-out"
    single_out = out / "single"
    single_out.mkdir(parents=True, exist_ok=True)
    batch_options = ("--no-pva", "--force", "--jobs", "1")
    keys = ("batch", "batch_breakdown", "commands")
    times = {key: [] for key in keys}
    for _ in range(rounds):
        for key, options in (("batch", ()), ("batch_breakdown", ("--breakdown",))):
            target = out / key
            shutil.rmtree(str(target), ignore_errors=True)
            times[key].append(extract_timed(folder, "-o", target, *batch_options, *options))
        commands = [
            extract_timed("breakdown", profile, "-o", single_out / "{}.json".format(number), *JSON)
            for number, profile in enumerate(profiles)
        ]
        times["commands"].append(
            (sum(c[0] for c in commands), sum(c[1] for c in commands), max(c[2] for c in commands))
        )
    if batch.summaries(out / "batch") != batch.summaries(out / "batch_breakdown"):
        raise SystemExit("the batches with and without --breakdown wrote different summaries")
    written = len(list((out / "batch_breakdown").rglob("breakdown.json")))
    if written != len(profiles):
        raise SystemExit(
            "--breakdown wrote {} breakdown.json for {} profiles".format(written, len(profiles))
        )
    result = {"profiles": len(profiles)}
    for name, runs in times.items():
        result[name + "_s"] = statistics.median(wall for wall, _, _ in runs)
        result[name + "_cpu_s"] = statistics.median(cpu for _, cpu, _ in runs)
    result["added_s"] = result["batch_breakdown_s"] - result["batch_s"]
    result["added_cpu_s"] = result["batch_breakdown_cpu_s"] - result["batch_cpu_s"]
    result["ratio"] = result["added_s"] / result["commands_s"]
    result["cpu_ratio"] = result["added_cpu_s"] / result["commands_cpu_s"]
    result["paired"] = statistics.median(
        (with_[0] - without[0]) / commands[0]
        for with_, without, commands in zip(
            times["batch_breakdown"], times["batch"], times["commands"]
        )
    )
    return result


def main(smoke: bool = False, rounds: int = 0) -> int:
    rounds = rounds or (1 if smoke else 5)
    print(
        "bench/breakdown.py: {} size, {} round(s), {} CPUs, Python {}".format(
            "smoke" if smoke else "full", rounds, os.cpu_count(), sys.version.split()[0]
        ),
        flush=True,
    )
    no_target = "; smoke: no target" if smoke else ""
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
            no_target,
        )
    )
    print(
        "peak RSS of extract breakdown --all: {:.1f} MB on long-trace, {:.1f} MB on "
        "short-trace (10x fewer rows); extract --no-pva {:.1f} MB on long-trace".format(
            r["rss_all_long_mb"], r["rss_all_short_mb"], r["rss_plain_long_mb"]
        ),
        flush=True,
    )
    for name, words in (("first", "inference 1"), ("all", "--all")):
        print(
            "two profiles ({}), medians (wall / CPU): extract breakdown long-trace "
            "long-trace-b {:.2f} / {:.2f} s; extract breakdown on each, one after the "
            "other, {:.2f} / {:.2f} s: {:.2f}x / {:.2f}x (each round's own: {:.2f}x; target "
            "<= {}x{})".format(
                words,
                r["pair_" + name + "_s"],
                r["pair_" + name + "_cpu_s"],
                r["singles_" + name + "_s"],
                r["singles_" + name + "_cpu_s"],
                r["pair_" + name + "_ratio"],
                r["pair_" + name + "_cpu_ratio"],
                r["pair_" + name + "_paired"],
                TARGET_PAIR,
                no_target,
            )
        )
    b = batch_measure(smoke, rounds)
    print(
        "batch of {} profiles (--no-pva --force --jobs 1), medians (wall / CPU): without "
        "--breakdown {:.2f} / {:.2f} s, with {:.2f} / {:.2f} s, added {:.2f} / {:.2f} s; "
        "extract breakdown on each profile, one after the other, {:.2f} / {:.2f} s: added "
        "/ commands {:.2f}x / {:.2f}x (each round's own: {:.2f}x; target <= {}x{})".format(
            b["profiles"],
            b["batch_s"],
            b["batch_cpu_s"],
            b["batch_breakdown_s"],
            b["batch_breakdown_cpu_s"],
            b["added_s"],
            b["added_cpu_s"],
            b["commands_s"],
            b["commands_cpu_s"],
            b["ratio"],
            b["cpu_ratio"],
            b["paired"],
            TARGET_BATCH,
            no_target,
        ),
        flush=True,
    )
    checks = (
        (
            "extract breakdown (inference 1) <= {}x extract --no-pva".format(TARGET),
            r["first_ratio"] <= TARGET,
        ),
        (
            "extract breakdown --all <= {}x extract --no-pva".format(TARGET),
            r["all_ratio"] <= TARGET,
        ),
        (
            "two profiles (inference 1) <= {}x the two single runs".format(TARGET_PAIR),
            r["pair_first_ratio"] <= TARGET_PAIR,
        ),
        (
            "two profiles (--all) <= {}x the two single runs".format(TARGET_PAIR),
            r["pair_all_ratio"] <= TARGET_PAIR,
        ),
        (
            "what --breakdown adds to a batch <= {}x the commands".format(TARGET_BATCH),
            b["ratio"] <= TARGET_BATCH,
        ),
    )
    for text, met in checks:
        print(
            "  {:<62} {}".format(
                text, "(smoke: no target)" if smoke else "met" if met else "MISSED"
            )
        )
    return 0 if smoke or all(met for _, met in checks) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
