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

``mlflow`` is imported lazily inside functions: ``import rlrepro.tracking`` stays cheap (no mlflow,
no SQLAlchemy), so the Snakemake DAG-building path may import it.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import json
import math
import os
import random
import re
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rlrepro.metrics_file import read_metrics
from rlrepro.run_lock import holder

__all__ = [
    "RUN_KEY_TAG",
    "SUMMARY_TAG",
    "RunTracker",
    "TrackingWarning",
    "default_tracking_uri",
    "project_namespace",
    "shared_sqlite_warning",
    "warn_shared_sqlite",
    "ensure_store",
    "publish_experiment",
    "sqlite_db_path",
    "StoreUnreachableError",
    "probe_store",
    "sync_all",
    "sync_run_dir",
    "trackers_for",
]

RUN_KEY_TAG = "rlrepro.run_key"
#: The namespace of a checkout's runs on a shared server (:func:`project_namespace`).
PROJECT_TAG = "rlrepro.project"
PROJECT_ENV = "RLREPRO_PROJECT"
#: Kept in the results base: the identity of this results root, made once (random, so two checkouts at the same
#: path on two machines still differ; every node of a cluster reads the same file on the shared filesystem).
PROJECT_FILE = ".project"
_PROJECT_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]{0,99}$")
SUMMARY_TAG = "rlrepro.summary_sha256"
#: On the KILLED mirror of an interrupted run: sha256 of the metrics.jsonl it mirrors.
METRICS_TAG = "rlrepro.metrics_sha256"
#: Seconds an interrupted trainer spends marking its mirrors KILLED before it exits anyway.
KILL_MARK_TIMEOUT_S = 5.0

SPEC_FILE = "spec.resolved.json"
METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "summary.json"

#: Keys of a metrics.jsonl record that are not metrics (``frames`` is the MLflow step).
#: ``frames`` is logged too (at step = frames): MLflow's chart x-axis menu then offers the frames by name.
RECORD_META_KEYS = frozenset({"updates", "wall_time"})
#: Tags copied from ``spec.resolved.json["run"]``.
RUN_TAG_KEYS = ("paper", "experiment", "variant", "env", "seed", "scale", "git_commit", "spec_hash")

#: sqlite busy timeout (seconds) put in the default URI. MLflow 3 sets ``PRAGMA busy_timeout = 20000``
#: on every ORM session itself; the URI's ``timeout`` covers the engine-level calls MLflow makes
#: outside sessions (schema inspection and verification when a process opens the store).
SQLITE_TIMEOUT_S = 60

# MLflow 3 limits (mlflow.utils.validation); restated here so that importing this module stays cheap.
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_KEY_LENGTH = 250
MAX_PARAM_VAL_LENGTH = 6000
MAX_TAG_VAL_LENGTH = 8000

_SQLITE_URI = re.compile(r"^sqlite(?:\+\w+)?://(?P<rest>.*)$")
_BAD_KEY_CHARS = re.compile(r"[^\w.\- ]")  # MLflow also allows '/' and ':'; we avoid both in keys

T = TypeVar("T")


class TrackingWarning(RuntimeWarning):
    """Emitted (once per tracker) when MLflow tracking is disabled for a run."""


# --------------------------------------------------------------------------------------------------
# store location and creation


def default_tracking_uri(results_dir: Path | str) -> str:
    """``$MLFLOW_TRACKING_URI`` if set, else ``sqlite:///<abs results_dir>/mlflow.db?timeout=60``."""
    env = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if env:
        return env
    db = Path(results_dir).expanduser().resolve() / "mlflow.db"
    return f"sqlite:///{db}?timeout={SQLITE_TIMEOUT_S}"


