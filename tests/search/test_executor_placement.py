"""Issue 15: where a loss search scores its programs is the machine's choice (Snakemake config or environment), not
the spec's, and not in the config hash: local pool, Dask and inline give the same programs and scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlrepro.search.executor import ADDRESS_ENV, EXECUTOR_ENV, placement, slurm_cluster
from rlrepro.specs import load_spec
from rlrepro.workflow import cluster_environment, config_hash

REPO = Path(__file__).resolve().parents[2]
SEARCH = REPO / "specs/evolving_rl/search_dqnreg.yaml"


def _with_executor(spec, **executor):
    """The spec with its base agent's executor changed (as a person would edit the YAML)."""
    agent = spec.agent.model_copy(update={"executor": spec.agent.executor.model_copy(update=executor)})
    return spec.model_copy(update={"agent": agent})


def test_the_executor_kind_and_address_are_not_in_the_config_hash():
    spec = load_spec(SEARCH)
    variant, env = spec.variant_list()[0].name, spec.environments[0].id
    before = config_hash(spec, variant, env, "paper")
    assert config_hash(_with_executor(spec, kind="dask", address="tcp://10.0.0.1:8786"), variant, env, "paper") == before
    assert config_hash(_with_executor(spec, kind="inline"), variant, env, "paper") == before
    # workers stay in it: with proposals_per_round null they decide how many children each round proposes
    assert spec.agent.proposals_per_round is None
    assert config_hash(_with_executor(spec, workers=spec.agent.executor.workers + 1), variant, env, "paper") != before
    # and the search's numbers still count: a different population is a different hash
    changed = spec.model_copy(update={"agent": spec.agent.model_copy(update={"population_size": 299})})
    assert config_hash(changed, variant, env, "paper") != before


def test_the_environment_overrides_the_specs_executor(monkeypatch):
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    assert placement("local", 2, None) == ("local", 2, None)
    assert placement("dask", 2, "tcp://spec:8786") == ("dask", 2, "tcp://spec:8786")
    monkeypatch.setenv(EXECUTOR_ENV, "dask")
    assert placement("local", 2, None) == ("dask", 2, None)  # a local Dask cluster of 2 workers
    monkeypatch.setenv(ADDRESS_ENV, "tcp://scheduler:8786")
    assert placement("local", 2, "ignored") == ("dask", 2, "tcp://scheduler:8786")
    monkeypatch.delenv(EXECUTOR_ENV)
    assert placement("inline", 1, None) == ("dask", 1, "tcp://scheduler:8786")  # an address alone: join it
    monkeypatch.delenv(ADDRESS_ENV)
    monkeypatch.setenv(EXECUTOR_ENV, "ray")
    with pytest.raises(ValueError, match="RLREPRO_SEARCH_EXECUTOR.*'ray'.*local, dask, dask-slurm, inline"):
        placement("local", 2, None)


def test_snakemake_config_keys_become_the_jobs_environment():
    config = {"scale": "cpu", "project": "lab", "search_executor": "dask", "dask_address": "tcp://h:8786"}
    assert cluster_environment(config) == {
        "RLREPRO_PROJECT": "lab", "RLREPRO_SEARCH_EXECUTOR": "dask", "RLREPRO_DASK_ADDRESS": "tcp://h:8786"}
    assert cluster_environment({"scale": "cpu"}) == {}
    with pytest.raises(ValueError, match="search_executor=pool"):
        cluster_environment({"search_executor": "pool"})


def test_dask_on_slurm_writes_one_single_core_worker_per_job(monkeypatch):
    """dask-jobqueue installs with our pins; its job script (no Slurm needed to write it) asks for what one
    evaluation uses. Submitting needs a Slurm cluster (not tested here)."""
    monkeypatch.setenv("RLREPRO_DASK_SLURM_MEMORY", "3GB")
    cluster = slurm_cluster(0)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH --cpus-per-task=1" in script and "#SBATCH --mem=3G" in script
    assert "distributed.cli.dask_worker" in script and "--nthreads 1" in script


def search_command(results: Path) -> list[str]:
    """The smoke-scale search_dqnreg job (one seed; the hurdle in process, Empty-5x5 through the executor)."""
    return [sys.executable, "-m", "rlrepro", "train", "--spec", str(SEARCH), "--scale", "smoke", "--variant",
            "default", "--env", "cpu_cartpole_empty5x5", "--results", str(results), "--no-mlflow", "--progress", "lines"]


def _search(results: Path, executor: str | None, env: dict[str, str]) -> dict:
    env = {k: v for k, v in env.items() if k not in (EXECUTOR_ENV, ADDRESS_ENV)}
    if executor:
        env[EXECUTOR_ENV] = executor
    result = subprocess.run(search_command(results), capture_output=True, text=True, env=env, timeout=1800, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return search_outcome(results)


def search_outcome(results: Path) -> dict:
    """What must not depend on the executor: config hash, best programs and scores, programs evaluated, metrics."""
    run = results / "smoke/runs/evolving_rl/search_dqnreg/default/cpu_cartpole_empty5x5/seed0"
    search = json.loads((run / "search.json").read_text())
    metrics = [{k: v for k, v in r.items() if k not in ("wall_time", "eval_minutes")}
               for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())]
    return {"hash": json.loads((run / "spec.resolved.json").read_text())["run"]["config_hash"],
            "best": [{k: b[k] for k in ("hash", "fitness", "scores", "equation")} for b in search["best"]],
            "evaluated": search["statistics"]["programs_evaluated"], "metrics": metrics}


@pytest.mark.slow
def test_inline_local_pool_and_dask_give_the_same_programs_and_scores(tmp_path, subprocess_env):
    """The real search (smoke scale of search_dqnreg: the hurdle in process, Empty-5x5 in the executor), once per
    executor chosen by the environment: same config hash, same programs, same scores, same metrics."""
    runs = {kind: _search(tmp_path / kind, kind, subprocess_env) for kind in ("inline", "local", "dask")}
    assert runs["inline"]["evaluated"] >= 2 and any(len(b["scores"]) == 2 for b in runs["inline"]["best"])
    assert runs["local"] == runs["inline"]
    assert runs["dask"] == runs["inline"]
