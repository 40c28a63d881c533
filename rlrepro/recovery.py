"""Recover a working directory after Snakemake itself was killed (``kill -9``, a closed terminal, a crash).

Snakemake locks its working directory with files under ``.snakemake/locks/`` and removes them when it ends; a
killed Snakemake leaves them behind, and every later run stops with ``LockException ... --unlock``. The lock
files hold no process id, so whether a lock is stale is decided by looking for a live Snakemake process
working in the same directory (Linux ``/proc``). Only when there is none are the lock files removed; when
there is one, or when processes cannot be listed, the locks are left and the message says exactly what to run.

The other half of the recovery, re-running jobs whose outputs are marked incomplete, is Snakemake's
``rerun-incomplete`` (set in ``profiles/default/config.yaml``, which Snakemake reads by itself): it is safe
here because a training job resumes from its checkpoints.

Standard library only: the Snakefile imports it while building the DAG.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["live_snakemake_pids", "release_stale_locks"]

_PROC = Path("/proc")


def _argv(pid: int) -> list[str]:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _is_snakemake(argv: list[str]) -> bool:
    """``snakemake ...`` or ``python -m snakemake ...`` (not a command that only mentions it, e.g. pytest)."""
    if not argv or not argv[0]:
        return False
    if Path(argv[0]).name == "snakemake":
        return True
    if len(argv) > 1 and Path(argv[1]).name == "snakemake":  # python /path/to/bin/snakemake
        return True
    return any(a == "-m" and b == "snakemake" for a, b in zip(argv, argv[1:]))


def _ancestors(pid: int) -> set[int]:
    found: set[int] = set()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = (_PROC / str(pid) / "stat").read_text()
        except OSError:
            break
        pid = int(stat.rpartition(")")[2].split()[1])  # the field after the state: the parent's pid
    return found


def live_snakemake_pids(workdir: Path) -> list[int] | None:
    """Snakemake processes (other than this one and its parents) working in ``workdir``; None if unknowable."""
    if not _PROC.is_dir():
        return None
    mine = _ancestors(os.getpid())
    target = Path(workdir).resolve()
    pids = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # exited meanwhile, or a process this user may not inspect
            if _is_snakemake(_argv(int(entry.name))):
                return None  # a Snakemake we cannot inspect: do not guess
            continue
        if cwd == target and _is_snakemake(_argv(int(entry.name))):
            pids.append(int(entry.name))
    return sorted(pids)


def release_stale_locks(workdir: Path) -> str | None:
    """Remove the lock files of a killed Snakemake in ``workdir``; a message saying what was done, or None.

    Nothing is removed while a Snakemake process works in ``workdir`` (the message names it) or when
    processes cannot be listed (the message gives the command to run).
    """
    lockdir = Path(workdir) / ".snakemake" / "locks"
    locks = sorted(p for p in lockdir.glob("*.lock") if p.is_file()) if lockdir.is_dir() else []
    if not locks:
        return None
    pids = live_snakemake_pids(Path(workdir))
    if pids is None:
        return (
            f"rlrepro: {lockdir} holds Snakemake locks and the running processes cannot be listed here. If no "
            "other Snakemake runs in this directory, run the same command with --unlock once, then again without it."
        )
    if pids:
        return f"rlrepro: another Snakemake (pid {', '.join(map(str, pids))}) is running in {workdir}; its locks are kept."
    for lock in locks:
        lock.unlink(missing_ok=True)
    return (
        f"rlrepro: removed {len(locks)} stale Snakemake lock file(s) in {lockdir} (no Snakemake process runs in "
        f"{workdir}: the one that made them was killed); jobs it left incomplete run again and resume from checkpoints."
    )
