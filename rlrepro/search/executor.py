"""Where candidate evaluations run: a local process pool (default) or a Dask cluster, chosen by the spec.

Both are ``concurrent.futures.Executor``s, so the search only calls ``submit`` and ``result``. Dask rather
than Ray: ``distributed`` is pure Python (installs from the registry in seconds, no 100+ MB wheel), its
client is a standard ``Executor`` (``Client.get_executor()``), and it reaches SLURM or Kubernetes clusters
through dask-jobqueue / dask-kubernetes, the same schedulers the Snakemake profiles target. Give
``address`` (``tcp://scheduler:8786``) to join a running cluster; without it a local cluster starts.
Processes are spawned, never forked (JAX is not fork-safe). Executors live for the process, outside the
checkpointed state.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from typing import Any

_EXECUTORS: dict[tuple, Any] = {}


def make_executor(kind: str, workers: int, address: str | None = None) -> concurrent.futures.Executor:
    """A cached executor: ``local`` (process pool of ``workers``) or ``dask`` (client of a cluster)."""
    key = (kind, workers, address)
    if key in _EXECUTORS:
        return _EXECUTORS[key]
    if kind == "local":
        executor: Any = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    elif kind == "dask":
        try:
            from distributed import Client, LocalCluster
        except ImportError as error:  # pragma: no cover - the pinned environment has it
            raise RuntimeError("executor kind 'dask' needs the 'distributed' package (pip install distributed)") from error
        if address:
            client = Client(address)
        else:
            client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None))
        executor = client.get_executor()
    elif kind == "inline":
        executor = _Inline()
    else:
        raise ValueError(f"unknown executor kind {kind!r}: expected local, dask or inline")
    _EXECUTORS[key] = executor
    return executor


class _Inline(concurrent.futures.Executor):
    """Runs each call at once in this process (tests and debugging)."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(error)
        return future
