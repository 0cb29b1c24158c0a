"""`extract doctor`'s `repeats` check: whether the compute sets that inference 1 executes
twice or more took different cycles on different executions.

A profile may record one duration per compute set rather than one per execution. Then
every execution of a compute set shows the same cycles, and statistics over blocks or
runs that reuse compute sets (`extract blocks`' statistics, `extract compare --stat`)
show no variance by construction, however the model behaved. The counts are
`extract breakdown`'s `repeats`, per IPU, for its default window (inference 1, with
the installed stage rules): the same computation, not a second one.
"""

from pathlib import Path
from typing import List, Tuple

from .doctorchecks import OK, WARN, DoctorCheck, doctor_check

#: What identical repeats mean, in the check's `means` and in doctor's warning line.
IDENTICAL_MEANS = (
    "the profile may record one duration per compute set, not one per execution: "
    "statistics over blocks or runs that reuse compute sets (extract blocks' statistics, "
    "extract compare --stat) show no variance by construction"
)


def check_repeats(path) -> DoctorCheck:
    """The `repeats` of inference 1 (breakdown_profile's), per IPU and in all; `warn`
    when there is at least one repeated compute set and every one took the same cycles
    on each execution."""
    from ..breakdown.command import breakdown_profile
    from ..core.rules import load_rules

    window = breakdown_profile(Path(path), load_rules()).result["windows"][0]
    per_ipu = [
        {
            "ipu": ipu["ipu"],
            "compute_sets": ipu["repeats"]["compute_sets"],
            "identical": ipu["repeats"]["identical"],
        }
        for ipu in window["ipus"]
    ]
    repeated = sum(ipu["compute_sets"] for ipu in per_ipu)
    identical = sum(ipu["identical"] for ipu in per_ipu)
    data = {
        "run": window["run"],
        "first_step": window["first_step"],
        "last_step": window["last_step"],
        "compute_sets": repeated,
        "identical": identical,
        "ipus": per_ipu,
    }
    if not window["rows"]:
        return doctor_check(
            "repeats",
            OK,
            "no step rows (a compile-only profile)",
            "no compute set was executed: there are no repeats to compare",
            **data,
        )
    if window["run"] is None:
        where = "every step row (no input-delivered step)"
        in_it = "in the trace"
    else:
        where = "inference {} (steps {} to {})".format(
            window["run"], window["first_step"], window["last_step"]
        )
        in_it = "in inference {}".format(window["run"])
    if not repeated:
        return doctor_check(
            "repeats",
            OK,
            "{}: no compute set is executed twice or more on an IPU".format(where),
            "nothing shows whether the profile records one duration per compute set or "
            "one per execution",
            **data,
        )
    sets = "{} compute set{}".format(repeated, "" if repeated == 1 else "s")
    if identical == repeated:
        how_many = ("the " if repeated == 1 else "all ") + sets
    else:
        how_many = "{} of the {}".format(identical, sets)
    detail = "{}: {} executed twice or more {} took the same cycles every time{}".format(
        where, how_many, *_on(per_ipu)
    )
    if identical == repeated:
        return doctor_check("repeats", WARN, detail, IDENTICAL_MEANS, **data)
    return doctor_check(
        "repeats",
        OK,
        detail,
        "executions of the same compute set took different cycles {}: the profile records "
        "them one by one, and statistics over blocks or runs can show their variance".format(in_it),
        **data,
    )


def _on(per_ipu: List[dict]) -> Tuple[str, str]:
    """Where the compute sets were counted, and after it, on several IPUs, the counts
    of each (a compute set executed on two IPUs counts once on each)."""
    if len(per_ipu) == 1:
        return "on IPU {}".format(per_ipu[0]["ipu"]), ""
    return "on an IPU", " (counted per IPU: {})".format(
        "; ".join(
            "IPU {}: {} of {}".format(ipu["ipu"], ipu["identical"], ipu["compute_sets"])
            for ipu in per_ipu
        )
    )


def repeats_warning(check: DoctorCheck) -> str:
    """Doctor's warning line for a `warn` from check_repeats: what it found and what it
    means, as the check says them."""
    return "{}: {}".format(check.detail, check.means)
