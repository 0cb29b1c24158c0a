"""extractor/diff/alignment.py gives exactly difflib's opcodes (diff-spec's rule):
`difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()`, on sequences drawn
to hit its shortcuts and their limits: few distinct keys (so blocks repeat and shifted
matches compete with the common start and end), one a copy of the other with a few
edits, prefixes and suffixes that overlap. The CLI's answers on profiles are checked
against the oracle in tests/test_diff_property.py."""

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=1500, deadline=None)
@given(sequences, sequences)
def test_any_two_sequences(a, b):
    assert opcodes(a, b) == difflib_opcodes(a, b)


@settings(max_examples=1500, deadline=None)
@given(sequences, st.lists(edit, max_size=4), st.integers(1, 4))
def test_a_sequence_and_its_edited_copy(base, edits, repeat):
    a = base * repeat  # repeated blocks: shifted matches as long as the common ends
    b = edited(a, edits)
    assert opcodes(a, b) == difflib_opcodes(a, b)


def test_tuples_as_keys_and_the_common_case():
    a = [("OnTileExecute", "layer/{}".format(k % 5)) for k in range(2000)]
    b = list(a)
    b[700] = ("DoExchange", "x")
    assert opcodes(a, b) == difflib_opcodes(a, b)
    assert opcodes(a, a) == [("equal", 0, 2000, 0, 2000)]


def test_what_is_left_for_difflib_can_be_bounded():
    a = [k % 5 for k in range(50)]
    b = [0] + [(k * 3) % 5 for k in range(1, 50)]
    try:
        opcodes(a, b, most=10)
    except TooLong as exc:  # the common start (one key) set aside, 49 left on each side
        assert (exc.a_range, exc.b_range) == ((1, 50), (1, 50))
    else:
        raise AssertionError("not refused")
    assert opcodes(a, b, most=49) == difflib_opcodes(a, b)
