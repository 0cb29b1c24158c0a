"""extractor/diff/alignment.py gives exactly difflib's opcodes (the rule of docs/formats/diff.md):
`difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()`, on sequences drawn
to hit its shortcuts and their limits: few distinct keys (so blocks repeat and shifted
matches compete with the common start and end), one a copy of the other with a few
edits (the longest block then often between two of them), prefixes and suffixes that
overlap. The CLI's answers on profiles are checked
against the oracle in tests/test_diff_property.py."""

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.diff import alignment
from extractor.diff.alignment import TooLong, opcodes

keys = st.integers(0, 3)
sequences = st.lists(keys, max_size=30)
edit = st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 99), keys)


def edited(base, edits):
    found = list(base)
    for what, where, key in edits:
        at = where % (len(found) + 1)
        if what == "insert":
            found.insert(at, key)
        elif found and at < len(found):
            if what == "delete":
                del found[at]
            else:
                found[at] = key
    return found


def difflib_opcodes(a, b):
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def same_as_difflib(a, b):
    """opcodes(a, b) is difflib's, as it is and with every block worth a proof (down to
    one key: ties everywhere, on sequences this short)."""
    want = difflib_opcodes(a, b)
    assert opcodes(a, b) == want
    shortest = alignment._SHORTEST
    alignment._SHORTEST = 1
    try:
        assert opcodes(a, b) == want
    finally:
        alignment._SHORTEST = shortest


@settings(max_examples=1500, deadline=None)
@given(sequences, sequences)
def test_any_two_sequences(a, b):
    same_as_difflib(a, b)


@settings(max_examples=1500, deadline=None)
@given(sequences, st.lists(edit, max_size=4), st.integers(1, 4))
def test_a_sequence_and_its_edited_copy(base, edits, repeat):
    a = base * repeat  # repeated blocks: shifted matches as long as the common ends
    b = edited(a, edits)
    same_as_difflib(a, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=50, max_size=300), st.lists(edit, max_size=8))
def test_long_sequences_edited_in_places(base, edits):
    """Blocks between edits, longer than the common start and end: found on the way
    (the runs through the windows that disprove a candidate)."""
    b = edited(base, [(what, where * 3, key) for what, where, key in edits])
    same_as_difflib(base, b)


def test_tuples_as_keys_and_the_common_case():
    a = [("OnTileExecute", "layer/{}".format(k % 5)) for k in range(2000)]
    b = list(a)
    b[700] = ("DoExchange", "x")
    assert opcodes(a, b) == difflib_opcodes(a, b)
    assert opcodes(a, a) == [("equal", 0, 2000, 0, 2000)]


def test_what_is_left_for_difflib_can_be_bounded():
    """[0, 1] against [1, 0]: no run of equal keys side by side from either end, so
    both, whole, are left to difflib (TooLong past `most`, with how many keys)."""
    a, b = [0, 1], [1, 0]
    try:
        opcodes(a, b, most=1)
    except TooLong as exc:
        assert (exc.a_range, exc.b_range, exc.left) == ((0, 2), (0, 2), (2, 2))
    else:
        raise AssertionError("not refused")
    assert opcodes(a, b, most=2) == difflib_opcodes(a, b)
