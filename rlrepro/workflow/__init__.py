"""From specs to the DAG, imports no JAX: ``plan`` (specs x scale -> run units -> jobs with their config hashes ->
target paths), ``frames`` (what the runs train, from the kinds' chunk plans) and ``cost`` (a job's minutes and
memory, an experiment's device-hours). The names the Snakefile, the CLI and the results read are re-exported here.
"""

from rlrepro.workflow.frames import FrameCount, chunk_plan, frame_count
from rlrepro.workflow.plan import (
    CLUSTER_CONFIG_ENV,
    MULTITASK_ENV,
    ExperimentPlan,
    Job,
    JobGroup,
    RunUnit,
    SelectionError,
    cannot_run,
    check_only,
    cluster_environment,
    config_hash,
    is_multitask,
    job_groups,
    multitask_env_ids,
    named_explicitly,
    plan,
    plan_experiment,
    results_root,
    select,
)

__all__ = [
    "CLUSTER_CONFIG_ENV", "MULTITASK_ENV", "ExperimentPlan", "FrameCount", "Job", "JobGroup", "RunUnit",
    "SelectionError", "cannot_run", "check_only", "chunk_plan", "cluster_environment", "config_hash", "frame_count",
    "is_multitask", "job_groups", "multitask_env_ids", "named_explicitly", "plan", "plan_experiment", "results_root",
    "select",
]
