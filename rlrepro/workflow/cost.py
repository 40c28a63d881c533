"""The cost model, in one place: what a job takes (its wall minutes on the reference machine, its memory: the
Slurm resources of ``rlrepro.cluster`` and ``rlrepro plan``'s columns) and the device-hours of an experiment on named
hardware, from stored throughput figures (``rlrepro plan``'s cost columns).

``rlrepro/bench/throughput.csv`` (versioned) holds one row per (experiments, hardware): frames/s of one training job,
the hardware it was (or would be) obtained on, ``measured`` (run here, with the command and date) or ``estimate``
(a published or derived figure, with its source: GPU figures stay estimates until a GPU machine measures them with the
same command). Experiments without a stored CPU row fall back to the spec's own measured cpu-scale minutes
(``scales.cpu.expected_minutes``: the real pipeline, 2 jobs at a time where two fit in its memory, on the reference
machine). At a reduced scale whose minutes the spec states, those measured minutes are the CPU figure: a stored
benchmark runs the paper's configuration (e.g. IMPALA's 32 x 20 batches), not that scale's, and the plan's own time
column shows the same minutes.

Imports no JAX: ``rlrepro plan`` stays light.
"""

from __future__ import annotations

import csv
import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlrepro.specs import Scale, resolve_agent
from rlrepro.specs.control import split_variant
from rlrepro.workflow.plan import ExperimentPlan, Job, plan_experiment

#: Headroom over the estimated minutes: a cluster node slower than the reference machine, a busy shared
#: filesystem, a resume after a preemption. The constant adds XLA compilation and start-up, which the per-frame
#: rate of a tiny job does not show.
RUNTIME_FACTOR = 2.0
RUNTIME_OVERHEAD_MINUTES = 15
#: When a spec states no measured minutes (experiments that cannot run on the reference machine, e.g. DMLab).
UNMEASURED_RUNTIME_MINUTES = 24 * 60
#: Memory of a training job whose spec states no measured memory at its scale (``expected_mem_mb``; none does at
#: the paper scale): ``--config mem_mb=N``, else this. The paper scale's replay memories need more (eval_atari's 1M
#: Atari frames are >= 7 GB as uint8 84x84): set mem_mb for those runs.
MEM_MB = 4000
#: Headroom over a spec's measured peak (``expected_mem_mb``): x1.5 + 512 MB. The figure was measured on 2 cores;
#: on a node with more cores XLA's and the BLAS thread pools (and glibc's per-thread malloc arenas) hold more; a
#: Slurm cgroup limit also counts the page cache of the files the job writes (checkpoints, metrics, an MLflow sqlite
#: store); and exceeding the request kills the job (OUT_OF_MEMORY), whose retry then fails the same way. The constant
#: covers small jobs, whose peaks are mostly the Python/JAX runtime (~0.3-0.6 GB here) and vary most between
#: library builds.
MEM_FACTOR = 1.5
MEM_OVERHEAD_MB = 512
#: The reference machine's memory (2 cores, 24 GiB): two jobs whose requests do not fit in it together run one at a
#: time under the Snakefile's memory limit, as they did when their minutes were measured (IMPALA's PBT jobs).
REFERENCE_MEMORY_MB = 24 * 1024
#: Added for jobs given GPUs: the CUDA libraries' host memory (cuDNN, cuBLAS, the driver's context), which a
#: CPU-only measurement cannot show. An allowance, not measured here (no GPU on the reference machine).
GPU_HOST_MB = 2048


#: Wall time of a frozen-arm job (``learning: false``, ``rlrepro.specs.control``) over a training job's, per agent
#: kind, at the cpu scale's configuration on the reference machine: ``python -m rlrepro.bench frozen`` (both programs
#: timed side by side in interleaved rounds). A spec's measured minutes are its own variants' (the arm was added
#: after them); the plan adds the arm at these ratios. A kind not measured counts as much as training.
#: Measured 2026-11-29 with ``python -m rlrepro.bench frozen --chunks 2 --rounds 3`` (2 cores shared with other
#: work, load 9-14: read them to about 0.2): the backward pass XLA drops is a small part of a chunk beside acting,
#: the environments and the losses the metrics still report. PPO and ACER have no claim judged at cpu. IMPALA's
#: ratio is its toy's; on Atari (the threaded actor-learner, Breakout at the cpu scale) the two real jobs side by side
#: ran at 1,487 and 1,007 frames/s (1.48).
FROZEN_COST: dict[str, float] = {"impala": 1.46, "frodo": 1.02, "td_lambda": 0.72, "dqn": 1.0, "impala_sr": 0.92,
                                 "vracer": 0.91, "ddpg": 1.03, "naf": 1.0}
