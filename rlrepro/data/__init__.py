"""Reference tables shipped with rlrepro (provenance, checksums and caveats in ``README.md`` here)."""

from __future__ import annotations

import csv
import pathlib

_DATA_DIR = pathlib.Path(__file__).resolve().parent


def available() -> tuple[str, ...]:
    """Names of the shipped CSV files, sorted."""
    return tuple(sorted(p.name for p in _DATA_DIR.glob("*.csv")))


def data_path(name: str) -> pathlib.Path:
    """Path of a shipped data file, e.g. ``data_path("atari57_human_random.csv")``.

    Raises:
      FileNotFoundError: ``name`` is not a file in this folder (the message lists the CSVs that are).
    """
    path = _DATA_DIR / name
    if pathlib.PurePath(name).name != name or not path.is_file():
        raise FileNotFoundError(
            f"no data file {name!r} in {_DATA_DIR}; available: {', '.join(available())}"
        )
    return path


def read_csv(name: str) -> list[dict[str, str]]:
    """Rows of a shipped CSV as dicts keyed by the header; every value is the string as printed."""
    with data_path(name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
