"""What the --timeout tests hold a run with, at each stage of its work, through the real
CLI in a subprocess:

- the Python pass: a stage rule that backtracks catastrophically on a step name
  (`evil_rules`, `evil_profile`): CPython's regular expression engine never ends it by
  itself;
- an SQL query: SLOW_SQL, sitecustomize code that makes every SELECT of extract's
  connections count to 10**11 first, in SQLite's own C code, before its rows (hours),
  so that time runs out inside SQLite (the file $EXTRACT_TEST_SQL_STARTED, when set, is
  made as the first one starts);
- the writing of the output: support.held holds the run at its output's rename;
- a read stuck in the kernel (a network file system that stopped answering): STUCK_READ,
  sitecustomize code that, at extract's first SELECT, blocks SIGALRM in the main thread
  and sleeps there: neither the alarm's handler nor SQLite's progress handler runs (the
  file $EXTRACT_TEST_STUCK is made as it starts; unset, nothing is stuck);

and FORKS, sitecustomize code that logs every fork of the run (the audit event
os.fork) to the file $EXTRACT_TEST_FORKS; `compiled_pva`, the pva stand-in with its
openReport made something other than a Python function, as the SDK's C++ one is."""

import json
from pathlib import Path

from support import badinput as bad
from support.cases import copy_case
from support.paths import PVA_DOUBLE, REPO

# (a+)+$ on 64 a's and a '!' tries 2**64 ways before failing: it never ends by itself.
EVIL_NAME = "a" * 64 + "!"


def evil_rules(folder: Path) -> Path:
    """The installed rules, with a kernel selector (searched in every step name) that
    backtracks catastrophically on EVIL_NAME and matches the usual kernels otherwise."""
    text = (REPO / "stage_rules.toml").read_text()
    assert 'kernel = "/Convolve$"' in text
    path = folder / "evil_rules.toml"
    path.write_text(text.replace('kernel = "/Convolve$"', 'kernel = "(a+)+$|/Convolve$"'))
    return path


def evil_exchange_profile(folder: Path, source: Path, name: str = EVIL_NAME) -> Path:
    """A copy of the case `source` whose first DoExchange program with code bytes pva
    names `name` (extract memory gives each such program its stage: evil_stage_rules)."""
    profile = copy_case(source, folder)
    path = folder / "pva-double.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    program = next(
        p for p in data["programs"] if p["type"] == "DoExchange" and p.get("codeBytesByTile")
    )
    program["name"] = name
    path.write_text(json.dumps(data), encoding="utf-8")
    return profile


def evil_stage_rules(folder: Path) -> Path:
    """The installed rules with a first stage rule that backtracks catastrophically on
    EVIL_NAME (stage rules are searched in extract memory's exchange names)."""
    text = (REPO / "stage_rules.toml").read_text()
    first = text.index("[[rules]]")
    path = folder / "evil_stage_rules.toml"
    path.write_text(
        text[:first] + '[[rules]]\npattern = "(a+)+$"\nlabel = "evil"\n\n' + text[first:]
    )
    return path


def evil_profile(folder: Path, name: str = EVIL_NAME) -> Path:
    profile = bad.write_base(folder)
    bad.rename_fc1(bad.sql_text(name), name)(folder)
    return profile


SLOW_SQL = r"""
import os, sqlite3
_connect = sqlite3.connect
_COUNT = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT * FROM ({}) WHERE (SELECT count(*) FROM (SELECT x FROM c LIMIT 100000000000)) >= 0"
)
class _SlowConnection(sqlite3.Connection):
    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("SELECT"):
            sql = _COUNT.format(sql)
            started = os.environ.get("EXTRACT_TEST_SQL_STARTED")
            if started:
                open(started, "a").close()
        return super().execute(sql, *args)
def _slow_connect(*args, **kwargs):
    kwargs.setdefault("factory", _SlowConnection)
    return _connect(*args, **kwargs)
sqlite3.connect = _slow_connect
"""

STUCK_READ = r"""
import os, signal, sqlite3, time
_connect = sqlite3.connect
class _StuckConnection(sqlite3.Connection):
    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("SELECT") and os.environ.get("EXTRACT_TEST_STUCK"):
            # as a read() stuck in the kernel: SIGALRM never reaches this thread's
            # handler, and SQLite's progress handler is not called
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            open(os.environ["EXTRACT_TEST_STUCK"], "a").close()
            time.sleep(3600)
        return super().execute(sql, *args)
def _stuck_connect(*args, **kwargs):
    kwargs.setdefault("factory", _StuckConnection)
    return _connect(*args, **kwargs)
sqlite3.connect = _stuck_connect
"""

FORKS = r"""
import os, sys
def _log_forks(event, args):
    if event == "os.fork":
        with open(os.environ["EXTRACT_TEST_FORKS"], "a") as log:
            log.write("{}\n".format(os.getpid()))
sys.addaudithook(_log_forks)
"""


def hooked(folder: Path, code: str, pva: Path = PVA_DOUBLE) -> dict:
    """The environment of a run whose sitecustomize is `code` (written into `folder`),
    with its forks logged to folder/forks (FORKS) and its pva from `pva`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(FORKS + code)
    return {
        "PYTHONPATH": "{}:{}".format(folder, pva),
        "EXTRACT_TEST_FORKS": str(folder / "forks"),
    }


def forks(folder: Path) -> list:
    """The pids that forked in a run made with hooked(folder, ...)."""
    log = folder / "forks"
    return log.read_text().split() if log.exists() else []


COMPILED_PVA = r"""
import functools, importlib.util, sys
_spec = importlib.util.spec_from_file_location(
    "pva_standin", {double!r}, submodule_search_locations=[]
)
_standin = importlib.util.module_from_spec(_spec)
sys.modules["pva_standin"] = _standin
_spec.loader.exec_module(_standin)
globals().update({{k: v for k, v in vars(_standin).items() if not k.startswith("__")}})
# As the SDK's openReport, bound by pybind11, is: callable, but not a Python function.
openReport = functools.partial(_standin.openReport)
"""


def compiled_pva(folder: Path) -> Path:
    """A folder holding a `pva` that is the stand-in but for its openReport, which is
    not a Python function (as the SDK's, C++ through pybind11, is not): extract keeps
    its watching parent process for such a pva."""
    package = folder / "pva"
    package.mkdir(parents=True, exist_ok=True)
    double = str(PVA_DOUBLE / "pva" / "__init__.py")
    (package / "__init__.py").write_text(COMPILED_PVA.format(double=double))
    return folder


#: How each command that has --timeout runs on its profiles (PROFILE: the first,
#: OTHER: a second, for the commands that take several); tests/test_time_limit.py
#: checks that these are all the commands whose signature has `timeout`.
TIMEOUT_COMMANDS = {
    "run": ["PROFILE"],
    "blocks": ["blocks", "PROFILE"],
    "trace": ["trace", "PROFILE", "OTHER"],
    "diff": ["diff", "PROFILE", "OTHER"],
    "memory": ["memory", "PROFILE"],
    "breakdown": ["breakdown", "PROFILE", "OTHER"],
}


def command_words(name: str, profile: Path, other: Path) -> list:
    return [{"PROFILE": profile, "OTHER": other}.get(w, w) for w in TIMEOUT_COMMANDS[name]]
