"""``build_ddpg``: a DDPG spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

import math
from typing import Any

from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.dqn.build import seeds_of
from rlrepro.agents.vracer.build import write_random_score
from rlrepro.environments.errors import UnsupportedSetupError


def resolve_ddpg(agent: Any, env_spec: Any, *, frames: int, run: Any) -> DDPGConfig:
    """The one place a DDPG spec becomes its run's configuration (used by ``build_ddpg``)."""
    return DDPGConfig.from_spec(agent)


def build_ddpg(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """DDPG on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps."""
    from rlrepro.agents.ddpg.trainer import HostDDPG
    from rlrepro.agents.registry import TrainerProgram
    from rlrepro.agents.vracer.trainer import num_steps
    from rlrepro.environments.availability import require_backend

    require_backend(env_spec)
    if env_spec.kind != "mujoco":
        raise UnsupportedSetupError(f"DDPG on '{env_spec.kind}' environments is not implemented (use kind: mujoco)")
    total = num_steps(frames, env_spec)
    steps = min(run.updates_per_chunk, total)
    ddpg = HostDDPG(resolve_ddpg(agent, env_spec, frames=frames, run=run), env_spec)
    return TrainerProgram(
        lambda keys: ddpg.init(seeds_of(keys)), lambda state: ddpg.run(state, steps),
        math.ceil(total / steps), steps, steps * env_spec.frames_per_step,
        write_artifacts=lambda state, run_dirs: write_random_score(env_spec, run_dirs),
    )
