"""What a training job asks a cluster scheduler for (``profiles/slurm``): derived from its spec in one place.

Snakemake passes these resources to the Slurm executor plugin, which turns them into ``sbatch`` options:
``runtime`` -> ``--time`` (minutes), ``mem_mb`` -> ``--mem``, ``gpu`` -> ``--gpus``, ``slurm_extra`` verbatim.
Also the profile's job-status command (:func:`slurm_status_command`: ``sacct`` where Slurm keeps accounting, else
``squeue``). Imports no JAX: the Snakefile calls it for every job while the DAG builds.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

from rlrepro.specs import Scale
from rlrepro.specs.agents import CPU_ONLY_KINDS
from rlrepro.workflow import ExperimentPlan, Job, plan_experiment

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
#: Added for jobs given GPUs: the CUDA libraries' host memory (cuDNN, cuBLAS, the driver's context), which a
#: CPU-only measurement cannot show. An allowance, not measured here (no GPU on the reference machine).
GPU_HOST_MB = 2048


def frames_of(experiment) -> int:
    """The experiment's frame budget (a multi-task member counts once for all its games: ``Job.frames_emulated``)."""
    return sum(job.frames_emulated for job in experiment.jobs)


def cpu_rate(spec) -> float | None:
    """Frames per second (all of an experiment's jobs, 2 at a time) on the reference machine: the cpu scale's
    frames over its measured expected minutes. None when the spec states no minutes."""
    minutes = spec.scale("cpu").expected_minutes
    if not minutes:
        return None
    return frames_of(plan_experiment(Path("x.yaml"), spec, "cpu")) / (minutes * 60.0)


def estimated_minutes(job: Job, experiment: ExperimentPlan, scale: Scale) -> float | None:
    """Wall minutes of one job on one core of the reference machine (all its cores for a whole-machine job).

    The cost model is ``rlrepro plan``'s (one place: the lead may swap it): the spec's minutes measured at this
    scale, or else its cpu-scale rate (frames over measured minutes), both for 2 jobs at a time on 2 cores; a job
    gets its share by frames. None when the spec states no measured minutes.
    """
    concurrency = 1 if job.whole_machine else 2
    frames = sum(unit.frames for unit in job.units)
    measured = experiment.spec.scale(scale).expected_minutes
    if measured:
        return measured * min(concurrency, len(experiment.jobs)) * frames / frames_of(experiment)
    rate = cpu_rate(experiment.spec)
    if rate is None:
        return None
    return frames / (rate / concurrency) / 60.0


def job_resources(
    job: Job, experiment: ExperimentPlan, scale: Scale, *, gpus: int, max_runtime: int | None = None,
    mem_mb: int | None = None,
) -> dict[str, object]:
    """The scheduler resources of one training job.

    Args:
        job: The job (its frames and seeds set the time).
        experiment: Its experiment at ``scale`` (the spec's measured minutes and agent kind, the other jobs).
        scale: The scale it runs at.
        gpus: GPUs per training job (``--config gpus=N``); CPU-only agents get none whatever it says.
        max_runtime: The partition's time limit in minutes (``--config max_runtime=N``): a longer job is cut
            there and resumes from its checkpoint when Snakemake retries it (``retries`` in the profile).
        mem_mb: Memory per job (``--config mem_mb=N``): overrides every job's; without it a job asks for its spec's
            measured memory at this scale with headroom (:func:`memory_mb`), or MEM_MB where none is measured.

    Returns:
        ``runtime`` (minutes), ``mem_mb``, ``gpu`` and, for whole-machine jobs (speed measurements), ``slurm_extra``
        asking for a node of its own (``--exclusive``), so no other job shares the cores it measures.
    """
    minutes = estimated_minutes(job, experiment, scale)
    runtime = (
        UNMEASURED_RUNTIME_MINUTES
        if minutes is None
        else math.ceil(minutes * RUNTIME_FACTOR + RUNTIME_OVERHEAD_MINUTES)
    )
    if max_runtime is not None:
        runtime = min(runtime, max_runtime)
    gpu = 0 if experiment.spec.agent.kind in CPU_ONLY_KINDS else gpus
    resources: dict[str, object] = {
        "runtime": runtime,
        "mem_mb": mem_mb or memory_mb(experiment, scale, gpus=gpu)[0],
        "gpu": gpu,
    }
    if job.whole_machine:
        resources["slurm_extra"] = "--exclusive"
    return resources


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


#: ``scontrol show config``'s key naming the accounting plugin: ``accounting_storage/slurmdbd`` where sacct has a
#: database to ask, ``accounting_storage/none`` (or absent) where it has none.
ACCOUNTING_KEY = "AccountingStorageType"


def accounting_storage(scontrol_config: str) -> str | None:
    """The AccountingStorageType of ``scontrol show config``'s output, or None when it is not there."""
    for line in scontrol_config.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == ACCOUNTING_KEY:
            return value.strip() or None
    return None


def status_command_for(scontrol_config: str | None, sacct_installed: bool) -> str:
    """``sacct`` when the cluster keeps accounting (an accounting storage other than none) and sacct is installed,
    else ``squeue``: without slurmdbd the plugin's sacct checks fail and Snakemake waits for ever (issue 15 item 3),
    while squeue answers on every Slurm (finished jobs stay listed for MinJobAge, 300 s by default)."""
    storage = accounting_storage(scontrol_config or "")
    accounted = storage is not None and storage.startswith("accounting_storage/") and storage != "accounting_storage/none"
    return "sacct" if accounted and sacct_installed else "squeue"


def slurm_status_command(timeout: float = 10.0) -> str:
    """The job-status command for profiles/slurm, detected on the submitting machine (the profile calls it through
    Snakemake's YTE templating when it is read). ``scontrol show config`` not answering (no Slurm here, a controller
    down) gives squeue. Says what it chose on stderr."""
    try:
        result = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=timeout)
        config = result.stdout if result.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        config = None
    command = status_command_for(config, shutil.which("sacct") is not None)
    storage = accounting_storage(config) if config is not None else None
    seen = f"{ACCOUNTING_KEY} = {storage}" if config is not None else "`scontrol show config` did not answer"
    print(f"profiles/slurm: job status via {command} ({seen})", file=sys.stderr)
    return command
