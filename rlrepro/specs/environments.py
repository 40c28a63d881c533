"""Environment specs: one model per backend, selected by ``kind``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from rlrepro.specs.common import Name, SpecModel


class JaxEnvSpec(SpecModel):
    """A pure-JAX environment of ``rlrepro.environments.jax_envs`` (whole runs jit and vmap over seeds)."""

    kind: Literal["jax"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    name: Literal["catch", "cartpole"] = Field(description="Environment in rlrepro.environments.jax_envs.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Constructor arguments (e.g. rows, columns).")
    frames_per_step: int = Field(1, ge=1, description="Frames counted per agent step (no action repeat for toy tasks).")


class DmlabEnvSpec(SpecModel):
    """A DeepMind Lab level. DeepMind Lab cannot be installed from the package registries: such runs fail at once."""

    kind: Literal["dmlab"] = Field(description="Backend kind.")
    id: Name = Field(description="Short name used in folders and tables.")
    level: str = Field(description="DeepMind Lab level name, e.g. rooms_watermaze or contributed/dmlab30/...")
    action_repeat: int = Field(4, ge=1, description="Action repetitions (Table D.3: 4).")
    width: int = Field(96, ge=1, description="Observation width (Table D.3: 96).")
    height: int = Field(72, ge=1, description="Observation height (Table D.3: 72).")

    @property
    def frames_per_step(self) -> int:
        return self.action_repeat


EnvSpec = Annotated[Union[JaxEnvSpec, DmlabEnvSpec], Field(discriminator="kind")]
ENV_KINDS: tuple[str, ...] = ("jax", "dmlab")
