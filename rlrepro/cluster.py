"""What a training job asks a cluster scheduler for (``profiles/slurm``): derived from its spec in one place.

Snakemake passes these resources to the Slurm executor plugin, which turns them into ``sbatch`` options:
``runtime`` -> ``--time`` (minutes), ``mem_mb`` -> ``--mem``, ``gpu`` -> ``--gpus``, ``slurm_extra`` verbatim.
Imports no JAX: the Snakefile calls it for every job while the DAG builds.
"""

from __future__ import annotations

import math

from rlrepro.specs import Scale
from rlrepro.workflow import ExperimentPlan, Job

#: Headroom over the estimated minutes: a cluster node slower than the reference machine, a busy shared
#: filesystem, a resume after a preemption. The constant adds XLA compilation and start-up, which the per-frame
#: rate of a tiny job does not show.
RUNTIME_FACTOR = 2.0
RUNTIME_OVERHEAD_MINUTES = 15
#: When a spec states no measured minutes (experiments that cannot run on the reference machine, e.g. DMLab).
UNMEASURED_RUNTIME_MINUTES = 24 * 60
#: Memory per training job (``--config mem_mb=N`` changes it). Not derived from the spec: a toy smoke job peaks
#: at ~0.5 GB resident here, but the paper scale's replay memories need more (eval_atari's 1M Atari frames are
#: >= 7 GB as uint8 84x84): set mem_mb for those runs.
MEM_MB = 4000
#: Agents whose jobs never use an accelerator: the loss search trains many small DQNs, each on CPU (Co-Reyes et
#: al. 2021: 300 CPUs for ~72 h per search, no accelerator).
CPU_ONLY_KINDS = frozenset({"loss_search"})


def estimated_minutes(job: Job, experiment: ExperimentPlan, scale: Scale) -> float | None:
    """Wall minutes of one job on one core of the reference machine (all its cores for a whole-machine job).

    The cost model is ``rlrepro plan``'s (one place: the lead may swap it): the spec's minutes measured at this
    scale, or else its cpu-scale rate (frames over measured minutes), both for 2 jobs at a time on 2 cores; a job
    gets its share by frames. None when the spec states no measured minutes.
    """
    from rlrepro.cli import _frames, _rate

    concurrency = 1 if job.whole_machine else 2
    frames = sum(unit.frames for unit in job.units)
    measured = experiment.spec.scale(scale).expected_minutes
    if measured:
        return measured * min(concurrency, len(experiment.jobs)) * frames / _frames(experiment)
    rate = _rate(experiment.spec)
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
        mem_mb: Memory per job (``--config mem_mb=N``); default MEM_MB.

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
    resources: dict[str, object] = {
        "runtime": runtime,
        "mem_mb": mem_mb or MEM_MB,
        "gpu": 0 if experiment.spec.agent.kind in CPU_ONLY_KINDS else gpus,
    }
    if job.whole_machine:
        resources["slurm_extra"] = "--exclusive"
    return resources
