"""``build_ppo``: a PPO spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.ppo.config import PPOConfig
from rlrepro.environments.availability import require_mujoco
from rlrepro.training.program import lockstep_program


def resolve_ppo(agent: Any, env_spec: Any, *, frames: int, run: Any) -> PPOConfig:
    """The one place a PPO spec becomes its run's configuration (used by ``build_ppo``)."""
    return PPOConfig.from_spec(agent)


def build_ppo(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """PPO on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps (a
    rollout may span chunks), R_random written beside every run as for the ReF-ER agents."""
    from rlrepro.agents.ppo.loop import HostPPO

    require_mujoco(env_spec, "PPO")
    return lockstep_program(HostPPO(resolve_ppo(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)
