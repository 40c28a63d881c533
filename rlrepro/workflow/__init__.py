"""From specs to the DAG, imports no JAX: ``plan`` (specs x scale -> run units -> jobs with their config hashes ->
target paths), ``frames`` (what the runs train, from the kinds' chunk plans) and ``cost`` (a job's minutes and
memory, an experiment's device-hours). The names the Snakefile, the CLI and the results read are re-exported here.
"""

from rlrepro.workflow.frames import FrameCount, chunk_plan, frame_count
from rlrepro.workflow.plan import (
    ALL_SETS,
    CLUSTER_CONFIG_ENV,
    DEFAULT_SET,
    MULTITASK_ENV,
    PATH_CHECK_MINUTES,
    ExperimentPlan,
    Job,
    JobGroup,
    RunUnit,
    SelectionError,
    cannot_run,
    check_only,
    check_sets,
    cluster_environment,
    config_hash,
    in_job,
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
    "ALL_SETS", "CLUSTER_CONFIG_ENV", "DEFAULT_SET", "MULTITASK_ENV", "PATH_CHECK_MINUTES", "ExperimentPlan",
    "FrameCount", "Job", "JobGroup", "RunUnit", "SelectionError", "cannot_run", "check_only", "check_sets",
    "chunk_plan", "cluster_environment", "config_hash", "frame_count", "in_job", "is_multitask", "job_groups",
    "multitask_env_ids", "named_explicitly", "plan", "plan_experiment", "results_root", "select",
]
