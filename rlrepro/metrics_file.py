"""The one reader of ``metrics.jsonl`` (training resume, ``rlrepro aggregate``, ``rlrepro mlflow-sync``).

A run appends one JSON object per chunk and flushes it. The only damage a crash (even ``kill -9``) can do is
to cut the last write short, so a torn *final* line is expected: it is dropped with a warning naming the file
(training re-runs that chunk from the checkpoint). A bad line anywhere else cannot come from a crash: the
file was edited or corrupted, and reading it is an error naming the file and the line.

Standard library only: ``rlrepro.tracking`` and the Snakemake DAG path import this module.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

__all__ = ["MetricsFileError", "TornLineWarning", "read_metrics"]


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
