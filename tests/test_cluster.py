"""profiles/slurm as shipped, on a real single-node Slurm (tests/slurm_cluster.py): `make test-cluster`.

Marked ``cluster``: not in the default or slow runs (it needs Debian's slurm-wlm and munge, which
`make test-cluster` installs). Every wait is bounded: Snakemake runs in its own session and the whole group is
killed when it overruns (the executor plugin's status checks can wait silently for ever, issue 15 item 3).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlrepro.jobs.run_folder import read_metrics
from rlrepro.specs.control import control_name
from tests.factories import write_spec
from tests.slurm_cluster import Cluster, missing_tools, slurm_cluster

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm"
# The executor plugin's log lines: one job, or the tasks of an array job (one sbatch for a grid of one rule).
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) ")
SUBMITTED_ARRAY = re.compile(r"Submitted array job with Snakemake IDs ([\d,]+) and SLURM job ID (\d+)\. "
                             r"The individual task IDs are (\d+)-(\d+)\.")
# a job's rule by its id: jobs print a one-line message (Snakefile `message:`), so the rule name is read from the line
# Snakemake prints when the job finishes
RULE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$", re.M)
LOCAL_RULES = ("mlflow_store", "aggregate", "report")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    if missing := missing_tools():
        pytest.fail(f"Slurm/munge programs missing: {', '.join(missing)}; `make test-cluster` installs them")

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")  # pytest then tears the fixtures down: the daemons stop

    system_conf = Path("/etc/slurm/slurm.conf")
    had_system_conf = system_conf.exists()
    previous = signal.signal(signal.SIGTERM, interrupt)  # `timeout` in `make test-cluster` sends SIGTERM
    try:
        with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
            yield running
    finally:
        signal.signal(signal.SIGTERM, previous)
    # No system-wide config left behind: with one, every later snakemake start waits for a stopped controller.
    assert system_conf.exists() == had_system_conf
    assert all(p.poll() is not None for p in running.processes.values())


def _snakemake(cluster: Cluster, workdir: Path, config: list[str], timeout: float,
               while_running=None) -> tuple[int, str, float]:
    """Run the Snakefile through the shipped profile; the process group is killed at ``timeout``.

    Returns the exit code, the output and the wall seconds. ``while_running(process)`` is called every second.
    """
    env = {k: v for k, v in cluster.env.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONUNBUFFERED"] = "1"
    log = workdir / "snakemake.out"
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
               "--profile", str(PROFILE), "--config", *config]
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            while process.poll() is None:
                if time.monotonic() - started > timeout:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
                    pytest.fail(f"snakemake through Slurm still running after {timeout:.0f} s (killed):\n"
                                f"{log.read_text()[-6000:]}\n--- squeue\n"
                                f"{cluster.run('squeue', '--states=all').stdout}")
                if while_running is not None:
                    while_running(process)
                time.sleep(1)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    return process.returncode, log.read_text(), time.monotonic() - started


def _submissions(output: str) -> tuple[dict[str, list[str]], int]:
    """Rule name -> the Slurm job ids its jobs ran as (``<id>`` or ``<id>_<task>``), and the number of sbatch calls."""
    rule_of = {jobid: rule for jobid, rule in RULE.findall(output)}
    submitted: dict[str, list[str]] = {}
    for jobid, slurm_id in SUBMITTED.findall(output):
        submitted.setdefault(rule_of[jobid], []).append(slurm_id)
    arrays = SUBMITTED_ARRAY.findall(output)
    for jobids, slurm_id, first, last in arrays:
        for jobid, task in zip(jobids.split(","), range(int(first), int(last) + 1)):
            submitted.setdefault(rule_of[jobid], []).append(f"{slurm_id}_{task}")
    return submitted, len(SUBMITTED.findall(output)) + len(arrays)


def _finished(cluster: Cluster) -> dict[str, dict[str, str]]:
    """Slurm's JobComp records by ``<id>``, and array tasks also by ``<array id>_<task>``."""
    records = {}
    for record in cluster.completed_jobs():
        records[record["JobId"]] = record
        if record.get("ArrayJobId") and record.get("ArrayTaskId"):
            records[f"{record['ArrayJobId']}_{record['ArrayTaskId']}"] = record
    return records


