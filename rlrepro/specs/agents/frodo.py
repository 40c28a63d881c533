"""FRODO agent spec (Xu et al. 2020): online meta-gradient learning of the update target."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel, MLPNetworkSpec, RMSPropSpec
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.specs.common import PositiveCount, SpecModel

MetaInput = Literal["reward", "discount", "v_next", "observation", "pi_a", "mu_a", "torso"]


class TabularNetworkSpec(SpecModel):
    """One value per state: a linear map without bias on one-hot observations, initialised to 0 (random walk)."""

    kind: Literal["tabular"] = Field(description="Network kind.")


class TwoConvNetworkSpec(SpecModel):
    """FRODO's Atari torso (Table 1): two conv layers, ReLU, flattened, then linear policy and value heads."""

    kind: Literal["frodo_conv"] = Field(description="Network kind.")
    channels: list[PositiveCount] = Field(default_factory=lambda: [32, 64], description="Channels (Table 1: 32, 64).")
    kernel_sizes: list[PositiveCount] = Field(default_factory=lambda: [4, 4], description="Kernel sizes (Table 1: 4, 4).")
    strides: list[PositiveCount] = Field(default_factory=lambda: [4, 4], description="Strides (Table 1: 4, 4).")
    fc_size: PositiveCount | None = Field(
        None, description="Width of a ReLU layer after the convs (not in the paper; ours: null = heads on the convs)."
    )


FrodoNetworkSpec = Annotated[
    Union[TabularNetworkSpec, MLPNetworkSpec, TwoConvNetworkSpec], Field(discriminator="kind")
]


class MetaNetworkSpec(SpecModel):
    """The meta-network g_eta: an LSTM run in reverse time over the trajectory, one scalar per step (§3.2, App. A)."""

    hidden_size: PositiveCount = Field(description="LSTM width (Catch 256, random walk 32; Atari: not given).")
    inputs: list[MetaInput] = Field(
        min_length=1,
        description=(
            "Per-step inputs: reward R_{t+1}, discount gamma_{t+1}, v_next v(S_{t+1}), observation S_t (one-hot on "
            "the random walk, listing C.2), pi_a / mu_a (probabilities of the taken action), torso (the agent's "
            "embedding of S_t, listing C.4). Catch control variant without bootstrapping: [reward, discount]."
        ),
    )
    parameterises: Literal["target", "loss"] = Field(
        "target",
        description=(
            "target: g_eta outputs the target G (the paper's method); loss: g_eta outputs a per-step loss whose "
            "gradient is the update (the ablation of Fig. 3b; inputs then also see v(S_t) and log pi(A_t|S_t) with gradient)."
        ),
    )


class ConsistencySpec(SpecModel):
    """The consistency loss (§5.2, eq. 13, listing C.4), added to the outer loss; trains only eta."""

    weight: float = Field(0.0, ge=0, description="c (Atari §5.3: 0.1; 0 turns it off; the toys do not use it).")
    form: Literal["n_step", "one_step"] = Field(
        "n_step", description="n_step: the listing's to-end-of-trajectory form (default); one_step: eq. 13 as printed."
    )
    listing_offbyone: bool = Field(
        False, description="Reproduce listing C.4's off-by-one bootstrap exactly (notes §5 item 2); default: corrected."
    )


class OuterLossSpec(SpecModel):
    """The outer (validation) loss on the (M+1)-th batch (eqs. 7, 9, 11)."""

    kind: Literal["td1", "monte_carlo", "vtrace"] = Field(
        description=(
            "td1: the trajectory's return bootstrapped from its last value (random walk, eq. 9, C.2); monte_carlo: "
            "the return of complete episodes from freshly reset environments (Catch §4); vtrace: IMPALA's loss (Atari, C.5)."
        )
    )
    unroll_length: PositiveCount | None = Field(
        None,
        description="Steps of the validation batch (monte_carlo: the episode length, Catch 6x11: 5); null: the inner unroll length.",
    )
    trace_lambda: float = Field(1.0, ge=0, le=1, description="V-trace lambda (not given; ours: 1 = rlax default).")
    rho_bar: float = Field(1.0, gt=0, description="V-trace rho-bar (not given; ours: 1).")
    pg_rho_bar: float = Field(1.0, gt=0, description="V-trace pg rho-bar (not given; ours: 1).")
    temperature: float = Field(1.0, gt=0, description="Softmax temperature of the outer policy (C.5; not given; ours: 1).")


