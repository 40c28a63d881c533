"""rlrepro.jobs.run_folder.read_metrics: the one reader of metrics.jsonl and its policy for damaged lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlrepro.jobs.run_folder import MetricsFileError, TornLineWarning, read_metrics

RECORDS = [{"frames": 100 * (i + 1), "updates": 5 * (i + 1), "episode_return": 0.1 * i} for i in range(4)]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _lines(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_whole_file_reads_every_record(tmp_path: Path):
    assert read_metrics(_write(tmp_path / "metrics.jsonl", _lines(RECORDS))) == RECORDS


def test_a_missing_file_has_no_records(tmp_path: Path):
    assert read_metrics(tmp_path / "metrics.jsonl") == []


def test_a_torn_final_line_is_dropped_with_a_warning_naming_the_file(tmp_path: Path):
    # What kill -9 during the last append leaves: a prefix of the line, no newline.
    torn = _lines(RECORDS[:3]) + json.dumps(RECORDS[3])[:17]
    path = _write(tmp_path / "metrics.jsonl", torn)
    with pytest.warns(TornLineWarning, match=rf"{path}:4: dropped a torn last line"):
        assert read_metrics(path) == RECORDS[:3]


def test_a_bad_line_before_the_last_is_an_error_naming_file_and_line(tmp_path: Path):
    lines = _lines(RECORDS).splitlines(keepends=True)
    lines[1] = lines[1][:10] + "#" + lines[1][11:]  # a corrupted byte in the middle of the file
    path = _write(tmp_path / "metrics.jsonl", "".join(lines))
    with pytest.raises(MetricsFileError, match=rf"^{path}:2: not JSON"):
        read_metrics(path)


def test_an_empty_line_inside_or_a_line_that_is_not_an_object_is_an_error(tmp_path: Path):
    lines = _lines(RECORDS).splitlines(keepends=True)
    path = _write(tmp_path / "a.jsonl", "".join(lines[:2] + ["\n"] + lines[2:]))
    with pytest.raises(MetricsFileError, match=rf"^{path}:3: empty line"):
        read_metrics(path)
    path = _write(tmp_path / "b.jsonl", "".join(lines[:2] + ["[1, 2]\n"] + lines[2:]))
    with pytest.raises(MetricsFileError, match=rf"^{path}:3: expected a JSON object, found list"):
        read_metrics(path)
