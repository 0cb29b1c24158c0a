"""Benchmark: what blocks.json costs, two ratios measured side by side.

    python bench/blocks.py            # full size, 7 rounds
    python bench/blocks.py --smoke    # small profiles, one round: that it works

1. `extract blocks PROFILE` against `extract PROFILE --no-pva` on bench/size.py's
   `long-trace` (2,420 runs, 1,001,880 step rows; smoke: its small version), both the
   real CLI in a subprocess, warm page cache, interleaved round by round so that a busy
   moment hits both; target <= 1.25x on the medians. Peak RSS of `extract blocks` on
   long-trace and on short-trace (10x fewer rows) is shown too: it must not grow with
   the trace (no list of all rows).
2. A batch with `--blocks` against the same batch without, both `--no-pva --force
   --jobs 2` on bench/batch.py's profiles (16 here: 4 ViTs of 24 to 27 runs, every
   block detailed, about 60,000 step rows each; smoke: 8 small ones), interleaved;
   target <= 1.25x on the medians. The summaries of both must be the same bytes.

Profiles are generated once into bench/cache/ (by bench/size.py and bench/batch.py) and
reused.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / "bench" / "cache"
TARGET = 1.25


def load(name: str):
    """bench/<name>.py (bench/run.py may have loaded it already)."""
    key = "bench_{}".format(name)
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, str(HERE / "{}.py".format(name)))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def extract_timed(*arguments):
    """(wall s, CPU s, peak RSS MB) of `python -m extractor ARGUMENTS --quiet`."""
    size = load("size")
    command = [sys.executable, "-m", "extractor"] + [str(a) for a in arguments] + ["--quiet"]
    return size.timed(command, dict(os.environ), " ".join(command[2:]))


def single_ratio(smoke: bool, rounds: int) -> dict:
    size = load("size")
    long_trace = size.profile_path("long-trace", smoke)
    short_trace = size.profile_path("short-trace", smoke)
    size.compile_package()
    out = CACHE / "blocks-out"
    out.mkdir(parents=True, exist_ok=True)
    plain, blocks = [], []
    for _ in range(rounds):
        plain.append(extract_timed(long_trace, "-o", out / "summary.json", "--no-pva"))
        blocks.append(extract_timed("blocks", long_trace, "-o", out / "blocks.json"))
    short = extract_timed("blocks", short_trace, "-o", out / "blocks-short.json")
    result = {
        "step_rows": size.step_row_count(long_trace),
        "extract_no_pva_s": statistics.median(wall for wall, _, _ in plain),
        "extract_blocks_s": statistics.median(wall for wall, _, _ in blocks),
        "rss_blocks_long_mb": max(rss for _, _, rss in blocks),
        "rss_blocks_short_mb": short[2],
        "rss_no_pva_long_mb": max(rss for _, _, rss in plain),
    }
    result["ratio"] = result["extract_blocks_s"] / result["extract_no_pva_s"]
    return result


def _batch(profiles: Path, outdir: Path, blocks: bool) -> float:
    command = [
        sys.executable,
        "-m",
        "extractor",
        str(profiles),
        "-o",
        str(outdir),
        "--jobs",
        "2",
        "--force",
        "--quiet",
        "--no-pva",
    ] + (["--blocks"] if blocks else [])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, cwd=str(REPO))
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit("batch failed: {}".format(done.stderr.decode()[-2000:]))
    return elapsed


def batch_ratio(smoke: bool, rounds: int) -> dict:
    batch = load("batch")
    variants, copies, runs_from = (2, 4, 2) if smoke else (4, 4, 24)
    profiles = batch.batch_folder(variants, copies, runs_from)
    out = CACHE / "blocks-batch-out"
    times = {False: [], True: []}
    for _ in range(rounds):
        for blocks in (False, True):
            folder = out / ("blocks" if blocks else "plain")
            shutil.rmtree(str(folder), ignore_errors=True)
            times[blocks].append(_batch(profiles, folder, blocks))
    if batch.summaries(out / "plain") != batch.summaries(out / "blocks"):
        raise SystemExit("the batches with and without --blocks wrote different summaries")
    count = len(list((out / "blocks").rglob("blocks.json")))
    if count != variants * copies:
        raise SystemExit(
            "--blocks wrote {} blocks.json for {} profiles".format(count, variants * copies)
        )
    result = {
        "profiles": variants * copies,
        "batch_s": statistics.median(times[False]),
        "batch_blocks_s": statistics.median(times[True]),
    }
    result["ratio"] = result["batch_blocks_s"] / result["batch_s"]
    return result


def main(smoke: bool = False, rounds: int = 0) -> int:
    rounds = rounds or (1 if smoke else 7)
    print(
        "bench/blocks.py: {} size, {} round(s), {} CPUs, Python {}".format(
            "smoke" if smoke else "full", rounds, os.cpu_count(), sys.version.split()[0]
        ),
        flush=True,
    )
    single = single_ratio(smoke, rounds)
    print(
        "long-trace ({} step rows), medians: extract --no-pva {:.2f} s, extract blocks "
        "{:.2f} s: {:.2f}x (target <= {}x{})".format(
            single["step_rows"],
            single["extract_no_pva_s"],
            single["extract_blocks_s"],
            single["ratio"],
            TARGET,
            "; smoke: no target" if smoke else "",
        )
    )
    print(
        "peak RSS of extract blocks: {:.1f} MB on long-trace, {:.1f} MB on short-trace "
        "(10x fewer rows); extract --no-pva {:.1f} MB on long-trace".format(
            single["rss_blocks_long_mb"],
            single["rss_blocks_short_mb"],
            single["rss_no_pva_long_mb"],
        ),
        flush=True,
    )
    batch = batch_ratio(smoke, rounds)
    print(
        "batch of {} profiles (--no-pva --jobs 2), medians: without --blocks {:.2f} s, "
        "with {:.2f} s: {:.2f}x (target <= {}x{})".format(
            batch["profiles"],
            batch["batch_s"],
            batch["batch_blocks_s"],
            batch["ratio"],
            TARGET,
            "; smoke: no target" if smoke else "",
        )
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 7; smoke 1)")
    arguments = parser.parse_args()
    sys.exit(main(arguments.smoke, arguments.rounds))
