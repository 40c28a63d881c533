"""DQN agent spec (Evolving RL Algorithms, Co-Reyes et al. 2021, App. B) and the loss-search spec (§3)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel, MLPNetworkSpec, NetworkSpec
from rlrepro.specs.common import PositiveCount, SpecModel

# The one default scale of the (Q - Y)^2 term, used by the spec model, DQNConfig and every loss in
# rlrepro.losses.dqn: 1 = the paper's printed delta^2 (notes §5 item 1); the released graphs' L2Distance is 0.5.
DEFAULT_TD_SCALE = 1.0


class AdamSpec(SpecModel):
    """Adam (App. B: learning rate 1e-4 on every environment)."""

    kind: Literal["adam"] = Field("adam", description="Optimiser kind.")
    learning_rate: float = Field(1e-4, gt=0, description="Step size (App. B: 1e-4).")
    eps: float = Field(1e-8, gt=0, description="Adam epsilon (released code: Sonnet default 1e-8).")


class DQNLossSpec(SpecModel):
    """Which DQN-family loss (notes §1.5) and its constants."""

    name: Literal["dqn", "ddqn", "dqnreg", "dqnclipped"] = Field(description="Loss function.")
    td_scale: float = Field(
        DEFAULT_TD_SCALE,
        gt=0,
        description=(
            "Scale of the (Q - Y)^2 term, default 1 for every loss (dqn, ddqn, dqnreg, dqnclipped): 1 = the paper's "
            "printed delta^2 (notes §5 item 1), 0.5 = the "
            "released graphs' L2Distance. DQN's fixed point does not depend on it; DQNReg's does (9.5 vs 9.0 for r=1, gamma=0.9)."
        ),
    )
    k: float = Field(0.1, ge=0, description="DQNReg weight of Q(s, a) (§4.3: 0.1).")
    clip_gamma: Literal["per_transition", "constant"] = Field(
        "per_transition",
        description="DQNClipped's gamma in max(Q - Y, gamma M^2): gamma_t (graph's discount node; default) or the constant gamma (SB3 port).",
    )


class EpsilonGreedySpec(SpecModel):
    """Linear epsilon decay over environment steps (App. B)."""

    start: float = Field(1.0, ge=0, le=1, description="Initial epsilon.")
    end: float = Field(0.05, ge=0, le=1, description="Final epsilon (paper 0.05; released code 0.02; Atari 0.1).")
    decay_steps: PositiveCount = Field(1000, description="Steps to reach the final epsilon (classic control 1e3, MiniGrid 1e5, Atari 1e6).")
    decay_steps_by_env: dict[str, PositiveCount] = Field(
        default_factory=dict,
        description=(
            "decay_steps per environment id, where it differs (paper App. B: MiniGrid 1e5 vs classic control 1e3; "
            "released code: FourRooms, KeyCorridorS3R2, MultiRoom 5e5). Keys are environment ids of the experiment."
        ),
    )

    def decay_steps_for(self, env_id: str) -> int:
        """The decay steps on environment ``env_id``."""
        return self.decay_steps_by_env.get(env_id, self.decay_steps)


class DQNAgentSpec(AgentSpecModel):
    """DQN with uniform replay and a target network; the loss is one of the DQN family (Evolving RL)."""

    kind: Literal["dqn"] = Field(description="Agent kind.")
    fixed_fields: ClassVar[dict[str, str]] = {
        "network.lstm_size": "null on the conv Q-network: DQN is feed-forward",
        "network.last_action_reward_inputs": "false on the conv Q-network: DQN is feed-forward",
    }
    network: NetworkSpec = Field(
        default_factory=lambda: MLPNetworkSpec(hidden_sizes=[256, 256]),
        description="Q-network: MLP (App. B: 256-256 ReLU) or, on Atari, the DQN conv net (impala_shallow with a3c_2conv = Mnih et al. 2013).",
    )
    optimizer: AdamSpec = Field(default_factory=AdamSpec, description="Optimiser.")
    loss: DQNLossSpec = Field(description="Loss function.")
    discount: float = Field(0.99, ge=0, le=1, description="Discount gamma (released code 0.99; not in the paper).")
    batch_size: PositiveCount = Field(32, description="Transitions per update (released code 32).")
    replay_capacity: PositiveCount = Field(1_000_000, description="Replay size (released code 1e6).")
    min_replay: PositiveCount = Field(1000, description="Transitions stored before learning starts (released code 1000; Atari 50,000).")
    update_period: PositiveCount = Field(1, description="Environment steps per update (released code: 1; Atari 4).")
    target_period: PositiveCount = Field(100, description="Updates between target-network copies (App. B: 100; Atari 1000).")
    exploration: EpsilonGreedySpec = Field(default_factory=EpsilonGreedySpec, description="Epsilon-greedy schedule.")
    reward_clip: float | None = Field(
        None,
        gt=0,
        description=(
            "Clip rewards to [-c, c] in the learner (Mnih et al.: 1). null: raw rewards, as the released Evolving RL "
            "code (its learner replaces Acme's clipping step; its Atari wrapper does not clip)."
        ),
    )
    evaluation_period: PositiveCount | None = Field(
        None,
        description="Atari: agent steps between evaluation rounds (App. B: 1e6); null: one evaluation after the last chunk.",
    )


    @model_validator(mode="after")
    def _feed_forward_q_network(self) -> "DQNAgentSpec":
        network = self.network
        if network.kind != "mlp" and (network.lstm_size is not None or network.last_action_reward_inputs):
            raise ValueError(
                "network: DQN's Q-network is feed-forward on frames: lstm_size must be null and "
                "last_action_reward_inputs false"
            )
        return self


class ExecutorSpec(SpecModel):
    """Where candidate programs are trained by default: a local process pool, or a Dask cluster (``address``).

    The machine overrides kind and address without editing the spec (``--config search_executor=dask
    dask_address=tcp://...`` or ``RLREPRO_SEARCH_EXECUTOR``/``RLREPRO_DASK_ADDRESS``; ``dask-slurm`` starts Dask
    workers as Slurm jobs); neither is in the config hash (scores do not depend on where programs train)."""

    kind: Literal["local", "dask", "inline"] = Field("local", description="local process pool | dask | inline (tests).")
    workers: PositiveCount = Field(2, description="Parallel evaluations (processes, or Dask workers of a local cluster).")
    address: str | None = Field(None, description="Dask scheduler address (tcp://host:8786); null starts a local cluster.")


class LossSearchAgentSpec(AgentSpecModel):
    """Regularized evolution over DQN loss programs (§3). Its budget ('frames') counts proposed programs (trials).

    The experiment's environment is a ``gym_suite`` whose first member is the CartPole hurdle.
    """

    kind: Literal["loss_search"] = Field(description="Agent kind.")
    # the search trains many small DQNs, each on CPU (Co-Reyes et al. 2021: 300 CPUs for ~72 h, no accelerator)
    cpu_only: ClassVar[bool] = True
    fixed_fields: ClassVar[dict[str, str]] = {
        "inner.network.lstm_size": "null on the conv Q-network: DQN is feed-forward",
        "inner.network.last_action_reward_inputs": "false on the conv Q-network: DQN is feed-forward",
    }
    inner: DQNAgentSpec = Field(description="The inner-loop DQN (its loss is replaced by each candidate program).")
    population_size: PositiveCount = Field(300, description="Population (§4.1: 300).")
    tournament_size: PositiveCount = Field(25, description="Tournament size (§4.1: 25).")
    mutation_probability: float = Field(0.95, ge=0, le=1, description="Mutate the winner, else a fresh random program (§4.1: 0.95).")
    free_nodes: PositiveCount = Field(14, description="Searchable nodes after the seed nodes (released code program_length 14).")
    bootstrap: Literal["dqn", "scratch"] = Field(description="Start from DQN's graph (§4.2) or from random programs after Q(s, a).")
    operators: list[str] | None = Field(None, description="Operator subset (names of rlrepro.search.ops); null: all of App. A implemented here.")
    constants: list[float] = Field(default_factory=lambda: [1.0, 0.5, 0.2, 0.1, 0.01], description="Constant input nodes (App. A).")
    hurdle_threshold: float = Field(0.6, description="CartPole hurdle alpha (§3.3: 0.6) on the normalized training return.")
    fitness: Literal["mean_all", "mean_last50"] = Field(
        "mean_all", description="Per-environment score: mean normalized return over all training episodes (paper) or the last 50 (released code)."
    )
    env_steps: dict[str, PositiveCount] = Field(
        description="Inner-loop environment steps per training environment id (the suite's members)."
    )
    trials_per_chunk: PositiveCount = Field(10, description="Proposals per chunk (metrics and a checkpoint after each chunk).")
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec, description="Where evaluations run.")
    proposals_per_round: PositiveCount | None = Field(
        None,
        description=(
            "Children proposed from the same population before any of them joins it (the paper's asynchronous "
            "workers each propose from the population as it stands). It decides which candidates are proposed; "
            "how they are scored (executor, hurdle_backend, hurdle_batch) never does. null: executor.workers."
        ),
    )
    hurdle_backend: Literal["gym", "jax"] = Field(
        "gym",
        description=(
            "How the hurdle (the first environment) is trained: 'gym' steps gymnasium on the host, one jitted call "
            "per step; 'jax' runs the whole run in one compiled loop on the pure-JAX CartPole (gymnasium's dynamics "
            "step for step; its episode starts come from JAX keys, not gymnasium's seeding), hurdle_batch programs "
            "side by side. The other environments always use gymnasium."
        ),
    )
    hurdle_batch: PositiveCount = Field(
        1,
        description=(
            "With hurdle_backend 'jax': programs trained side by side in lockstep (one vmapped act+update call per "
            "step); at most proposals_per_round programs are ready at once. Chosen by measurement (python -m "
            "rlrepro.bench evolving-rl --programs N): on a loaded 2-core CPU, K = 2 trained 1.36x the programs per "
            "hour of K = 1. Scores do not depend on it."
        ),
    )
