"""Checkpoints of a job's (seed-batched) training state: one atomic file.

The state is any pytree. Array leaves are stored as numpy arrays (JAX PRNG keys as their raw key
data); other leaves (e.g. the Python objects of host environments, replay buffers) are pickled
as they are. Restoring needs a freshly initialised state of the same structure: it gives the
dtypes, the key types and a check that the checkpoint belongs to this program.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import jax
import numpy as np

_FORMAT = 1


def save(path: Path, state: Any, meta: dict[str, Any]) -> None:
    """Write ``state`` and ``meta`` atomically (write a temporary file, fsync, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    leaves = [_to_host(leaf) for leaf in jax.tree.leaves(state)]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        pickle.dump({"format": _FORMAT, "meta": meta, "leaves": leaves}, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _load(path: Path) -> dict[str, Any]:
    with open(path, "rb") as handle:
        data = pickle.load(handle)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError(f"{path}: not an rlrepro checkpoint (format {_FORMAT})")
    return data


def load_meta(path: Path) -> dict[str, Any] | None:
    """The metadata of a checkpoint, or None when there is none (or it is unreadable)."""
    try:
        return _load(path)["meta"]
    except Exception:  # missing, empty, truncated or foreign file: there is nothing to resume from
        return None


def restore(path: Path, like: Any) -> Any:
    """The stored leaves in the structure (and dtypes, key types) of ``like``."""
    template, treedef = jax.tree.flatten(like)
    stored = _load(path)["leaves"]
    if len(stored) != len(template):
        raise ValueError(f"checkpoint {path}: {len(stored)} leaves, expected {len(template)}")
    return jax.tree.unflatten(treedef, [_restore_leaf(path, t, v) for t, v in zip(template, stored)])


def _is_key(leaf: Any) -> bool:
    return isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _to_host(leaf: Any) -> Any:
    if _is_key(leaf):
        return np.asarray(jax.random.key_data(leaf))
    if isinstance(leaf, jax.Array):
        return np.asarray(leaf)
    return leaf


def _restore_leaf(path: Path, template: Any, value: Any) -> Any:
    if not isinstance(template, (jax.Array, np.ndarray)):
        return value
    expected = np.shape(jax.random.key_data(template)) if _is_key(template) else np.shape(template)
    if np.shape(value) != expected:
        raise ValueError(f"checkpoint {path}: leaf shape {np.shape(value)} != expected {expected}")
    if _is_key(template):
        return jax.random.wrap_key_data(value, impl=jax.random.key_impl(template))
    if isinstance(template, np.ndarray):
        return np.asarray(value, dtype=template.dtype)
    return jax.numpy.asarray(value, dtype=template.dtype)
