"""Where the MLflow store is and how it is made: the tracking URI, the project namespace, the sqlite store
created once under a file lock before jobs fan out."""

from __future__ import annotations

import fcntl
import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlrepro.tracking.common import PROJECT_ENV, PROJECT_FILE, SQLITE_TIMEOUT_S, _PROJECT_NAME, sqlite_db_path
from rlrepro.tracking.reach import _retry


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
