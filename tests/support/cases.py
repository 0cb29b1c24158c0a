"""The fixtures as tests use them: the generator module, a private copy of a case, the
golden case's folder, a file's hash; a generated spec given a second IPU (or more), and rules for
generated traces with no output step."""

import hashlib
import shutil
import sqlite3
import sys
from pathlib import Path

from support.paths import FIXTURES, GOLDEN


def generator():
    """fixtures/generate.py, the fixtures' generator, loaded once (as the module
    `fixtures_generate`: its dataclasses look their module up in sys.modules)."""
    name = "fixtures_generate"
    if name not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, str(FIXTURES / "generate.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copy_case(source: Path, target: Path) -> Path:
    """Copy a fixture folder (profile.pop + pva-double.json) and return the profile path."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("profile.pop", "pva-double.json"):
        shutil.copy2(str(source / name), str(target / name))
    return target / "profile.pop"


def golden_case_folder() -> Path:
    return GOLDEN / "poprt" / "profile_logs_f8weight" / "inference"


def two_ipus(spec):
    """The spec (a generate.py ProfileSpec, changed in place and returned) with a second
    IPU: each steps_by_ipu row followed by one for IPU 1 with other cycles and active
    tiles, so that a step's rows add up to something of their own."""
    return on_ipus(spec, 2)


def on_ipus(spec, count):
    """The spec (changed in place and returned) on `count` IPUs: each steps_by_ipu row
    followed by one for each IPU from 1, each with cycles and active tiles of its own
    (IPU 1's as two_ipus gives them)."""
    rows = []
    for row in spec.steps_by_ipu:
        rows.append(row)
        for ipu in range(1, count):
            twin = type(row)(**vars(row))
            twin.ipu = ipu
            twin.cycles = row.cycles + (row.step_id * 7 * ipu) % 13
            twin.active_tiles = row.active_tiles + (row.step_id + ipu - 1) % 3
            rows.append(twin)
    spec.steps_by_ipu = rows
    spec.ipus = count
    return spec


# Rules for a generated ViT trace under which no step begins an output (so the last body
# runs to the end of the trace), with a label repeated, one outside ASCII, and another
# fallback.
NO_OUTPUT_RULES = """
fallback = "rest"
[[rules]]
pattern = "/attn/"
label = "attention"
[[rules]]
pattern = "/mlp/"
label = 'mlp "\u2191"'
[[rules]]
pattern = "/attn/qkv/"
label = "attention"
[selectors]
kernel = "/Convolve$"
anchor = "/attn/qkv/"
attention_exchange = "/blocks\\\\.0/attn/"
input_delivered = "^copyFromHost$"
output_begins = "^no such step$"
"""


def stored_backwards(profile) -> None:
    """Rewrite a profile's steps_by_ipu with its rows stored in the reverse order (out of
    step order: a reader must sort them)."""
    db = sqlite3.connect(str(profile), isolation_level=None)
    try:
        db.execute("CREATE TABLE backwards AS SELECT * FROM steps_by_ipu ORDER BY rowid DESC")
        db.execute("DROP TABLE steps_by_ipu")
        db.execute("ALTER TABLE backwards RENAME TO steps_by_ipu")
    finally:
        db.close()