def _toy_spec(directory: Path, experiment: str, frames: int, updates_per_chunk: int, variants: list[str],
              whole_machine: bool = False, seeds: int = 2, mem_mb: int | None = None, claims: bool = True) -> Path:
    """The toy spec on Catch (``claims=False``: without the frozen arm, ``toy_run_spec_data``)."""
    from tests.conftest import toy_run_spec_data

    data = toy_run_spec_data(experiment=experiment, smoke_frames=frames, updates_per_chunk=updates_per_chunk,
                             smoke_environments=["catch"], smoke_seeds=seeds, claims=claims)
    data["scales"]["smoke"]["variants"] = variants
    if mem_mb is not None:
        data["scales"]["smoke"]["expected_mem_mb"] = mem_mb
    data["run"]["whole_machine"] = whole_machine
    return write_spec(directory, data)


def test_a_smoke_experiment_runs_through_the_shipped_profile_every_training_job_via_sbatch(
    cluster: Cluster, tmp_path: Path
):
    specs = tmp_path / "specs"
    # measured 600 MB: each job asks for 600 x 1.5 + 512 = 1,412 -> 1,500 MB (rlrepro.workflow.cost.memory_mb)
    _toy_spec(specs, "toy_slurm", frames=400, updates_per_chunk=5, variants=["vtrace", "none"], mem_mb=600)
    workdir = tmp_path / "work"
    workdir.mkdir()
    code, output, seconds = _snakemake(cluster, workdir, ["scale=smoke", f"specs={specs}"], timeout=600)
    print(f"smoke run through Slurm: {seconds:.0f} s wall")
    assert code == 0, output[-6000:]
    # The profile chose the status command itself: this cluster keeps no accounting, so squeue (issue 15).
    assert "profiles/slurm: job status via squeue (AccountingStorageType = accounting_storage/none)" in output
    root = workdir / "results" / "smoke"
    assert (root / "REPORT.md").exists() and (root / "tables" / "toytest" / "toy_slurm.md").exists()

    submitted, sbatch_calls = _submissions(output)
    # One training rule for the experiment's grid (2 variants and their frozen arms x Catch, seeds 0-1): 4 jobs in
    # one array job.
    assert len(submitted) == 1 and next(iter(submitted)).startswith("train_"), submitted
    assert len(next(iter(submitted.values()))) == 4 and sbatch_calls == 1, output[-6000:]
    for rule in LOCAL_RULES:  # the small steps ran where Snakemake runs: finished, never submitted (above)
        assert f"(Rule: {rule})" in output, rule
    # Every submission ran on the cluster and completed there (JobComp records them without accounting).
    finished = _finished(cluster)
    for ids in submitted.values():
        for slurm_id in ids:
            assert finished[slurm_id]["JobState"] == "COMPLETED", finished[slurm_id]
            assert finished[slurm_id]["ProcCnt"] == "1"  # one core each: the spec is not whole-machine
            # the spec's measured memory with headroom reached sbatch (slurmctld keeps the job for MinJobAge, 300 s)
            # (the plugin adds its array payload's size, >= 1 MB, to an array job's --mem: "memory fudge")
            job = cluster.run("scontrol", "show", "job", slurm_id).stdout
            asked = re.search(r"MinMemoryNode=(\d+)M", job)
            assert asked and 1500 < int(asked.group(1)) <= 1510, job
    for variant in ("vtrace", "none", *map(control_name, ("vtrace", "none"))):
        for seed in (0, 1):
            summary = json.loads((root / "runs" / "toytest" / "toy_slurm" / variant / "catch" / f"seed{seed}" /
                                  "summary.json").read_text())
            assert summary["frames"] == 400
            assert 100 < summary["memory"]["peak_rss_mb"] < 1500  # what the job used, under what it asked for


