"""The live mirror of one training run (``RunTracker``)."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rlrepro.jobs.run_folder import METRICS, RESOLVED, read_json, read_metrics
from rlrepro.tracking.common import (
    KILL_MARK_TIMEOUT_S, MAX_METRICS_PER_BATCH, MAX_PARAMS_TAGS_PER_BATCH, SUMMARY_TAG, T, TrackingWarning,
    sqlite_db_path,
)
from rlrepro.tracking.store import ensure_store
from rlrepro.tracking.reach import (
    StoreUnreachableError, _is_unreachable, _retry, _uninterrupted, bound_http_requests, probe_store,
)
from rlrepro.tracking.folders import _RunFolder, _chunks, flatten_config, records_to_metrics
from rlrepro.tracking.client import _client, _find_runs, _get_or_create_experiment
from rlrepro.tracking.publish import _present_experiment, summary_metrics


class RunTracker:
    """Mirror one run folder into MLflow while it trains. Never raises into training.

    Usage::

        with RunTracker(run_dir, uri=uri) as tracker:   # start(): replaces any previous mirror
            tracker.log(new_records)                     # the dicts appended to metrics.jsonl
            ...                                          # write summary.json last; leaving: finish()

    On any MLflow failure that survives the retries, the tracker disables itself, warns once on stderr
    (:class:`TrackingWarning`) and all further calls are no-ops. ``strict=True`` (used by the sync
    functions) raises instead.
    """

    def __init__(
        self,
        run_dir: Path | str,
        *,
        uri: str,
        retries: int | None = None,
        strict: bool = False,
        circuit: dict[str, str] | None = None,
        project: str | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.uri = uri
        self.project = project  # the run key's namespace (project_namespace); None: keys without one
        # sqlite: 10 tries with backoff (a lock passes). A tracking server: MLflow's HTTP client already
        # retries each request (bounded by bound_http_requests), so no tries of our own: a dead server
        # must cost training seconds, not minutes.
        if retries is None:
            retries = 10 if sqlite_db_path(uri) is not None else 1
        self.retries = retries
        self.strict = strict
        # Shared by the trackers of one job: once the server is found down, all of them stop (one warning).
        self.circuit = circuit if circuit is not None else {}
        self.enabled = True
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self.replaced_runs: list[str] = []  # ids of deleted previous mirrors
        self._client = None
        self._folder: _RunFolder | None = None
        self._finished = False

    # -- plumbing
    def _call(self, fn: Callable[[], T]) -> T:
        return _retry(lambda: _uninterrupted(fn), tries=self.retries)

    def _disable(self, exc: BaseException) -> None:
        if self.strict:
            raise exc
        was_enabled, self.enabled = self.enabled, False
        if not was_enabled or "down" in self.circuit:
            return  # another tracker of this job already said the store is down
        unreachable = _is_unreachable(exc)
        if self.run_id is not None and not self._finished and not unreachable:
            # Best effort, no retries: a mirror left RUNNING would look live to `rlrepro mlflow-sync`.
            try:
                self._client.set_terminated(self.run_id, status="FAILED")
            except Exception:
                pass
        if unreachable:
            self.circuit["down"] = str(exc)
        key = self._folder.run_key if self._folder else str(self.run_dir)
        if unreachable:  # said once for every run of the job (the trackers share the circuit)
            msg = (
                f"rlrepro: MLflow tracking off for this job: {str(exc)[:500]}. Training goes on without waiting "
                "for it; the run folders are the source of truth and `rlrepro mlflow-sync` re-ingests them "
                "when the server is up."
            )
        else:
            msg = (
                f"rlrepro: MLflow tracking disabled for run {key} ({type(exc).__name__}: {str(exc)[:500]}; "
                f"store {self.uri}). Training continues; the run folder {self.run_dir} is intact (it is the "
                "source of truth) and `rlrepro mlflow-sync` will re-ingest it into MLflow."
            )
        warnings.warn(msg, TrackingWarning, stacklevel=3)

    @property
    def active(self) -> bool:
        if self.enabled and "down" in self.circuit:
            self.enabled = False
        return self.enabled and self.run_id is not None and not self._finished

    def _log_metrics(self, metrics: list) -> None:
        for chunk in _chunks(metrics, MAX_METRICS_PER_BATCH):
            self._call(lambda: self._client.log_batch(self.run_id, metrics=chunk, synchronous=True))

    # -- API
    def start(self) -> RunTracker:
        """Create the MLflow run (deleting earlier mirrors of this run_key) and log everything on disk."""
        if not self.enabled or self.run_id is not None or "down" in self.circuit:
            self.enabled = self.enabled and "down" not in self.circuit
            return self
        try:
            if (reason := probe_store(self.uri)) is not None:  # one short probe, then the run folder only
                raise StoreUnreachableError(reason)
            bound_http_requests()
            from mlflow.entities import Param

            ensure_store(self.uri)
            self._folder = folder = _RunFolder(self.run_dir, self.project)
            on_disk = records_to_metrics(read_metrics(self.run_dir / METRICS))  # a corrupt file: no mirror at all
            self._client = client = _client(self.uri)
            self.experiment_id = _get_or_create_experiment(client, self.uri, folder.experiment_name, self._call)
            _present_experiment(client, self.experiment_id, folder.spec, self._call)
            for old in _find_runs(client, self.experiment_id, folder.run_key, self._call, folder.bare_key):
                self._call(lambda: client.delete_run(old.info.run_id))
                self.replaced_runs.append(old.info.run_id)
            run = self._call(
                lambda: client.create_run(self.experiment_id, run_name=folder.run_name, tags=folder.tags())
            )
            self.run_id = run.info.run_id
            flat = {**flatten_config(folder.config), **flatten_config(folder.device, prefix="device.")}
            params = [Param(k, v) for k, v in flat.items()]
            for chunk in _chunks(params, MAX_PARAMS_TAGS_PER_BATCH):
                self._call(lambda: client.log_batch(self.run_id, params=chunk, synchronous=True))
            self._call(lambda: client.log_artifact(self.run_id, str(self.run_dir / RESOLVED)))
            self._log_metrics(on_disk)
        except Exception as exc:
            self._disable(exc)
        return self

    def log(self, records: Iterable[Mapping[str, Any]] | Mapping[str, Any]) -> None:
        """Log metric records (the same dicts appended to metrics.jsonl), batched."""
        if not self.active:
            return
        if isinstance(records, Mapping):
            records = [records]
        try:
            self._log_metrics(records_to_metrics(records))
        except Exception as exc:
            self._disable(exc)

    def finish(self, status: str = "FINISHED") -> None:
        """Log summary.json (if present) with its sha256 tag, then terminate the run with ``status``."""
        if not self.active:
            return
        try:
            client = self._client
            assert self._folder is not None
            sha = self._folder.summary_sha256()
            if sha is not None and status == "FINISHED":
                self._call(lambda: client.log_artifact(self.run_id, str(self._folder.summary_path)))
                self._log_metrics(summary_metrics(read_json(self._folder.summary_path)))
                self._call(lambda: client.set_tag(self.run_id, SUMMARY_TAG, sha))
            self._call(lambda: client.set_terminated(self.run_id, status=status))
        except Exception as exc:
            self._disable(exc)
        finally:
            self._finished = True

    def __enter__(self) -> RunTracker:
        return self.start()

    def mark_killed(self) -> None:
        """Mark the mirror KILLED after an interrupt: one attempt of at most ``KILL_MARK_TIMEOUT_S`` seconds.

        Ctrl-C must end a job in seconds, even when the other job holds the sqlite lock: the attempt runs in
        a daemon thread that is abandoned when it takes longer (``rlrepro mlflow-sync`` repairs the mirror).
        """
        if not self.active:
            return
        self._finished = True
        client, run_id, marked = self._client, self.run_id, threading.Event()

        def mark() -> None:
            try:
                client.set_terminated(run_id, status="KILLED")
                marked.set()
            except Exception:
                pass

        thread = threading.Thread(target=mark, name="rlrepro-mark-killed", daemon=True)
        thread.start()
        thread.join(KILL_MARK_TIMEOUT_S)
        if not marked.is_set():
            print(f"rlrepro: could not mark the MLflow run of {self.run_dir} KILLED within {KILL_MARK_TIMEOUT_S:g} s; "
                  "`rlrepro mlflow-sync` repairs it", file=sys.stderr, flush=True)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.finish("FINISHED")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.mark_killed()
        else:
            self.finish("FAILED")
        return False


def trackers_for(run_dirs: Iterable[Path], *, uri: str, project: str | None = None) -> list[RunTracker]:
    """The trackers of one job's run folders, sharing one probe of the store and one warning if it is down."""
    circuit: dict[str, str] = {}
    return [RunTracker(run_dir, uri=uri, circuit=circuit, project=project) for run_dir in run_dirs]
