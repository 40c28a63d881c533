"""Checkpoints of a job's (seed-batched) training state: one atomic ``.npz`` file.

The state is any pytree of arrays; it is restored into the structure of a freshly initialised
state, so only the leaves are stored. JAX PRNG key arrays are stored as their raw key data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

_META = "__meta__"


def save(path: Path, state: Any, meta: dict[str, Any]) -> None:
    """Write ``state`` and ``meta`` atomically (write a temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    leaves = jax.tree.leaves(state)
    arrays = {f"leaf{i}": np.asarray(_raw(leaf)) for i, leaf in enumerate(leaves)}
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_meta(path: Path) -> dict[str, Any] | None:
    """The metadata of a checkpoint, or None when there is none (or it is unreadable)."""
    try:
        with np.load(path) as data:
            return json.loads(data[_META].tobytes().decode())
    except Exception:  # missing, empty, truncated or foreign file: there is nothing to resume from
        return None


def restore(path: Path, like: Any) -> Any:
    """Leaves from ``path`` in the structure (and key types) of ``like``."""
    leaves, treedef = jax.tree.flatten(like)
    with np.load(path) as data:
        stored = [data[f"leaf{i}"] for i in range(len(leaves))]
    restored = []
    for template, value in zip(leaves, stored):
        if value.shape != _raw(template).shape:
            raise ValueError(f"checkpoint {path}: leaf shape {value.shape} != expected {_raw(template).shape}")
        if jax.dtypes.issubdtype(template.dtype, jax.dtypes.prng_key):
            restored.append(jax.random.wrap_key_data(value, impl=jax.random.key_impl(template)))
        else:
            restored.append(jax.numpy.asarray(value, dtype=template.dtype))
    return jax.tree.unflatten(treedef, restored)


def _raw(leaf: Any) -> Any:
    if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(leaf)
    return leaf
