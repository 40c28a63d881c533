"""Tags, MLflow's limits and the warning class shared by the tracking modules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar


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
