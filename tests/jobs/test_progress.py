"""rlrepro.jobs.progress: periodic lines for logs, a redrawn bar for terminals, with frames/s, ETA and return."""

from __future__ import annotations

import io

import pytest

from rlrepro.jobs import progress as progress_module
from rlrepro.jobs.progress import Progress


class FakeClock:
    """Replaces the ``time`` module inside rlrepro.jobs.progress; tests move ``now`` by hand."""

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


COMPILING = "compiling (the first chunk includes XLA compilation) ..."


def test_lines_mode_prints_at_most_every_interval_and_always_the_last_line(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(1000, label="toy vtrace catch", mode="lines", interval=10.0, stream=stream)
    for second in range(1, 11):  # 100 frames per second for 10 s
        clock.now += 1.0
        bar.update(second * 100, latest_return=0.25 * second)

    lines = stream.getvalue().splitlines()
    # t=0: the job starts (compiling line); t=1: the first chunk (compiled; no speed yet); t=2..9 within 10 s of it;
    # t=10: done, printed, speed from the end of the first chunk on: 900 frames in 9 s.
    assert lines == [
        f"toy vtrace catch: 1,000 frames per seed x 1 seed(s); {COMPILING}",
        "toy vtrace catch 100/1,000 frames (10%) ? frames/s (compiled and first chunk in 1.0 s) ETA ? return 0.250",
        "toy vtrace catch 1,000/1,000 frames (100%) 100 frames/s per seed ETA 0:00:00 return 2.500",
    ]
    assert "\r" not in stream.getvalue()


def test_lines_mode_prints_again_once_the_interval_has_passed(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(10_000, label="run", mode="lines", interval=5.0, stream=stream)
    for second in range(1, 13):
        clock.now += 1.0
        bar.update(second * 10, float("nan"))
    printed = [line.split()[1] for line in stream.getvalue().splitlines()[1:]]
    assert printed == ["10/10,000", "60/10,000", "110/10,000"]  # t = 1, 6, 11


def test_speed_excludes_compilation(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(1_000, label="run", mode="lines", interval=0.0, stream=stream)
    clock.now += 40.0  # the first chunk: 40 s, nearly all of it XLA compilation
    bar.update(100, 0.0)
    for chunk in range(2, 11):  # then 100 frames per second
        clock.now += 1.0
        bar.update(chunk * 100, 0.0)
    last = stream.getvalue().splitlines()[-1]
    # from the first chunk's end: 900 frames in 9 s = 100/s (counting the compile it would be 1,000 / 49 s = 20/s)
    assert "100 frames/s per seed" in last, last


def test_speed_says_per_seed_and_total(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(1_000, label="run", mode="lines", interval=0.0, stream=stream, seeds=4)
    clock.now += 5.0
    bar.update(100, 0.0)
    clock.now += 2.0
    bar.update(300, 0.0)  # 200 frames per seed in 2 s: 100/s per seed, 4 seeds side by side: 400/s in all
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"run: 1,000 frames per seed x 4 seed(s); {COMPILING}"
    assert "100 frames/s per seed (400 total) ETA 0:00:07" in lines[-1]


def test_speed_and_eta_count_only_the_frames_of_this_process_after_a_resume(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(2_000, label="run", start_frames=1_000, mode="lines", interval=0.0, stream=stream)
    clock.now += 4.0
    bar.update(1_200, -1.0)  # the first chunk after resuming: compiled
    clock.now += 4.0
    bar.update(1_400, -1.0)  # 200 new frames in 4 s: 50 frames/s, 600 left: 12 s
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"run: 2,000 frames per seed x 1 seed(s) (resuming at 1,000); {COMPILING}"
    assert lines[-1] == "run 1,400/2,000 frames (70%) 50 frames/s per seed ETA 0:00:12 return -1.000"


def test_eta_is_unknown_while_no_frames_were_made(clock: FakeClock):
    stream = io.StringIO()
    Progress(3_600_000, label="run", mode="lines", stream=stream).update(0, float("nan"))
    assert "? frames/s (compiled and first chunk in 0.0 s) ETA ? no episode finished yet" in stream.getvalue()


def test_eta_shows_hours(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(3_600_000 + 200, label="run", mode="lines", interval=0.0, stream=stream)
    clock.now += 1.0
    bar.update(100, 0.0)
    clock.now += 1.0
    bar.update(200, 0.0)  # 100 frames/s, 3.6M frames left
    assert "ETA 10:00:00" in stream.getvalue()


def test_bar_mode_redraws_one_line_that_fits_80_columns(clock: FakeClock):
    stream = io.StringIO()
    label = "impala/offpolicy_correction_toy corr=one_step_is__lag=32 cartpole seeds 0,1,2,3,4,5,6,7"
    bar = Progress(2_000_000, label=label, mode="bar", interval=10.0, stream=stream, width=80, seeds=8)
    for chunk in range(1, 5):
        clock.now += 0.5
        bar.update(chunk * 500_000, 1.0)
    text = stream.getvalue()
    assert text.startswith(f"{label}: 2,000,000 frames per seed x 8 seed(s); {COMPILING}\n")
    redraws = text.split("\n", 1)[1].split("\r")[1:]
    assert len(redraws) == 4 and text.count("\n") == 2 and text.endswith("\n")  # one newline, at the end
    for line in redraws:
        assert len(line.rstrip("\n")) == 79, line  # never wraps in an 80-column terminal; blanks what was there
    assert redraws[0].startswith("[") and "500k/2M frames compiled" in redraws[0]
    last = redraws[-1]
    assert last.startswith("[" + "#" * 20 + "]") and " 100% 2M/2M frames 1M frames/s/seed ETA 0:00:00 ret 1" in last


def test_bar_on_a_very_narrow_terminal_keeps_to_its_width(clock: FakeClock):
    stream = io.StringIO()
    bar = Progress(1_000, label="x", mode="bar", stream=stream, width=40)
    clock.now += 1.0
    bar.update(500, 0.5)
    assert all(len(part) <= 39 for part in stream.getvalue().split("\n", 1)[1].split("\r"))


def test_auto_mode_picks_a_bar_on_a_terminal_and_lines_otherwise():
    assert Progress(10, label="x", stream=TtyStream()).mode == "bar"
    assert Progress(10, label="x", stream=io.StringIO()).mode == "lines"
    assert Progress(10, label="x", mode="lines", stream=TtyStream()).mode == "lines"


@pytest.mark.slow
def test_the_bar_of_a_real_training_job_fits_an_80_column_tmux_window(tmp_path, make_toy_spec, subprocess_env):
    import shlex
    import shutil
    import subprocess
    import sys
    import time

    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed: `apt-get install -y tmux` (.ci/run does)")
    spec = make_toy_spec(tmp_path / "specs", experiment="toy_tmux", smoke_frames=2_000, updates_per_chunk=5)
    command = [sys.executable, "-m", "rlrepro", "train", "--spec", str(spec), "--scale", "smoke", "--variant", "vtrace",
               "--env", "catch", "--results", str(tmp_path / "results"), "--no-mlflow", "--progress", "auto"]
    script = tmp_path / "run.sh"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in subprocess_env.items() if k.isidentifier())
    script.write_text(f"{exports}cd {shlex.quote(str(tmp_path))}\n{shlex.join(command)}\necho EXIT=$?\nsleep 600\n")
    socket = f"rlrepro-test-{tmp_path.name}"  # a tmux server of this test's own, ended by its socket name
    subprocess.run([tmux, "-L", socket, "new-session", "-d", "-x", "80", "-y", "40", f"bash {script}"], check=True)
    try:
        deadline, pane = time.monotonic() + 400, ""
        while "EXIT=" not in pane and time.monotonic() < deadline:
            time.sleep(2)
            # -J joins wrapped rows: a bar wider than the window shows as one long line with every redraw in it
            pane = subprocess.run([tmux, "-L", socket, "capture-pane", "-p", "-J"], capture_output=True, text=True).stdout
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)
    lines = [line for line in pane.splitlines() if line.strip()]
    assert "EXIT=0" in lines, pane
    bar_lines = [line for line in lines if line.startswith("[")]
    # A bar wider than the window wraps, and every redraw then leaves its rows behind: one redraw must remain.
    assert len(bar_lines) == 1 and bar_lines[0].count("frames/s/seed") == 1 and " 100% " in bar_lines[0], pane
    assert len(bar_lines[0].rstrip()) <= 80, pane
    # said before the first chunk (after the job's device line)
    assert any(COMPILING in line for line in lines[: lines.index(bar_lines[0])]), pane
    assert lines[0].startswith("devices: ") and len(lines[0]) <= 80, pane
    # the job's peak memory (issue 15), then its summary, within 80 columns too, then where its runs are (relative)
    assert lines[-4].startswith("peak memory: ") and len(lines[-4]) <= 80, pane
    assert lines[-3].startswith("done: final return ") and len(lines[-3]) <= 80, pane
    assert lines[-2] == "runs in results/smoke/runs/toytest/toy_tmux/vtrace/catch", pane
    assert len(lines) == 7, pane  # device, compiling, bar, memory, done, runs in, EXIT
