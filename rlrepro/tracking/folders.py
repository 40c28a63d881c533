"""Run folder -> MLflow: params, metrics, names and the run folder as the mirror sees it."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rlrepro.jobs.run_folder import RESOLVED, SUMMARY, read_json
from rlrepro.tracking.common import (
    MAX_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH, PROJECT_TAG, RECORD_META_KEYS, RUN_KEY_TAG,
    RUN_TAG_KEYS, _BAD_KEY_CHARS,
)


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
        resolved = read_json(self.dir / RESOLVED)
        self.run: dict = dict(resolved["run"])
        self.config: dict = resolved.get("config") or {}
        self.spec: dict = resolved.get("spec") or {}
        self.device: dict = resolved.get("device") or {}  # the job's JAX devices (rlrepro.jobs.runner)
        for k in ("paper", "experiment", "variant", "env", "seed"):
            if k not in self.run:
                raise KeyError(f"{self.dir / RESOLVED}: run.{k} missing")
        r = self.run
        default_key = f"{r['paper']}/{r['experiment']}/{r['variant']}/{r['env']}/seed{r['seed']}"
        #: The key without a project: what older mirrors were tagged with.
        self.bare_key: str = r.get("run_key") or default_key
        self.run_key: str = f"{project}/{self.bare_key}" if project else self.bare_key
        self.experiment_name = f"{self.run['paper']}/{self.run['experiment']}"
        self.run_name = run_name(self.run["variant"], self.run["env"], self.run["seed"], variant_names(self.spec))

    @property
    def summary_path(self) -> Path:
        return self.dir / SUMMARY

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
