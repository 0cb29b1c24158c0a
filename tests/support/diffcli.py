"""`extract diff` run through the real CLI and held against tests/support/diff_oracle.py:
the JSON's exact bytes and the CSV's exact text, for the same options.

`expect_diff(base, candidate, ...)` runs `extract diff BASE CANDIDATE --format json` and
`--format csv` in this process (invoke_extract), asserts exit 0, no error on stderr,
the accounting invariants of the output, and equality with the oracle, and returns the
oracle's result (for the caller's own checks that the case is what it means to be).
"""

import json
from pathlib import Path

from support.blocks_oracle import same
from support.checks import json_bytes
from support.cli import invoke_extract
from support.diff_oracle import check_accounting, diff_csv, diff_oracle
from support.paths import REPO


def diff_args(
    base, candidate, block=None, candidate_block=None, rules=None, use_pva=True, fmt=None
):
    """The command line of `extract diff` for these options (oracle's names)."""
    args = ["diff", str(base), str(candidate)]
    if block is not None:
        args += ["--block", "{}:{}".format(*block)]
    if candidate_block is not None:
        args += ["--candidate-block", "{}:{}".format(*candidate_block)]
    if rules is not None:
        args += ["--rules", str(rules)]
    if not use_pva:
        args.append("--no-pva")
    if fmt is not None:
        args += ["--format", fmt]
    return args


def oracle_for(base, candidate, cwd=REPO, **options):
    """The oracle's result for paths given as on a command line run in `cwd`."""
    return diff_oracle(
        Path(cwd) / base,
        Path(cwd) / candidate,
        base_label=str(base),
        candidate_label=str(candidate),
        **options,
    )


def expect_diff(base, candidate, cwd=REPO, pva=True, **options) -> dict:
    """Run the JSON and CSV formats; assert they are the oracle's; return its result.
    `pva`: whether the stand-in is importable (options' `use_pva=False` is `--no-pva`,
    which a run without it needs: docs/pva.md)."""
    flag = options.get("use_pva", True)
    want = oracle_for(base, candidate, cwd=cwd, **dict(options, use_pva=flag and pva))
    check_accounting(want)
    result = invoke_extract(*diff_args(base, candidate, fmt="json", **options), cwd=cwd, pva=pva)
    assert result.code == 0, result
    got = json.loads(result.stdout.decode("utf-8"))
    check_accounting(got)
    same(got, want)
    assert result.stdout == json_bytes(want)
    # The spec says nothing of warnings (the summary's may come along): no error, though.
    assert "Traceback" not in result.stderr and "extract: error" not in result.stderr, result
    result = invoke_extract(*diff_args(base, candidate, fmt="csv", **options), cwd=cwd, pva=pva)
    assert result.code == 0, result
    text = result.stdout.decode("utf-8")
    assert not text.startswith("\ufeff")
    assert text == diff_csv(want)
    return want
