"""`extract diff BASE CANDIDATE`: the library function the command runs."""

from pathlib import Path
from typing import Callable, Optional, Type, cast

from ..core.blocks import stage_labels
from ..core.pvafacts import PvaModule, import_pva
from ..core.rules import StageRules
from ..deadline import reading
from ..errors import ProfileError, UsageError, shown_path
from ..render import DIFF_FORMATS
from ..wholetext import MAX_DIGITS, read_whole, shown_text
from .accounting import explain
from .bodies import BodyKey, read_side
from .formats import DEFAULT_TOP, DiffRenderer

Say = Callable[[str, str], None]


def parse_body(option: str, text: Optional[str]) -> Optional[BodyKey]:
    """`R:K` as (run, block), each a whole number as wholetext reads one; None stays
    None. UsageError for anything else."""
    if text is None:
        return None
    parts = text.strip().split(":")
    if len(parts) == 2:
        run, block = read_whole(parts[0]), read_whole(parts[1])
        if run is not None and block is not None:
            return run, block
    raise UsageError(
        "{} {}: give a run and a block as R:K (whole numbers of at most {} digits), as "
        "blocks.json numbers them (1:0 is the first block of the first inference)".format(
            option, shown_text(text), MAX_DIGITS
        )
    )


def diff_profiles(
    base: Path,
    candidate: Path,
    rules: StageRules,
    *,
    block: Optional[BodyKey] = None,
    candidate_block: Optional[BodyKey] = None,
    pva: Optional[PvaModule] = None,
    base_label: Optional[str] = None,
    candidate_label: Optional[str] = None,
) -> dict:
    """The diff (as accounting.explain gives it) of body `block` of `base` (None: the
    first body) and body `candidate_block` of `candidate` (None: `block`); `pva` None:
    without the pva facts. UsageError for a body that is not there, ProfileError for a
    profile that cannot be read."""
    sides = []
    for path, label, wanted, option in (
        (base, base_label, block, "--block"),
        (candidate, candidate_label, block, "--block")
        if candidate_block is None
        else (candidate, candidate_label, candidate_block, "--candidate-block"),
    ):
        if path.is_dir():
            raise ProfileError(path, "is a directory, not a profile")
        shown = label if label is not None else shown_path(path)
        with reading(path):  # a time limit passing now names this profile
            sides.append(read_side(path, shown, rules, wanted, option, pva))
    return explain(sides[0], sides[1], stage_labels(rules))


def run_diff(
    base: Path,
    candidate: Path,
    output: Optional[str],
    rules: StageRules,
    say: Say,
    *,
    block: Optional[str] = None,
    candidate_block: Optional[str] = None,
    use_pva: bool = True,
    output_format: str = "markdown",
    top: int = DEFAULT_TOP,
    quiet: bool = False,
    timeout: float = 0,
) -> dict:
    """The whole of `extract diff`: the diff written to `output` ("-" or None: standard
    output) in `output_format`, atomically; the diff returned. No output is one of its
    inputs (the profiles, the rules' file: targets.check_outputs). PvaMissingError,
    before anything is written, when `use_pva` and pva cannot be imported. The diff says
    nothing but errors: `quiet` changes nothing."""
    from ..output import write_output
    from ..outputchecks import check_outputs
    from ..run.single import STDOUT, bounded, file_outputs, in_compiled_code

    if top < 0:
        raise UsageError("--top {}: give how many step changes to list (0 or more)".format(top))
    if output_format not in DIFF_FORMATS:
        raise UsageError("--format {}: one of {}".format(output_format, ", ".join(DIFF_FORMATS)))
    wanted = parse_body("--block", block)
    candidate_wanted = parse_body("--candidate-block", candidate_block)
    target = output or STDOUT
    outputs = [("--output", target)]
    check_outputs(outputs, [base, candidate], rules=rules)
    # Past --timeout, the error names the profile being read (diff_profiles), else both.
    with bounded([base, candidate], file_outputs(outputs), say, timeout, in_compiled_code(use_pva)):
        pva = import_pva() if use_pva else None  # PvaMissingError without it (docs/pva.md)
        diff = diff_profiles(
            base, candidate, rules, block=wanted, candidate_block=candidate_wanted, pva=pva
        )
        renderer = cast(Type[DiffRenderer], DIFF_FORMATS[output_format])  # each takes `top`
        write_output(target, renderer(top=top).render(diff))
    return diff
