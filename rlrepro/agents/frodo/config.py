"""Hyper-parameters of FRODO (Xu et al. 2020), one documented field each; built from ``FrodoAgentSpec``.

Paper values: App. A.1 (toys) and Table 1 (Atari); everything the paper leaves open is an explicit
field whose default is marked "ours" in the spec (notes §5 item 8).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.frodo import FrodoAgentSpec
from rlrepro.training.optim import OptimizerConfig
from rlrepro.training.program import ChunkPlan, update_chunks

META_INPUTS: tuple[str, ...] = ("reward", "discount", "v_next", "observation", "pi_a", "mu_a", "torso")


#: Where ``FrodoConfig``'s fields live in ``FrodoAgentSpec`` when not at its top level under the same name: their
#: defaults come from there (``defaults_from``) and ``frodo_config`` reads them there (``spec_values``).
SPEC_PATHS = {
    "meta_hidden_size": "meta_network.hidden_size",
    "meta_inputs": "meta_network.inputs",
    "parameterises": "meta_network.parameterises",
    "outer": "outer.kind",
    "vtrace_lambda": "outer.trace_lambda",
    "rho_bar": "outer.rho_bar",
    "pg_rho_bar": "outer.pg_rho_bar",
    "temperature": "outer.temperature",
    "consistency_weight": "consistency.weight",
    "consistency_form": "consistency.form",
    "listing_offbyone": "consistency.listing_offbyone",
}


@dataclasses.dataclass(frozen=True)
@defaults_from(FrodoAgentSpec, SPEC_PATHS)
class FrodoConfig:
    """Everything FRODO's learner and loop need; frozen (hashable, closed over by jit).

    Attributes:
      task: "prediction" (eq. 8; value network only) or "actor_critic" (eq. 10).
      network: "tabular", "mlp" or "frodo_conv" (the agent's network kind).
      hidden_sizes: MLP widths (Catch: 256, 256).
      conv_channels, conv_kernels, conv_strides, conv_fc_size: the two-conv torso of Table 1.
      optimizer: the agent's inner optimiser (differentiated through).
      meta_optimizer: the meta-network's optimiser.
      meta_hidden_size: LSTM width of g_eta.
      meta_inputs: names of g_eta's per-step inputs, a subset of ``META_INPUTS``.
      parameterises: "target" (FRODO) or "loss" (ablation, Fig. 3b).
      target: "meta_network" (FRODO) or "vtrace" (the IMPALA baseline: inner target = V-trace, no meta step).
      target_grad: "semi" (G constant w.r.t. theta in the inner update) or "full" (listings as printed).
      inner_steps: M.
      unroll_length: T of an inner trajectory.
      batch_size: B, trajectories per inner batch.
      discount: gamma.
      baseline_cost: weight of 0.5 * sum (G - v)^2.
      entropy_cost: weight of the entropy bonus.
      reward_clip: clip rewards to [-c, c]; None: no clipping.
      outer: "td1", "monte_carlo" or "vtrace".
      outer_unroll_length: steps of the validation batch.
      vtrace_lambda, rho_bar, pg_rho_bar, temperature: the outer V-trace loss (C.5).
      consistency_weight, consistency_form, listing_offbyone: the consistency loss (eq. 13, C.4).
      meta_unroll: time steps of g_eta's LSTM unrolled per loop iteration (speed only, same maths); None: the
        whole trajectory unrolled (fastest for the toys' 3-16 steps); 1: a plain scan (Atari's 30 steps: with
        the conv agent, full unrolling made the meta-update compile ~4x slower and run ~2x slower).
    """

    task: Literal["prediction", "actor_critic"]
    optimizer: OptimizerConfig
    meta_optimizer: OptimizerConfig
    meta_hidden_size: int
    meta_inputs: tuple[str, ...]
    unroll_length: int
    batch_size: int
    discount: float
    outer: Literal["td1", "monte_carlo", "vtrace"]
    network: Literal["tabular", "mlp", "frodo_conv"] = "mlp"
    hidden_sizes: tuple[int, ...] = (256, 256)
    conv_channels: tuple[int, ...] = (32, 64)
    conv_kernels: tuple[int, ...] = (4, 4)
    conv_strides: tuple[int, ...] = (4, 4)
    conv_fc_size: int | None = None
    parameterises: Literal["target", "loss"]
    target: Literal["meta_network", "vtrace"]
    target_grad: Literal["semi", "full"]
    inner_steps: int
    baseline_cost: float
    entropy_cost: float
    reward_clip: float | None
    outer_unroll_length: int | None = None
    vtrace_lambda: float
    rho_bar: float
    pg_rho_bar: float
    temperature: float
    consistency_weight: float
    consistency_form: Literal["n_step", "one_step"]
    listing_offbyone: bool
    meta_unroll: int | None = None

    def __post_init__(self) -> None:
        problems = []
        unknown = sorted(set(self.meta_inputs) - set(META_INPUTS))
        if unknown or not self.meta_inputs:
            problems.append(f"meta_inputs must be a non-empty subset of {META_INPUTS}, got {self.meta_inputs}")
        if self.task == "prediction":
            if {"pi_a", "mu_a", "torso"} & set(self.meta_inputs):
                problems.append("prediction has no policy or torso: meta_inputs pi_a, mu_a, torso need actor_critic")
            if self.outer != "td1":
                problems.append(f"prediction supports outer 'td1' only, got {self.outer!r}")
            if self.parameterises != "target" or self.target != "meta_network":
                problems.append("prediction supports parameterises 'target' and target 'meta_network' only")
        if self.task == "actor_critic" and self.outer == "td1":
            problems.append("actor_critic needs outer 'monte_carlo' or 'vtrace'")
        if self.network == "tabular" and self.task != "prediction":
            problems.append("a tabular network has no policy: use it with task 'prediction'")
        for name in ("inner_steps", "unroll_length", "batch_size", "meta_hidden_size"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if problems:
            raise ValueError("invalid FrodoConfig: " + "; ".join(problems))

    @property
    def validation_length(self) -> int:
        """Steps of the validation (outer) batch."""
        return self.outer_unroll_length or self.unroll_length

    @property
    def frames_per_meta_update(self) -> int:
        """Environment steps of one meta-update: M inner batches plus the validation batch (notes §5 item 9)."""
        return (self.inner_steps * self.unroll_length + self.validation_length) * self.batch_size

    @property
    def agent_updates_per_meta_update(self) -> int:
        """Agent (inner) optimiser steps per counted update: M, or M + 1 for the IMPALA baseline, which also
        learns from the validation batch instead of discarding it."""
        return self.inner_steps + (0 if self.meta_learning else 1)

    @property
    def meta_learning(self) -> bool:
        """Whether eta is learned (False for the V-trace IMPALA baseline)."""
        return self.target == "meta_network"


def frodo_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
    """FRODO: one meta-update consumes M inner batches and the validation batch (FrodoConfig.frames_per_meta_update,
    which ``resolve_frodo`` checks against this)."""
    validation = agent.outer.unroll_length or agent.unroll_length
    if agent.outer.kind == "monte_carlo" and agent.outer.unroll_length is None and env_spec.kind == "jax":
        # Derived from the environment (Catch's rows), which only its JAX module knows: a spec that leaves it null
        # costs planning that import (elsewhere ``frodo_config`` refuses a Monte Carlo outer loss).
        from rlrepro.environments.jax_envs import make_jax_env

        validation = monte_carlo_episode_length(agent, make_jax_env(env_spec.name, **env_spec.kwargs), env_spec.id)
    steps = (agent.inner_steps * agent.unroll_length + validation) * agent.batch_size
    return update_chunks(frames, steps * env_spec.frames_per_step, run)


def monte_carlo_episode_length(agent: Any, env: Any, env_id: str) -> int:
    """The validation batch's length for a Monte Carlo outer loss: exactly one whole episode (Catch §4).

    The outer return sums the rewards of freshly reset episodes up to ``outer.unroll_length`` steps: fewer
    steps truncate the episodes (a return with no reward in Catch), more run into the next episode. Catch
    episodes last ``rows - 1`` steps, so the length is derived from the grid when ``outer.unroll_length`` is
    null and checked against it when set.
    """
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.environments.jax_envs import Catch

    if not isinstance(env, Catch):
        raise UnsupportedSetupError(
            f"agent.outer.kind 'monte_carlo' needs episodes of one fixed length (Catch); '{env_id}' has none"
        )
    length, chosen = env.rows - 1, agent.outer.unroll_length
    if chosen is not None and chosen != length:
        effect = "truncate" if chosen < length else "run past the end of"
        raise UnsupportedSetupError(
            f"agent.outer.unroll_length {chosen} would {effect} the Monte Carlo validation episodes of '{env_id}': "
            f"Catch with rows {env.rows} ends after rows - 1 = {length} steps; set it to {length} or null (derived)"
        )
    return length
