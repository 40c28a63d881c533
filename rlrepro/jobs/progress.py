"""Progress of a training job: a bar that fits the terminal, periodic plain lines in log files.

The first chunk of a job includes XLA compilation (tens of seconds for conv nets), so:
* a "compiling ..." line is printed when the job starts, before the first chunk;
* frames/s is measured from the end of the first chunk on (compilation excluded), and says it is per seed
  (the seeds of a job run side by side, vmapped or in one process; the total is per seed x seeds).
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from typing import TextIO

MIN_BAR = 10
BAR = 20


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _count(value: float) -> str:
    """12,800 -> 12.8k; 2,000,000 -> 2M (three significant digits)."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.0f}"


class Progress:
    """Shows frames, frames/s per seed (compilation excluded), ETA and the latest return.

    ``mode``: "bar" redraws one line that fits the terminal's width (terminals), "lines" prints a line at most every
    ``interval`` seconds and at the end (Snakemake logs), "auto" picks by ``stream.isatty()``. ``seeds``: how many
    seeds this job trains at once (frames are counted per seed).
    """

    def __init__(
        self,
        total_frames: int,
        *,
        label: str,
        start_frames: int = 0,
        mode: str = "auto",
        interval: float = 10.0,
        stream: TextIO | None = None,
        seeds: int = 1,
        width: int | None = None,
    ):
        self.stream = stream or sys.stderr
        self.mode = ("bar" if self.stream.isatty() else "lines") if mode == "auto" else mode
        self.total = total_frames
        self.label = label
        self.interval = interval
        self.seeds = max(1, seeds)
        self.width = width
        self._start_time = time.monotonic()
        self._start_frames = start_frames
        self._first: tuple[float, int] | None = None  # (time, frames) at the end of the first chunk: compiled
        self._last_print = -math.inf
        done = f" (resuming at {start_frames:,})" if start_frames else ""
        self.stream.write(
            f"{label}: {total_frames:,} frames per seed x {self.seeds} seed(s){done}; "
            "compiling (the first chunk includes XLA compilation) ...\n"
        )
        self.stream.flush()

    def update(self, frames: int, latest_return: float) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = (now, frames)
            rate = math.nan
        else:
            rate = (frames - self._first[1]) / max(now - self._first[0], 1e-9)
        self._emit(frames, latest_return, rate, now)

    def _columns(self) -> int:
        return self.width or shutil.get_terminal_size((80, 24)).columns

    def _emit(self, frames: int, latest_return: float, rate: float, now: float) -> None:
        done = frames >= self.total
        if self.mode == "lines" and not done and now - self._last_print < self.interval:
            return
        self._last_print = now
        eta = (self.total - frames) / rate if rate > 0 else math.inf
        fraction = min(frames / self.total, 1.0)
        if self.mode == "bar":
            self.stream.write("\r" + self._bar(frames, fraction, rate, eta, latest_return) + ("\n" if done else ""))
        else:
            compiled = f" (compiled and first chunk in {now - self._start_time:.1f} s)" if math.isnan(rate) else ""
            speed = "? frames/s" if math.isnan(rate) else f"{rate:,.0f} frames/s per seed"
            if self.seeds > 1 and not math.isnan(rate):
                speed += f" ({rate * self.seeds:,.0f} total)"
            self.stream.write(
                f"{self.label} {frames:,}/{self.total:,} frames ({fraction:.0%}) {speed}{compiled} "
                f"ETA {_duration(eta)} {return_text(latest_return)}\n"
            )
        self.stream.flush()

    def _bar(self, frames: int, fraction: float, rate: float, eta: float, latest_return: float) -> str:
        """One line no wider than the terminal (minus one column, so it never wraps)."""
        speed = "compiled" if math.isnan(rate) else f"{_count(rate)} frames/s/seed"
        text = f" {fraction:4.0%} {_count(frames)}/{_count(self.total)} frames {speed} ETA {_duration(eta)} {return_text(latest_return, short=True)}"
        columns = self._columns() - 1
        room = columns - len(text) - 2
        if room < MIN_BAR:  # a very narrow terminal: the numbers only, cut to fit
            return text.strip()[:columns].ljust(columns)
        width = min(room, BAR)
        filled = int(fraction * width)
        # Padded to the width: a shorter redraw must blank what a longer one left on the line.
        return f"[{'#' * filled}{'.' * (width - filled)}]{text}".ljust(columns)


def return_text(value: float, *, short: bool = False) -> str:
    """'return 0.266', or 'no episode finished yet' while no episode has ended (the mean of none is not a number)."""
    if math.isnan(value):
        return "no episode finished yet"
    return f"ret {value:.3g}" if short else f"return {value:.3f}"
