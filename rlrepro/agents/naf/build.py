"""``build_naf``: a NAF spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.naf.config import NAFConfig
from rlrepro.environments.availability import require_mujoco
from rlrepro.training.program import lockstep_program


def resolve_naf(agent: Any, env_spec: Any, *, frames: int, run: Any) -> NAFConfig:
    """The one place a NAF spec becomes its run's configuration (used by ``build_naf``)."""
    return NAFConfig.from_spec(agent, total_steps=frames // env_spec.frames_per_step)


def build_naf(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """NAF on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps."""
    from rlrepro.agents.naf.loop import HostNAF

    require_mujoco(env_spec, "NAF")
    return lockstep_program(HostNAF(resolve_naf(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)
