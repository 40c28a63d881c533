# rlrepro: specs -> run units -> training jobs -> tables -> REPORT.md + report.html. The logic lives in rlrepro.workflow.
#   snakemake -c2                                    default: scale=cpu, every spec under specs/
#   snakemake -c2 --config scale=smoke only=impala   a quick look at one paper
#   snakemake -c2 --config specs=/path/to/my/specs   specs outside the repository
#   snakemake -c2 --config set=curves                the cpu scale's opt-in runs (curves; no claim decided there)
#   snakemake -c2 --config set=search                the cpu scale's small loss searches (no claim decided there)
# Config keys: scale (smoke|cpu|paper), specs (comma-separated files/dirs), only (PAPER[/EXPERIMENT],...),
# set (the experiments' sets, comma-separated: default, a scale's opt_in name such as curves, or all),
# retire (yes: finished runs of another spec file that this run would train again are moved aside to
# <scale>/retired/ rather than stopping the run; those of the same spec, edited, always are),
# results (base folder; a scale writes to <results>/<scale>/), gpus (per training job, for cluster profiles),
# project (MLflow run keys' namespace), search_executor/dask_address (where a loss search scores programs).
# machine_cores (cores of a whole-machine job on a cluster, default 8), max_runtime (the partition's time limit in
# minutes: longer jobs are cut there and resume from their checkpoints on retry), mem_mb (every training job's memory
# request; default: the spec's measured memory at the scale with headroom, else 4000; on one machine jobs run side by
# side only while their requests fit in its memory). See profiles/slurm.
# MLFLOW_TRACKING_URI selects a tracking server.
import os
import sys
from pathlib import Path

from rlrepro.cluster import job_resources, local_memory_mb
from rlrepro.recovery import recover
from rlrepro.specs import SCALES
from rlrepro.specs.cache import use_spec_cache
from rlrepro.tracking import default_tracking_uri, warn_shared_sqlite
from rlrepro.workflow.retire import YES as RETIRE_YES, settle_finished_runs
from rlrepro.workflow import (
    cannot_run,
    check_sets,
    cluster_environment,
    in_job,
    job_groups,
    named_explicitly,
    plan,
    results_root,
)

# After a killed Snakemake: its lock files are removed and the training jobs it left running are stopped when no
# Snakemake process works here (incomplete jobs then re-run through profiles/default's rerun-incomplete and resume
# from their checkpoints).
# While the Snakefile is read, workflow.dryrun is always False (the executor is chosen later): -n is read here
DRY_RUN = workflow.dryrun or getattr(workflow.output_settings, "dryrun", False)
if workflow.is_main_process and (_recovered := recover(Path.cwd(), stop_trainers=not DRY_RUN)):
    print(_recovered, file=sys.stderr)

os.environ.update(cluster_environment(config))  # project, search_executor, dask_address, actor_device: where, never what
SCALE = str(config.get("scale", "cpu"))
if SCALE not in SCALES:
    raise ValueError(f"--config scale={SCALE}: unknown scale; expected one of {', '.join(SCALES)}")
SPECS = [s for s in str(config.get("specs", "specs")).split(",") if s]
if "only" in config and not str(config["only"] or "").strip(",/ "):  # only= left empty must not mean "everything"
    raise ValueError("--config only= is empty: name PAPER or PAPER/EXPERIMENT (comma-separated), or leave only out "
                     "to run every spec")
ONLY = config.get("only") or None
BASE = Path(config.get("results", "results"))
if BASE.exists() and not BASE.is_dir():
    raise ValueError(f"--config results={BASE}: a file; expected a folder (made if missing)")
RESULTS = results_root(BASE, SCALE)
# validated specs read back while spec and code are unchanged, in Snakemake's own folder (a dry run writes no results)
use_spec_cache(Path(".snakemake") / "rlrepro-specs")


def config_int(key, default=None):
    """--config KEY=N: a non-negative whole number, or an error naming the key."""
    if key not in config:
        return default
    if not str(config[key]).strip().isdigit():
        raise ValueError(f"--config {key}={config[key]}: expected a non-negative whole number")
    return int(config[key])


