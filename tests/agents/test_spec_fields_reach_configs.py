"""Every field of every agent spec model reaches its agent's run configuration, or validation rejects it.

The rule (issue 11 item 2): an agent's configuration is derived from its spec in one place, the function
registered as ``AgentEntry.config`` (its builder uses it), and nothing in a spec is silently ignored. For
every registered agent kind, the walk starts from agents of the real spec files (one per network, outer
loss or environment kind the agent has), visits every leaf field of the spec model recursively, changes it
to the first value the spec model accepts, and checks that the resolved configuration changes. A field an
agent cannot honour at all is listed in ``rlrepro.specs.agents.FIXED_FIELDS``; changing it must then be a
validation error naming the field.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from rlrepro.agents.registry import AGENTS, resolve_config
from rlrepro.specs import load_spec
from rlrepro.specs.agents import AGENT_KINDS, FIXED_FIELDS, AgentSpec
from rlrepro.specs.experiment import RunSpec
from rlrepro.specs.loading import resolve_agent, resolve_env

ADAPTER = TypeAdapter(AgentSpec)
RUN = RunSpec(updates_per_chunk=5)
FRAMES = 1_000_000

# (spec file, environment id): one base agent per network kind, outer loss and environment kind. The agent
# is the first variant of the file whose agent has the kind (at the paper scale).
BASES: dict[str, list[tuple[str, str | None]]] = {
    "impala": [
        ("specs/impala/atari57_shallow.yaml", "pong"),  # conv, feed-forward, Atari actors
        ("specs/impala/atari57_deep.yaml", "pong"),
        ("specs/impala/offpolicy_correction_toy.yaml", "catch"),  # mlp on a pure-JAX task
        ("specs/impala/atari57_multitask.yaml", "pong"),  # multi-task mode with PBT (full action set)
    ],
    "frodo": [
        ("specs/frodo/atari57.yaml", "pong"),  # frodo_conv, V-trace outer loss, Atari actors
        ("specs/frodo/catch.yaml", "catch"),  # mlp, Monte Carlo outer loss
        ("specs/frodo/random_walk.yaml", "random_walk"),  # tabular, prediction, TD(1) outer loss
    ],
    "td_lambda": [("specs/frodo/random_walk.yaml", "random_walk")],
    "dqn": [
        ("specs/evolving_rl/eval_classic_minigrid.yaml", "cartpole"),  # mlp on gymnasium
        ("specs/evolving_rl/eval_atari.yaml", "asteroids"),  # the conv Q-network on Atari
    ],
    "loss_search": [("specs/evolving_rl/search_dqnreg.yaml", None)],
    "impala_sr": [
        ("specs/synthetic_returns/chain.yaml", "chain"),  # mlp on a pure-JAX task
        ("specs/synthetic_returns/pong.yaml", "pong"),  # the Atari ConvNet + LSTM, RMSProp, Atari actors
        ("specs/synthetic_returns/skiing.yaml", "skiing"),  # Adam, two-stage loss, the LSTM current state
    ],
    "vracer": [("specs/refer/mujoco_vracer.yaml", None)],
    "ddpg": [("specs/refer/mujoco_ddpg.yaml", None)],
    "naf": [("specs/refer/mujoco_naf.yaml", None)],
    "ppo": [("specs/refer/mujoco_baselines.yaml", None)],
    "acer": [("specs/refer/mujoco_baselines.yaml", None)],
}


# Changes validation only accepts together with another field's (the spec says why): the walk makes both.
COMPANIONS: dict[str, dict[str, dict[tuple[str, ...], Any]]] = {
    "impala_sr": {"sr.enabled": {("sr", "alpha"): 0.0}},  # the baseline (enabled: false) must have alpha 0
    "ddpg": {"per": {("rules", "variant"): "per"}},  # rank-based PER's block goes with its variant only
    "naf": {"per": {("rules", "variant"): "per"}},
}


def _base(kind: str, path: str, env_id: str | None) -> tuple[Any, Any]:
    spec = load_spec(path)
    agents = [resolve_agent(spec, v, "paper") for v in spec.variant_list()]
    env = resolve_env(spec, env_id or spec.environments[0].id, "paper")
    return next(a for a in agents if a.kind == kind), env


def _leaves(model: BaseModel, prefix: tuple[str, ...] = (), union_kind: bool = True) -> list[tuple[tuple[str, ...], Any]]:
    """(path, field annotation) of every leaf field; the ``kind`` that selects a union member is not a leaf
    (other members are walked from other bases)."""
    out = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if name == "kind" and union_kind:
            continue
        if isinstance(value, BaseModel):
            out += _leaves(value, (*prefix, name), union_kind=info.discriminator is not None)
        else:
            out.append(((*prefix, name), info.annotation))
    return out


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _without_none(annotation: Any) -> list[Any]:
    if not _is_union(annotation):
        return [annotation]
    return [a for a in typing.get_args(annotation) if a is not type(None)]


def _base_type(annotation: Any) -> Any:
    """int/float/bool/str/list/dict/Literal behind Annotated and Optional."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _candidates(value: Any, annotation: Any, env_id: str) -> list[Any]:
    """New values to try for a leaf, most plausible first."""
    options: list[Any] = []
    optional = _is_union(annotation) and type(None) in typing.get_args(annotation)
    if value is not None and optional:
        options.append(None)
    for kind in map(_base_type, _without_none(annotation)):
        origin = typing.get_origin(kind)
        if origin is typing.Literal:
            options += [v for v in typing.get_args(kind) if v != value]
        elif kind is bool:
            options.append(not value)
        elif kind is int:
            options += [7, 256] if value is None else [value + 1, value * 2, value - 1]
        elif kind is float:
            options += [0.5, 40.0, 0.05] if value is None else [value * 0.5, value + 0.05, value - 0.05, value * 2, 0.5]
        elif kind is str:
            options.append("tcp://127.0.0.1:8786")
        elif origin is list:
            (item,) = typing.get_args(kind)
            options += _list_candidates(value, _base_type(item))
        elif isinstance(kind, type) and issubclass(kind, BaseModel) and value is None:
            options.append({})  # an optional section switched on with its defaults (e.g. impala's multitask)
        elif origin is dict:
            options.append({**(value or {}), env_id: 777})  # a per-environment setting for this environment
            if value:
                options.append({k: v + 1 for k, v in value.items()})  # (a suite's members have their own ids)
    return options


