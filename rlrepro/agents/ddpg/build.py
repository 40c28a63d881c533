"""``build_ddpg``: a DDPG spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.environments.availability import require_mujoco
from rlrepro.training.program import lockstep_program


def resolve_ddpg(agent: Any, env_spec: Any, *, frames: int, run: Any) -> DDPGConfig:
    """The one place a DDPG spec becomes its run's configuration (used by ``build_ddpg``)."""
    return DDPGConfig.from_spec(agent, total_steps=frames // env_spec.frames_per_step)


def build_ddpg(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """DDPG on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps."""
    from rlrepro.agents.ddpg.loop import HostDDPG

    require_mujoco(env_spec, "DDPG")
    return lockstep_program(HostDDPG(resolve_ddpg(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)
