"""What a training job asks a cluster scheduler for (``profiles/slurm``): derived from its spec in one place.

Snakemake passes these resources to the Slurm executor plugin, which turns them into ``sbatch`` options:
``runtime`` -> ``--time`` (minutes), ``mem_mb`` -> ``--mem``, ``gpu`` -> ``--gpus``, ``slurm_extra`` verbatim.
Also the profile's job-status command (:func:`slurm_status_command`: ``sacct`` where Slurm keeps accounting, else
``squeue``). Imports no JAX: the Snakefile calls it for every job while the DAG builds.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys

from rlrepro.specs import Scale
from rlrepro.specs.agents import CPU_ONLY_KINDS
from rlrepro.workflow.cost import (
    RUNTIME_FACTOR,
    RUNTIME_OVERHEAD_MINUTES,
    UNMEASURED_RUNTIME_MINUTES,
    estimated_minutes,
    memory_mb,
)
from rlrepro.workflow.plan import ExperimentPlan, Job

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
            measured memory at this scale with headroom (``workflow.cost.memory_mb``), or MEM_MB where none is measured.

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


def machine_memory_mb() -> int:
    """This machine's physical memory in MB (2**20 bytes)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20


def local_memory_mb(requests: list[int], machine_mb: int | None = None) -> int:
    """The memory a run on one machine lets its jobs hold at once (Snakemake's global ``mem_mb``): jobs run side by
    side only while their requests (``job_resources``) fit in the machine's memory; a job asking for more than the
    machine has still runs, alone, rather than being refused."""
    return max(machine_mb if machine_mb is not None else machine_memory_mb(), *requests, 0)


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
