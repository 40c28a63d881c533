"""``build_acer``: an ACER spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.acer.config import ACERConfig
from rlrepro.environments.availability import require_mujoco
from rlrepro.training.program import lockstep_program


def resolve_acer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ACERConfig:
    """The one place an ACER spec becomes its run's configuration (used by ``build_acer``)."""
    return ACERConfig.from_spec(agent)


def build_acer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """ACER on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps,
    R_random written beside every run as for the ReF-ER agents."""
    from rlrepro.agents.acer.loop import HostACER

    require_mujoco(env_spec, "ACER")
    return lockstep_program(HostACER(resolve_acer(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)
