"""Shared fixtures: a tiny toy experiment spec (Catch + CartPole, two variants) written outside the repository.

At smoke scale a run of it takes seconds (most of it XLA compilation): batch 4 x unroll 5 = 20 frames per
update, ``updates_per_chunk`` updates per chunk, ``smoke_frames`` frames per run.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlrepro.specs import apply_overrides
from tests.factories import toy_spec_data, write_spec


# Started first, longest first, so that no long one starts last and leaves the other of two xdist workers idle for
# its whole length: the slow suite's longest tests (it spreads tests over the workers) and the default suite's
# longest files (it keeps a file on one worker; `make test` passes --no-loadscope-reorder, or xdist would queue the
# files with the most tests first and the one-test files last). Seconds on 2 cores, as `--durations` prints them.
LONGEST_FIRST = (
    "tests/test_snakemake_atari.py::test_the_whole_impala_paper_at_smoke_scale",
    "tests/bench/test_device_check.py::test_device_check_runs_on_cpu_at_the_small_sizes",
    "tests/test_snakemake_synthetic_returns_atari.py::test_the_sr_atari_specs_run_end_to_end_at_smoke_scale",
    "tests/test_snakemake.py::"
    "test_after_kill_9_of_snakemake_alone_its_training_jobs_are_stopped_and_the_same_command_finishes",
    "tests/test_snakemake.py::test_after_kill_9_of_snakemake_the_same_command_recovers_and_finishes",
    "tests/search/test_executor_placement.py::test_inline_local_pool_and_dask_give_the_same_programs_and_scores",
    "tests/test_snakemake.py",  # 160 s
    "tests/agents/test_impala_host.py",  # 140 s
    "tests/jobs/test_runner.py",  # 120 s
    "tests/results/test_tables.py",  # 85 s
    "tests/agents/test_impala_sr.py",  # 80 s
    "tests/agents/test_frodo_atari.py",  # 80 s
    "tests/search/test_program.py",  # 75 s
    "tests/agents/test_frodo.py",  # 75 s
    "tests/agents/test_impala_loop.py",  # 65 s
    "tests/agents/test_refer_per_agents.py",  # 65 s
    "tests/agents/test_impala_replay.py",  # 60 s
    "tests/agents/test_impala_pbt.py",  # 60 s
    "tests/test_tracking.py",  # 60 s
    "tests/agents/test_impala.py",  # 60 s
    "tests/agents/test_impala_atari.py",  # 60 s
    "tests/agents/test_impala_sr_atari.py",  # 55 s
)


# One XLA compile per program for the whole run: the tests build many trainers whose programs are the same (a new
# jitted closure each, so JAX's in-memory cache misses), and every `rlrepro train` a Snakemake test starts compiles
# what the one before it compiled. JAX's persistent cache, in a folder of this run's own (set before the xdist workers
# and the subprocesses start, so all of them share it; removed at the end). A run that sets JAX_COMPILATION_CACHE_DIR
# itself keeps its own. The process that made the folder (xdist's controller) removes it.
_made_compile_cache: str | None = None


#: XLA's backend (LLVM) optimisation level for the default suite: its time is compile time (hundreds of small
#: programs, each run for a few steps), and level 0 compiles them faster. The programs are the same (XLA's own passes
#: still run); their floating-point results agree with the default level's to rounding, not bit for bit (a smoke
#: training run's metrics differ in the last bits, e.g. where LLVM fuses a multiply-add), and every default test
#: compares within a tolerance or like with like: all of them pass at both levels. Measured on the 2-core machine, the
#: whole default suite took 996 s at the default level and 843 s at 0. The slow suite (training long enough to learn),
#: the service and cluster checks, and every real run keep the default level. An ``XLA_FLAGS`` that sets it wins.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"


def pytest_configure(config: pytest.Config) -> None:
    global _made_compile_cache
    flags = os.environ.get("XLA_FLAGS", "")
    if "not slow" in (config.option.markexpr or "") and "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE_FLAG}".strip()  # before any JAX backend starts
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        _made_compile_cache = tempfile.mkdtemp(prefix="rlrepro-test-xla-")
        os.environ["JAX_COMPILATION_CACHE_DIR"] = _made_compile_cache
        os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _made_compile_cache is not None:
        shutil.rmtree(_made_compile_cache, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests and files of ``LONGEST_FIRST`` at the front, in that order; the rest keep theirs."""
    rank = {nodeid: i for i, nodeid in enumerate(LONGEST_FIRST)}
    last = len(rank)
    # stable: a file's tests, and everything not named, keep collection order
    items.sort(key=lambda item: rank.get(item.nodeid, rank.get(item.nodeid.split("::", 1)[0], last)))


