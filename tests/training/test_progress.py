"""rlrepro.training.progress: periodic lines for logs, a redrawn bar for terminals, with frames/s, ETA and return."""

from __future__ import annotations

import io

import pytest

from rlrepro.training import progress as progress_module
from rlrepro.training.progress import Progress


class FakeClock:
    """Replaces the ``time`` module inside rlrepro.training.progress; tests move ``now`` by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(progress_module, "time", fake)
    return fake


def test_lines_mode_prints_at_most_every_interval_and_always_the_last_line(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(1000, label="toy vtrace catch", mode="lines", interval=10.0, stream=stream)
    for second in range(1, 11):  # 100 frames per second for 10 s
        clock.now += 1.0
        bar.update(second * 100, latest_return=0.25 * second)

    lines = stream.getvalue().splitlines()
    # t=1 (the first update prints), t=2..10 are within 10 s of it, except the final one (done) which prints.
    assert lines == [
        "toy vtrace catch 100/1,000 frames (10%) 100 frames/s ETA 0:00:09 return 0.250",
        "toy vtrace catch 1,000/1,000 frames (100%) 100 frames/s ETA 0:00:00 return 2.500",
    ]
    assert "\r" not in stream.getvalue()


def test_lines_mode_prints_again_once_the_interval_has_passed(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(10_000, label="run", mode="lines", interval=5.0, stream=stream)
    for second in range(1, 13):
        clock.now += 1.0
        bar.update(second * 10, float("nan"))
    printed = [line.split()[1] for line in stream.getvalue().splitlines()]
    assert printed == ["10/10,000", "60/10,000", "110/10,000"]  # t = 1, 6, 11


def test_speed_and_eta_count_only_the_frames_of_this_process_after_a_resume(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(2_000, label="run", start_frames=1_000, mode="lines", stream=stream)
    clock.now += 4.0
    bar.update(1_200, -1.0)  # 200 new frames in 4 s: 50 frames/s, 800 left: 16 s
    assert stream.getvalue() == "run 1,200/2,000 frames (60%) 50 frames/s ETA 0:00:16 return -1.000\n"


def test_eta_is_unknown_while_no_frames_were_made(clock: FakeClock):
    stream = io.StringIO()
    Progress(3_600_000, label="run", mode="lines", stream=stream).update(0, float("nan"))
    assert "0 frames/s ETA ? return nan" in stream.getvalue()


def test_eta_shows_hours(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(3_600_000 + 100, label="run", mode="lines", stream=stream)
    clock.now += 1.0
    bar.update(100, 0.0)  # 100 frames/s, 3.6M frames left
    assert "ETA 10:00:00" in stream.getvalue()


def test_bar_mode_redraws_one_line_with_carriage_returns(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(400, label="toy", mode="bar", interval=10.0, stream=stream)
    for chunk in range(1, 5):
        clock.now += 0.5
        bar.update(chunk * 100, 1.0)
    text = stream.getvalue()
    assert text.count("\r") == 4  # every update redraws, whatever the interval
    assert text.count("\n") == 1 and text.endswith("\n")  # one newline, at the end
    last = text.split("\r")[-1]
    assert last.startswith("[" + "#" * 30 + "]") and "400/400 frames (100%)" in last
    assert "[" + "#" * 7 + "." * 23 + "] toy 100/400 frames (25%)" in text
    assert "frames/s" in last and "ETA 0:00:00" in last and "return 1.000" in last


def test_auto_mode_picks_a_bar_on_a_terminal_and_lines_otherwise():
    assert Progress(10, label="x", stream=TtyStream()).mode == "bar"
    assert Progress(10, label="x", stream=io.StringIO()).mode == "lines"
    assert Progress(10, label="x", mode="lines", stream=TtyStream()).mode == "lines"