def test_a_job_killed_at_its_time_limit_is_resubmitted_and_resumes_without_duplicate_metrics(
    cluster: Cluster, tmp_path: Path
):
    # 400 chunks of 80,000 frames (one seed): ~6 minutes on a quiet machine (100 chunks took ~1 min alone with
    # the default suite beside it and finished before Slurm's 30 s time-limit check), so its first attempt is cut by the time limit set below once
    # it has written checkpoints; the retry (the profile's `retries`) resumes from the last one. A whole-machine
    # job: it takes machine_cores CPUs and a node of its own (under a cluster executor there is no --cores).
    chunks, per_chunk = 400, 20 * 4000
    specs = tmp_path / "specs"
    # No claims, so no frozen arm: a second whole-machine job of 6 minutes would add nothing to what is tested.
    _toy_spec(specs, "toy_timeout", frames=chunks * per_chunk, updates_per_chunk=4000, variants=["vtrace"],
              whole_machine=True, seeds=1, claims=False)
    workdir = tmp_path / "work"
    workdir.mkdir()
    root = workdir / "results" / "smoke"
    run_dir = root / "runs" / "toytest" / "toy_timeout" / "vtrace" / "catch" / "seed0"
    shortened: list[str] = []

    def cut_after_two_checkpoints(_: subprocess.Popen) -> None:
        if shortened or not (run_dir / "metrics.jsonl").exists():
            return
        if len((run_dir / "metrics.jsonl").read_text().splitlines()) < 3:
            return
        running = cluster.run("squeue", "-h", "-t", "RUNNING", "-o", "%i").stdout.split()
        if running:
            # A one-minute limit on a job already running: Slurm ends it (state TIMEOUT) once it has run a minute,
            # at its next time-limit check (every 30 s). On a quiet 2-core machine the job needs ~6 minutes.
            result = cluster.run("scontrol", "update", f"JobId={running[0]}", "TimeLimit=1")
            assert result.returncode == 0, result.stderr
            shortened.append(running[0])

    code, output, seconds = _snakemake(
        cluster, workdir, ["scale=smoke", f"specs={specs}", "machine_cores=2"], timeout=1500,
        while_running=cut_after_two_checkpoints,
    )
    print(f"time-limit run through Slurm: {seconds:.0f} s wall")
    assert code == 0, output[-6000:]
    assert shortened, "the job finished before two checkpoints could be seen"
    records = _finished(cluster)
    assert records[shortened[0]]["JobState"] == "TIMEOUT", records
    training = [ids for rule, ids in _submissions(output)[0].items() if rule.startswith("train_")]
    assert len(training) == 1 and len(training[0]) == 2, output[-6000:]  # submitted again by the retry
    assert records[training[0][0]]["JobId"] == shortened[0] and records[training[0][1]]["JobState"] == "COMPLETED"
    assert all(records[i]["ProcCnt"] == "2" for i in training[0])  # machine_cores, --exclusive

    log = (root / "logs" / "train" / "toytest" / "toy_timeout" / "vtrace" / "catch" / "seeds0-0.log").read_text()
    resumed = re.search(rf"resuming from .* at chunk (\d+)/{chunks}", log)
    assert resumed and 2 <= int(resumed.group(1)) < chunks, log[-3000:]
    frames = [r["frames"] for r in read_metrics(run_dir / "metrics.jsonl")]
    assert frames == [per_chunk * (i + 1) for i in range(chunks)]  # no gap, no duplicate
    assert json.loads((run_dir / "summary.json").read_text())["frames"] == chunks * per_chunk
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{workdir / 'results' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("toytest/toy_timeout")
    runs = [r for r in client.search_runs([experiment.experiment_id]) if "rlrepro.run_key" in r.data.tags]
    assert len(runs) == 1  # the killed attempt's run was continued, not duplicated
    for run in runs:
        steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "total_loss"))
        assert steps == [per_chunk * (i + 1) for i in range(chunks)]