def project_namespace(results_dir: Path | str) -> str:
    """The namespace of this checkout's runs in MLflow: ``$RLREPRO_PROJECT`` (Snakemake: ``--config project=NAME``),
    else the identity of the results base ``results_dir``, kept in ``<results_dir>/.project`` (made on first use:
    ``<checkout folder name>-<8 random hex digits>``).

    Two checkouts syncing to one tracking server then never replace each other's runs; every job of one checkout,
    on any node of a cluster, reads the same file.

    Raises:
        ValueError: the name (environment or file) is not 1-100 letters, digits, '_', '.', '-' (no '/': it heads the
            run key).
    """
    env = os.environ.get(PROJECT_ENV, "").strip()
    if env:
        return _check_project(env, f"${PROJECT_ENV}")
    base = Path(results_dir).expanduser().resolve()
    path = base / PROJECT_FILE
    if not path.exists():
        base.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^\w.\-]", "_", base.parent.name or "rlrepro")[:60].lstrip("._-") or "rlrepro"
        tmp = path.with_name(f"{PROJECT_FILE}.tmp{os.getpid()}")
        tmp.write_text(f"{stem}-{os.urandom(4).hex()}\n")
        try:
            os.link(tmp, path)  # atomic, and never replaces the name another job made first
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    return _check_project(path.read_text().strip(), str(path))


def warn_shared_sqlite(executor_plugin: Any, results_dir: Path | str) -> str | None:
    """Print :func:`shared_sqlite_warning` for Snakemake's executor (``workflow.executor_plugin``) to stderr; return it.

    Called from the Snakefile's ``onstart`` (after the executor is chosen, before any job is submitted).
    """
    name = getattr(executor_plugin, "cli_prefix", None) or getattr(executor_plugin, "name", None)
    message = shared_sqlite_warning(name, results_dir)
    if message:
        print(message, file=sys.stderr, flush=True)
    return message


def _check_project(name: str, where: str) -> str:
    if not _PROJECT_NAME.match(name):
        raise ValueError(f"{where}: project name {name!r}: expected 1-100 letters, digits, '_', '.' or '-' (no '/')")
    return name


#: Executors that run jobs on other machines (Snakemake's ``--executor``/profile names).
CLUSTER_EXECUTORS = frozenset({"slurm", "cluster-generic", "cluster-sync", "kubernetes", "googlebatch", "tes",
                               "lsf", "pbs", "htcondor", "flux", "aws-batch", "azure-batch"})


def shared_sqlite_warning(executor: str | None, results_dir: Path | str) -> str | None:
    """Why the jobs of ``executor`` should not track to the default store, or None.

    A cluster executor runs jobs on several nodes; without ``MLFLOW_TRACKING_URI`` they would all write one sqlite
    file on the shared filesystem (``<results>/mlflow.db``): sqlite's locks are unreliable over NFS/Lustre (corruption,
    or "database is locked" for minutes). Local executors (``local``, ``dryrun``, ``touch``, None) are fine.
    """
    if not executor or executor not in CLUSTER_EXECUTORS:
        return None
    uri = default_tracking_uri(results_dir)
    db = sqlite_db_path(uri)
    if db is None:
        return None
    return (
        f"rlrepro: the '{executor}' executor runs jobs on other nodes, but MLflow tracking would use the sqlite file "
        f"{db} on the shared filesystem (no MLFLOW_TRACKING_URI set); sqlite's locking is unreliable there. Start a "
        "tracking server (`mlflow server --backend-store-uri postgresql://...`, README) and export "
        "MLFLOW_TRACKING_URI=http://host:port before running Snakemake; the run folders stay the source of truth."
    )


