"""MLflow mirror of run folders: the one module of rlrepro that imports mlflow.

The run folder ``results/runs/<paper>/<experiment>/<variant>/<env>/seed<k>/`` is the source of truth
(``spec.resolved.json``, ``metrics.jsonl``, ``summary.json``). MLflow is a browsing mirror of it:

* :func:`default_tracking_uri` picks the store (``MLFLOW_TRACKING_URI`` or ``results/mlflow.db``).
* :func:`ensure_store` creates/migrates a sqlite store once, under a file lock, before jobs fan out
  (two processes opening a fresh sqlite store at once crash inside MLflow's migrations).
* :class:`RunTracker` mirrors one run live during training. Every MLflow call is retried with
  exponential backoff; if the store stays unusable the tracker disables itself with one warning
  and training goes on (the run folder is complete; ``rlrepro mlflow-sync`` re-ingests it).
* :func:`sync_run_dir` / :func:`sync_all` re-ingest run folders idempotently.

Identity: every mirrored run carries the tag ``rlrepro.run_key`` (``<project>/<scale>/paper/experiment/variant/env/seed<k>``);
the project (:func:`project_namespace`: ``$RLREPRO_PROJECT``, else an identity kept in ``<results>/.project``) keeps the
runs of two checkouts that share one tracking server apart (tag ``rlrepro.project``);
a completed mirror carries ``rlrepro.summary_sha256`` (sha256 of ``summary.json`` bytes). A mirror is up to
date iff it is FINISHED and its summary hash equals the folder's.

The package, one module per job: ``store`` (where the store is, creating it), ``reach`` (the probe, HTTP bounds,
retries), ``folders`` (a run folder as MLflow params, metrics and names), ``client`` (experiments and runs by key),
``live`` (``RunTracker``), ``sync`` (re-ingestion), ``retired`` (the mirrors of retired runs, kept) and ``publish`` (the experiment's summary run and what the UI
shows); ``common`` holds the tags and MLflow's limits they share.

``mlflow`` is imported lazily inside functions: ``import rlrepro.tracking`` stays cheap (no mlflow,
no SQLAlchemy), so the Snakemake DAG-building path may import it.
"""

from __future__ import annotations

from rlrepro.tracking.common import (
    KILL_MARK_TIMEOUT_S, MAX_PARAM_VAL_LENGTH, PROJECT_ENV, RUN_KEY_TAG, SQLITE_TIMEOUT_S, SUMMARY_TAG, TrackingWarning,
    sqlite_db_path,
)
from rlrepro.tracking.store import (
    default_tracking_uri, ensure_store, project_namespace, shared_sqlite_warning, warn_shared_sqlite,
)
from rlrepro.tracking.reach import PROBE_TIMEOUT_S, StoreUnreachableError, bound_http_requests, probe_store
from rlrepro.tracking.folders import flatten_config, run_name
from rlrepro.tracking.live import RunTracker, trackers_for
from rlrepro.tracking.sync import sync_all, sync_run_dir
from rlrepro.tracking.retired import RETIRED_TAG, retire_mirrors
from rlrepro.tracking.publish import (
    EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, NOTE_TAG, experiment_description, publish_experiment, summary_metrics,
)

__all__ = [
    "EXPERIMENT_KIND",
    "EXPERIMENT_KIND_TAG",
    "KILL_MARK_TIMEOUT_S",
    "MAX_PARAM_VAL_LENGTH",
    "NOTE_TAG",
    "PROBE_TIMEOUT_S",
    "PROJECT_ENV",
    "RETIRED_TAG",
    "RUN_KEY_TAG",
    "SQLITE_TIMEOUT_S",
    "SUMMARY_TAG",
    "RunTracker",
    "StoreUnreachableError",
    "TrackingWarning",
    "bound_http_requests",
    "default_tracking_uri",
    "ensure_store",
    "experiment_description",
    "flatten_config",
    "probe_store",
    "project_namespace",
    "publish_experiment",
    "retire_mirrors",
    "run_name",
    "shared_sqlite_warning",
    "sqlite_db_path",
    "summary_metrics",
    "sync_all",
    "sync_run_dir",
    "trackers_for",
    "warn_shared_sqlite",
]
