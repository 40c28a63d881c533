"""rlrepro.cluster: what each training job asks Slurm for, and the Snakefile under profiles/slurm (no cluster needed:
dry runs). The real cluster runs are tests/test_cluster.py (`make test-cluster`)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from snakemake.profiles import ProfileConfigFileParser

from rlrepro.cluster import job_resources, local_memory_mb, status_command_for
from rlrepro.workflow.cost import FROZEN_COST, MEM_MB, RUNTIME_OVERHEAD_MINUTES, estimated_minutes, experiment_hours
from rlrepro.plan_text import memory_lines
from rlrepro.specs import SpecError, load_spec
from rlrepro.workflow import plan, plan_experiment
from tests.conftest import toy_run_spec_data
from tests.factories import write_spec

REPO = Path(__file__).resolve().parents[1]


def _experiment(path: Path, scale: str):
    return plan_experiment(path, load_spec(path), scale)


def test_runtime_is_the_measured_minutes_per_job_with_headroom(tmp_path: Path):
    # Toy spec at smoke scale: 2 variants x 1 env = 2 jobs of equal frames, measured 0.5 min for the experiment
    # with 2 jobs side by side on 2 cores -> each job 0.5 min of one core -> 0.5 x 2 (headroom) + 15 = 16 min. Its
    # frozen arm (the claim's two variants, learning off) adds 2 jobs at IMPALA's measured cost per frame:
    # 0.5 x 1.46 = 0.73 min -> 0.73 x 2 + 15 = 16.46, rounded up: 17 min.
    path = write_spec(tmp_path, toy_run_spec_data(smoke_environments=["catch"]))
    experiment = _experiment(path, "smoke")
    assert [job.variant for job in experiment.jobs] == ["vtrace", "none", "vtrace@frozen", "none@frozen"]
    for job in experiment.jobs:
        resources = job_resources(job, experiment, "smoke", gpus=1)
        frozen = job.variant.endswith("@frozen")
        assert resources["runtime"] == (math.ceil(0.5 * FROZEN_COST["impala"] * 2 + 15) if frozen else 16) == (
            17 if frozen else 1 + RUNTIME_OVERHEAD_MINUTES)
        assert resources["gpu"] == 1 and resources["mem_mb"] > 0 and "slurm_extra" not in resources


def test_one_job_and_its_frozen_arm_run_side_by_side(tmp_path: Path):
    """A scale of one training job (measured 0.5 min: one job on one core, the other idle) whose claim reads its
    variant: the frozen arm's job (0.5 x 1.46 = 0.73 min) runs on the other core beside it. Each job's Slurm time is
    its own minutes (own 0.5 x 2 + 15 = 16; arm 17, as above), not twice them as if two jobs had shared the measured
    minutes; the experiment takes the longer job, 0.73 min, not the sum 1.23."""
    data = toy_run_spec_data(smoke_environments=["catch"])
    data["variants"] = data["variants"][:1]
    data["claims"] = [{"kind": "threshold", "id": "vtrace_above", "statement": "V-trace scores above -1.",
                       "variant": "vtrace", "environment": "catch", "metric": "final_return", "op": ">=",
                       "value": -0.5, "judged_at": ["smoke"]}]
    data["scales"]["smoke"]["seeds"] = 1
    experiment = _experiment(write_spec(tmp_path, data), "smoke")
    assert [job.variant for job in experiment.jobs] == ["vtrace", "vtrace@frozen"]
    own, arm = (job_resources(job, experiment, "smoke", gpus=0)["runtime"] for job in experiment.jobs)
    assert (own, arm) == (16, math.ceil(0.5 * FROZEN_COST["impala"] * 2 + 15)) == (16, 17)
    hours, measured = experiment_hours(experiment, "smoke")
    assert measured and hours * 60 == pytest.approx(0.5 * FROZEN_COST["impala"])


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


# --- memory from the spec's measured peak (issue 15) ----------------------------------------------------------------


def _measured_toy(tmp_path: Path, mem_mb: float | None) -> Path:
    data = toy_run_spec_data(smoke_environments=["catch"])
    if mem_mb is not None:
        data["scales"]["smoke"]["expected_mem_mb"] = mem_mb
    return write_spec(tmp_path, data)


def test_a_specs_measured_memory_reaches_slurm_with_headroom(tmp_path: Path):
    # Measured 600 MB at smoke: 600 x 1.5 + 512 = 1,412 MB, rounded up to 1,500. With a GPU the CUDA allowance
    # (2,048 MB) is added: 3,460 -> 3,500. --config mem_mb overrides; the cpu scale states none: the default.
    path = _measured_toy(tmp_path / "specs", 600)
    smoke, cpu = _experiment(path, "smoke"), _experiment(path, "cpu")
    assert [job_resources(job, smoke, "smoke", gpus=0)["mem_mb"] for job in smoke.jobs] == [1500] * 4  # frozen arm too
    assert job_resources(smoke.jobs[0], smoke, "smoke", gpus=1)["mem_mb"] == 3500
    assert job_resources(smoke.jobs[0], smoke, "smoke", gpus=0, mem_mb=8000)["mem_mb"] == 8000
    assert job_resources(cpu.jobs[0], cpu, "cpu", gpus=0)["mem_mb"] == MEM_MB == 4000
    # ... and through the Snakefile under the shipped profile (dry run): sbatch would get --mem 1500
    result = _dry_run("scale=smoke", f"specs={tmp_path / 'specs'}")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if "runtime=" in line and "gpu=" in line]
    assert len(lines) == 4 and all("mem_mb=1500" in line for line in lines), result.stdout[-3000:]


@pytest.mark.parametrize("value", [0, -512])
def test_a_measured_memory_that_is_not_positive_is_rejected(tmp_path: Path, value: int):
    with pytest.raises(SpecError, match=rf"scales.smoke.expected_mem_mb: expected greater than 0; found {value}"):
        load_spec(_measured_toy(tmp_path, value))


def test_the_plan_names_the_experiments_whose_jobs_fall_back_to_the_default_memory(tmp_path: Path):
    measured = _measured_toy(tmp_path / "a", 600)
    data = toy_run_spec_data(experiment="unmeasured", smoke_environments=["catch"])
    unmeasured = write_spec(tmp_path / "b", data)
    plans = [_experiment(measured, "smoke"), _experiment(unmeasured, "smoke")]
    lines = memory_lines(plans, "smoke")
    # per experiment under its paper: jobs, --mem (600 x 1.5 + 512 = 1,412 -> 1,500 MB), the measured peak
    assert lines[3:6] == ["toytest", "  toy            4  1,500 MB             600 MB",
                          "  unmeasured     4  4,000 MB [d]              -"]
    notes = " ".join(" ".join(lines[6:]).split())  # wrapped at 80 columns
    assert notes == ("--mem: the measured peak x 1.5 + 512 MB (rounded up to 100 MB; jobs with GPUs add 2,048 MB). "
                     "[d] the default 4,000 MB: the spec states no measured memory at scale 'smoke' (or set --config "
                     "mem_mb=N).")
    # the CLI prints it
    result = subprocess.run([sys.executable, "-m", "rlrepro", "plan", "--specs", str(tmp_path / "b"), "--scale",
                             "smoke"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "  unmeasured     4  4,000 MB [d]              -" in result.stdout
    assert "[d] the default 4,000 MB: the spec states no measured memory at scale 'smoke'" in result.stdout


def test_every_spec_the_smoke_run_trains_states_its_measured_smoke_memory():
    from rlrepro.workflow import cannot_run

    missing = [p.key for p in plan([REPO / "specs"], "smoke") if cannot_run(p) is None
               and p.spec.scale("smoke").expected_mem_mb is None]
    assert not missing, f"no scales.smoke.expected_mem_mb: {missing}"


# --- job status: sacct where Slurm keeps accounting, squeue where not (issue 15) -----------------------------------

# Excerpts of `scontrol show config` (Slurm 22.05). Without accounting: the test cluster's (tests/slurm_cluster.py),
# as slurmctld prints it. With accounting: a cluster with slurmdbd.
SCONTROL_NO_ACCOUNTING = """\
Configuration data as of 2026-11-24T06:40:00
AccountingStorageBackupHost = (null)
AccountingStorageEnforce = none
AccountingStorageHost   = localhost
AccountingStorageExternalHost = (null)
AccountingStorageParameters = (null)
AccountingStoragePort   = 0
AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages
AccountingStorageType   = accounting_storage/none
AccountingStorageUser   = root
AccountingStoreFlags    = (null)
AcctGatherEnergyType    = acct_gather_energy/none
MinJobAge               = 300 sec
"""
SCONTROL_SLURMDBD = SCONTROL_NO_ACCOUNTING.replace("AccountingStorageType   = accounting_storage/none",
                                                   "AccountingStorageType   = accounting_storage/slurmdbd").replace(
    "AccountingStoragePort   = 0", "AccountingStoragePort   = 6819")


def test_the_status_command_is_sacct_only_where_slurm_keeps_accounting():
    assert status_command_for(SCONTROL_SLURMDBD, sacct_installed=True) == "sacct"
    assert status_command_for(SCONTROL_NO_ACCOUNTING, sacct_installed=True) == "squeue"
    assert status_command_for(SCONTROL_SLURMDBD, sacct_installed=False) == "squeue"  # nothing to ask it with
    assert status_command_for(None, sacct_installed=True) == "squeue"  # scontrol did not answer
    assert status_command_for("MinJobAge = 300 sec\n", sacct_installed=True) == "squeue"  # no such line


def _fake_slurm(directory: Path, scontrol_output: str) -> dict[str, str]:
    """A PATH whose scontrol prints ``scontrol_output`` and whose sacct exists (for the profile's detection)."""
    directory.mkdir()
    (directory / "config.txt").write_text(scontrol_output)
    (directory / "scontrol").write_text(f"#!/bin/sh\ncat {directory / 'config.txt'}\n")
    (directory / "sacct").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("scontrol", "sacct"):
        (directory / tool).chmod(0o755)
    return {"PATH": f"{directory}:{os.environ['PATH']}"}


@pytest.mark.parametrize(("output", "expected"), [(SCONTROL_SLURMDBD, "sacct"), (SCONTROL_NO_ACCOUNTING, "squeue")])
def test_the_shipped_profile_read_by_snakemake_chooses_the_status_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, output: str, expected: str
):
    # Snakemake's own profile parser (YTE templating) on profiles/slurm/config.yaml as shipped: no hand edit.
    for name, value in _fake_slurm(tmp_path / "bin", output).items():
        monkeypatch.setenv(name, value)
    with open(REPO / "profiles" / "slurm" / "config.yaml") as stream:
        settings = ProfileConfigFileParser().parse(stream)
    assert settings["slurm-status-command"] == expected
    assert settings["executor"] == "slurm" and "__use_yte__" not in settings and "__definitions__" not in settings
    assert f"profiles/slurm: job status via {expected} (AccountingStorageType = accounting_storage/" in capsys.readouterr().err