def _list_candidates(value: list | None, item: Any) -> list[Any]:
    if typing.get_origin(item) is typing.Literal:
        names = list(typing.get_args(item))
        return [value[:-1], value + [n for n in names if n not in value][:1]] if value else [names[:2]]
    if item is str:  # operator names of the loss search
        from rlrepro.search.ops import SEARCHABLE

        return [value[:-1]] if value else [list(SEARCHABLE)[:6]]
    if item is float:
        return [value[:-1], value + [0.3], [x * 0.5 for x in value]]  # the last keeps a fixed length (a range)
    return [[x + 1 for x in value], value[:-1], value + [value[-1]]]


def _with(data: dict, path: tuple[str, ...], value: Any) -> dict:
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def _walk(agent: Any, env: Any) -> list[str]:
    """Problems: fields whose every accepted change leaves the resolved configuration unchanged, fixed fields
    that validation accepts, and fields the walk could not change at all."""
    base_config = resolve_config(agent, env, frames=FRAMES, run=RUN)
    data = agent.model_dump(mode="json")
    fixed = FIXED_FIELDS.get(agent.kind, {})
    problems = []
    for path, annotation in _leaves(agent):
        dotted = ".".join(path)
        value = data
        for key in path:
            value = value[key]
        accepted, rejected, outcome = [], [], None
        for candidate in _candidates(value, annotation, env.id):
            changed_data = _with(data, path, candidate)
            for companion, companion_value in COMPANIONS.get(agent.kind, {}).get(dotted, {}).items():
                changed_data = _with(changed_data, companion, companion_value)
            try:
                changed = ADAPTER.validate_json(json.dumps(changed_data))
            except ValidationError as error:
                rejected.append(str(error))
                continue
            try:
                config = resolve_config(changed, env, frames=FRAMES, run=RUN)
            except (ValueError, TypeError) as error:  # UnsupportedSetupError is a ValueError
                rejected.append(f"at build: {error}")
                continue
            accepted.append(candidate)
            if config != base_config:
                outcome = "reaches"
                break
        if outcome is None and any(r.startswith("at build:") for r in rejected):
            # Resolution refused a change of this field alone, so it reads the field (the value conflicts with
            # another field, e.g. task with outer.kind, or is fixed by the environment, e.g. Catch's Monte Carlo
            # length); changes it accepted were equivalent spellings (null = derived).
            outcome = "read"
        if not rejected and not accepted and typing.get_origin(_base_type(annotation)) is typing.Literal:
            continue  # a single-valued Literal (e.g. optimizer.kind: rmsprop) is a constant, nothing to change
        if dotted in fixed:
            if accepted or not any(path[-1] in r for r in rejected):
                problems.append(f"{dotted}: declared fixed ({fixed[dotted]}) but a change was accepted: {accepted}")
        elif outcome is None:
            why = f"accepted {accepted} without effect" if accepted else f"no accepted change ({rejected[:1]})"
            problems.append(f"{dotted}: {why}")
    return problems


def test_the_walk_covers_every_registered_agent_kind():
    assert set(BASES) == set(AGENTS) == set(AGENT_KINDS)


@pytest.mark.parametrize(
    "kind,path,env_id", [(kind, *base) for kind, bases in BASES.items() for base in bases],
    ids=lambda x: str(x).rsplit("/", 1)[-1] if x else "-",
)
def test_every_agent_spec_field_changes_the_resolved_config(kind, path, env_id):
    agent, env = _base(kind, path, env_id)
    assert _walk(agent, env) == []


def test_the_walk_catches_a_dropped_field(monkeypatch):
    """The walk itself: a derivation that ignores ``optimizer.initial_scale`` (as IMPALA's did) is reported."""
    import dataclasses

    import rlrepro.agents.impala.build as impala_trainer

    original = impala_trainer.impala_config
    monkeypatch.setattr(
        impala_trainer, "impala_config",
        lambda agent, total_updates: dataclasses.replace(original(agent, total_updates), rmsprop_initial_scale=1.0),
    )  # fmt: skip
    agent, env = _base("impala", *BASES["impala"][0])
    assert [p.split(":")[0] for p in _walk(agent, env)] == ["optimizer.initial_scale"]
