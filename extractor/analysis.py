"""ProfileAnalysis: one profile.pop, and what `extract` does with one profile, from Python.

Made once with the profile's path, its stage rules and pva (read and imported once,
here: without pva, and without `use_pva=False`, it fails at once, as the commands do,
docs/pva.md); then each method is one call into the module that does that work for the
command line, and gives plain data: dicts in the key order of the file the command
writes, lists of dicts for tables (`pandas.DataFrame(analysis.step_rows())`), lists of
warnings. A method's result is what the command writes, byte for byte once written as
the command writes it (tests/test_library.py holds each to the command line's output).

Named ProfileAnalysis, not Profile: `extractor.core.profile.Profile` is the SQLite reader
of one file, which every method here ends up opening. The modules doing the work are
imported by the method that needs them, so that `import extractor` stays cheap.
"""

import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .core.pvafacts import NoPvaFacts, PvaFacts, PvaModule, import_pva
from .core.rules import StageRules, load_rules
from .errors import StrPath

if TYPE_CHECKING:
    from .core.profile import Profile as SqliteProfile
    from .core.summary import Extraction

#: A body as blocks.json numbers it: (run, block); (1, 0) is the first.
BodyKey = Tuple[int, int]


class ProfileAnalysis:
    """One profile.pop. `rules`: a StageRules, a stage rules file's path, or None (the
    installed stage_rules.toml). `pva`: the module to ask (None: `import pva`);
    `use_pva=False`: never ask it, the pva facts are null (`--no-pva`). Raises
    RulesError for a bad rules file, PvaMissingError without pva (unless `use_pva=False`)."""

    def __init__(
        self,
        path: StrPath,
        rules: Union[StageRules, StrPath, None] = None,
        pva: Optional[PvaModule] = None,
        use_pva: bool = True,
    ) -> None:
        self.path = Path(path)
        self.rules = rules if isinstance(rules, StageRules) else load_rules(rules)
        self.use_pva = use_pva
        self.pva: Optional[PvaModule] = None
        if use_pva:
            self.pva = pva if pva is not None else import_pva()

    def __repr__(self) -> str:
        return "ProfileAnalysis({!r}, rules={!r}, use_pva={})".format(
            str(self.path), self.rules.source, self.use_pva
        )

    def extraction(self) -> "Extraction":
        """The summary and the warnings met making it (`extract PROFILE`)."""
        from .core.summary import summarize

        return summarize(self.path, self.rules, pva=self.pva, use_pva=self.use_pva)

    def summary(self) -> dict:
        """summary.json as a dict (docs/formats/summary.md); `summary_bytes` gives its bytes."""
        return self.extraction().summary

    def write_summary(
        self,
        output: StrPath,
        csv: bool = False,
        blocks: bool = False,
        breakdown: bool = False,
        memory: bool = False,
    ) -> List[str]:
        """Write summary.json to `output` as `extract PROFILE -o OUTPUT` does (with `csv`:
        steps.csv and first-body.csv beside it; with `blocks`, `breakdown`, `memory`:
        blocks.json, breakdown.json, memory.json), all checked first, changing together;
        return the warnings. UsageError for an output that is one of the inputs."""
        from .core.pipeline import extract_profile
        from .outputchecks import check_outputs
        from .run.single import summary_outputs

        asked = (("blocks", blocks), ("breakdown", breakdown), ("memory", memory))
        derived = tuple(key for key, wanted in asked if wanted)
        check_outputs(summary_outputs(str(output), csv, derived), [self.path], rules=self.rules)
        extraction, _ = extract_profile(
            self.path, output, self.rules, use_pva=self.use_pva, csv=csv, derived=derived
        )
        return extraction.warnings

    def blocks(self) -> dict:
        """blocks.json as a dict (`extract blocks`; docs/formats/blocks.md): every body of
        every inference under "blocks" (a DataFrame's rows), and their statistics."""
        from .core.blocks import extract_blocks

        return extract_blocks(self.path, self.rules, keep=True).bodies.result()

    def memory(self, top: int = 5, bytes_per_tile: Optional[int] = None) -> dict:
        """memory.json as a dict (`extract memory --format json`; docs/formats/memory.md):
        the tiles' totals, categories, fullest tiles, limit, liveness and exchanges."""
        from .memory.command import memory_of

        return memory_of(self.path, self.rules, self.pva, top, bytes_per_tile).report

    def step_rows(self) -> List[Dict[str, object]]:
        """Every step row, in step order, as steps.csv (`extract PROFILE --csv`) holds it:
        a dict per row, keys STEP_FIELDS, the pva facts None without pva."""
        from .core.profile import Profile as SqliteProfile
        from .core.steps import BadValue, step_rows
        from .errors import ProfileError

        try:
            with SqliteProfile(self.path) as profile:
                facts = self._facts(profile)
                return [row.record(facts) for row in step_rows(profile, self.rules)]
        except BadValue as exc:
            raise ProfileError(self.path, str(exc)) from exc

    def _facts(self, profile: "SqliteProfile") -> Union[PvaFacts, NoPvaFacts]:
        """The pva facts of the open `profile`, its names checked against SQL's (as the
        summary's pass checks them)."""
        if self.pva is None:
            return NoPvaFacts()
        facts = PvaFacts(self.pva, self.path)
        facts.expect_names(*profile.names())
        return facts

    def diff(
        self,
        candidate: Union["ProfileAnalysis", StrPath],
        block: Optional[BodyKey] = None,
        candidate_block: Optional[BodyKey] = None,
    ) -> dict:
        """Why `candidate` (another profile, or this one) differs from this profile, one
        body of each: `extract diff PROFILE CANDIDATE --format json` as a dict
        (docs/formats/diff.md), with this profile's rules and pva. `block`: (run, block)
        in both (None: the first body); `candidate_block`: the candidate's, when not
        `block`. The renderers of extractor.diff.formats write it as markdown or CSV."""
        from .diff.command import diff_profiles

        other = candidate.path if isinstance(candidate, ProfileAnalysis) else Path(candidate)
        return diff_profiles(
            self.path,
            other,
            self.rules,
            block=block,
            candidate_block=candidate_block,
            pva=self.pva,
        )

    def breakdown(
        self,
        candidate: Union["ProfileAnalysis", StrPath, None] = None,
        runs: Sequence[int] = (),
        every_row: bool = False,
        depth: int = 5,
    ) -> dict:
        """Every cycle of inference 1 (or `runs`, or `every_row`) by kind, stage, op and
        layer, or what changed from this profile to `candidate`: `extract breakdown
        PROFILE [CANDIDATE] --format json` as a dict (docs/formats/breakdown.md)."""
        from .breakdown.command import breakdown_profiles

        paths = [self.path]
        if isinstance(candidate, ProfileAnalysis):
            paths.append(candidate.path)
        elif candidate is not None:
            paths.append(Path(candidate))
        return breakdown_profiles(
            paths, self.rules, runs=runs, every_row=every_row, depth=depth, pva=self.pva
        )

    def trace(
        self,
        output: StrPath,
        runs: Sequence[int] = (),
        every_row: bool = False,
        clock_mhz: Optional[float] = None,
    ) -> List[str]:
        """Write the trace to `output` as `extract trace PROFILE -o OUTPUT` does
        (docs/formats/trace.md); return its warnings. `runs`: the inferences to show
        (1: the first; none: the first); `every_row`: every step row (`--all`);
        `clock_mhz`: the clock (default: pva's, else 1 cycle is 1 ns). The caller's
        signal handlers are left as they were."""
        from .timeline.command import run_trace

        warnings: List[str] = []
        with _signal_handlers_kept():
            run_trace(
                [self.path],
                str(output),
                self.rules,
                lambda _kind, message: warnings.append(message),
                runs=runs,
                every_row=every_row,
                clock_mhz=clock_mhz,
                use_pva=self.use_pva,
                pva=self.pva,
            )
        return warnings

    def stages(self, top: int = 10) -> dict:
        """How the rules cut the step rows: `extract stages PROFILE --json` as a dict."""
        from .diagnose.stagecheck import check_stages

        return check_stages(self.path, self.rules, top=top)

    def inspect(self, exact: bool = False) -> dict:
        """The profile's tables, counts and columns, and what pva says of it: `extract
        inspect PROFILE --json` as a dict (`exact`: `--exact`; pva not asked with
        `use_pva=False`: `--no-pva`)."""
        from .diagnose.inspection import inspect_profile

        return inspect_profile(self.path, exact=exact, use_pva=self.use_pva)


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """The handlers of SIGINT, SIGTERM and SIGHUP put back after the block: a command's
    library function installs its own (stopping.raise_on_stop_signals), for a process
    that ends with it, which a notebook's kernel is not."""
    import threading

    from .stopping import STOP_SIGNALS

    if threading.current_thread() is not threading.main_thread():
        yield  # no handler is installed from another thread (run/single.bounded)
        return
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            if handler is not None:
                signal.signal(signum, handler)
