"""Which environment backends this machine has, checked without importing them (cheap, for DAG building)."""

from __future__ import annotations

import importlib.util

from rlrepro.environments.errors import BackendMissingError

DMLAB_MESSAGE = (
    "DeepMind Lab is not installed (python module 'deepmind_lab'). It cannot be installed from the package "
    "registries: it is built from source with Bazel (github.com/google-deepmind/lab). Build it on a machine "
    "that allows that, install its Python package into this environment, and run this spec again."
)


def missing_backend(env_spec: object) -> str | None:
    """A message naming the missing backend of ``env_spec``, or None when it can run here."""
    kind = getattr(env_spec, "kind", None)
    if kind == "dmlab" and importlib.util.find_spec("deepmind_lab") is None:
        return DMLAB_MESSAGE
    return None


def require_backend(env_spec: object) -> None:
    """Raise :class:`BackendMissingError` at once when the backend is missing."""
    if reason := missing_backend(env_spec):
        raise BackendMissingError(f"environment '{getattr(env_spec, 'id', '?')}': {reason}")
