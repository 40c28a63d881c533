"""The run folder's format, in one place: its files, how they are written, how they are read.

``results/<scale>/runs/<paper>/<experiment>/<variant>/<env>/seed<k>/`` (``workflow.RunUnit.run_dir``) holds:

- ``spec.resolved.json`` (``RESOLVED``): the run's identity (``run``), resolved configuration (``config``, MLflow's
  params), the whole spec and the ``device`` it ran on; written first, again on every start.
- ``metrics.jsonl`` (``METRICS``): one JSON object per chunk, appended and flushed (``append_metrics``).
- ``summary.json`` (``SUMMARY``): written last, atomically; it marks the run complete (Snakemake's output).
- ``.train.lock`` (``LOCK``): the ``flock`` of the process training it (``rlrepro.jobs.run_lock``).

The runner writes them (``rlrepro.jobs.runner``); ``rlrepro.results.collect``, ``rlrepro.tracking`` and the CLI read
them through this module. ``read_metrics`` is the one reader of ``metrics.jsonl``: a run appends a line per chunk
and flushes it, so the only damage a crash (even ``kill -9``) can do is to cut the last write short; a torn *final*
line is dropped with a warning naming the file (training re-runs that chunk from the checkpoint). A bad line
anywhere else cannot come from a crash: the file was edited or corrupted, and reading it is an error naming the file
and the line.

Standard library only: ``rlrepro.tracking`` and the Snakemake DAG path import this module.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "EVAL_SCORES", "LOCK", "METRICS", "RESOLVED", "SUMMARY", "MetricsFileError", "TornLineWarning", "append_metrics", "read_json",
    "cut_metrics", "read_metrics", "write_json_atomic",
]

RESOLVED = "spec.resolved.json"
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
LOCK = ".train.lock"
#: A metric kept as a list per run, not a number: the scores of the games of the last evaluation, one per game (the
#: agent's ``evaluation.episodes``), in the last chunk's record and in summary.json.
EVAL_SCORES = "eval_scores"


class MetricsFileError(ValueError):
    """A metrics.jsonl line that is neither a JSON object nor the torn last line of a crash."""


class TornLineWarning(UserWarning):
    """A torn final line of a metrics.jsonl was dropped."""


def read_metrics(path: Path | str) -> list[dict]:
    """The records of a metrics file; a missing file has none.

    Raises:
        MetricsFileError: a line other than the last is not a JSON object (file and line named).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    records: list[dict] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if number == len(lines):
                continue
            raise MetricsFileError(f"{path}:{number}: empty line inside the metrics file (edited or corrupted)")
        try:
            record = json.loads(line)
        except ValueError as error:
            if number == len(lines):
                warnings.warn(
                    f"{path}:{number}: dropped a torn last line (a run killed while writing it): {line[:80]!r}",
                    TornLineWarning,
                    stacklevel=2,
                )
                break
            raise MetricsFileError(f"{path}:{number}: not JSON ({error}); found {line[:80]!r}") from None
        if not isinstance(record, dict):
            raise MetricsFileError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}")
        records.append(record)
    return records


def append_metrics(run_dir: Path, record: dict) -> None:
    """One chunk's record, appended to the run's ``metrics.jsonl`` and flushed."""
    with open(Path(run_dir) / METRICS, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()


def cut_metrics(run_dir: Path, max_updates: int) -> None:
    """Keep the records up to ``max_updates`` updates (a resumed checkpoint's; nothing for a fresh start)."""
    path = Path(run_dir) / METRICS
    kept = [r for r in read_metrics(path) if r["updates"] <= max_updates]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: dict) -> None:
    """``spec.resolved.json`` or ``summary.json``: a reader sees the old file or the new one, never part of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))
