"""Peak resident memory of one training job: its own process plus its children (a loss search's process pool).

What a cluster job must ask for (``--mem``, rlrepro/cluster.py) is the job's peak resident set, not its average:
Slurm kills a job whose resident memory passes its request. Recorded in every run's ``summary.json``
(``memory``), the job's log and MLflow (``summary.memory.peak_rss_mb``); the specs' ``expected_mem_mb`` are
figures measured the same way.

- Own process: ``getrusage(RUSAGE_SELF).ru_maxrss``, the kernel's exact high-water mark (kB on Linux).
- Children: polled once a second (``/proc/<pid>/status`` VmHWM, the kernel's high-water mark of each process, which
  only grows), summed over every descendant seen, each with its last-seen peak: a pool's workers run side by side,
  so their peaks add up. A child that lived less than a poll interval is missed by the poll; it is then counted
  through ``getrusage(RUSAGE_CHILDREN)`` (the largest waited-for child), whichever is larger.
The sum of per-process peaks is an upper bound when the peaks do not coincide: for a memory request that is the safe
side. A resumed job measures its last attempt only (the attempt that wrote the summary).
"""

from __future__ import annotations

import os
import resource
import threading
from pathlib import Path
from typing import Any

#: Seconds between polls of the children.
POLL_SECONDS = 1.0


def _vm_hwm_kb(pid: int) -> int | None:
    """The process's peak resident set (VmHWM, kB), or None once it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (children, their children, ...)."""
    import psutil  # pinned in envs/requirements-cpu.lock.txt (distributed and mlflow need it too)

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


class PeakMemory:
    """``with PeakMemory() as memory: ...; memory.peak()``: the job's peak resident memory so far (see the module)."""

    def __init__(self, poll_seconds: float = POLL_SECONDS):
        self.poll_seconds = poll_seconds
        self._children_kb: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> None:
        """Record the current peak of every living descendant."""
        for pid in _descendants(os.getpid()):
            kb = _vm_hwm_kb(pid)
            if kb is not None:
                with self._lock:
                    self._children_kb[pid] = max(self._children_kb.get(pid, 0), kb)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.poll()

    def __enter__(self) -> PeakMemory:
        self.poll()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.poll_seconds)

    def peak(self) -> dict[str, Any]:
        """``peak_rss_mb`` (own + children), ``self_mb``, ``children_mb``, ``child_processes`` (MB = 2**20 bytes)."""
        self.poll()
        own_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with self._lock:
            sampled_kb, count = sum(self._children_kb.values()), len(self._children_kb)
        children_kb = max(sampled_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        return {
            "peak_rss_mb": round((own_kb + children_kb) / 1024, 1),
            "self_mb": round(own_kb / 1024, 1),
            "children_mb": round(children_kb / 1024, 1),
            "child_processes": count,
        }


def memory_line(peak: dict[str, Any]) -> str:
    """The job log's line."""
    return (f"peak memory: {peak['peak_rss_mb']:,.0f} MB (this process {peak['self_mb']:,.0f} MB, "
            f"{peak['child_processes']} child process(es) {peak['children_mb']:,.0f} MB)")
