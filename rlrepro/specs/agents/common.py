"""Pieces shared by agent specs: optimisers and networks."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined

from rlrepro.specs.common import PositiveCount, SpecModel


class AgentSpecModel(SpecModel):
    """The base of every agent kind's spec model, which says here, beside its fields, what the layers above need to
    know of the kind (``rlrepro.specs.agents.AGENT_SPECS`` lists the models; the trainer is registered in
    ``rlrepro.agents.registry``):

    - ``fixed_fields``: fields the kind cannot honour at any value but one (dotted path -> the value and why); the
      model's validators reject other values, and ``tests/agents/test_spec_fields_reach_configs.py`` skips them.
    - ``null_additions``: blocks added after runs had finished; when null they are left out of the config hash,
      so the runs made before them keep their hashes (``rlrepro.workflow.config_hash``).
    - ``cpu_only``: its jobs never use an accelerator (``rlrepro.cluster``).
    """

    fixed_fields: ClassVar[dict[str, str]] = {}
    null_additions: ClassVar[frozenset[str]] = frozenset()
    cpu_only: ClassVar[bool] = False

    @classmethod
    def kind_name(cls) -> str:
        """The ``kind`` this model is selected by."""
        return get_args(cls.model_fields["kind"].annotation)[0]


def defaults_from(spec_model: type[BaseModel]) -> Any:
    """A class decorator (under ``@dataclasses.dataclass``) for an agent's configuration: each of its fields named
    as a field of ``spec_model`` takes that field's default (a list as a tuple), so that a default lives in one
    place, the spec model, beside the paper's source in its description. A config that gives such a field a
    default of its own is an error."""

    def decorate(cls: type) -> type:
        for name in vars(cls).get("__annotations__", {}):
            field = spec_model.model_fields.get(name)
            if field is None:
                continue
            default = field.get_default(call_default_factory=True)
            if default is PydanticUndefined or isinstance(default, BaseModel):
                continue
            if name in vars(cls):
                raise TypeError(f"{cls.__name__}.{name}: its default belongs to {spec_model.__name__}.{name} alone")
            setattr(cls, name, tuple(default) if isinstance(default, list) else default)
        return cls

    return decorate


class RMSPropSpec(SpecModel):
    """RMSProp as IMPALA used it (TF1 semantics: eps inside the square root, accumulator starts at 1)."""

    kind: Literal["rmsprop"] = Field("rmsprop", description="Optimiser kind.")
    learning_rate: float = Field(gt=0, description="Initial learning rate (Table G.1: 0.0006 on Atari).")
    decay: float = Field(0.99, ge=0, lt=1, description="Second-moment decay (released code 0.99; not in the paper).")
    epsilon: float = Field(gt=0, description="Epsilon regulariser (Table G.1: 0.01 on Atari).")
    momentum: float = Field(0.0, ge=0, lt=1, description="Momentum (Tables D.3/G.1: 0).")
    eps_in_sqrt: bool = Field(True, description="TF1 semantics: eps inside the square root (PyTorch: outside).")
    initial_scale: float = Field(1.0, ge=0, description="Initial second-moment accumulator (TF1: 1.0, PyTorch: 0.0).")
    max_grad_norm: float | None = Field(
        None, gt=0, description="Clip the global gradient norm to this value (Table G.1: 40 on Atari); null: no clipping."
    )
    lr_schedule: Literal["linear_to_zero", "constant"] = Field(
        "linear_to_zero", description="Learning-rate schedule over the run's budget (Table G.1: anneal linearly to 0)."
    )


class MLPNetworkSpec(SpecModel):
    """A feed-forward actor-critic for vector or small-grid observations."""

    kind: Literal["mlp"] = Field("mlp", description="Network kind.")
    hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [64, 64], min_length=1, description="Widths of the ReLU hidden layers."
    )


class ConvNetworkSpec(SpecModel):
    """IMPALA's image networks (Fig. 3): shallow (A3C-style convs) or deep (3 residual stages), optional LSTM."""

    kind: Literal["impala_shallow", "impala_deep"] = Field(description="Torso: shallow conv net or deep ResNet.")
    shallow_torso: Literal["a3c_2conv", "nature_3conv"] = Field(
        "a3c_2conv",
        description="Shallow torso: the A3C 2-conv net (default, notes ambiguity 1) or the Nature-DQN 3-conv net.",
    )
    channels: list[PositiveCount] = Field(
        default_factory=lambda: [16, 32, 32], description="Deep torso: channels of the residual stages."
    )
    fc_size: PositiveCount = Field(256, description="Width of the fully connected layer after the torso.")
    lstm_size: PositiveCount | None = Field(None, description="LSTM core width (256 on DMLab); null: feed-forward.")
    last_action_reward_inputs: bool = Field(
        False, description="Feed the clipped last reward and one-hot last action to the core (DMLab: yes)."
    )


NetworkSpec = Annotated[Union[MLPNetworkSpec, ConvNetworkSpec], Field(discriminator="kind")]
