"""Running `extract` as a user would: in a subprocess (`run_extract`, for what crosses a
process boundary) or in this process (`invoke_extract`, typer's CliRunner), both giving
the exit code, stdout bytes and stderr text; and the pva stand-in imported here."""

import os
import shutil
import signal
import subprocess
import sys
import traceback
from pathlib import Path

from support.paths import PVA_DOUBLE


def extract_command():
    """The installed console script beside this Python, else `python -m extractor`."""
    script = Path(sys.executable).with_name("extract")
    return [str(script)] if script.exists() else [sys.executable, "-m", "extractor"]


def without_root_privileges():
    """The command prefix under which file permissions apply to `extract` (run_extract's
    `prefix`): [] for an ordinary user; for root, setpriv dropping the capabilities that
    bypass them (root stays root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH); None
    when they cannot be made to apply (root without a working setpriv)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return prefix if subprocess.run(prefix + ["true"], check=False).returncode == 0 else None


class Result:
    def __init__(self, completed):
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return "<exit {} stderr={!r}>".format(self.code, self.stderr[-2000:])


def pva_double():
    """The pva stand-in (tests/pva_double), imported in this process, for library tests;
    sys.path is left as it was."""
    sys.path.insert(0, str(PVA_DOUBLE))
    try:
        import pva
    finally:
        sys.path.remove(str(PVA_DOUBLE))
    return pva


def run_extract(*args, cwd=None, pva=True, env=None, timeout=120, prefix=(), **popen):
    """Run `extract ARGS...` as a user would, in a subprocess: for what crosses a process
    boundary (signals, terminals, permissions, crashes, imports, a missing pva). `pva` puts
    the stand-in on PYTHONPATH; `prefix` goes before the command (`setpriv ...`); `popen`:
    more subprocess.run arguments (preexec_fn, stdin, stdout: a pipe unless given)."""
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)
    if pva:
        environment["PYTHONPATH"] = str(PVA_DOUBLE)
    environment.update(env or {})
    popen.setdefault("stdout", subprocess.PIPE)
    completed = subprocess.run(
        list(prefix) + extract_command() + [str(a) for a in args],
        cwd=cwd,
        env=environment,
        stderr=subprocess.PIPE,
        timeout=timeout,
        check=False,
        **popen,
    )
    return Result(completed)


def read_terminal(master: int) -> bytes:
    """All a pseudo-terminal's other side wrote, read from its `master` end until every
    writer has closed it; `master` is closed then."""
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks)


def commands_taking(parameter: str) -> set:
    """The names of the commands whose function has `parameter` (read from the
    commands' own signatures, so that a command given one later is counted)."""
    import inspect

    from extractor.cli import app

    return {
        registered.name or registered.callback.__name__
        for registered in app.registered_commands
        if parameter in inspect.signature(registered.callback).parameters
    }


def _takes_timeout(args) -> bool:
    """Whether `extract ARGS` runs a command that has --timeout: the command named first,
    else the default one (run); none for the app's own options (--help, --version)."""
    from extractor.cli import app
    from extractor.cli.commandline import DefaultCommandGroup

    if not args:
        return True  # the default command, with its paths missing
    if args[0] in DefaultCommandGroup.top_level_options:
        return False
    names = {
        registered.name or registered.callback.__name__ for registered in app.registered_commands
    }
    return (
        args[0] if args[0] in names else DefaultCommandGroup.default_command
    ) in commands_taking("timeout")


_CATCHABLE = [
    s
    for s in (
        getattr(signal, name, None)
        for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", "SIGCHLD")
    )
    if s is not None
]


class InProcessResult(Result):
    """What run_extract's Result has: `code`, `stdout` (bytes), `stderr` (text)."""

    def __init__(self, code, stdout, stderr):
        self.code = code
        self.stdout = stdout
        self.stderr = stderr


def _pva_modules():
    return [name for name in sys.modules if name == "pva" or name.startswith("pva.")]


def _runner(runner_class):
    try:  # click before 8.2 mixes stderr into stdout unless told not to
        return runner_class(mix_stderr=False)
    except TypeError:  # click 8.2 and later (typer 0.29's): always apart
        return runner_class()


class InProcessTimeout(BaseException):
    """An in-process run took longer than its `timeout`: not an Exception, so that the CLI's
    catch-all does not turn it into an error line; the test fails with it."""


def invoke_extract(*args, cwd=None, pva=True, env=None, timeout=120):
    """Run `extract ARGS...` in this process (typer's CliRunner on extractor.cli.app): the
    same exit code, stdout bytes and stderr as run_extract, without a new interpreter's
    start-up. For everything that does not test a process boundary. `pva`: the stand-in
    is importable (else no pva is: where one is installed, this falls back to
    run_extract, as it does for an env with PYTHONPATH). `timeout`: seconds before the run
    is interrupted (SIGALRM) and the test fails, as run_extract's would. A command that
    has --timeout gets `--timeout 0` unless it gives one: its limit is kept with SIGALRM
    too, which this harness holds for its own. The signal handlers the CLI installs, sys.path, the
    working folder and sys.modules' pva are put back afterwards; an exception the CLI let
    escape (a traceback in a real run) is added to stderr."""
    import importlib.util

    from typer.testing import CliRunner

    from extractor.cli import app

    if "PYTHONPATH" in (env or {}):  # means nothing in this process
        return run_extract(*args, cwd=cwd, pva=pva, env=env, timeout=timeout)
    args = [str(a) for a in args]
    if _takes_timeout(args) and "--timeout" not in args:
        args += ["--timeout", "0"]
    handlers = {signum: signal.getsignal(signum) for signum in _CATCHABLE}
    stashed = {name: sys.modules.pop(name) for name in _pva_modules()}
    folder = os.getcwd()
    if pva:
        sys.path.insert(0, str(PVA_DOUBLE))
    elif importlib.util.find_spec("pva") is not None:  # a real one: cannot hide it here
        sys.modules.update(stashed)
        return run_extract(*args, cwd=cwd, pva=False, env=env, timeout=timeout)

    def hang(*_):
        raise InProcessTimeout("extract {} took more than {} s".format(args, timeout))

    alarm = signal.signal(signal.SIGALRM, hang)
    signal.alarm(int(timeout))
    try:
        if cwd is not None:
            os.chdir(str(cwd))
        result = _runner(CliRunner).invoke(app, args, env=env, prog_name="extract")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, alarm)
        os.chdir(folder)
        if pva:
            sys.path.remove(str(PVA_DOUBLE))
        for name in _pva_modules():
            del sys.modules[name]
        sys.modules.update(stashed)
        for signum, handler in handlers.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
    stderr = result.stderr_bytes.decode("utf-8", "replace")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return InProcessResult(result.exit_code, result.stdout_bytes, stderr)
