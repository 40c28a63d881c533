"""The report's one number format: every table, and the figures' value labels, write numbers with it."""

from __future__ import annotations

import math


def number_text(value: float, *, decimals: int | None = None) -> str:
    """The report's one number format, used by every table: 3 significant figures ("0.101", "-0.83", "5.2"), with
    thousands separators from 1,000 on ("17,000", "123,000", never "1.7e+04"); a normalised score (human-normalised
    %, a search's fitness) in ``decimals`` fixed decimals, so a column of them lines up; "n/a" for a missing value.
    """
    if not math.isfinite(value):
        return "n/a"
    if decimals is not None:
        return f"{value:,.{decimals}f}"
    rounded = float(f"{value:.3g}")  # 999.7 rounds to 1,000: the separator rule follows the rounded figure
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{value:.3g}"