def sqlite_db_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (query string dropped), or None (other scheme, in-memory)."""
    m = _SQLITE_URI.match(uri)
    if not m:
        return None
    rest = m.group("rest")
    if not rest.startswith("/"):  # "sqlite://" (memory) or malformed
        return None
    path = rest[1:].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


def _mlflow_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("mlflow", "mlflow-skinny"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "unknown"


def _db_revision(db: Path) -> str | None:
    """Alembic revision recorded in an existing sqlite DB (read-only; never creates the file)."""
    if not db.is_file() or db.stat().st_size == 0:
        return None
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=SQLITE_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error:
        return None
    finally:
        con.close()
    if len(rows) != 1 or not {"experiments", "runs", "metrics"} <= tables:
        return None
    return str(rows[0][0])


def _ready_file(db: Path) -> Path:
    return db.with_name(db.name + ".ready")


def _store_is_ready(db: Path) -> bool:
    """Fast check (no mlflow import): the DB was created/verified by this MLflow version and is unchanged."""
    try:
        marker = json.loads(_ready_file(db).read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict)
        and marker.get("mlflow") == _mlflow_version()
        and marker.get("revision") is not None
        and marker.get("revision") == _db_revision(db)
    )


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def ensure_store(uri: str) -> None:
    """Create (and schema-check) the MLflow store behind a sqlite ``uri`` once; no-op for other schemes.

    Safe to call from several processes at the same moment: creation is serialised by ``flock`` on
    ``<db>.lock``. Fast no-op (no mlflow import, one read-only sqlite query) when ``<db>.ready`` says this
    MLflow version already created/verified the DB and the DB's alembic revision still matches.
    Raises if the store cannot be created or its schema is older than the installed MLflow.
    """
    db = sqlite_db_path(uri)
    if db is None or _store_is_ready(db):
        return
    with _file_lock(db.with_name(db.name + ".lock")):
        if _store_is_ready(db):  # another process finished while we waited
            return
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        # Opening the store through the public client creates and migrates an empty DB (what
        # `mlflow db upgrade` does) and verifies the schema of an existing one.
        try:
            _retry(lambda: MlflowClient(tracking_uri=uri).search_experiments(max_results=1))
        except MlflowException as exc:
            if "out-of-date database schema" in str(exc):
                raise MlflowException(
                    f"The MLflow store {uri} was created by an older MLflow. Either back it up and run "
                    f"`mlflow db upgrade '{uri}'`, or delete {db} and rebuild the mirror from the run "
                    "folders with `rlrepro mlflow-sync`."
                ) from exc
            raise
        marker = {"mlflow": _mlflow_version(), "revision": _db_revision(db)}
        tmp = _ready_file(db).with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(marker))
        os.replace(tmp, _ready_file(db))


# --------------------------------------------------------------------------------------------------
# reachability: training never waits on tracking

#: Seconds the one probe of a tracking server may take before training goes on without it.
PROBE_TIMEOUT_S = 3.0
#: Bounds put on MLflow's own HTTP client (unless the user set them): MLflow's defaults (7 retries with
#: backoff factor 2, 120 s timeout) made every call to a dead server take minutes.
HTTP_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    # MLflow's usage telemetry thread, failing to reach its endpoint (an offline node), unsets an environment
    # variable while a request of ours reads os.environ: the request failed with KeyError '_MLFLOW_TELEMETRY_SESSION_ID'
    # (seen publishing to a live server here). It also sends nothing from a cluster.
    "MLFLOW_DISABLE_TELEMETRY": "true",
}


class StoreUnreachableError(ConnectionError):
    """The tracking server did not answer."""


def bound_http_requests() -> None:
    """Bound each MLflow HTTP request (a few seconds when refused, ~20 s when the server hangs)."""
    for name, value in HTTP_BOUNDS.items():
        os.environ.setdefault(name, value)


def probe_store(uri: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the tracking server behind ``uri`` cannot be used now, or None when it answers (or is not a server).

    One HTTP request to the server's ``/health`` with a short timeout; any HTTP answer counts as reachable.
    sqlite and other database URIs are not probed (a locked database is waited for, boundedly, by the retries).
    """
    import urllib.error
    import urllib.request

    if not uri.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None  # the server answered (e.g. a proxy without /health)
    except (OSError, ValueError) as error:  # URLError, refused, timeout, bad URL
        reason = getattr(error, "reason", error)
        return f"no answer from {uri} within {timeout:g} s ({reason})"


def wait_for_store(uri: str, wait_s: float, say: Callable[[str], None]) -> None:
    """Probe until the server answers or ``wait_s`` have passed, saying what is waited for.

    Raises:
        StoreUnreachableError: no answer within ``wait_s`` (at least one probe is made).
    """
    deadline = time.monotonic() + wait_s
    reason = probe_store(uri)
    if reason is None:
        return
    say(f"waiting up to {wait_s:g} s for the tracking server {uri}: {reason}")
    while time.monotonic() + PROBE_TIMEOUT_S < deadline:
        time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
        reason = probe_store(uri)
        if reason is None:
            say(f"the tracking server {uri} answers")
            return
    raise StoreUnreachableError(reason)


# --------------------------------------------------------------------------------------------------
# retries


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


