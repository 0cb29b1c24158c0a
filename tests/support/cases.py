"""The fixtures as tests use them: the generator module, a private copy of a case, the
golden case's folder, a file's hash."""

import hashlib
import shutil
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