def test_one_machine_holds_its_memory_and_a_job_larger_than_it_still_runs_alone() -> None:
    """The Snakefile's limit on one machine (tests/test_snakemake.py runs it): its memory, or the largest job's
    request where that is more, so Snakemake runs such a job alone rather than refusing it."""
    assert local_memory_mb([4000, 16_900, 5_800], machine_mb=24_105) == 24_105
    assert local_memory_mb([4000, 30_000], machine_mb=24_105) == 30_000
    assert local_memory_mb([], machine_mb=24_105) == 24_105


def test_jobs_two_of_which_do_not_fit_in_memory_run_one_at_a_time(tmp_path: Path):
    """The Snakefile's memory limit runs two jobs side by side only where their requests fit in the machine's memory
    together. The toy's 2 equal jobs (measured 0.5 min, no claim: no frozen arm) each took the whole 0.5 min on a
    core of their own when each asks for 1,000 x 1.5 + 512 = 2,012 MB; asking for 12,000 x 1.5 + 512 = 18,512 MB (two
    above 24 GiB) they ran one after the other, half the measured minutes each. IMPALA's multi-task cpu scale (a PBT
    job of 3 members' frames, 17.8 GB asked, and the single agent's) takes its measured 110 minutes, not the 165 of
    the PBT job's three quarters of the frames over 2 lanes; at the paper scale its jobs' minutes come from that
    one-lane rate."""
    data = toy_run_spec_data(smoke_environments=["catch"])
    data["claims"] = []
    for mem, each in ((1000, 0.5), (12000, 0.25)):
        data["scales"]["smoke"]["expected_mem_mb"] = mem
        experiment = _experiment(write_spec(tmp_path, data), "smoke")
        assert [job.variant for job in experiment.jobs] == ["vtrace", "none"]
        assert [estimated_minutes(job, experiment, "smoke") for job in experiment.jobs] == pytest.approx([each] * 2)
        assert experiment_hours(experiment, "smoke")[0] * 60 == pytest.approx(0.5)
    multitask = _experiment(REPO / "specs" / "impala" / "atari57_multitask.yaml", "cpu")
    assert experiment_hours(multitask, "cpu")[0] * 60 == pytest.approx(110)
    # each job its frames' share, one after the other: the PBT job steps its 3 members (a member's frames once for
    # all 3 games), the single agent one member, so 3/4 and 1/4 of the 110 minutes
    assert [job.variant for job in multitask.jobs] == ["pbt", "no_pbt"]
    assert [estimated_minutes(job, multitask, "cpu") for job in multitask.jobs] == pytest.approx([82.5, 27.5])
    # at the paper scale (no measured minutes) a job's minutes come from the cpu scale's rate, which one job at a
    # time measured: the jobs' minutes add up to the experiment's hours, not to twice them
    paper = _experiment(REPO / "specs" / "impala" / "atari57_multitask.yaml", "paper")
    assert sum(estimated_minutes(job, paper, "paper") for job in paper.jobs) == pytest.approx(
        experiment_hours(paper, "paper")[0] * 60)
