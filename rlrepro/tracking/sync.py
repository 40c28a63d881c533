"""Re-ingestion: ``rlrepro mlflow-sync`` mirrors finished and interrupted run folders idempotently."""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable
from pathlib import Path

from rlrepro.jobs.run_folder import METRICS, RESOLVED
from rlrepro.jobs.run_lock import holder

from rlrepro.tracking.common import METRICS_TAG, RUN_KEY_TAG, SUMMARY_TAG
from rlrepro.tracking.store import ensure_store
from rlrepro.tracking.reach import (
    StoreUnreachableError, _bounded_retry, _is_unreachable, bound_http_requests, probe_store, wait_for_store,
)
from rlrepro.tracking.folders import _RunFolder, _file_sha256
from rlrepro.tracking.client import _client, _find_runs
from rlrepro.tracking.live import RunTracker


def sync_run_dir(run_dir: Path | str, *, uri: str, force: bool = False, project: str | None = None) -> str:
    """Mirror one run folder; returns ``"skipped"``, ``"created"`` or ``"replaced"``. Raises on failure.

    * complete folder (summary.json): skipped iff a FINISHED mirror with the same summary sha256 exists
      (other mirrors of the same run_key are then deleted); otherwise (re-)created and FINISHED. This repairs
      mirrors left RUNNING or KILLED by an interrupted trainer whose run was later completed.
    * incomplete folder being trained (a process holds its lock, :mod:`rlrepro.jobs.run_lock`): skipped while its
      mirror is RUNNING (the live tracker writes it).
    * incomplete folder that nobody trains (interrupted): mirrored KILLED with every metric on disk and the
      sha256 of its metrics.jsonl, so the next sync skips it until the folder changes. A mirror left RUNNING
      by a killed trainer is replaced.

    ``force=True`` replaces the mirror in every case.
    """
    ensure_store(uri)
    folder = _RunFolder(Path(run_dir), project)
    client = _client(uri)
    call = _bounded_retry(uri)
    sha = folder.summary_sha256()
    live = holder(folder.dir) if sha is None else None
    metrics_sha = _metrics_sha256(folder.dir) if sha is None else None

    exp = call(lambda: client.get_experiment_by_name(folder.experiment_name))
    existing = []
    if exp is not None and exp.lifecycle_stage == "active":
        existing = _find_runs(client, exp.experiment_id, folder.run_key, call, folder.bare_key)

    if not force and existing:
        keyed = [r for r in existing if r.data.tags.get(RUN_KEY_TAG) == folder.run_key]  # not a mirror made before projects
        if sha is not None:
            current = [r for r in keyed if r.info.status == "FINISHED" and r.data.tags.get(SUMMARY_TAG) == sha]
        elif live is not None:
            current = [r for r in keyed if r.info.status == "RUNNING"]
        else:
            current = [r for r in keyed if r.info.status == "KILLED" and r.data.tags.get(METRICS_TAG) == metrics_sha]
        if current:
            keep = max(current, key=lambda r: r.info.start_time or 0)
            for r in existing:
                if r.info.run_id != keep.info.run_id:
                    call(lambda: client.delete_run(r.info.run_id))
            return "skipped"

    tracker = RunTracker(folder.dir, uri=uri, strict=True, project=project)
    try:
        tracker.start()
        if sha is None:
            call(lambda: client.set_tag(tracker.run_id, METRICS_TAG, metrics_sha))
        tracker.finish("FINISHED" if sha is not None else "KILLED")
    except Exception:
        if tracker.run_id is not None:  # do not leave a half-written mirror that looks live
            try:
                client.set_terminated(tracker.run_id, status="FAILED")
            except Exception:
                pass
        raise
    return "replaced" if tracker.replaced_runs else "created"


def _metrics_sha256(run_dir: Path) -> str:
    try:
        return _file_sha256(run_dir / METRICS)
    except FileNotFoundError:
        return "none"


def _matches(run_key: str, only: str | None) -> bool:
    if not only:
        return True
    only = only.strip("/")
    return run_key == only or run_key.startswith(only + "/") or fnmatch.fnmatchcase(run_key, only)


def sync_all(
    runs_root: Path | str,
    *,
    uri: str,
    only: str | None = None,
    force: bool = False,
    wait_s: float = 20.0,
    say: Callable[[str], None] | None = None,
    project: str | None = None,
) -> dict[str, int]:
    """Re-ingest every run folder under ``runs_root`` (``results/runs``). Idempotent.

    ``only`` selects run keys (without the project) by prefix (``"impala"``, ``"impala/atari57"``) or glob
    (``"*/seed0"``); ``project`` namespaces the keys (:func:`project_namespace`). Returns counts per outcome: created, replaced, skipped, failed (a folder that
    cannot be read or mirrored is counted, reported through ``say`` and the others still sync).

    Raises:
        StoreUnreachableError: the tracking server did not answer within ``wait_s`` seconds (before or during
            the sync; what is waited for is said first). The run folders are untouched.
        ValueError: ``only`` matches no run folder (a typo must not look like a sync with nothing to do).
    """
    say = say or (lambda message: print(f"rlrepro mlflow-sync: {message}", file=sys.stderr, flush=True))
    counts = {"created": 0, "replaced": 0, "skipped": 0, "failed": 0}
    root = Path(runs_root)
    wait_for_store(uri, wait_s, say)
    bound_http_requests()
    ensure_store(uri)
    keys = []
    for spec in sorted(root.rglob(RESOLVED)):
        run_dir = spec.parent
        try:
            run_key = _RunFolder(run_dir).bare_key
        except Exception as exc:
            counts["failed"] += 1
            say(f"cannot read {spec}: {exc}")
            continue
        keys.append(run_key)
        if not _matches(run_key, only):
            continue
        try:
            counts[sync_run_dir(run_dir, uri=uri, force=force, project=project)] += 1
        except Exception as exc:
            if _is_unreachable(exc) and (reason := probe_store(uri)) is not None:
                raise StoreUnreachableError(f"{reason} (while mirroring {run_dir})") from exc
            counts["failed"] += 1
            say(f"failed to mirror {run_dir}: {type(exc).__name__}: {exc}")
    if only and keys and not any(_matches(key, only) for key in keys):
        papers = sorted({"/".join(key.split("/")[:3]) for key in keys})
        raise ValueError(f"--only {only!r} matches no run folder under {root}; there are runs of {', '.join(papers)}")
    return counts
