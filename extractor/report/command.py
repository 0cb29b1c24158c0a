"""`extract report` and `extract table`: read the recordings, then write the page or the
long table."""

from pathlib import Path
from typing import Callable, List, Optional, Sequence

from ..output import STDOUT, write_output


def run_table(
    paths: Sequence,
    labels: Sequence[str],
    output: Optional[str],
    table_format: str,
    warn: Callable[[str], None],
) -> None:
    """`extract table`: the recordings' metrics, one line each, to `output`."""
    from ..compare.command import read_recordings
    from .table import table_bytes

    notes: List[str] = []  # told once the table is written: an error is told alone
    recordings = read_recordings(paths, labels, [("-o", output)], warn=notes.append)
    write_output(output or STDOUT, table_bytes(recordings, table_format))
    for note in notes:
        warn(note)


def run_report(
    paths: Sequence,
    labels: Sequence[str],
    output: Optional[str],
    *,
    baseline: Optional[str],
    budget_file: Optional[Path],
    title: Optional[str],
    warn: Callable[[str], None],
) -> None:
    """`extract report`: one HTML page for the recordings, to `output`."""
    from ..compare.baseline import baseline_first, choose_baseline, passed_over_notes
    from ..compare.command import read_recordings
    from ..outputchecks import check_outputs
    from .batchinfo import read_index_facts
    from .page import build_page, render_page
    from .tilemap import map_profiles

    budget = None
    if budget_file is not None:  # usage errors before any summary is read, as compare's
        from ..compare.budget import load_budget

        budget = load_budget(budget_file)
    notes: List[str] = []  # told once the page is written: an error is told alone
    recordings = read_recordings(
        paths, labels, [("-o", output)], [budget_file] if budget_file else [], notes.append
    )
    # The profiles the tile maps read (tilemap.py): the page is never written over one.
    check_outputs([("-o", output)], map_profiles(recordings))
    chosen = choose_baseline(recordings, baseline)
    notes += passed_over_notes(recordings, chosen)
    checks = None
    if budget is not None:  # compare --budget's own checks; its baseline comes first
        from ..compare.budget import check_budget

        checks = check_budget(budget, baseline_first(recordings, chosen))
    page = build_page(
        recordings,
        read_index_facts(paths),
        baseline=chosen.position,
        title=title,
        checks=checks,
        passed_over=[r.label for r in chosen.passed_over],
    )
    shown = {str(r.path) for r in recordings}
    for item in page.untrusted:  # the summaries' are among the notes already
        if item.path not in shown:
            notes.append("{}: {}".format(item.path, item.problem))
    write_output(output or STDOUT, render_page(page))
    for note in notes:
        warn(note)