def _bounded(command: list[str], env: dict[str, str], cwd: Path, timeout: float, cluster: Cluster) -> tuple[int, str, float]:
    """Run ``command`` in its own session; its whole process group is killed at ``timeout`` (then the test fails)."""
    log = cwd / f"{Path(command[0]).name}-{int(time.monotonic() * 1000)}.out"
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            pytest.fail(f"{' '.join(command[:6])} still running after {timeout:.0f} s (killed):\n"
                        f"{log.read_text()[-6000:]}\n--- squeue\n{cluster.run('squeue', '--states=all').stdout}")
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    return process.returncode, log.read_text(), time.monotonic() - started


def test_a_loss_search_scores_its_programs_on_dask_workers_submitted_through_sbatch(
    cluster: Cluster, tmp_path: Path, subprocess_env: dict[str, str]
):
    """search_executor=dask-slurm on the real Slurm (dask-jobqueue's SLURMCluster, one single-core worker per Slurm
    job): the workers go through sbatch, end with the search, and the programs, scores and config hash are the inline
    executor's (smoke scale of search_dqnreg: the hurdle in the search's process, Empty-5x5 on the workers)."""
    from rlrepro.search.executor import ADDRESS_ENV, EXECUTOR_ENV
    from tests.search.test_executor_placement import search_command, search_outcome

    def env_for(executor: str, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in {**subprocess_env, **extra}.items() if k not in (EXECUTOR_ENV, ADDRESS_ENV)}
        return {**env, EXECUTOR_ENV: executor}

    code, output, seconds = _bounded(search_command(tmp_path / "inline"), env_for("inline", {}), tmp_path, 900, cluster)
    print(f"search, inline: {seconds:.0f} s wall")
    assert code == 0, output[-6000:]

    # Every sbatch call of the search's process is logged on the way to the real one.
    calls = tmp_path / "sbatch-calls.txt"
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "sbatch").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {shutil.which("sbatch", path=cluster.env["PATH"])} "$@"\n')
    (wrapper / "sbatch").chmod(0o755)
    env = env_for("dask-slurm", {"SLURM_CONF": cluster.env["SLURM_CONF"], "PATH": f"{wrapper}:{cluster.env['PATH']}",
                                 "RLREPRO_DASK_SLURM_MEMORY": "2GB"})
    before = {r["JobId"] for r in cluster.completed_jobs()}
    try:
        code, output, seconds = _bounded(search_command(tmp_path / "dask-slurm"), env, tmp_path, 900, cluster)
        print(f"search, dask-slurm: {seconds:.0f} s wall")
        assert code == 0, output[-6000:]

        # The search's process ended: its workers' Slurm jobs end with it (dask-jobqueue cancels them on close;
        # a worker also stops when its scheduler is gone).
        deadline = time.monotonic() + 120
        while cluster.run("squeue", "-h", "-n", "dask-worker", "-o", "%i").stdout.split():
            assert time.monotonic() < deadline, cluster.run("squeue", "--states=all").stdout
            time.sleep(2)
    finally:
        cluster.run("scancel", "--name", "dask-worker")  # nothing left running whatever happened
    submitted = calls.read_text().splitlines() if calls.exists() else []
    assert len(submitted) == 1, submitted  # the smoke spec's executor has 1 worker: one Slurm job
    workers = [r for r in cluster.completed_jobs() if r["JobId"] not in before]
    assert len(workers) == 1 and workers[0]["Name"] == "dask-worker", workers
    assert workers[0]["JobState"] in ("CANCELLED", "COMPLETED") and workers[0]["ProcCnt"] == "1", workers[0]
    assert search_outcome(tmp_path / "dask-slurm") == search_outcome(tmp_path / "inline")