_TRANSIENT_TYPE_NAMES = {
    "OperationalError",  # sqlite3 / SQLAlchemy: database is locked, disk I/O error, ...
    "ConnectionError",  # builtin and requests
    "ConnectTimeout",
    "ReadTimeout",
    "Timeout",
    "TimeoutError",
    "ChunkedEncodingError",
}
_TRANSIENT_MESSAGES = ("database is locked", "database table is locked", "TEMPORARILY_UNAVAILABLE")
_TRANSIENT_ERROR_CODES = {"TEMPORARILY_UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL_ERROR"}


def _is_transient(exc: BaseException) -> bool:
    """Worth retrying: sqlite lock/operational errors, connection errors, MLflow 503/429/5xx."""
    for e in _exception_chain(exc):
        if any(t.__name__ in _TRANSIENT_TYPE_NAMES for t in type(e).__mro__):
            return True
        if getattr(e, "error_code", None) in _TRANSIENT_ERROR_CODES:
            return True
        msg = str(e)
        if any(m in msg for m in _TRANSIENT_MESSAGES):
            return True
    return False


_UNREACHABLE_TYPE_NAMES = {
    "StoreUnreachableError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectTimeout",
    "ReadTimeout",
    "MaxRetryError",
    "NewConnectionError",
}


def _is_unreachable(exc: BaseException) -> bool:
    """A tracking server that does not answer (not a locked sqlite file, which is waited for)."""
    for e in _exception_chain(exc):
        if any(t.__name__ in _UNREACHABLE_TYPE_NAMES for t in type(e).__mro__):
            return True
        if any(m in str(e) for m in ("Max retries exceeded", "Connection refused", "Failed to establish")):
            return True
    return False


def _uninterrupted(fn: Callable[[], T]) -> T:
    """``fn()`` with Ctrl-C and SIGTERM held until it returns (main thread only; one MLflow call is short).

    An interrupt that lands inside an MLflow call can leave this process's sqlite connection in an open write
    transaction: the store then stays locked for the other jobs and for this job's own KILLED marking.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn()
    received: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is None or handler == signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, lambda number, frame: received.append(number))
    try:
        return fn()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])  # delivered now, to the handler that was in place


def _retry(
    fn: Callable[[], T],
    *,
    tries: int = 10,
    base_delay: float = 0.05,
    max_delay: float = 5.0,
) -> T:
    """Call ``fn`` until it succeeds; transient errors are retried with exponential backoff and full jitter
    (worst case with the defaults: about 20 s of sleeping in total)."""
    for attempt in range(1, max(1, tries) + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt >= tries or not _is_transient(exc):
                raise
            time.sleep(random.uniform(0.0, min(max_delay, base_delay * 2**attempt)))
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------
# run-folder reading and conversion


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _safe_key(key: str) -> str:
    """A key MLflow accepts: allowed characters only, not a path that normalises elsewhere, <= 250 chars."""
    safe = _BAD_KEY_CHARS.sub("_", str(key)).strip()
    if safe in ("", ".", "..") or safe.startswith(".."):
        safe = "_" + safe
    if len(safe) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(safe.encode()).hexdigest()[:8]
        safe = f"{safe[: MAX_KEY_LENGTH - 9]}~{digest}"
    return safe


def _truncate(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    suffix = f"...[truncated {len(value)} chars]"
    return value[: limit - len(suffix)] + suffix


def _param_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested dict -> ``{"a.b.c": "value"}`` with MLflow-safe keys and values (lists become JSON)."""
    out: dict[str, str] = {}

    def walk(node: Mapping[str, Any], pre: str) -> None:
        for k, v in node.items():
            key = f"{pre}{k}"
            if isinstance(v, Mapping) and v:
                walk(v, key + ".")
                continue
            safe = _safe_key(key)
            n, base = 2, safe
            while safe in out:  # two keys that sanitise to the same string
                safe = _safe_key(f"{base}~{n}")
                n += 1
            out[safe] = _truncate(_param_value(v), MAX_PARAM_VAL_LENGTH)

    walk(config, prefix)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def records_to_metrics(records: Iterable[Mapping[str, Any]], timestamp_ms: int | None = None) -> list:
    """metrics.jsonl records -> ``mlflow.entities.Metric`` (step = frames; non-numeric values skipped)."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    metrics = []
    for rec in records:
        frames = rec.get("frames", rec.get("updates", 0))
        step = int(frames) if _is_number(frames) and math.isfinite(frames) else 0
        for key, value in rec.items():
            if key in RECORD_META_KEYS or not _is_number(value):
                continue
            metrics.append(Metric(key=_safe_key(key), value=float(value), timestamp=ts, step=step))
    return metrics


def _chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# --------------------------------------------------------------------------------------------------
# MLflow helpers (all calls go through _retry)


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


def short_variant(variant: str) -> str:
    """A variant name as a runs table shows it: ``corr=none__lag=0__replay=0.0`` -> ``none lag0 replay0`` (a word
    value alone, a number after its key, without a ``.0``)."""
    parts = []
    for part in variant.split("__"):
        key, sep, value = part.partition("=")
        if not sep:
            parts.append(part)
            continue
        try:
            number = float(value)
        except ValueError:
            parts.append(value or part)
            continue
        parts.append(f"{key}{int(number) if number.is_integer() and '.' in value else value}")
    return " ".join(parts)


def variant_names(spec: Mapping[str, Any]) -> list[str]:
    """The variant names of a spec as spec.resolved.json stores it (a grid expanded); [] when it does not validate
    (names are then shortened without the check for look-alikes)."""
    from pydantic import TypeAdapter, ValidationError

    from rlrepro.specs import ExperimentSpec  # pydantic only: the sync path stays without JAX

    try:
        variants = TypeAdapter(ExperimentSpec.model_fields["variants"].annotation).validate_python(spec.get("variants"))
    except (ValidationError, TypeError, ValueError):
        return []
    return [v.name for v in (variants.expand() if hasattr(variants, "expand") else variants)]


def display_variant(variant: str, variants: Iterable[str] = ()) -> str:
    """:func:`short_variant`, or the full name where shortening would make two of the experiment's ``variants``
    look alike (the ``variant`` tag keeps the full name always)."""
    short = short_variant(variant)
    return variant if any(short_variant(v) == short for v in variants if v != variant) else short


def run_name(variant: str, env: str, seed: int | str, variants: Iterable[str] = ()) -> str:
    """A seed run's name in MLflow, short and distinct: ``catch s0 · none lag0 replay0.5``. Environment and seed
    first: the runs table's name column shows about 24 characters, and a long variant is cut at its end."""
    return f"{env} s{seed} · {display_variant(variant, variants)}"


