"""rlrepro.cluster: what each training job asks Slurm for, and the Snakefile under profiles/slurm (no cluster needed:
dry runs). The real cluster runs are tests/test_cluster.py (`make test-cluster`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rlrepro.cluster import RUNTIME_OVERHEAD_MINUTES, job_resources
from rlrepro.specs import load_spec
from rlrepro.workflow import plan, plan_experiment
from tests.conftest import toy_run_spec_data
from tests.factories import write_spec

REPO = Path(__file__).resolve().parents[1]


def _experiment(path: Path, scale: str):
    return plan_experiment(path, load_spec(path), scale)


def test_runtime_is_the_measured_minutes_per_job_with_headroom(tmp_path: Path):
    # Toy spec at smoke scale: 2 variants x 1 env = 2 jobs of equal frames, measured 0.5 min for the experiment
    # with 2 jobs side by side on 2 cores -> each job 0.5 min of one core -> 0.5 x 2 (headroom) + 15 = 16 min.
    path = write_spec(tmp_path, toy_run_spec_data(smoke_environments=["catch"]))
    experiment = _experiment(path, "smoke")
    assert len(experiment.jobs) == 2
    for job in experiment.jobs:
        resources = job_resources(job, experiment, "smoke", gpus=1)
        assert resources["runtime"] == 16 == 1 + RUNTIME_OVERHEAD_MINUTES
        assert resources["gpu"] == 1 and resources["mem_mb"] > 0 and "slurm_extra" not in resources


def test_paper_scale_runtime_follows_frames_with_no_day_cap_unless_the_partition_has_one():
    # eval_atari at paper scale: 200M-frame DQN runs, far beyond a day on the reference machine's cpu-scale rate.
    path = REPO / "specs" / "evolving_rl" / "eval_atari.yaml"
    paper, cpu = _experiment(path, "paper"), _experiment(path, "cpu")
    long, short = job_resources(paper.jobs[0], paper, "paper", gpus=1), job_resources(cpu.jobs[0], cpu, "cpu", gpus=1)
    assert long["runtime"] > 24 * 60 > short["runtime"]
    ratio = paper.jobs[0].frames / cpu.jobs[0].frames  # runtime minus the constant scales with frames
    assert abs((long["runtime"] - 15) / (short["runtime"] - 15) - ratio) / ratio < 0.05
    capped = job_resources(paper.jobs[0], paper, "paper", gpus=1, max_runtime=2880)
    assert capped["runtime"] == 2880


def test_cpu_only_searches_get_no_gpu_and_whole_machine_jobs_a_node_of_their_own():
    for experiment in plan([REPO / "specs"], "paper"):
        for job in experiment.jobs[:1]:
            resources = job_resources(job, experiment, "paper", gpus=2)
            assert resources["gpu"] == (0 if experiment.spec.agent.kind == "loss_search" else 2), experiment.key
            assert (resources.get("slurm_extra") == "--exclusive") == job.whole_machine, experiment.key
    kinds = {e.spec.agent.kind for e in plan([REPO / "specs"], "paper")}
    assert "loss_search" in kinds  # the CPU-only case is exercised by the real specs


def _dry_run(*config: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-n", "--profile", str(REPO / "profiles" / "slurm"),
               "--config", *config]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_slurm_profile_gives_each_training_job_its_spec_s_resources():
    # Dry run (no cluster): the resources Snakemake would hand to the executor plugin. Whole-machine jobs (the
    # throughput spec) ask for a node of their own. The real submission is tests/test_cluster.py.
    result = _dry_run("scale=paper", "only=impala/throughput", "gpus=1")
    assert result.returncode == 0, result.stderr[-3000:]
    train = [line for line in result.stdout.splitlines() if "slurm_extra" in line]
    [throughput] = plan([REPO / "specs"], "paper", "impala/throughput")
    assert len(train) == len(throughput.jobs)  # one line per training job (variants x games)
    assert all("gpu=1" in line and "slurm_extra=--exclusive" in line for line in train)
    result = _dry_run("scale=paper", "only=evolving_rl/search_dqnreg", "gpus=1", "max_runtime=600")
    lines = [line for line in result.stdout.splitlines() if "runtime=" in line and "gpu=" in line]
    assert lines and all("gpu=0" in line and "runtime=600" in line for line in lines), result.stdout[-3000:]


def test_mem_mb_from_config_reaches_every_training_job():
    result = _dry_run("scale=paper", "only=evolving_rl/eval_atari", "mem_mb=16000")
    lines = [line for line in result.stdout.splitlines() if "runtime=" in line and "gpu=" in line]
    assert lines and all("mem_mb=16000" in line for line in lines), result.stderr[-3000:]
