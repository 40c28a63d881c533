"""Progress of a training job: a bar on a terminal, periodic plain lines in log files."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """Shows frames, frames/s, ETA and the latest return.

    ``mode``: "bar" redraws one line (terminals), "lines" prints a line at most every
    ``interval`` seconds and at the end (Snakemake logs), "auto" picks by ``stream.isatty()``.
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
    ):
        self.stream = stream or sys.stderr
        self.mode = ("bar" if self.stream.isatty() else "lines") if mode == "auto" else mode
        self.total = total_frames
        self.label = label
        self.interval = interval
        self._start_time = time.monotonic()  # speed includes compilation: it is what the user waits for
        self._start_frames = start_frames
        self._last_print = -math.inf

    def update(self, frames: int, latest_return: float) -> None:
        now = time.monotonic()
        rate = (frames - self._start_frames) / max(now - self._start_time, 1e-9)
        self._emit(frames, latest_return, rate, now)

    def _emit(self, frames: int, latest_return: float, rate: float, now: float) -> None:
        done = frames >= self.total
        if self.mode == "lines" and not done and now - self._last_print < self.interval:
            return
        self._last_print = now
        eta = (self.total - frames) / rate if rate > 0 else math.inf
        fraction = min(frames / self.total, 1.0)
        text = (
            f"{self.label} {frames:,}/{self.total:,} frames ({fraction:.0%}) {rate:,.0f} frames/s "
            f"ETA {_duration(eta)} return {latest_return:.3f}"
        )
        if self.mode == "bar":
            filled = int(fraction * 30)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {text}" + ("\n" if done else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