class _RunFolder:
    """What the mirror needs from a run folder."""

    def __init__(self, run_dir: Path, project: str | None = None):
        self.dir = Path(run_dir)
        self.project = project
        resolved = _read_json(self.dir / SPEC_FILE)
        self.run: dict = dict(resolved["run"])
        self.config: dict = resolved.get("config") or {}
        self.spec: dict = resolved.get("spec") or {}
        self.device: dict = resolved.get("device") or {}  # the job's JAX devices (rlrepro.training.runner)
        for k in ("paper", "experiment", "variant", "env", "seed"):
            if k not in self.run:
                raise KeyError(f"{self.dir / SPEC_FILE}: run.{k} missing")
        r = self.run
        default_key = f"{r['paper']}/{r['experiment']}/{r['variant']}/{r['env']}/seed{r['seed']}"
        #: The key without a project: what older mirrors were tagged with.
        self.bare_key: str = r.get("run_key") or default_key
        self.run_key: str = f"{project}/{self.bare_key}" if project else self.bare_key
        self.experiment_name = f"{self.run['paper']}/{self.run['experiment']}"
        self.run_name = run_name(self.run["variant"], self.run["env"], self.run["seed"], variant_names(self.spec))

    @property
    def summary_path(self) -> Path:
        return self.dir / SUMMARY_FILE

    def summary_sha256(self) -> str | None:
        try:
            return _file_sha256(self.summary_path)
        except FileNotFoundError:
            return None

    def tags(self) -> dict[str, str]:
        tags = {k: _truncate(str(self.run[k]), MAX_TAG_VAL_LENGTH) for k in RUN_TAG_KEYS if self.run.get(k) is not None}
        tags[RUN_KEY_TAG] = self.run_key
        if self.project:
            tags[PROJECT_TAG] = self.project
        return tags


