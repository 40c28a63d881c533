"""Device-hours of an experiment on named hardware, from stored throughput figures (``rlrepro plan``'s cost columns).

``rlrepro/bench/throughput.csv`` (versioned) holds one row per (experiments, hardware): frames/s of one training job,
the hardware it was (or would be) obtained on, ``measured`` (run here, with the command and date) or ``estimate``
(a published or derived figure, with its source: GPU figures stay estimates until a GPU machine measures them with the
same command). Experiments without a stored CPU row fall back to the spec's own measured cpu-scale minutes
(``scales.cpu.expected_minutes``: the real pipeline, 2 jobs at a time, on the reference machine). At a reduced scale
whose minutes the spec states, those measured minutes are the CPU figure: a stored benchmark runs the paper's
configuration (e.g. IMPALA's 32 x 20 batches), not that scale's, and the plan's own time column shows the same minutes.

Imports no JAX: ``rlrepro plan`` stays light.
"""

from __future__ import annotations

import csv
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

THROUGHPUT_CSV = Path(__file__).with_name("throughput.csv")
COLUMNS = ("experiments", "device", "hardware", "frames_per_s", "status", "date", "command", "source")
DEVICES = ("cpu", "gpu", "tpu")
STATUSES = ("measured", "estimate")


@dataclass(frozen=True)
class Throughput:
    """Frames/s of one training job of the matching experiments on ``hardware``."""

    experiments: tuple[str, ...]  # paper/experiment patterns (fnmatch)
    device: str  # cpu | gpu | tpu: what the hours count
    hardware: str
    frames_per_s: float
    status: str  # measured | estimate
    date: str
    command: str
    source: str

    def matches(self, key: str) -> bool:
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in self.experiments)


@dataclass(frozen=True)
class DeviceHours:
    device: str
    hardware: str
    hours: float
    status: str  # measured | estimate
    source: str  # where the figure comes from (the stored row's command/source, or the spec)


def load_throughput(path: Path = THROUGHPUT_CSV) -> list[Throughput]:
    """The stored figures. Raises ValueError naming the file, the row and the field on bad input."""
    rows: list[Throughput] = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: header {reader.fieldnames}: expected {list(COLUMNS)}")
        for line, row in enumerate(reader, start=2):
            where = f"{path}:{line}"
            if row["device"] not in DEVICES:
                raise ValueError(f"{where}: device {row['device']!r}: expected one of {DEVICES}")
            if row["status"] not in STATUSES:
                raise ValueError(f"{where}: status {row['status']!r}: expected one of {STATUSES}")
            try:
                fps = float(row["frames_per_s"])
            except ValueError:
                raise ValueError(f"{where}: frames_per_s {row['frames_per_s']!r}: expected a number") from None
            if not fps > 0:
                raise ValueError(f"{where}: frames_per_s {fps}: expected > 0")
            for field in ("experiments", "hardware", "date", "command", "source"):
                if not row[field].strip():
                    raise ValueError(f"{where}: {field} is empty")
            rows.append(Throughput(tuple(row["experiments"].split()), row["device"], row["hardware"].strip(), fps,
                                   row["status"], row["date"].strip(), row["command"].strip(), row["source"].strip()))
    return rows


def _stored(key: str, rows: list[Throughput], devices: tuple[str, ...]) -> Throughput | None:
    return next((row for row in rows if row.device in devices and row.matches(key)), None)


def cpu_hours(key: str, frames: int, rows: list[Throughput], spec: Any, reference_machine: str,
              scale: str | None = None) -> DeviceHours | None:
    """Hours on a CPU machine: at a reduced ``scale`` with measured minutes, those; else a stored CPU figure, else the
    spec's measured cpu-scale minutes scaled by frames (``frames`` and the cpu-scale frames counted the same way).
    None without any."""
    if scale in ("smoke", "cpu") and (measured := spec.scale(scale).expected_minutes):
        return DeviceHours("cpu", reference_machine, measured / 60.0, "measured",
                           f"the spec's {scale}-scale minutes (the pipeline, 2 jobs at a time)")
    row = _stored(key, rows, ("cpu",))
    if row is not None:
        return DeviceHours("cpu", row.hardware, frames / row.frames_per_s / 3600.0, row.status,
                           f"{row.command} ({row.date})")
    minutes = spec.scale("cpu").expected_minutes
    if not minutes:
        return None
    from rlrepro.workflow import plan_experiment

    # counted as the plan counts ``frames``: a multi-task job's frames once for all its games
    cpu_frames = sum(job.frames_emulated for job in plan_experiment(Path("x.yaml"), spec, "cpu").jobs)
    return DeviceHours("cpu", reference_machine, frames / (cpu_frames / (minutes * 60.0)) / 3600.0, "measured",
                       "the spec's cpu-scale minutes (the pipeline, 2 jobs at a time)")


def accelerator_hours(key: str, frames: int, rows: list[Throughput]) -> DeviceHours | None:
    """Hours on the accelerator a stored GPU/TPU figure names, or None (no figure: a CPU experiment)."""
    row = _stored(key, rows, ("gpu", "tpu"))
    if row is None:
        return None
    source = row.source if row.status == "estimate" else f"{row.command} ({row.date})"
    return DeviceHours(row.device, row.hardware, frames / row.frames_per_s / 3600.0, row.status, source)
