"""Issue 15: MLflow as teams run it: an ``mlflow server`` backed by PostgreSQL on 127.0.0.1, a smoke experiment through
the real Snakefile with 4 training jobs at once logging to it (8 in all: the 2 variants' seeds and their frozen arms), and a
second checkout syncing to the same server.

Marker ``services`` (``make test-services`` installs Debian's postgresql when missing; CI runs it when time allows).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlrepro.specs.control import control_name
from tests.factories import write_spec
from tests.conftest import toy_run_spec_data
from tests.mlflow_server import mlflow_server
from tests.postgres_server import postgres_bindir, postgres_server

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[1]
# The spec's 2 variants and, since its claims read them, their frozen arms (the plan adds them at every scale).
VARIANTS, SEEDS = ("vtrace", "none", *map(control_name, ("vtrace", "none"))), (0, 1)
RUNS = len(VARIANTS) * len(SEEDS)


def _snakemake(workdir: Path, specs: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), "-c4",
               "--config", "scale=smoke", f"specs={specs}", f"results={workdir / 'results'}", *extra]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, timeout=1200)


def _output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> tuple[str, str]:
    """(tracking URL, PostgreSQL URI) of a live mlflow server whose backend store is a fresh PostgreSQL database."""
    if postgres_bindir() is None:
        pytest.fail("PostgreSQL is not installed: `make test-services` installs Debian's postgresql (apt) first")
    with postgres_server() as database:
        with mlflow_server(tmp_path_factory.mktemp("mlflow"), backend_store_uri=database, workers=2) as url:
            yield url, database


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> Path:
    """The toy experiment on Catch, one seed per job: (2 variants + 2 frozen arms) x 2 seeds = 8 training jobs, 4 at
    a time."""
    folder = tmp_path_factory.mktemp("specs")
    data = toy_run_spec_data(experiment="toy_server", smoke_environments=["catch"])
    data["run"]["seeds_per_job"] = 1
    write_spec(folder, data)
    return folder


def _seed_runs(url: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=url)
    experiment = client.get_experiment_by_name("toytest/toy_server")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    return [run for run in runs if "rlrepro.run_key" in run.data.tags]


def _sql(database: str, query: str) -> list[tuple]:
    import psycopg2

    with psycopg2.connect(database, connect_timeout=10) as connection, connection.cursor() as cursor:
        cursor.execute(query)
        return cursor.fetchall()


def test_four_concurrent_jobs_through_snakemake_record_each_run_once_in_postgres(server, specs, tmp_path, subprocess_env):
    url, database = server
    env = {**subprocess_env, "MLFLOW_TRACKING_URI": url}
    workdir = tmp_path / "checkout-a"
    workdir.mkdir()
    result = _snakemake(workdir, specs, env)
    assert result.returncode == 0, _output(result)
    log = result.stderr
    assert log.count("(Rule: train_toytest_toy_server_") == RUNS, f"expected {RUNS} training jobs, one seed each"
    assert "TrackingWarning" not in log and "tracking off" not in log

    project = (workdir / "results" / ".project").read_text().strip()
    runs = _seed_runs(url)
    keys = collections.Counter(run.data.tags["rlrepro.run_key"] for run in runs)
    expected = {f"{project}/smoke/toytest/toy_server/{v}/catch/seed{s}" for v in VARIANTS for s in SEEDS}
    assert set(keys) == expected and set(keys.values()) == {1}, keys  # every run exactly once
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=url)
    for run in runs:
        tags = run.data.tags
        assert run.info.status == "FINISHED"
        run_dir = workdir / "results/smoke/runs/toytest/toy_server" / tags["variant"] / "catch" / f"seed{tags['seed']}"
        on_disk = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        history = client.get_metric_history(run.info.run_id, "episode_return")
        assert sorted(m.step for m in history) == [r["frames"] for r in on_disk]  # no metric twice, none missing
    # The runs really are in PostgreSQL (not a sqlite file beside the server): the seed runs + the summary run.
    rows = _sql(database, "SELECT count(*) FROM runs WHERE lifecycle_stage = 'active'")
    assert rows == [(RUNS + 1,)]
    assert _sql(database, "SELECT count(DISTINCT value) FROM tags WHERE key = 'rlrepro.run_key'") == [(RUNS,)]


def test_a_second_checkout_on_the_same_server_keeps_both_sets_of_runs(server, specs, tmp_path, subprocess_env):
    """The report: `mlflow-sync` of a second checkout said created=0 replaced=8. Now each has its namespace."""
    url, _ = server
    env = {**subprocess_env, "MLFLOW_TRACKING_URI": url}
    workdir = tmp_path / "checkout-b"
    workdir.mkdir()
    before = {run.info.run_id for run in _seed_runs(url)}
    assert len(before) == RUNS, "runs after the first test"
    result = _snakemake(workdir, specs, env)
    assert result.returncode == 0, _output(result)
    sync = subprocess.run([sys.executable, "-m", "rlrepro", "mlflow-sync", "--scale", "smoke", "--results",
                           str(workdir / "results")], capture_output=True, text=True, env=env, timeout=300, cwd=workdir)
    assert sync.returncode == 0, sync.stderr
    assert sync.stdout.strip() == f"created=0 failed=0 replaced=0 skipped={RUNS}"
    runs = _seed_runs(url)
    assert before <= {run.info.run_id for run in runs}  # the first checkout's runs are untouched
    projects = collections.Counter(run.data.tags["rlrepro.project"] for run in runs)
    assert len(projects) == 2 and set(projects.values()) == {RUNS}