# --------------------------------------------------------------------------------------------------
# live tracker


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
            on_disk = records_to_metrics(read_metrics(self.run_dir / METRICS_FILE))  # a corrupt file: no mirror at all
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
            self._call(lambda: client.log_artifact(self.run_id, str(self.run_dir / SPEC_FILE)))
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
                self._log_metrics(summary_metrics(_read_json(self._folder.summary_path)))
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


# --------------------------------------------------------------------------------------------------
# re-ingestion


def _bounded_retry(uri: str) -> Callable[[Callable[[], T]], T]:
    """Our retries of one MLflow call: 10 with backoff for sqlite (a lock passes), none for a tracking server
    (MLflow's HTTP client retries each request, bounded by ``bound_http_requests``: tries multiply otherwise)."""
    tries = 10 if sqlite_db_path(uri) is not None else 1
    return lambda fn: _retry(fn, tries=tries)


def sync_run_dir(run_dir: Path | str, *, uri: str, force: bool = False, project: str | None = None) -> str:
    """Mirror one run folder; returns ``"skipped"``, ``"created"`` or ``"replaced"``. Raises on failure.

    * complete folder (summary.json): skipped iff a FINISHED mirror with the same summary sha256 exists
      (other mirrors of the same run_key are then deleted); otherwise (re-)created and FINISHED. This repairs
      mirrors left RUNNING or KILLED by an interrupted trainer whose run was later completed.
    * incomplete folder being trained (a process holds its lock, :mod:`rlrepro.run_lock`): skipped while its
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
        return _file_sha256(run_dir / METRICS_FILE)
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
    for spec in sorted(root.rglob(SPEC_FILE)):
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


# --------------------------------------------------------------------------------------------------
# presentation: what a person browsing the MLflow UI sees

#: The experiment's kind as MLflow 3's UI reads it (its ExperimentKind values: "custom_model_development", ...): the
#: kind selector shows "model training" and the runs page reads "Training runs". It does not by itself change a
#: browser in the UI's GenAI mode (the default), which opens experiments on a traces overview: README's link adds
#: ``workflowType=machine_learning`` for that.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
#: The experiment's (and a run's) description, shown as Markdown by the UI.
NOTE_TAG = "mlflow.note.content"
PARENT_TAG = "mlflow.parentRunId"
#: On each seed run: the id of its experiment's summary run at its scale. A link, not MLflow's nesting
#: (``mlflow.parentRunId``), which hides the seed runs in the runs table until the summary is expanded.
SUMMARY_LINK_TAG = "rlrepro.summary_run"
#: Identity of the summary (parent) run of one experiment at one scale: "<scale>/<paper>/<experiment>".
SUMMARY_RUN_TAG = "rlrepro.experiment_summary"
#: Summary values (summary.json "final") are logged as metrics under this prefix, so the runs table can sort by them
#: without mixing them into the curves of the same name (metrics.jsonl's keys are logged unprefixed).
SUMMARY_METRIC_PREFIX = "summary."


def experiment_description(spec: Mapping[str, Any], spec_path: str | None = None) -> str:
    """Markdown for the experiment's description: the paper, the section/figure, the spec file."""
    reference = spec.get("reference") or {}
    # The experiments list shows the first line as it is: plain text, no Markdown.
    title, citation = reference.get("title", spec.get("paper", "?")), reference.get("citation", "")
    lines = [
        f"{title} ({citation}): {reference.get('where', '?')}" if citation else f"{title}: {reference.get('where', '?')}",
    ]
    if spec_path:
        lines += ["", f"Spec: `{spec_path}`"]
    lines += ["", "Runs: one per (variant, environment, seed) and scale, named `<env> s<seed> · <variant>` (tags "
              "`scale`, `variant`, `env`, `seed`); the run named `summary (<scale>)` holds the table, figures and "
              "claim verdicts, and its metrics each cell's mean with its 95% interval (`<env> - <variant> - mean`, "
              "`- ci95_lo`, `- ci95_hi`).",
              "", "Charts: step = environment frames (x axis \"Step\"; every seed run also logs `frames`, which the "
              "chart's x-axis menu offers by name)."]
    return "\n".join(lines)


