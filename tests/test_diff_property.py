"""`extract diff` on random pairs of profiles, through the real CLI (in this process),
against tests/support/diff_oracle.py: the JSON's exact bytes, the CSV's exact text and
the spec's exact accounting, whatever the pair.

Three kinds of pair:
- a generated ViT trace (fixtures/generate.py's vit_spec: 1 to 3 blocks, 1 or 2 runs,
  one or two IPUs) against itself after random edits (tests/support/diffedits.py, made
  by generate.py's edited_spec: steps inserted, removed, renamed, other cycles, tiles,
  vertex types or exchange code, ids renumbered), placed mostly inside the base's first
  body;
- two unrelated generated traces;
- two random traces of any shape (test_pass's strategy: markers anywhere, several IPUs,
  rows stored out of step order), which may have no body at all (a usage error, exit 2).
Each compares the default bodies or bodies chosen among those the profiles have.
"""

from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from support.blocks_oracle import read_rules
from support.cases import generator, two_ipus
from support.cli import invoke_extract
from support.diff_oracle import NoBody, check_accounting, diff_oracle, read_profile
from support.diffcli import diff_args, expect_diff
from support.diffedits import EDITS, edit_spec

vit = st.fixed_dictionaries(
    {
        "blocks": st.integers(1, 3),
        "runs": st.integers(1, 2),
        "seed": st.integers(0, 2**20),
        "detailed": st.sets(st.integers(0, 2), max_size=2),
        "ipus": st.sampled_from([1, 2]),
        "code_bytes": st.sampled_from(["all", "near-misses"]),
    }
)
KEEP_KEYS = ("cycles", "tiles", "vertices", "code", "renumber")  # edits that rename nothing
edit = st.tuples(st.sampled_from(EDITS), st.integers(0, 2**20), st.integers(0, 2**20))
# None: the default body; else an index into the bodies the profile has.
choice = st.one_of(st.none(), st.integers(0, 99))
use_pva = st.sampled_from([True, True, False])


def make_spec(params):
    spec = generator().vit_spec(
        blocks=params["blocks"],
        runs=params["runs"],
        tiles=4,
        seed=params["seed"],
        detailed_blocks=sorted(d for d in params["detailed"] if d < params["blocks"]),
        code_bytes=params["code_bytes"],
    )
    return two_ipus(spec) if params["ipus"] == 2 else spec


def bodies_of(profile):
    return read_profile(profile, read_rules(), use_pva=False)["bodies"]


def pick(profile, chosen):
    """A (run, block) of the profile's bodies for `chosen` (None: the default)."""
    if chosen is None:
        return None
    bodies = bodies_of(profile)
    if not bodies:
        return (1, 0)  # any: the profile has none
    body = bodies[chosen % len(bodies)]
    return (body["run"], body["block"])


def check_pair(base, candidate, base_choice, candidate_choice, pva_flag):
    options = {
        "block": pick(base, base_choice),
        "candidate_block": pick(candidate, candidate_choice),
        "use_pva": pva_flag,
    }
    try:
        diff_oracle(base, candidate, **options)
    except NoBody:
        result = invoke_extract(*diff_args(base, candidate, **options))
        assert result.code == 2 and result.stdout == b"", result
        assert "Traceback" not in result.stderr
        return None
    want = expect_diff(base, candidate, **options)
    check_accounting(want)
    return want


@settings(max_examples=30, deadline=None)
@given(vit, st.lists(edit, min_size=1, max_size=6), choice, use_pva)
def test_a_profile_against_its_edited_self(params, edits, chosen, pva_flag):
    g = generator()
    spec = make_spec(params)
    with TemporaryDirectory() as folder:
        base = g.write_case(spec, Path(folder) / "base")
        first = bodies_of(base)[0]
        focus = (first["first_step"], first["end_step"] or 10**9)
        candidate = g.write_case(edit_spec(spec, edits, focus=focus), Path(folder) / "edited")
        # The same body on both sides when one is chosen: an edit moves no run or block
        # number unless it renames an anchor or an output step.
        want = check_pair(base, candidate, chosen, chosen, pva_flag)
        if want is not None and all(e[0] in KEEP_KEYS for e in edits):
            # Neither keys nor the number of steps changed: every unit is paired.
            assert want["counts"]["added"] == want["counts"]["removed"] == 0


@settings(max_examples=25, deadline=None)
@given(vit, vit, choice, choice, use_pva)
def test_unrelated_generated_profiles(a, b, base_choice, candidate_choice, pva_flag):
    g = generator()
    with TemporaryDirectory() as folder:
        base = g.write_case(make_spec(a), Path(folder) / "a")
        candidate = g.write_case(make_spec(b), Path(folder) / "b")
        check_pair(base, candidate, base_choice, candidate_choice, pva_flag)


def test_random_traces_of_any_shape():
    from test_pass import _write, trace

    @settings(max_examples=30, deadline=None)
    @given(trace, trace, choice, choice, use_pva)
    def check(a, b, base_choice, candidate_choice, pva_flag):
        with TemporaryDirectory() as folder:
            _write(a[0], a[1], Path(folder) / "a")
            _write(b[0], b[1], Path(folder) / "b")
            check_pair(
                Path(folder) / "a" / "profile.pop",
                Path(folder) / "b" / "profile.pop",
                base_choice,
                candidate_choice,
                pva_flag,
            )

    check()