FROZEN_COST_UNMEASURED = 1.0


def frames_of(experiment) -> int:
    """The experiment's frame budget (a multi-task member counts once for all its games: ``Job.frames_emulated``)."""
    return sum(job.frames_emulated for job in experiment.jobs)


def is_control(job: Job) -> bool:
    """Whether a job trains a control arm (``<variant>@frozen``)."""
    return split_variant(job.variant)[1] is not None


def training_frames(experiment) -> int:
    """The frames of the experiment's own variants (what its measured minutes cover), the control arm left out."""
    return sum(job.frames_emulated for job in _own_jobs(experiment))


def job_weight(job: Job, experiment: ExperimentPlan) -> float:
    """A job's frames in training-frame equivalents: a control job's times its kind's ``FROZEN_COST``."""
    if not is_control(job):
        return float(job.frames_emulated)
    variant, control = experiment.spec.variant_named(job.variant)
    kind = resolve_agent(experiment.spec, variant, experiment.scale, control=control).kind
    return job.frames_emulated * FROZEN_COST.get(kind, FROZEN_COST_UNMEASURED)


def control_share(experiment: ExperimentPlan) -> float:
    """The control arm's time over the experiment's own variants' time (0 without an arm)."""
    own = training_frames(experiment)
    arm = sum(job_weight(job, experiment) for job in experiment.jobs if is_control(job))
    return arm / own if own else 0.0


def cpu_rate(spec) -> float | None:
    """Frames per second (all of an experiment's own jobs, as many at a time as measured them) on the reference
    machine: the cpu scale's frames of its own variants over its measured expected minutes. None when the spec
    states no minutes."""
    measured = _cpu_measured(spec)
    return measured[0] if measured else None


def _cpu_measured(spec) -> tuple[float, int] | None:
    """``cpu_rate`` and how many of the experiment's own jobs ran at once when its cpu-scale minutes were measured
    (``_lanes``: one job's frames per second is the rate over these), from one plan of the cpu scale."""
    minutes = spec.scale("cpu").expected_minutes
    if not minutes:
        return None
    experiment = plan_experiment(Path("x.yaml"), spec, "cpu")
    return training_frames(experiment) / (minutes * 60.0), _lanes(experiment, _own_jobs(experiment), "cpu")


def experiment_hours(experiment: ExperimentPlan, scale: Scale) -> tuple[float | None, bool]:
    """Wall hours of the whole experiment on the reference machine, and whether they are the spec's measured minutes
    at this scale (else its cpu-scale rate scaled by frames); the control arm added at ``FROZEN_COST``. None: the
    spec states no minutes.

    From the measured minutes (its own variants' jobs, as many at a time as there were of them up to 2, one where two
    do not fit in memory): each job's minutes by its frames (a control job's weighted by ``FROZEN_COST``), shared over
    the lanes all the jobs run in (2 at a time, one for whole-machine jobs and jobs two of which do not fit in
    memory), and never less than the longest job: an experiment of one job and its frozen arm runs the two side by
    side (about the longer of them), not one after the other.
    """
    if measured := experiment.spec.scale(scale).expected_minutes:
        per_frame = measured * _lanes(experiment, _own_jobs(experiment), scale) / training_frames(experiment)
        minutes = [job_weight(job, experiment) * per_frame for job in experiment.jobs]  # core-minutes each
        return max(sum(minutes) / _lanes(experiment, experiment.jobs, scale), max(minutes)) / 60.0, True
    rate = cpu_rate(experiment.spec)
    if rate is None:
        return None, False
    weight = sum(job_weight(job, experiment) for job in experiment.jobs)
    return weight / rate / 3600.0, False


def _own_jobs(experiment: ExperimentPlan) -> list[Job]:
    """The jobs of the spec's own variants (what its measured minutes cover), the control arm left out."""
    return [job for job in experiment.jobs if not is_control(job)]