def _present_experiment(client, experiment_id: str, spec: Mapping[str, Any], call: Callable, spec_path: str | None = None) -> None:
    """Open in the model-training view; describe the experiment (kept if one with the spec path is already there)."""
    _set_experiment_tag(client, experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND, call)
    if spec_path is None:
        current = call(lambda: client.get_experiment(experiment_id)).tags.get(NOTE_TAG)
        if current:
            return
    note = _truncate(experiment_description(spec, spec_path), MAX_TAG_VAL_LENGTH)
    _set_experiment_tag(client, experiment_id, NOTE_TAG, note, call)


# a unique key violated, as sqlite and PostgreSQL word it (also in a tracking server's error text)
_DUPLICATE_KEY_MESSAGES = ("UNIQUE constraint failed", "duplicate key value violates unique constraint")


def _set_experiment_tag(client, experiment_id: str, key: str, value: str, call: Callable) -> None:
    """MLflow's SQL store sets a tag by a select and then an insert or an update: two jobs tagging a new experiment
    at once can both insert, and the second fails on the tag's unique key. Set again, it finds the row and updates
    it (the jobs of one experiment write the same values)."""
    try:
        call(lambda: client.set_experiment_tag(experiment_id, key, value))
    except Exception as exc:
        if not any(m in str(e) for e in _exception_chain(exc) for m in _DUPLICATE_KEY_MESSAGES):
            raise
        call(lambda: client.set_experiment_tag(experiment_id, key, value))


