"""Numbers as the report shows them."""

ABSENT = "\u2014"  # an em dash: no value


def number_text(value) -> str:
    """A value as the page shows it: thousands separated, a mean to 0.1, none as a dash."""
    if value is None:
        return ABSENT
    if isinstance(value, float):
        return "{:,.1f}".format(value)
    return "{:,}".format(value)