def _lanes(experiment: ExperimentPlan, jobs, scale: Scale) -> int:
    """How many of ``jobs`` run at once on the reference machine: 2 (its cores), 1 for whole-machine jobs and for
    jobs two of whose memory requests do not fit in its memory together."""
    if experiment.jobs[0].whole_machine or 2 * memory_mb(experiment, scale)[0] > REFERENCE_MEMORY_MB:
        return 1
    return min(2, len(jobs))


def estimated_minutes(job: Job, experiment: ExperimentPlan, scale: Scale) -> float | None:
    """Wall minutes of one job on one core of the reference machine (all its cores for a whole-machine job).

    The cost model is ``rlrepro plan``'s (one place: the lead may swap it): the spec's minutes measured at this
    scale, which are its own variants' jobs (the control arm's came later) run as many at a time as there were of
    them up to 2 (one where two do not fit in memory), or else its cpu-scale rate (frames over measured minutes, its
    jobs as many at a time as measured them), one job's share of it; a job gets its share by frames (a control job's weighted by
    ``FROZEN_COST``). None when the spec states no minutes.
    """
    weight = job_weight(job, experiment)  # the frames it steps: a multi-task member's once for all its games
    measured = experiment.spec.scale(scale).expected_minutes
    if measured:
        return measured * _lanes(experiment, _own_jobs(experiment), scale) * weight / training_frames(experiment)
    if (cpu := _cpu_measured(experiment.spec)) is None:
        return None
    rate, lanes = cpu
    return weight / (rate / (1 if job.whole_machine else lanes)) / 60.0


def memory_mb(experiment: ExperimentPlan, scale: Scale, *, gpus: int = 0) -> tuple[int, bool]:
    """The memory a training job of ``experiment`` asks for at ``scale`` (MB), and whether it is measured.

    Measured: the spec's ``expected_mem_mb`` x MEM_FACTOR + MEM_OVERHEAD_MB (+ GPU_HOST_MB with GPUs), rounded up to
    100 MB. Unmeasured (no figure at this scale): MEM_MB, the fallback ``--config mem_mb`` replaces.
    """
    measured = experiment.spec.scale(scale).expected_mem_mb
    if measured is None:
        return MEM_MB, False
    wanted = measured * MEM_FACTOR + MEM_OVERHEAD_MB + (GPU_HOST_MB if gpus else 0)
    return int(math.ceil(wanted / 100.0) * 100), True


THROUGHPUT_CSV = Path(__file__).parent.parent / "bench" / "throughput.csv"  # written by ``bench/device_check.py merge``
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
        experiment = plan_experiment(Path("x.yaml"), spec, scale)
        lanes = _lanes(experiment, experiment.jobs, scale)
        return DeviceHours("cpu", reference_machine, experiment_hours(experiment, scale)[0], "measured",
                           f"the spec's {scale}-scale minutes (the pipeline, {_at_a_time(lanes)})"
                           + (", the frozen arm added at FROZEN_COST" if control_share(experiment) else ""))
    row = _stored(key, rows, ("cpu",))
    if row is not None:
        return DeviceHours("cpu", row.hardware, frames / row.frames_per_s / 3600.0, row.status,
                           f"{row.command} ({row.date})")
    if (cpu := _cpu_measured(spec)) is None:  # frames counted as the plan counts them: a multi-task job's once
        return None
    rate, lanes = cpu
    return DeviceHours("cpu", reference_machine, frames / rate / 3600.0, "measured",
                       f"the spec's cpu-scale minutes (the pipeline, {_at_a_time(lanes)})")


def _at_a_time(lanes: int) -> str:
    return "2 jobs at a time" if lanes == 2 else "one job at a time"


def accelerator_hours(key: str, frames: int, rows: list[Throughput]) -> DeviceHours | None:
    """Hours on the accelerator a stored GPU/TPU figure names, or None (no figure: a CPU experiment)."""
    row = _stored(key, rows, ("gpu", "tpu"))
    if row is None:
        return None
    source = row.source if row.status == "estimate" else f"{row.command} ({row.date})"
    return DeviceHours(row.device, row.hardware, frames / row.frames_per_s / 3600.0, row.status, source)