def summary_metrics(summary: Mapping[str, Any], timestamp_ms: int | None = None) -> list:
    """summary.json's "final" values (and frames) as metrics ``summary.<key>`` at step = the run's frames, the
    job's peak resident memory as ``summary.memory.peak_rss_mb`` (MB; rlrepro.training.memory), and how many starts
    trained the run as ``summary.attempts``."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    frames = summary.get("frames", 0)
    step = int(frames) if _is_number(frames) and math.isfinite(frames) else 0
    values = {**(summary.get("final") or {}), "frames": frames}
    if isinstance(summary.get("memory"), Mapping) and "peak_rss_mb" in summary["memory"]:
        values["memory.peak_rss_mb"] = summary["memory"]["peak_rss_mb"]
    if isinstance(summary.get("attempts"), list):  # starts that trained the run: more than 1 after a resume
        values["attempts"] = len(summary["attempts"])
    return [
        Metric(key=_safe_key(SUMMARY_METRIC_PREFIX + key), value=float(value), timestamp=ts, step=step)
        for key, value in values.items()
        if _is_number(value)
    ]


def publish_experiment(
    *,
    uri: str,
    scale: str,
    paper: str,
    experiment: str,
    spec: Mapping[str, Any],
    spec_path: str,
    table_json: Path,
    files: Iterable[Path],
    project: str | None = None,
) -> str:
    """The summary run of one experiment at one scale: table, figures and verdicts as artifacts, verdicts as tags,
    each cell's mean and 95% interval as metrics (:func:`cell_metrics`), and the scale's seed runs linked to it
    (tag ``rlrepro.summary_run``; not nested, so the runs table lists them). Idempotent; returns the run id.

    A tracking server gets the same bounds as training and ``mlflow-sync``: one short probe first, then MLflow's
    own HTTP retries only (``bound_http_requests``), none of ours on top.

    Raises:
        StoreUnreachableError: the tracking server does not answer the probe (nothing is sent).
    """
    if (reason := probe_store(uri)) is not None:
        raise StoreUnreachableError(reason)
    bound_http_requests()
    from mlflow.entities import Metric, RunTag

    ensure_store(uri)
    client = _client(uri)
    call = _bounded_retry(uri)
    name = f"{paper}/{experiment}"
    experiment_id = _get_or_create_experiment(client, uri, name, call)
    _present_experiment(client, experiment_id, spec, call, spec_path)
    key = f"{project}/{scale}/{name}" if project else f"{scale}/{name}"
    quote = "'" if "'" not in key else '"'
    found = call(lambda: client.search_runs([experiment_id], filter_string=f"tags.`{SUMMARY_RUN_TAG}` = {quote}{key}{quote}"))
    tags = {SUMMARY_RUN_TAG: key, "scale": scale, "paper": paper, "experiment": experiment, "variant": "(all)",
            "env": "(all)", "seed": "(all)", **({PROJECT_TAG: project} if project else {})}
    if found:
        run_id = found[0].info.run_id
        for extra in found[1:]:
            call(lambda: client.delete_run(extra.info.run_id))
    else:
        run_id = call(lambda: client.create_run(experiment_id, run_name=f"summary ({scale})", tags=tags)).info.run_id
    data = json.loads(Path(table_json).read_text())
    verdicts = data.get("claims", [])
    note = [f"Summary of `{name}` at scale `{scale}`: the table, figures and claim verdicts are this run's artifacts.",
            "", *[f"- **{v['claim']}**: {v['verdict']}" for v in verdicts]]
    if frames := (data.get("provenance") or {}).get("frames_text"):  # what each run trained, its budget beside it
        note[1:1] = ["", f"Runs: {frames}."]
    run_tags = [RunTag(k, _truncate(str(v), MAX_TAG_VAL_LENGTH)) for k, v in tags.items()]
    run_tags += [RunTag(_safe_key(f"verdict.{v['claim']}"), v["verdict"]) for v in verdicts]
    run_tags += [RunTag(_safe_key(f"verdict_method.{v['claim']}"), v["method"]) for v in verdicts if v.get("method")]
    run_tags.append(RunTag(NOTE_TAG, _truncate("\n".join(note), MAX_TAG_VAL_LENGTH)))
    for chunk in _chunks(run_tags, MAX_PARAMS_TAGS_PER_BATCH):
        call(lambda: client.log_batch(run_id, tags=chunk, synchronous=True))
    metrics = cell_metrics(data.get("rows", []), variant_names(spec))
    for chunk in _chunks(metrics, MAX_METRICS_PER_BATCH):
        call(lambda: client.log_batch(run_id, metrics=chunk, synchronous=True))
    for path in files:
        call(lambda: client.log_artifact(run_id, str(path)))
    with tempfile.TemporaryDirectory() as folder:
        verdict_file = Path(folder) / "verdicts.json"
        verdict_file.write_text(json.dumps(verdicts, indent=2) + "\n")
        call(lambda: client.log_artifact(run_id, str(verdict_file)))
    call(lambda: client.set_terminated(run_id, status="FINISHED"))
    seed_runs = call(lambda: client.search_runs([experiment_id], filter_string=f"tags.scale = '{scale}'", max_results=5000))
    for seed_run in seed_runs:
        tags = seed_run.data.tags
        if tags.get(PROJECT_TAG) != project or seed_run.info.run_id == run_id or RUN_KEY_TAG not in tags:
            continue  # another checkout's runs on a shared server, or the summary run itself
        if tags.get(SUMMARY_LINK_TAG) != run_id:
            call(lambda: client.set_tag(seed_run.info.run_id, SUMMARY_LINK_TAG, run_id))
        if PARENT_TAG in tags:  # nested by an older rlrepro: hidden under the summary until expanded
            call(lambda: client.delete_tag(seed_run.info.run_id, PARENT_TAG))
    return run_id


def cell_metrics(rows: Iterable[Mapping[str, Any]], variants: Iterable[str] = (), timestamp_ms: int | None = None) -> list:
    """Each table cell as three summary-run metrics a runs table can show: ``<env> - <variant> - mean``,
    ``... - ci95_lo`` and ``... - ci95_hi`` (the variant shortened as in run names), at step = the cell's frames.
    A bound that is not finite (a cell of one run has no interval) is left out."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    variants = list(variants)
    metrics = []
    for row in rows:
        name = display_variant(row["variant"], variants)
        frames = int(row["frames"]) if _is_number(row.get("frames")) and math.isfinite(row["frames"]) else 0
        for suffix, field in (("mean", "mean"), ("ci95_lo", "ci95_low"), ("ci95_hi", "ci95_high")):
            value = row.get(field)
            if _is_number(value) and math.isfinite(value):
                metrics.append(Metric(_safe_key(f"{row['env']} - {name} - {suffix}"), float(value), ts, frames))
    return metrics
