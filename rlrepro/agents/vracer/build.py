"""``build_vracer``: a V-RACER spec and a MuJoCo environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.environments.availability import require_mujoco
from rlrepro.training.program import lockstep_program


def resolve_vracer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> VRacerConfig:
    """The one place a V-RACER spec becomes its run's configuration (used by ``build_vracer``)."""
    return VRacerConfig.from_spec(agent)


def build_vracer(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """V-RACER on one MuJoCo task, every seed of the job in lockstep; chunk = ``run.updates_per_chunk`` env steps."""
    from rlrepro.agents.vracer.loop import HostVRacer

    require_mujoco(env_spec, "V-RACER")
    return lockstep_program(HostVRacer(resolve_vracer(agent, env_spec, frames=frames, run=run), env_spec), env_spec, frames, run)