def toy_run_spec_data(
    *,
    paper: str = "toytest",
    experiment: str = "toy",
    smoke_frames: int = 400,
    smoke_seeds: int = 2,
    smoke_environments: list[str] | None = None,
    updates_per_chunk: int = 5,
    learning_rate: float = 2e-3,
    claims: bool = True,
) -> dict[str, Any]:
    """A valid experiment spec: IMPALA with V-trace vs no correction at policy lag 4 on Catch and CartPole.

    ``claims=False``: no claims, and so no frozen arm (the plan adds one for the variants a claim reads), for tests
    of the pipeline's machinery whose job counts the arm would only double."""
    smoke: dict[str, Any] = {"frames": smoke_frames, "seeds": smoke_seeds, "expected_minutes": 0.5}
    if smoke_environments is not None:
        smoke["environments"] = smoke_environments
    data = toy_spec_data(
        paper=paper,
        experiment=experiment,
        reference={"title": "Toy test experiment", "citation": "tests", "where": "tests/conftest.py"},
        environments=[
            {"kind": "jax", "id": "catch", "name": "catch", "kwargs": {"rows": 6, "columns": 11}},
            {"kind": "jax", "id": "cartpole", "name": "cartpole", "kwargs": {"max_steps": 500}},
        ],
        variants=[{"name": "vtrace"}, {"name": "none", "agent": {"loss.correction": "none"}}],
        budget={"frames": 100_000, "seeds": 2},
        scales={"smoke": smoke, "cpu": {"frames": 4_000, "seeds": 1}},
        run={"updates_per_chunk": updates_per_chunk, "final_fraction": 0.5},
        claims=[] if not claims else [
            {
                "kind": "ordering",
                "id": "vtrace_beats_none",
                "statement": "V-trace beats no correction at policy lag 4.",
                "better": "vtrace",
                "worse": ["none"],
                "judged_at": ["smoke"],
            },
            {
                "kind": "ordering",
                "id": "judged_only_at_paper_scale",
                "statement": "A claim that cannot be judged at smoke scale.",
                "better": "vtrace",
                "worse": ["none"],
                "judged_at": ["paper"],
            },
        ],
    )
    # The base agent (epsilon 0.01, entropy cost 0.01) with an MLP, the rest of the optimizer and loss, policy lag 4;
    # batch 4 x unroll 5 = 20 frames per update.
    return apply_overrides(
        data,
        {
            "agent.network": {"kind": "mlp", "hidden_sizes": [16]},
            "agent.optimizer": {
                "learning_rate": learning_rate,
                "decay": 0.99,
                "momentum": 0.0,
                "max_grad_norm": 40.0,
                "lr_schedule": "linear_to_zero",
            },
            "agent.loss": {
                "discount": 0.99,
                "baseline_cost": 0.5,
                "reward_clip": None,
                "correction": "vtrace",
            },
            "agent.unroll_length": 5,
            "agent.batch_size": 4,
            "agent.policy_lag": 4,
        },
    )


def write_toy_spec(directory: Path, **overrides: Any) -> Path:
    """Write the toy spec to ``<directory>/<paper>/<experiment>.yaml`` (the file name must be the experiment id)."""
    return write_spec(directory, toy_run_spec_data(**overrides))


@pytest.fixture(scope="session")
def make_toy_spec() -> Callable[..., Path]:
    """``make_toy_spec(directory, **overrides)`` writes a toy spec and returns its path."""
    return write_toy_spec


@pytest.fixture
def toy_spec(tmp_path: Path) -> Path:
    """The default toy spec (4 chunks of 100 frames at smoke scale, 2 seeds) in a temporary directory."""
    return write_toy_spec(tmp_path / "specs")


def clean_env() -> dict[str, str]:
    """Environment for subprocesses: never a real tracking server, always the test's own sqlite store."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "RLREPRO_PROJECT")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="session")
def subprocess_env() -> dict[str, str]:
    """A copy of the environment without ``MLFLOW_TRACKING_URI`` (copy it again before changing it)."""
    return clean_env()


def metrics_without_wall_time(records: list[dict]) -> list[dict]:
    """Records with ``wall_time`` dropped and NaN replaced by a sentinel (NaN != NaN would fail equality)."""
    return [
        {k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items() if k != "wall_time"}
        for r in records
    ]


@pytest.fixture(scope="session")
def comparable_metrics() -> Callable[[list[dict]], list[dict]]:
    """Turns metric records into what two runs of the same spec, seed and scale must share exactly."""
    return metrics_without_wall_time
