"""Issue 15: a training job's peak resident memory counts its own process and its children (a loss search's pool),
from the kernel's high-water marks (rlrepro.jobs.memory); summary.json and MLflow carry it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from rlrepro.tracking import summary_metrics
from rlrepro.jobs.memory import PeakMemory, memory_line

# A child that touches 150 MB (b"x" * n writes every byte, so every page is resident), says so, then waits.
HOLD = "import sys, time; block = b'x' * (150 * 2**20); print('ready', flush=True); time.sleep(30)"


def test_a_child_holding_150_mb_is_counted_beside_this_process():
    with PeakMemory(poll_seconds=0.1) as memory:
        child = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(0.5)  # a few polls while it holds the block
            during = memory.peak()
        finally:
            child.kill()
            child.wait()
        after = memory.peak()  # gone: its last-seen peak still counts (its peak did happen during the job)
    # 150 MB of bytes plus the interpreter (~10 MB): the sampled VmHWM is at least the block
    assert during["children_mb"] >= 150 and during["child_processes"] >= 1
    assert after["children_mb"] >= during["children_mb"]
    assert during["self_mb"] > 10  # this pytest process's own high-water mark
    assert during["peak_rss_mb"] == pytest.approx(during["self_mb"] + during["children_mb"], abs=0.11)
    assert "1 child process(es)" in memory_line({**during, "child_processes": 1})


def test_a_child_too_short_for_the_poll_is_still_counted_through_getrusage():
    with PeakMemory(poll_seconds=60) as memory:  # no poll after the start: only getrusage can see the child
        subprocess.run([sys.executable, "-c", "block = b'x' * (120 * 2**20)"], check=True)
        peak = memory.peak()
    assert peak["children_mb"] >= 120


def test_the_summary_s_peak_memory_becomes_an_mlflow_metric():
    summary = {"frames": 400, "final": {"final_return": 0.5},
               "memory": {"peak_rss_mb": 612.5, "self_mb": 600.0, "children_mb": 12.5, "child_processes": 1}}
    metrics = {m.key: (m.value, m.step) for m in summary_metrics(summary)}
    assert metrics["summary.memory.peak_rss_mb"] == (612.5, 400)
    assert metrics["summary.final_return"] == (0.5, 400)
    assert "summary.memory.peak_rss_mb" not in {m.key for m in summary_metrics({"frames": 4, "final": {}})}
