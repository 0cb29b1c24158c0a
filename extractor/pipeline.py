"""One profile to its files: summarize, render, write atomically (and, with --csv, the
step tables from the same pass). The one path both `extract PROFILE` and each worker of
a batch take, so that a summary's bytes never depend on how it was asked for.
"""

from typing import Optional

from .output import write_atomic, write_output
from .render import summary_bytes
from .summary import summarize


def extract_profile(profile, output, rules, *, use_pva: bool = True, csv: bool = False,
                    strict: bool = False, profile_label: Optional[str] = None,
                    on_extracted=None) -> tuple:
    """Write the summary of `profile` to `output`; return (the `Extraction`, the summary's
    bytes).

    `output`: a file path, or "-" for standard output (not with `csv` nor `strict`).
    `csv`: steps.csv and first-body.csv beside the summary, the three files changing
    together (`steptables.step_tables_with_summary`). `strict`: `output` is inside a
    batch's OUTDIR (`output.replaceable`). `profile_label`: the summary's "profile" value
    (default: the path). `on_extracted(extraction)` is called once the summary is made,
    before anything is written (to print its warnings).
    """
    if not csv:
        extraction = summarize(profile, rules, use_pva=use_pva, profile_label=profile_label)
        if on_extracted is not None:
            on_extracted(extraction)
        data = summary_bytes(extraction.summary)
        if strict:
            write_atomic(output, data, strict=True)
        else:
            write_output(output, data)
        return extraction, data
    # Imported here: a run without --csv does not need it (start-up time).
    from .steptables import step_tables_with_summary

    # The step tables come from the summary's own pass; the three files change together.
    with step_tables_with_summary(output, strict) as (tables, summary):
        extraction = summarize(profile, rules, use_pva=use_pva, profile_label=profile_label,
                               step_sink=tables)
        if on_extracted is not None:
            on_extracted(extraction)
        data = summary_bytes(extraction.summary)
        summary.write(data)
    return extraction, data
