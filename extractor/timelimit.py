"""A command's time limit (`--timeout`): its default and its check, in a leaf module, so
that the CLI declares the option without importing the work it limits."""

# A profile whose extraction takes longer is ended as failed (--timeout). A 500 MB profile
# takes under a second from a warm cache (BENCHMARKS.md); a cold 1 GB file read at 20 MB/s
# from a network filesystem takes under a minute, and the real pva, reading lazily, a few
# more on a busy node. Ten minutes is several times the slowest honest extraction, yet
# ends a hang (a pattern that backtracks catastrophically) the same hour.
DEFAULT_TIMEOUT = 600.0


def check_timeout(timeout: float) -> None:
    """UsageError unless --timeout is a number of seconds. Checked here, not with typer's
    min=0: typer 0.29 lets pydantic word it, and NaN would get "should be greater than or
    equal to 0"."""
    if not 0 <= timeout < float("inf"):  # negative, nan or inf
        from .errors import UsageError  # here: declaring --timeout needs no error class

        raise UsageError("--timeout {}: give a number of seconds (0: no limit)".format(timeout))