class FrodoAgentSpec(AgentSpecModel):
    """FRODO: M inner updates towards G_eta, then a meta-gradient step on eta from the outer loss (Xu et al. 2020)."""

    kind: Literal["frodo"] = Field(description="Agent kind.")
    fixed_fields: ClassVar[dict[str, str]] = {
        "optimizer.eps_in_sqrt": "true: FRODO differentiates through RMSProp",
        "meta_optimizer.eps_in_sqrt": "true: FRODO differentiates through RMSProp",
    }
    task: Literal["prediction", "actor_critic"] = Field(
        description="prediction: learn v towards G (eq. 8; random walk); actor_critic: eq. 10 (Catch, Atari)."
    )
    network: FrodoNetworkSpec = Field(description="The agent's network.")
    optimizer: RMSPropSpec = Field(description="The agent's (inner) optimiser, differentiated through.")
    meta_optimizer: RMSPropSpec = Field(description="The meta-network's optimiser.")
    meta_network: MetaNetworkSpec = Field(description="The meta-network g_eta.")
    target: Literal["meta_network", "vtrace"] = Field(
        "meta_network",
        description="meta_network: FRODO; vtrace: the IMPALA baseline on the same code path (inner target = V-trace, no meta-learning).",
    )
    target_grad: Literal["semi", "full"] = Field(
        "semi",
        description=(
            "semi: G is constant w.r.t. the agent in the inner update (eqs. 8/10; theta-dependent meta inputs are "
            "computed outside the inner grad, notes §5 item 1); full: the listings as printed (gradient through G)."
        ),
    )
    inner_steps: PositiveCount = Field(5, description="M inner updates per meta-update (App. A: 5).")
    unroll_length: PositiveCount = Field(description="Steps per inner trajectory (Catch 3, random walk 16, Atari 30).")
    batch_size: PositiveCount = Field(description="Trajectories per inner batch (random walk 1, Atari 30; Catch: ours 32).")
    discount: float = Field(ge=0, le=1, description="Discount gamma (not given; ours: 1 on the toys, 0.99 on Atari).")
    baseline_cost: float = Field(0.5, ge=0, description="Weight of 0.5 * sum (G - v)^2 (Table 1: 0.5).")
    entropy_cost: float = Field(0.01, ge=0, description="Weight of the entropy bonus (Table 1: 0.01).")
    reward_clip: float | None = Field(None, gt=0, description="Clip rewards to [-c, c] (Atari: 1, an assumption); null: none.")
    outer: OuterLossSpec = Field(description="The outer loss.")
    consistency: ConsistencySpec = Field(default_factory=ConsistencySpec, description="The consistency loss.")
    actor: ActorSpec = Field(
        default_factory=ActorSpec,
        description=(
            "Acting on Atari (IMPALA's actors): threaded actors give the learner M + 1 batches from the queue (their "
            "policy lag is logged); sync acts with the latest meta-updated parameters (lag 0, deterministic). "
            "Unused on pure-JAX tasks, which act inside the jitted meta-update."
        ),
    )

    @model_validator(mode="after")
    def _differentiable_optimisers(self) -> "FrodoAgentSpec":
        for name in ("optimizer", "meta_optimizer"):
            if not getattr(self, name).eps_in_sqrt:
                raise ValueError(
                    f"{name}.eps_in_sqrt: FRODO differentiates through RMSProp, which needs eps inside the square "
                    "root (NaN gradients otherwise): it must be true"
                )
        return self