# The results base is passed as a function: the train command derives its run folders from it.
GPUS = config_int("gpus", 0)  # GPUs per training job (cluster profiles); 0 on CPU machines
# Whole-machine jobs (speed measurements) take every core: --cores on one machine; a cluster executor sets no
# --cores, so there they take machine_cores (and a node of their own, rlrepro.cluster).
MACHINE_CORES = config_int("machine_cores")
MAX_RUNTIME = config_int("max_runtime")
MEM_MB = config_int("mem_mb")  # overrides every training job's (rlrepro.cluster)
COMMON = dict(py=sys.executable, base=lambda wildcards: str(BASE), scale=SCALE)
ENV = "envs/rlrepro.yaml"  # documents the software; no conda here: rules run in the current (pip) environment

# Experiments whose backend is missing (DMLab) are left out (also of only=PAPER) and listed in the report;
# asked for by name (only=PAPER/EXPERIMENT), they run and fail at once with a clear message. An only= item that
# matches no spec is an error listing the known names. Experiments of an opt-in set (a scale's opt_in: runs that
# decide no claim there) run only with set=NAME (or all), or when only= names them.
SETS = config.get("set") or None
_PLANNED = plan(SPECS, SCALE, ONLY)
check_sets(_PLANNED, SETS)
PLANS = [p for p in _PLANNED if (cannot_run(p) is None or named_explicitly(p, ONLY)) and in_job(p, SETS, ONLY)]
PLAN_BY_KEY = {p.key: p for p in PLANS}

# Finished runs that a job would train again with another configuration (an edited spec, or a copy of one): before
# any job starts (Snakemake deletes a job's outputs first), those of the same spec file are retired (moved aside to
# <scale>/retired/, kept, MLflow runs tagged); those of another spec file stop the run here, unless retire=yes.
RETIRE = str(config.get("retire", "no")).strip().lower()
if RETIRE not in (*RETIRE_YES, "0", "false", "no", "n", "off"):
    raise ValueError(f"--config retire={config['retire']}: expected yes or no")
if workflow.is_main_process:
    settle_finished_runs(PLANS, RESULTS, base=BASE, retire=RETIRE in RETIRE_YES, dry_run=DRY_RUN,
                         say=lambda message: print(message, file=sys.stderr))

onstart: warn_shared_sqlite(workflow.executor_plugin, BASE)  # cluster executor + sqlite on the shared filesystem


onsuccess:
    # The last lines of a run: the page to open and the verdict tally (a run with only=: first what it judged).
    from rlrepro.results.report import run_end_text

    print(run_end_text(RESULTS, [p.key for p in PLANS] if ONLY else None))


def machine_cores():
    return MACHINE_CORES or (8 if workflow.non_local_exec else workflow.cores)


# Small steps run where Snakemake runs, not as cluster jobs.
localrules:
    all,
    mlflow_store,
    aggregate,
    report,


rule all:
    input:
        RESULTS / "REPORT.md",
        RESULTS / "report.html",


rule mlflow_store:
    output:
        BASE / ".mlflow-store.json",
    log:
        BASE / "logs" / "mlflow_store.log",
    # One store (and marker) for every scale: its params must not name the scale, or the first run at a new scale
    # would see "params changed", re-run only this rule and stop there (the training jobs' input is ancient()).
    params:
        py=sys.executable,
        uri=default_tracking_uri(BASE),
    conda:
        ENV
    shell:
        "{params.py:q} -m rlrepro init-store --uri {params.uri:q} --marker {output:q} > {log:q} 2>&1"


# One rule per experiment and seed range, its variant x environment grid as wildcards: a cluster executor submits
# the grid as one array job (profiles/slurm), and the DAG has a few dozen rules rather than hundreds.
_MEM_REQUESTS = []
for _plan in PLANS:
    for _group in job_groups(_plan):
        # The group's jobs differ only in variant and environment: the same frames, so the same resources.
        _resources = job_resources(_group.jobs[0], _plan, SCALE, gpus=GPUS, max_runtime=MAX_RUNTIME, mem_mb=MEM_MB)
        _MEM_REQUESTS.append(_resources["mem_mb"])

        rule:
            name:
                _group.name
            input:
                store=ancient(BASE / ".mlflow-store.json"),
            output:
                _group.summaries(RESULTS),
            log:
                _group.log(RESULTS),
            # printed in place of the job's input/output lists (its summaries: lines of 160+ columns)
            message:
                _group.message(list(_resources))
            wildcard_constraints:
                variant=_group.constraint("variant"),
                env=_group.constraint("env"),
            params:
                **COMMON,
                spec=str(_plan.spec_path),
                # The wildcards as params, so the command and params read as before the grouping: runs finished
                # by per-job rules are not retrained (rerun triggers: params, code).
                variant=lambda wildcards: wildcards.variant,
                env=_group.env,  # the env wildcard, or a multi-task job's all_environments
                seeds=",".join(map(str, _group.seeds)),
                config_hash=_group.config_hash,  # a changed config re-runs the job (rerun trigger: params)
            threads: machine_cores() if _group.whole_machine else 1
            resources:
                **_resources,
            conda:
                ENV
            shell:
                "{params.py:q} -m rlrepro train --spec {params.spec:q} --scale {params.scale} --variant {params.variant:q}"
                " --env {params.env:q} --seeds {params.seeds} --results {params.base:q} --progress lines > {log:q} 2>&1"

