"""Benchmark: a batch of generated profiles with --jobs 2 against --jobs 1.

    python bench/batch.py            # 32 profiles, median of 3 runs each way
    python bench/batch.py --smoke    # 8 small profiles, one run each: that it works

Both runs extract the same batch (with --force, so nothing is skipped as up to date) in
the same session, each profile heavy enough (24 to 27 recorded runs, about 60,000 step
rows) that the figure measures parallel extraction rather than worker start-up, through
the real CLI with the pva stand-in; the figure is the ratio of their wall times. The
target is at least 1.7x on a 2-core machine. Profiles are generated once into
bench/cache/batch-*/ and reused.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / "cache"
sys.path.insert(0, str(REPO / "fixtures"))

import generate  # noqa: E402  (the fixture generator, fixtures/generate.py)


def batch_folder(variants, copies, runs_from) -> Path:
    """`variants` distinct ViT profiles (runs_from, runs_from+1, ... recorded runs, every
    block detailed), each copied into `copies` folders."""
    folder = CACHE / "batch-{}x{}-r{}".format(variants, copies, runs_from)
    marker = folder / "complete"
    if marker.exists():
        return folder
    shutil.rmtree(str(folder), ignore_errors=True)
    for variant in range(variants):
        spec = generate.vit_spec(
            blocks=27,
            runs=runs_from + variant,
            seed=variant + 1,
            detailed_blocks=tuple(range(27)),
            code_bytes="none",
        )
        first = generate.write_case(spec, folder / "v{}".format(variant) / "c0")
        for copy in range(1, copies):
            target = folder / "v{}".format(variant) / "c{}".format(copy)
            target.mkdir(parents=True)
            for name in ("profile.pop", "pva-double.json"):
                shutil.copy2(str(first.parent / name), str(target / name))
    marker.write_text("generated\n")
    return folder


def time_batch(profiles: Path, outdir: Path, jobs: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tests" / "pva_double"))
    command = [
        sys.executable,
        "-m",
        "extractor",
        str(profiles),
        "-o",
        str(outdir),
        "--jobs",
        str(jobs),
        "--force",
        "--quiet",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit("batch failed: {}".format(done.stderr.decode()[-2000:]))
    return elapsed


def summaries(outdir: Path) -> dict:
    return {str(p.relative_to(outdir)): p.read_bytes() for p in outdir.rglob("summary.json")}


def main(smoke: bool = False) -> int:
    variants, copies, runs_from, repeats = (2, 4, 2, 1) if smoke else (4, 8, 24, 5)
    profiles = batch_folder(variants, copies, runs_from)
    count = variants * copies
    out = CACHE / "batch-out"
    times = {}
    for jobs in (1, 2):
        shutil.rmtree(str(out / str(jobs)), ignore_errors=True)
        times[jobs] = [time_batch(profiles, out / str(jobs), jobs) for _ in range(repeats)]
    if summaries(out / "1") != summaries(out / "2"):
        raise SystemExit("--jobs 1 and --jobs 2 wrote different summaries")
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(
        "batch of {} profiles, {} CPUs, median of {}: --jobs 1 {:.2f} s, --jobs 2 {:.2f} s, "
        "speed-up {:.2f}x (target >= 1.7x{})".format(
            count,
            os.cpu_count(),
            repeats,
            one,
            two,
            one / two,
            "; smoke run, no target" if smoke else "",
        )
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small and quick: that it works")
    sys.exit(main(parser.parse_args().smoke))
