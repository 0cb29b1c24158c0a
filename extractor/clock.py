"""The IPU clock in MHz: one bound for every clock a command is given (`--clock-mhz`)
or reads (pva's `target.clockFrequency`), so that no time it gives is absurd, zero or
infinite (1e-320 MHz makes a cycle last longer than any double holds)."""

from typing import Optional

from .errors import ProfileError, StrPath, UsageError

#: The clocks extract takes, in MHz: 1 kHz to 1 THz.
CLOCK_MHZ_RANGE = (0.001, 1e6)
_RANGE_WORDS = "from 0.001 (1 kHz) to 1000000 (1 THz)"


def within(mhz: float) -> bool:
    """Whether `mhz` is a clock extract takes (NaN is not)."""
    return CLOCK_MHZ_RANGE[0] <= mhz <= CLOCK_MHZ_RANGE[1]


def check_clock_option(mhz: Optional[float]) -> None:
    """UsageError for a `--clock-mhz` outside the range (None: not given)."""
    if mhz is not None and not within(mhz):
        raise UsageError(
            "--clock-mhz {}: the clock must be a positive number of MHz, {}".format(
                mhz, _RANGE_WORDS
            )
        )


def clock_from_report(hz: Optional[float], source: StrPath) -> Optional[float]:
    """The clock a report gives (`hz`, None: none) in MHz; ProfileError naming
    `source` for one outside the range."""
    if hz is None:
        return None
    if not within(hz / 1e6):
        raise ProfileError(
            source,
            "pva gives a clock (target.clockFrequency) of {!r} Hz, outside 1 kHz to 1 THz: "
            "give the clock with --clock-mhz, or --no-pva".format(hz),
        )
    return hz / 1e6
