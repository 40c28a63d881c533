"""rlrepro.recovery: the lock files of a killed Snakemake are removed only when no Snakemake works there."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from rlrepro.recovery import live_snakemake_pids, orphaned_trainer_pids, release_stale_locks, stop_orphaned_trainers


def _stale_locks(workdir: Path) -> list[Path]:
    """What a Snakemake killed with -9 leaves: its input and output lock files."""
    lockdir = workdir / ".snakemake" / "locks"
    lockdir.mkdir(parents=True)
    locks = [lockdir / "0.input.lock", lockdir / "0.output.lock"]
    for lock in locks:
        lock.write_text(f"{workdir}/results/smoke/REPORT.md\n")
    return locks


def test_locks_without_a_snakemake_process_are_removed_with_a_message(tmp_path: Path):
    locks = _stale_locks(tmp_path)
    message = release_stale_locks(tmp_path)
    assert message is not None and "removed 2 stale Snakemake lock file(s)" in message
    assert not any(lock.exists() for lock in locks)
    assert release_stale_locks(tmp_path) is None  # nothing left to do


def test_locks_of_a_live_snakemake_in_the_same_folder_are_kept(tmp_path: Path):
    locks = _stale_locks(tmp_path)
    # A process whose argv[0] is 'snakemake', working in tmp_path, as a running Snakemake does.
    live = subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 60"], cwd=tmp_path)
    try:
        for _ in range(100):  # until exec has replaced bash
            if live_snakemake_pids(tmp_path):
                break
            subprocess.run(["sleep", "0.05"])
        assert live_snakemake_pids(tmp_path) == [live.pid]
        message = release_stale_locks(tmp_path)
        assert message is not None and f"another Snakemake (pid {live.pid}) is running" in message
        assert all(lock.exists() for lock in locks)
    finally:
        live.kill()
        live.wait()


def test_a_snakemake_in_another_folder_or_a_command_mentioning_snakemake_does_not_count(tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 60"], cwd=other)
    mentions = subprocess.Popen(["sleep", "60", "tests/test_snakemake.py"], cwd=tmp_path)
    try:
        subprocess.run(["sleep", "0.3"])
        assert live_snakemake_pids(tmp_path) == []
    finally:
        for process in (elsewhere, mentions):
            process.kill()
            process.wait()


def _rule_shell(workdir: Path, script: str) -> subprocess.Popen:
    """What a Snakefile's training rule runs: ``bash -c '...; python -m rlrepro train ...'``; here the "trainer" is
    a Python that runs ``script`` (its argv still reads ``-m rlrepro train``, as /proc shows a real one's)."""
    trainer = f"{sys.executable} -c {shlex.quote(script)} -m rlrepro train --spec s.yaml --seeds 0"
    return subprocess.Popen(["bash", "-c", f"set -e; {trainer}; true"], cwd=workdir, start_new_session=True)


def _trainer_pid(shell: subprocess.Popen) -> int:
    """The trainer's pid once it is the trainer: a child the shell has forked is bash until it has exec'd Python
    (a SIGSTOP sent before that freezes a bash, which no one would take for a trainer)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{shell.pid}/task/{shell.pid}/children").read_text().split():
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0] == os.fsencode(sys.executable):
                return int(child)
        time.sleep(0.05)
    raise AssertionError("the rule's shell started no trainer")


def test_training_jobs_with_no_snakemake_above_them_are_stopped_and_named(tmp_path: Path):
    # kill -9 of Snakemake left its training jobs running, and the same command failed on their run-folder locks.
    # A trainer that takes SIGTERM as Ctrl-C (as `rlrepro train` does), and one that ignores it (killed after the wait).
    polite = _rule_shell(tmp_path, "import time\nwhile True: time.sleep(0.1)")
    stubborn = _rule_shell(tmp_path, "import pathlib, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                     "pathlib.Path('ignoring').touch()\nwhile True: time.sleep(0.1)")  # fmt: skip
    pids = sorted([_trainer_pid(polite), _trainer_pid(stubborn)])
    deadline = time.monotonic() + 30
    while not (tmp_path / "ignoring").exists():  # SIGTERM ignored from here on
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        assert orphaned_trainer_pids(tmp_path) == pids
        message = stop_orphaned_trainers(tmp_path, wait_s=2)
        assert message is not None and f"stopped 2 training job(s) (pid {pids[0]}, {pids[1]})" in message
        assert "1 did not stop within 2 s and were killed" in message and "resume from their last checkpoints" in message
        polite.wait(timeout=10), stubborn.wait(timeout=10)
        assert orphaned_trainer_pids(tmp_path) == [] and stop_orphaned_trainers(tmp_path) is None
    finally:
        for shell in (polite, stubborn):
            if shell.poll() is None:
                os.killpg(shell.pid, signal.SIGKILL)


def test_a_stopped_training_job_is_continued_to_take_its_sigterm(tmp_path: Path):
    # Ctrl-Z (or a debugger) left the job stopped: a SIGTERM alone stays pending, and it was killed after the wait.
    frozen = _rule_shell(tmp_path, "import time\nwhile True: time.sleep(0.1)")
    pid = _trainer_pid(frozen)
    os.kill(pid, signal.SIGSTOP)
    try:
        message = stop_orphaned_trainers(tmp_path, wait_s=20)
        assert message is not None and f"stopped 1 training job(s) (pid {pid})" in message
        assert "did not stop" not in message  # it took the SIGTERM: not killed after the wait
    finally:
        if frozen.poll() is None:
            os.killpg(frozen.pid, signal.SIGKILL)


def test_a_trainer_started_by_hand_or_in_another_folder_is_left_alone(tmp_path: Path):
    by_hand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-m", "rlrepro", "train"],
                               cwd=tmp_path, start_new_session=True)  # fmt: skip
    elsewhere = _rule_shell(tmp_path.parent, "import time; time.sleep(60)")
    try:
        _trainer_pid(elsewhere)
        assert orphaned_trainer_pids(tmp_path) == []
        assert stop_orphaned_trainers(tmp_path) is None and by_hand.poll() is None
    finally:
        by_hand.kill()
        os.killpg(elsewhere.pid, signal.SIGKILL)
