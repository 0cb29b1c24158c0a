"""`extract doctor`'s checks of the profile against the target pva describes, where
it is there: rows per step (`steps_by_ipu`) against its IPUs, the per-tile variables
(`vars_info`) against its tiles, and its clock (extract trace's time axis). The checks
of pva against SQL are in doctorchecks.py, with what every check shares.
"""

from typing import Optional

from ..clock import within
from ..core.profile import EXCHANGE_CODE_CATEGORY
from ..core.summary import NO_LOWERED_VARS
from .doctorchecks import OK, WARN, DoctorCheck, doctor_check, ipu_count, tile_count
from .doctorsides import PvaSide, SqlSide


def check_steps_by_ipu_rows(sql: SqlSide, side: Optional[PvaSide]) -> DoctorCheck:
    """Rows per step in steps_by_ipu, against the target's IPU count."""
    spread = {int(n): int(steps) for n, steps in sql.rows_per_step}
    ipus = ipu_count(side)
    data = {"rows_per_step": {str(n): steps for n, steps in spread.items()}, "ipus": ipus}
    shown = ", ".join(
        "{} step{} with {} row{}".format(steps, "" if steps == 1 else "s", n, "" if n == 1 else "s")
        for n, steps in sorted(spread.items())
    )
    if not spread:
        return doctor_check(
            "steps_by_ipu_rows",
            OK,
            "no step rows (a compile-only profile)",
            "no kernels and no device spans to read",
            **data,
        )
    if ipus is None:
        status = OK if len(spread) == 1 else WARN
        return doctor_check(
            "steps_by_ipu_rows",
            status,
            shown
            + "; the IPU count is unknown (pva {})".format(
                "is not available" if side is None else "gives no target.numIPUs"
            ),
            "each step row is one kernel row of the summary, as the spec says",
            **data,
        )
    if set(spread) == {ipus}:
        return doctor_check(
            "steps_by_ipu_rows",
            OK,
            "every step has {} row{}, one per IPU of the target".format(
                ipus, "" if ipus == 1 else "s"
            ),
            "a kernel appears once per IPU, as the spec says",
            **data,
        )
    return doctor_check(
        "steps_by_ipu_rows",
        WARN,
        "{}; the target has {} IPU{}".format(shown, ipus, "" if ipus == 1 else "s"),
        "the summary still lists one kernel row per step row (the spec's join), but a "
        "row per IPU is not what this profile holds",
        **data,
    )


def check_vars_info(sql: SqlSide, side: Optional[PvaSide]) -> DoctorCheck:
    rows, tiles, exchange_rows = (int(v or 0) for v in sql.vars_info)
    target = tile_count(side) if side is not None else None
    data = {
        "rows": rows,
        "tiles_with_rows": tiles,
        "internal_exchange_code_rows": exchange_rows,
        "target_tiles": target,
    }
    detail = "{} rows on {} tiles{}, {} of them {}".format(
        rows,
        tiles,
        "" if target is None else " (of {})".format(target),
        exchange_rows,
        EXCHANGE_CODE_CATEGORY,
    )
    if not rows:
        return doctor_check("vars_info", WARN, "vars_info is empty", NO_LOWERED_VARS, **data)
    if target is not None and tiles < target:
        return doctor_check(
            "vars_info",
            WARN,
            detail,
            "per-tile variables are missing on some "
            "tiles: was autoReport.outputLoweredVars on? exchange_memory_per_tile "
            "covers only the tiles listed",
            **data,
        )
    if not exchange_rows:
        return doctor_check(
            "vars_info",
            OK,
            detail,
            "lowered variables look enabled, but none is "
            "exchange code: exchange_memory_per_tile's min, avg and max are null",
            **data,
        )
    return doctor_check(
        "vars_info",
        OK,
        detail,
        "lowered variables look enabled: exchange_memory_per_tile is read from them",
        **data,
    )


def check_clock(side: Optional[PvaSide]) -> DoctorCheck:
    """The clock pva gives (target.clockFrequency, Hz): extract trace's time axis."""
    hz = None
    if side is not None:
        try:
            hz = float(side.compilation.target.clockFrequency)
        except Exception:
            hz = None
        if hz is not None and not 0 < hz < float("inf"):
            hz = None
    if hz is None:
        return doctor_check(
            "clock",
            OK,
            "pva {}".format("is not available" if side is None else "gives no clock"),
            "extract trace shows 1 cycle as 1 ns unless given --clock-mhz",
            clock_hz=None,
        )
    if not within(hz / 1e6):
        return doctor_check(
            "clock",
            WARN,
            "pva gives a clock (target.clockFrequency) of {!r} Hz, outside 1 kHz to 1 THz".format(
                hz
            ),
            "extract trace refuses it: give the clock with --clock-mhz, or --no-pva",
            clock_hz=hz,
        )
    return doctor_check(
        "clock",
        OK,
        "pva gives a clock of {:g} MHz (target.clockFrequency {:g} Hz)".format(hz / 1e6, hz),
        "extract trace puts its time axis in microseconds at that clock",
        clock_hz=hz,
    )
