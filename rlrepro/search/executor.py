"""Where candidate evaluations run: a local process pool (default) or a Dask cluster.

The spec's ``executor`` is the default; the machine running the search overrides it without editing the spec:
``RLREPRO_SEARCH_EXECUTOR`` (``local`` | ``dask`` | ``dask-slurm`` | ``inline``) and ``RLREPRO_DASK_ADDRESS``, which
Snakemake sets from ``--config search_executor=... dask_address=...`` (:func:`rlrepro.workflow.cluster_environment`).
Where programs are scored never changes their scores, so none of this is in the config hash
(:func:`rlrepro.workflow.config_hash`): switching a finished search to Dask does not retrain it.

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
import os
from typing import Any

_EXECUTORS: dict[tuple, Any] = {}

EXECUTOR_ENV = "RLREPRO_SEARCH_EXECUTOR"
ADDRESS_ENV = "RLREPRO_DASK_ADDRESS"
#: Memory of each Slurm job of a ``dask-slurm`` worker (dask-jobqueue's ``memory``); partition, account and walltime
#: come from dask-jobqueue's own configuration (``~/.config/dask/jobqueue.yaml`` or ``DASK_JOBQUEUE__SLURM__QUEUE``...).
SLURM_MEMORY_ENV = "RLREPRO_DASK_SLURM_MEMORY"
KINDS = ("local", "dask", "dask-slurm", "inline")


def placement(kind: str, workers: int, address: str | None = None) -> tuple[str, int, str | None]:
    """The executor to use: the spec's ``(kind, workers, address)`` unless the environment overrides kind/address.

    Raises:
        ValueError: ``RLREPRO_SEARCH_EXECUTOR`` names no executor kind.
    """
    env_kind = os.environ.get(EXECUTOR_ENV, "").strip()
    env_address = os.environ.get(ADDRESS_ENV, "").strip() or None
    if env_kind and env_kind not in KINDS:
        raise ValueError(f"${EXECUTOR_ENV}={env_kind!r}: expected one of {', '.join(KINDS)}")
    if env_kind and env_kind != kind:
        kind, address = env_kind, None  # the spec's address belongs to the spec's kind
    if env_address:
        if not env_kind:
            kind = "dask"  # an address alone means: join that Dask scheduler
        address = env_address
    return kind, workers, address


def slurm_cluster(workers: int) -> Any:
    """A dask-jobqueue ``SLURMCluster`` with one single-core worker per Slurm job, scaled to ``workers`` jobs."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as error:  # pragma: no cover - the pinned environment has it
        raise RuntimeError("executor kind 'dask-slurm' needs dask-jobqueue (pinned in envs/requirements-cpu.lock.txt)") from error
    # One process, one thread per job: each evaluation is one JAX program on one core (JAX is not fork-safe).
    cluster = SLURMCluster(cores=1, processes=1, memory=os.environ.get(SLURM_MEMORY_ENV, "4GB"),
                           scheduler_options={"dashboard": False})
    cluster.scale(jobs=workers)
    return cluster


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
            client = Client(address, timeout=60)
        else:
            client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None))
        executor = client.get_executor()
    elif kind == "dask-slurm":
        from distributed import Client

        executor = Client(slurm_cluster(workers)).get_executor()
    elif kind == "inline":
        executor = _Inline()
    else:
        raise ValueError(f"unknown executor kind {kind!r}: expected one of {', '.join(KINDS)}")
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
