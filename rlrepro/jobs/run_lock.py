"""One process at a time trains a run folder: an advisory ``flock`` on ``<run folder>/.train.lock``.

Two trainers of the same run folder would interleave its metrics (chunks 1, 2, 1, 3, 2, ...) and still write
``summary.json``. The kernel releases a ``flock`` when its process ends in any way (even ``kill -9``), so a lock is
never stale. ``rlrepro mlflow-sync`` asks :func:`holder` whether a RUNNING mirror still has a live trainer.

Standard library only (the sync path imports it without JAX).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rlrepro.jobs.run_folder import LOCK

__all__ = ["LOCK_FILE", "FinishedRunError", "RunBusyError", "holder", "own_run_dir"]

LOCK_FILE = LOCK


class RunBusyError(RuntimeError):
    """Another process is training this run folder."""


class FinishedRunError(RuntimeError):
    """A finished run folder that a job would train again with other numbers (another seed group)."""


def _describe(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']} since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextmanager
def own_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock for the block (created with the folder); fail at once if it is held."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunBusyError(
                f"{run_dir} is being trained by {_describe(fd)}: one process at a time trains a run folder "
                "(two would interleave its metrics). Wait for it to end, or stop it, then run this again."
            ) from None
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def holder(run_dir: Path) -> str | None:
    """Who trains ``run_dir`` now (``"pid N on HOST since T"``), or None when no process holds its lock."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _describe(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
