# rlrepro: specs -> run units -> training jobs -> tables -> REPORT.md. The logic lives in rlrepro.workflow.
#   snakemake -c2                                    default: scale=cpu, every spec under specs/
#   snakemake -c2 --config scale=smoke only=impala   a quick look at one paper
#   snakemake -c2 --config specs=/path/to/my/specs   specs outside the repository
# Config keys: scale (smoke|cpu|paper), specs (comma-separated files/dirs), only (PAPER[/EXPERIMENT],...),
# results (base folder; a scale writes to <results>/<scale>/). MLFLOW_TRACKING_URI selects a tracking server.
import os
import sys
from pathlib import Path

from rlrepro.workflow import missing_backend, plan, results_root

SCALE = config.get("scale", "cpu")
SPECS = [s for s in str(config.get("specs", "specs")).split(",") if s]
ONLY = config.get("only") or None
BASE = Path(config.get("results", "results"))
RESULTS = results_root(BASE, SCALE)
PY = sys.executable
MLFLOW_URI = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{BASE.resolve()}/mlflow.db"
STORE_MARKER = str(BASE / ".mlflow-store.json")

# Experiments whose backend is missing (DMLab) are left out of the default target and listed in the
# report; asked for by name (config only=...), they run and fail at once with a clear message.
PLANS = [p for p in plan(SPECS, SCALE, ONLY) if ONLY or missing_backend(p) is None]
PLAN_BY_KEY = {p.key: p for p in PLANS}


rule all:
    input:
        f"{RESULTS}/REPORT.md",


rule mlflow_store:
    output:
        STORE_MARKER,
    log:
        f"{BASE}/logs/mlflow_store.log",
    params:
        uri=MLFLOW_URI,
    shell:
        "{PY:q} -m rlrepro init-store --uri {params.uri:q} --marker {output:q} > {log:q} 2>&1"


for _plan in PLANS:
    for _job in _plan.jobs:

        rule:
            name:
                _job.name
            input:
                store=ancient(STORE_MARKER),
            output:
                _job.summaries(RESULTS),
            log:
                _job.log(RESULTS),
            params:
                spec=str(_job.spec_path),
                variant=_job.variant,
                env=_job.env,
                seeds=",".join(map(str, _job.seeds)),
                config_hash=_job.config_hash,
            threads: 1
            shell:
                "{PY:q} -m rlrepro train --spec {params.spec:q} --scale " + SCALE + " --variant {params.variant:q}"
                " --env {params.env:q} --seeds {params.seeds} --results {BASE:q} --progress lines > {log:q} 2>&1"


def experiment_summaries(wildcards):
    return [s for job in PLAN_BY_KEY[f"{wildcards.paper}/{wildcards.experiment}"].jobs for s in job.summaries(RESULTS)]


rule aggregate:
    input:
        experiment_summaries,
    output:
        md=f"{RESULTS}/tables/{{paper}}/{{experiment}}.md",
        csv=f"{RESULTS}/tables/{{paper}}/{{experiment}}.csv",
        png=f"{RESULTS}/tables/{{paper}}/{{experiment}}.png",
    log:
        f"{RESULTS}/logs/aggregate/{{paper}}/{{experiment}}.log",
    params:
        spec=lambda wildcards: str(PLAN_BY_KEY[f"{wildcards.paper}/{wildcards.experiment}"].spec_path),
    shell:
        "({PY:q} -m rlrepro mlflow-sync --scale " + SCALE + " --results {BASE:q} --only {wildcards.paper}/{wildcards.experiment}"
        " && {PY:q} -m rlrepro aggregate --spec {params.spec:q} --scale " + SCALE + " --results {BASE:q}) > {log:q} 2>&1"


rule report:
    input:
        [p.table_paths(RESULTS)["md"] for p in PLANS],
    output:
        f"{RESULTS}/REPORT.md",
    log:
        f"{RESULTS}/logs/report.log",
    params:
        specs=" ".join(f"'{s}'" for s in SPECS),
        only=f"--only {ONLY}" if ONLY else "",
    shell:
        "{PY:q} -m rlrepro report --specs {params.specs} {params.only} --scale " + SCALE + " --results {BASE:q} > {log:q} 2>&1"
