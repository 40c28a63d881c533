"""MLflow client helpers (every call goes through ``reach._retry``): the client, experiments, runs by key."""

from __future__ import annotations

from collections.abc import Callable

from rlrepro.tracking.common import PROJECT_TAG, RUN_KEY_TAG, sqlite_db_path
from rlrepro.tracking.folders import _safe_key


def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _artifact_location(uri: str, experiment_name: str) -> str | None:
    """For a sqlite store, artifacts live beside the DB (MLflow's default would be ./mlruns in the cwd)."""
    db = sqlite_db_path(uri)
    if db is None:
        return None  # a tracking server decides
    parts = [_safe_key(p) for p in experiment_name.split("/")]
    return str(db.resolve().parent.joinpath("mlartifacts", *parts))


def _get_or_create_experiment(client, uri: str, name: str, call: Callable) -> str:
    exp = call(lambda: client.get_experiment_by_name(name))
    if exp is None:
        try:
            return call(lambda: client.create_experiment(name, artifact_location=_artifact_location(uri, name)))
        except Exception:
            exp = call(lambda: client.get_experiment_by_name(name))  # created concurrently by another job
            if exp is None:
                raise
    if exp.lifecycle_stage == "deleted":
        call(lambda: client.restore_experiment(exp.experiment_id))
    return exp.experiment_id


def _find_runs(client, experiment_id: str, run_key: str, call: Callable, legacy_key: str | None = None) -> list:
    """Active MLflow runs of ``experiment_id`` tagged with ``run_key`` (and, when given, the mirrors an older rlrepro
    made of the same folder without a project: tagged ``legacy_key`` and no project, replaced like any old mirror)."""
    runs = _runs_tagged(client, experiment_id, run_key, call)
    if legacy_key is not None and legacy_key != run_key:
        runs += [r for r in _runs_tagged(client, experiment_id, legacy_key, call) if PROJECT_TAG not in r.data.tags]
    return runs


def _runs_tagged(client, experiment_id: str, run_key: str, call: Callable) -> list:
    quote = "'" if "'" not in run_key else '"'
    flt = f"tags.`{RUN_KEY_TAG}` = {quote}{run_key}{quote}"
    runs, token = [], None
    while True:
        page = call(lambda: client.search_runs([experiment_id], filter_string=flt, max_results=1000, page_token=token))
        runs.extend(r for r in page if r.data.tags.get(RUN_KEY_TAG) == run_key)
        token = page.token
        if not token:
            return runs
