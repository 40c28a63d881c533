"""Pieces shared by agent specs: optimisers and networks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

    learning: bool = Field(
        True,
        description="Whether the learning step changes the parameters. false: the control arm (the plan makes one "
        "per variant a claim reads, `<variant>@frozen`): every optimiser emits zero updates, so the parameters stay "
        "at their initialisation while acting, exploration, memory, schedules and metrics run as in training (PBT "
        "still explores and copies). Left out of the config hash while true.",
    )

    @classmethod
    def kind_name(cls) -> str:
        """The ``kind`` this model is selected by."""
        return get_args(cls.model_fields["kind"].annotation)[0]


def defaults_from(spec_model: type[BaseModel], paths: Mapping[str, str] | None = None) -> Any:
    """A class decorator (under ``@dataclasses.dataclass``) for an agent's configuration: each of its fields found in
    ``spec_model`` takes that field's default (a list as a tuple), so that a default lives in one place, the spec
    model, beside the paper's source in its description. A field is found under its own name at the spec's top
    level, or at the dotted path ``paths`` gives it (``{"rmsprop_decay": "optimizer.decay"}``: a nested block's
    field, or one the configuration names differently). Every field found is listed on the class (``SPEC_PATHS``:
    name -> path) for :func:`spec_values`. A config that gives such a field a default of its own is an error, and so
    is a path that names no field of the spec model."""

    def decorate(cls: type) -> type:
        table = dict(paths or {})
        names = vars(cls).get("__annotations__", {})
        if unknown := set(table) - set(names):
            raise TypeError(f"{cls.__name__}: paths for fields it does not have: {', '.join(sorted(unknown))}")
        found = {}
        for name in names:
            path = table.get(name, name)
            field = _spec_field(spec_model, path)
            if field is None or _is_block(field.annotation):  # a block (optimizer, network): the config derives it
                if name in table:
                    raise TypeError(f"{cls.__name__}.{name}: {spec_model.__name__} has no field '{path}'")
                continue
            found[name] = path
            default = field.get_default(call_default_factory=True)
            if default is PydanticUndefined or isinstance(default, BaseModel):
                continue
            if name in vars(cls):
                raise TypeError(f"{cls.__name__}.{name}: its default belongs to {spec_model.__name__}.{path} alone")
            setattr(cls, name, tuple(default) if isinstance(default, list) else default)
        cls.SPEC_PATHS = found
        return cls

    return decorate


def _spec_field(model: type[BaseModel], path: str) -> Any:
    """The pydantic field at a dotted path of ``model`` (through nested blocks of one model class), or None."""
    *blocks, name = path.split(".")
    for block in blocks:
        field = model.model_fields.get(block)
        annotation = None if field is None else field.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model.model_fields.get(name)


def _is_block(annotation: Any) -> bool:
    """Whether a spec field holds a nested model (or a union of them), not a value a configuration takes as is."""
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_is_block(arg) for arg in get_args(annotation))


def spec_values(config_cls: type, spec: BaseModel, *, omit: Iterable[str] = ()) -> dict[str, Any]:
    """The value in ``spec`` of every field of a configuration that ``defaults_from`` found in its spec model (a list
    as a tuple), but those in ``omit``: what ``resolve_<kind>`` passes on unchanged (it adds the fields it derives).

    Raises:
        AttributeError: ``spec`` lacks one of them (a spec of another kind: ``omit`` what it does not have).
    """
    values = {}
    for name, path in config_cls.SPEC_PATHS.items():
        if name in omit:
            continue
        value: Any = spec
        for part in path.split("."):
            if part not in type(value).model_fields:
                raise AttributeError(f"{type(spec).__name__} has no '{path}' for {config_cls.__name__}.{name}")
            value = getattr(value, part)
        values[name] = tuple(value) if isinstance(value, list) else value
    return values


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
