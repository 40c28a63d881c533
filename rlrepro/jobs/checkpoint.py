"""Checkpoints of a job's (seed-batched) training state: one atomic, checksummed file and one kept back.

The state is any pytree. Array leaves are stored as numpy arrays (JAX PRNG keys as their raw key
data); other leaves (e.g. the Python objects of host environments, replay buffers) are pickled
as they are. Restoring needs a freshly initialised state of the same structure: it gives the
dtypes, the key types and a check that the checkpoint belongs to this program.

File layout: ``MAGIC`` (8 bytes), the sha256 of the payload (32 bytes), the pickled payload. A file whose
checksum does not match (a truncated write, a flipped byte on disk) is never restored: it is reported and
the previous checkpoint (``<name>.prev``, the one saved before it) is used instead, so at most one chunk of
progress is lost and training never resumes from a corrupted state. A pickled object whose class has since moved
to another module (``MOVED``) is read from the module it lives in now, so a run stopped before a move resumes.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

_FORMAT = 2
_MAGIC = b"RLRCKPT2"
_DIGEST = 32

# Modules whose pickled classes (host states, replay memories) moved: old module -> the module that holds them now.
MOVED = {
    "rlrepro.agents.refer.host": "rlrepro.training.refer_host",
    "rlrepro.agents.refer.replay": "rlrepro.replay.episodes",
    "rlrepro.agents.refer.priority": "rlrepro.replay.priority",
    "rlrepro.agents.dqn.trainer": "rlrepro.agents.dqn.loop",
    "rlrepro.agents.ppo.trainer": "rlrepro.agents.ppo.loop",
    "rlrepro.agents.acer.trainer": "rlrepro.agents.acer.loop",
}


class _Unpickler(pickle.Unpickler):
    """Reads classes that moved (``MOVED``) from their new module."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED.get(module, module), name)


class CorruptCheckpointError(ValueError):
    """A checkpoint file that is unreadable, truncated or fails its checksum."""


class Checkpoint(NamedTuple):
    """A verified checkpoint: where it was read from, its metadata and its stored leaves."""

    path: Path
    meta: dict[str, Any]
    leaves: list[Any]


def previous_path(path: Path) -> Path:
    """The checkpoint kept back: the one saved before ``path``."""
    return path.with_name(path.name + ".prev")


def save(path: Path, state: Any, meta: dict[str, Any]) -> None:
    """Write ``state`` and ``meta`` atomically (temporary file, fsync, rename); the old file becomes ``.prev``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    leaves = [_to_host(leaf) for leaf in jax.tree.leaves(state)]
    payload = pickle.dumps({"format": _FORMAT, "meta": meta, "leaves": leaves}, protocol=pickle.HIGHEST_PROTOCOL)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(_MAGIC + hashlib.sha256(payload).digest())
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    if path.exists():  # keep it back as .prev through a hard link: ``path`` itself is never missing
        link = path.with_name(path.name + ".prev.tmp")
        link.unlink(missing_ok=True)
        os.link(path, link)
        os.replace(link, previous_path(path))
    os.replace(tmp, path)


def drop_previous(path: Path) -> None:
    """Remove the checkpoint kept back behind ``path``: once a job is complete, nothing resumes from it. It exists
    for a damaged latest checkpoint during training; a finished job keeps only its final one, which halves the
    disk it holds (a checkpoint carries the replay memory: about 1 GB for 16 seeds of IMPALA's toy with replay)."""
    previous_path(path).unlink(missing_ok=True)


def _load(path: Path) -> dict[str, Any]:
    """The verified payload of one file. Raises FileNotFoundError or CorruptCheckpointError."""
    data = path.read_bytes()
    if data.startswith(_MAGIC):
        digest, payload = data[len(_MAGIC) : len(_MAGIC) + _DIGEST], data[len(_MAGIC) + _DIGEST :]
        if hashlib.sha256(payload).digest() != digest:
            raise CorruptCheckpointError(f"checkpoint {path}: checksum mismatch ({len(data)} bytes; truncated or damaged)")
        expected_format = _FORMAT
    elif data.startswith(b"\x80"):  # format 1 (before checksums): a bare pickle, still resumable
        payload, expected_format = data, 1
    else:
        raise CorruptCheckpointError(f"checkpoint {path}: not an rlrepro checkpoint ({len(data)} bytes)")
    try:
        loaded = _Unpickler(io.BytesIO(payload)).load()
    except Exception as error:  # a truncated legacy pickle
        raise CorruptCheckpointError(f"checkpoint {path}: unreadable ({type(error).__name__}: {error})") from None
    if not isinstance(loaded, dict) or loaded.get("format") != expected_format:
        raise CorruptCheckpointError(f"checkpoint {path}: not an rlrepro checkpoint (format {_FORMAT})")
    return loaded


def load_meta(path: Path) -> dict[str, Any] | None:
    """The metadata of a verified checkpoint file, or None when there is none (or it is damaged)."""
    try:
        return _load(path)["meta"]
    except (FileNotFoundError, CorruptCheckpointError):
        return None


def load_latest(path: Path) -> Checkpoint | None:
    """The newest good checkpoint: ``path``, else the one kept back; a damaged file is reported on stderr."""
    return next(iter(load_good(path)), None)


def load_good(path: Path) -> list[Checkpoint]:
    """Every good checkpoint, newest first: ``path``, then the one kept back; a damaged file is reported on stderr.

    The caller resumes from the first it can use (the kept-back one when the newest belongs to other metrics)."""
    found = []
    for candidate in (path, previous_path(path)):
        try:
            data = _load(candidate)
        except FileNotFoundError:
            continue
        except CorruptCheckpointError as error:
            fallback = "trying the previous one" if candidate == path else "training starts again from the start"
            print(f"rlrepro: {error}: not used; {fallback}", file=sys.stderr, flush=True)
            continue
        found.append(Checkpoint(candidate, data["meta"], data["leaves"]))
    return found


def restore(path: Path, like: Any) -> Any:
    """The stored leaves of the checkpoint file ``path`` in the structure (and dtypes, key types) of ``like``."""
    return restore_leaves(path, _load(path)["leaves"], like)


def restore_leaves(path: Path, stored: list[Any], like: Any) -> Any:
    """``stored`` (the leaves of the checkpoint at ``path``) in the structure of ``like``."""
    template, treedef = jax.tree.flatten(like)
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