# On one machine (no cluster executor: Snakemake's nodes unset), training jobs run side by side only while their
# memory requests fit in its memory: two PBT populations (about 11.5 GB each at cpu while XLA compiles) never share
# 24 GB. --resources mem_mb=N sets another limit; jobs a cluster executor submits ask for their own memory.
if workflow.global_resources["_nodes"].value is None:
    workflow.global_resources.setdefault("mem_mb", local_memory_mb(_MEM_REQUESTS))


def experiment_summaries(wildcards):
    return [s for job in PLAN_BY_KEY[f"{wildcards.paper}/{wildcards.experiment}"].jobs for s in job.summaries(RESULTS)]


rule aggregate:
    input:
        experiment_summaries,
        # the spec too: an edited claim, statement or paper table re-draws the table (training reruns only when the
        # resolved config changes: its jobs' params carry the config hash)
        spec=lambda wildcards: PLAN_BY_KEY[f"{wildcards.paper}/{wildcards.experiment}"].spec_path,
    output:
        md=RESULTS / "tables/{paper}/{experiment}.md",
        csv=RESULTS / "tables/{paper}/{experiment}.csv",
        png=report(RESULTS / "tables/{paper}/{experiment}.png", category="Learning curves", subcategory="{paper}"),
        json=RESULTS / "tables/{paper}/{experiment}.json",
    log:
        RESULTS / "logs/aggregate/{paper}/{experiment}.log",
    # in place of the input list (every summary of the experiment: up to thousands of columns)
    message:
        "tables of {wildcards.paper}/{wildcards.experiment}: {output.md}\n    log: {log}"
    params:
        **COMMON,
        spec=lambda wildcards: str(PLAN_BY_KEY[f"{wildcards.paper}/{wildcards.experiment}"].spec_path),
    conda:
        ENV
    # Tracking is best effort here: a tracking server that is down or fails costs seconds and never this rule's
    # tables (mlflow-sync and mlflow-publish probe it once and exit 0; the run folders are the source of truth).
    shell:
        "({params.py:q} -m rlrepro mlflow-sync --best-effort --wait 5 --scale {params.scale} --results {params.base:q}"
        " --only {wildcards.paper}/{wildcards.experiment}"
        " && {params.py:q} -m rlrepro aggregate --spec {params.spec:q} --scale {params.scale}"
        " --results {params.base:q}"
        " && {params.py:q} -m rlrepro mlflow-publish --best-effort --spec {params.spec:q} --scale {params.scale}"
        " --results {params.base:q}) > {log:q} 2>&1"


# The report always covers every spec (with the tables of earlier runs at this scale): a narrow only= makes the
# tables it selects, never a smaller REPORT.md; the report leads with them and their tally.
rule report:
    input:
        [p.table_paths(RESULTS)["md"] for p in PLANS],
    output:
        md=RESULTS / "REPORT.md",
        # The page to open: every experiment's tables, figures, verdicts and provenance (rlrepro.results.html says
        # why it is ours rather than `snakemake --report`).
        html=RESULTS / "report.html",
        # The same page with its figures inside: `snakemake --report` shows a page in a data: iframe, where the
        # relative image paths of report.html cannot load; this one carries every figure of every experiment.
        standalone=report(RESULTS / "report.standalone.html", category="Report"),
    log:
        RESULTS / "logs/report.log",
    message:
        "report of every experiment's table: {output.html}\n    log: {log}"
    params:
        **COMMON,
        specs=SPECS,
        only=f"--only {ONLY}" if ONLY else "",  # a params change: another only= writes the report again
    conda:
        ENV
    shell:
        "{params.py:q} -m rlrepro report --specs {params.specs:q} --scale {params.scale}"
        " --results {params.base:q} {params.only} > {log:q} 2>&1"
