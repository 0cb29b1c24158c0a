"""`extract breakdown` on random profiles, through the real CLI (in this process),
against tests/support/breakdown_oracle.py: the JSON's exact bytes, and the invariants
(kinds, stages, ops and layers each add up to all cycles per IPU; two profiles' changes
add up to the whole change), whatever the profile.

Two kinds of profile: a generated ViT trace (fixtures/generate.py's vit_spec, on one to
three IPUs) and that trace after random edits (tests/support/diffedits.py: steps
inserted, removed, renamed, other cycles or tiles, ids renumbered), compared; and
random traces of any shape (test_pass's strategy: markers anywhere, several IPUs, rows
stored out of step order). Examples are few: CI runs the whole suite in minutes."""

import json
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from support.breakdown_oracle import check_invariants, oracle_breakdown, oracle_compared
from support.cases import generator, on_ipus
from support.cli import invoke_extract
from support.diffedits import EDITS, edit_spec

vit = st.fixed_dictionaries(
    {
        "blocks": st.integers(1, 3),
        "runs": st.integers(1, 2),
        "seed": st.integers(0, 2**20),
        "ipus": st.sampled_from([1, 1, 2, 3]),
    }
)
edit = st.tuples(st.sampled_from(EDITS), st.integers(0, 2**20), st.integers(0, 2**20))
# the window: (--run R..., --all); runs beyond the profile's are dropped
window = st.one_of(
    st.tuples(st.lists(st.integers(1, 2), max_size=2, unique=True), st.just(False)),
    st.just(((), True)),
)
depth = st.integers(1, 8)


def _spec(params):
    spec = generator().vit_spec(
        blocks=params["blocks"], runs=params["runs"], tiles=4, seed=params["seed"]
    )
    return on_ipus(spec, params["ipus"]) if params["ipus"] > 1 else spec


def _options(runs, every, depth_):
    options = ["--depth", str(depth_)] + (["--all"] if every else [])
    for run in runs:
        options += ["--run", str(run)]
    return options


def _got(*args):
    result = invoke_extract("breakdown", *args, "--format", "json", "--no-pva", "-q", pva=False)
    assert result.code == 0, result
    return result.stdout


def _bytes(result):
    return (json.dumps(result, indent=2) + "\n").encode("ascii")


@settings(max_examples=12, deadline=None)
@given(vit, st.lists(edit, min_size=1, max_size=5), window, depth)
def test_a_profile_and_its_edited_self(params, edits, chosen, depth_):
    g = generator()
    spec = _spec(params)
    runs = [run for run in chosen[0] if run <= params["runs"]]
    with TemporaryDirectory() as folder:
        base = g.write_case(spec, Path(folder) / "base")
        candidate = g.write_case(edit_spec(spec, edits), Path(folder) / "edited")
        options = _options(runs, chosen[1], depth_)
        want = oracle_breakdown(base, str(base), runs=runs, every=chosen[1], depth=depth_)
        check_invariants(want)
        assert _got(base, *options) == _bytes(want)
        # an edit may remove an inference: compare only the runs both have
        if chosen[1] or not runs or _has_runs(candidate, max(runs)):
            theirs = oracle_breakdown(
                candidate, str(candidate), runs=runs, every=chosen[1], depth=depth_
            )
            compared = oracle_compared(want, theirs)
            check_invariants(compared)
            assert _got(base, candidate, *options) == _bytes(compared)


def _has_runs(profile, run):
    result = invoke_extract("breakdown", profile, "--run", str(run), "--no-pva", "-q", pva=False)
    return result.code == 0


def test_random_traces_of_any_shape():
    from test_pass import _write, trace

    @settings(max_examples=15, deadline=None)
    @given(trace, trace, depth, st.booleans())
    def check(a, b, depth_, every):
        with TemporaryDirectory() as folder:
            _write(a[0], a[1], Path(folder) / "a")
            _write(b[0], b[1], Path(folder) / "b")
            first, second = (Path(folder) / name / "profile.pop" for name in "ab")
            options = _options((), every, depth_)
            mine = oracle_breakdown(first, str(first), every=every, depth=depth_)
            check_invariants(mine)
            assert _got(first, *options) == _bytes(mine)
            theirs = oracle_breakdown(second, str(second), every=every, depth=depth_)
            compared = oracle_compared(mine, theirs)
            check_invariants(compared)
            assert _got(first, second, *options) == _bytes(compared)

    check()
