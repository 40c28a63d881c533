"""``build_vracer``: a V-RACER spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlrepro.agents.dqn.build import seeds_of
from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.training.program import TrainerProgram, step_chunks


def resolve_vracer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> VRacerConfig:
    """The one place a V-RACER spec becomes its run's configuration (used by ``build_vracer``)."""
    return VRacerConfig.from_spec(agent)


def build_vracer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """V-RACER on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps."""
    from rlrepro.agents.vracer.trainer import HostVRacer

    require_mujoco(env_spec, "V-RACER")
    return host_program(HostVRacer(resolve_vracer(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)


def require_mujoco(env_spec: Any, agent_name: str) -> None:
    """The ReF-ER agents train on MuJoCo tasks only: the backend must be there and the kind must be mujoco."""
    from rlrepro.environments.availability import require_backend

    require_backend(env_spec)
    if env_spec.kind != "mujoco":
        raise UnsupportedSetupError(f"{agent_name} on '{env_spec.kind}' environments is not implemented (use kind: mujoco)")


def host_program(host: Any, env_spec: Any, frames: int, run: Any) -> Any:
    """The runner's ``TrainerProgram`` of a ReF-ER host loop (V-RACER, DDPG, NAF): every seed in lockstep, a chunk
    of ``run.updates_per_chunk`` environment steps, R_random written beside every run."""

    chunks = step_chunks(frames, env_spec, run)
    return TrainerProgram(
        lambda keys: host.init(seeds_of(keys)), lambda state: host.run(state, chunks.updates_per_chunk),
        chunks.num_chunks, chunks.updates_per_chunk, chunks.frames_per_chunk,
        write_artifacts=lambda state, run_dirs: write_random_score(env_spec, run_dirs),
    )


def write_random_score(env_spec: Any, run_dirs: list[Path]) -> None:
    """R_random of the task (measured once per results folder, cached with provenance) beside every run.

    A run folder is ``<results>/<scale>/runs/<paper>/<experiment>/<variant>/<env>/seed<k>``: the cache is
    ``<results>/random_scores/`` (shared by the scales: the measurement does not depend on them).
    """
    from rlrepro.environments.mujoco import random_score

    record = random_score(env_spec, run_dirs[0].parents[6] / "random_scores")
    for run_dir in run_dirs:
        (run_dir / "random_score.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
