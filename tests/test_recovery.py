"""rlrepro.recovery: the lock files of a killed Snakemake are removed only when no Snakemake works there."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rlrepro.recovery import live_snakemake_pids, release_stale_locks


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
