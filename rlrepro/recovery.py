"""Recover a working directory after Snakemake itself was killed (``kill -9``, a closed terminal, a crash).

Snakemake locks its working directory with files under ``.snakemake/locks/`` and removes them when it ends; a
killed Snakemake leaves them behind, and every later run stops with ``LockException ... --unlock``. The lock
files hold no process id, so whether a lock is stale is decided by looking for a live Snakemake process
working in the same directory (Linux ``/proc``). Only when there is none are the lock files removed; when
there is one, or when processes cannot be listed, the locks are left and the message says exactly what to run.

A killed Snakemake also leaves its training jobs running (``kill -9`` reaches one process, not its children):
each holds its run folders' lock (:mod:`rlrepro.jobs.run_lock`), so the same command run again would fail on them.
When no Snakemake works in the directory, :func:`stop_orphaned_trainers` stops them (SIGTERM, which a trainer
takes as Ctrl-C: its MLflow runs marked KILLED, its locks released; SIGKILL after a bounded wait) and says so.

The other half of the recovery, re-running jobs whose outputs are marked incomplete, is Snakemake's
``rerun-incomplete`` (set in ``profiles/default/config.yaml``, which Snakemake reads by itself): it is safe
here because a training job resumes from its checkpoints (the stopped ones lose at most their last chunk).

Standard library only: the Snakefile imports it while building the DAG.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["live_snakemake_pids", "orphaned_trainer_pids", "recover", "release_stale_locks", "stop_orphaned_trainers"]

#: Seconds a stopped trainer is given to mark its runs KILLED and exit before it is killed.
STOP_WAIT_S = 30.0

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


def _is_trainer(argv: list[str]) -> bool:
    """``python -m rlrepro train ...`` (the command of a Snakefile's training rule)."""
    return any(a == "-m" and b == "rlrepro" and c == "train" for a, b, c in zip(argv, argv[1:], argv[2:]))


def _parent(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])  # the field after the state: the parent's pid


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(_PROC / str(pid) / "cwd"))
    except OSError:
        return None


def _ancestors(pid: int) -> set[int]:
    found: set[int] = set()
    while pid > 1 and pid not in found:
        found.add(pid)
        parent = _parent(pid)
        if parent is None:
            break
        pid = parent
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


def orphaned_trainer_pids(workdir: Path) -> list[int]:
    """Training jobs a killed Snakemake left running in ``workdir``: ``python -m rlrepro train`` under the shell
    Snakemake started for the rule (``bash -c '... rlrepro train ...'``), with no Snakemake among its ancestors.

    A trainer started by hand (its parent an interactive shell, not a rule's ``-c`` command) is never listed.
    """
    if not _PROC.is_dir():
        return []
    target = Path(workdir).resolve()
    pids = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if not _is_trainer(_argv(pid)) or _cwd(pid) != target:
            continue
        parent = _parent(pid)
        wrapper = _argv(parent) if parent else []
        if "-c" not in wrapper or not any("rlrepro train" in a for a in wrapper):
            continue  # not a rule's shell command
        if not any(_is_snakemake(_argv(a)) for a in _ancestors(pid)):
            pids.append(pid)
    return sorted(pids)


def stop_orphaned_trainers(workdir: Path, wait_s: float = STOP_WAIT_S) -> str | None:
    """Stop the training jobs of a killed Snakemake in ``workdir``; a message saying what was done, or None.

    SIGTERM first (a trainer takes it as Ctrl-C: runs marked KILLED, run-folder locks released), SIGKILL to those
    still alive after ``wait_s`` seconds. Call it only when no Snakemake works in ``workdir``.
    """
    pids = orphaned_trainer_pids(workdir)
    if not pids:
        return None
    for pid in pids:
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)  # a stopped job (Ctrl-Z, a debugger) handles the SIGTERM only once continued
    deadline = time.monotonic() + wait_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if _alive(pid)]
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    killed = f"; {len(alive)} did not stop within {wait_s:g} s and were killed" if alive else ""
    return (
        f"rlrepro: stopped {len(pids)} training job(s) (pid {', '.join(map(str, pids))}) left running in {workdir} by "
        f"a Snakemake that was killed{killed}; they run again now and resume from their last checkpoints."
    )


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        state = (_PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended (its parent, a reparented shell, has not reaped it yet)


def recover(workdir: Path, *, stop_trainers: bool = True) -> str | None:
    """What a new Snakemake does first in ``workdir`` after one was killed: remove its stale locks and stop the
    training jobs it left running (only when no Snakemake works there; ``stop_trainers=False``, a dry run, only
    names them). The messages, or None when nothing was left behind."""
    messages = [release_stale_locks(workdir)]
    if live_snakemake_pids(Path(workdir)) == []:
        if stop_trainers:
            messages.append(stop_orphaned_trainers(workdir))
        elif orphans := orphaned_trainer_pids(workdir):
            messages.append(f"rlrepro: {len(orphans)} training job(s) (pid {', '.join(map(str, orphans))}) of a killed "
                            f"Snakemake still run in {workdir}; a run (not a dry run) stops them first.")
    return "\n".join(m for m in messages if m) or None
