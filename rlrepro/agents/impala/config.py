"""Hyper-parameters of the IMPALA agent (Espeholt et al. 2018), one documented field each.

Defaults follow the paper's Atari table (Table G.1) where it gives a value and the released code
(``deepmind/scalable_agent``) where the paper is silent; see ``impala.notes.md`` §1.3-1.5 and §5.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.impala import ImpalaAgentSpec
from rlrepro.training.program import ChunkPlan, update_chunks

Correction = Literal["vtrace", "one_step_is", "epsilon", "none"]
LrSchedule = Literal["linear_to_zero", "constant"]
RewardTransform = Literal["clip", "soft_asymmetric_code", "soft_asymmetric_paper"]

CORRECTIONS: tuple[str, ...] = ("vtrace", "one_step_is", "epsilon", "none")
LR_SCHEDULES: tuple[str, ...] = ("linear_to_zero", "constant")
REWARD_TRANSFORMS: tuple[str, ...] = ("clip", "soft_asymmetric_code", "soft_asymmetric_paper")


#: Where ``ImpalaConfig``'s fields live in ``ImpalaAgentSpec`` when not at its top level under the same name: their
#: defaults come from there (``defaults_from``) and ``impala_config`` reads them there (``spec_values``).
SPEC_PATHS = {
    "discount": "loss.discount",
    "learning_rate": "optimizer.learning_rate",
    "rmsprop_decay": "optimizer.decay",
    "rmsprop_epsilon": "optimizer.epsilon",
    "rmsprop_momentum": "optimizer.momentum",
    "rmsprop_eps_in_sqrt": "optimizer.eps_in_sqrt",
    "rmsprop_initial_scale": "optimizer.initial_scale",
    "max_grad_norm": "optimizer.max_grad_norm",
    "lr_schedule": "optimizer.lr_schedule",
    "entropy_cost": "loss.entropy_cost",
    "baseline_cost": "loss.baseline_cost",
    "reward_clip": "loss.reward_clip",
    "reward_transform": "loss.reward_transform",
    "correction": "loss.correction",
    "rho_bar": "loss.rho_bar",
    "c_bar": "loss.c_bar",
    "pg_rho_bar": "loss.pg_rho_bar",
    "lambda_": "loss.trace_lambda",
    "epsilon_correction": "loss.epsilon_correction",
    "replay_fraction": "replay.fraction",
    "replay_capacity": "replay.capacity",
}


@dataclasses.dataclass(frozen=True)
@defaults_from(ImpalaAgentSpec, SPEC_PATHS)
class ImpalaConfig:
    """Everything the IMPALA learner, actor and loop need; frozen (hashable, safe as a jit static argument).

    Attributes:
      discount: gamma. 0.99 (Tables D.3, G.1).
      unroll_length: T, environment steps per unroll (trajectory length n). 20 (Table G.1; DMLab 100).
      batch_size: B, trajectories per learner batch; the synchronous actor steps the B environments (the
        ``fresh_batch_size`` ones with replay) in parallel, so each update consumes T * B environment steps
        (T * fresh rows with replay). 32 (Table G.1).
      learning_rate: initial RMSProp learning rate. 6e-4 (Table G.1).
      rmsprop_decay: RMSProp second-moment decay. 0.99 (released code; the paper does not state it).
      rmsprop_epsilon: RMSProp epsilon, inside the square root (TF1 semantics). 0.01 (Table G.1).
      rmsprop_momentum: RMSProp momentum. 0.0 (Tables D.3, G.1).
      rmsprop_eps_in_sqrt: epsilon inside the square root (TF1, notes §1.5) or outside (PyTorch). True.
      rmsprop_initial_scale: initial second-moment accumulator (TF1: 1.0; PyTorch: 0.0). 1.0.
      max_grad_norm: global gradient-norm clip; None disables it (the spec's default). Table G.1: 40 on Atari.
      lr_schedule: "linear_to_zero" anneals the learning rate linearly to 0 over ``total_updates``
        (Table G.1; the code anneals over frames, which is the same since every update consumes T * B
        frames); "constant" keeps it fixed.
      total_updates: number of learner updates of the whole run; sets the length of the lr schedule.
      entropy_cost: weight of the entropy bonus (summed over batch and time). 0.01 (Table G.1).
      baseline_cost: baseline loss scaling. 0.5 (Tables D.3, G.1). Applied as in the released code:
        ``baseline_cost * 0.5 * sum (v_s - V(x_s))^2``, i.e. an effective weight of 0.25 on the summed
        squared error (notes §4 item 1, §5 item 2).
      reward_clip: rewards are clipped to [-c, c] in the learner before V-trace; None leaves them
        unclipped. 1.0 (Table G.1).
      reward_transform: "clip" (``reward_clip``; Atari, single-task DMLab), "soft_asymmetric_code" (the
        released code's DMLab-30 squashing ``5 tanh(r / 5)``, times 0.3 where r < 0) or
        "soft_asymmetric_paper" (Fig. D.1: ``0.3 min(tanh r, 0) + 5 max(tanh r, 0)``); notes §4 item 2.
      correction: off-policy correction (§5.2.2, Table 2). "vtrace": V-trace targets and
        advantages; "one_step_is": uncorrected n-step value targets, pg advantage multiplied by the
        clipped importance weight ("V-trace without traces"); "epsilon": no correction, with
        ``log(pi(a) + epsilon_correction)`` in the pg term; "none": no correction at all.
      rho_bar: truncation of rho in the V-trace temporal differences. 1.0 (§5.2.2).
      c_bar: truncation of the traces c_i. 1.0 (§5.2.2; hard-coded in the released code).
      pg_rho_bar: truncation of rho in the policy-gradient advantage (also the clip of the
        "one_step_is" weight). 1.0 (released code ``clip_pg_rho_threshold``).
      lambda_: V-trace lambda of Remark 2 (multiplies the traces). 1.0.
      epsilon_correction: the epsilon of the "epsilon" correction. 1e-6 (§5.2.2).
      policy_lag: L, the actor acts with parameters exactly L updates old (0 = on-policy). Used for
        the controlled policy-lag ablation (Fig. E.1).
      replay_fraction: share of each learner batch drawn from the learner's replay buffer (§5.2.2: 0.5 in the
        "with replay" half of Table 2; 0: no replay). ``round(fraction * B)`` rows are replayed, the other
        ``fresh_batch_size`` rows are the actor's new unrolls.
      replay_capacity: trajectories the FIFO replay buffer holds (Table D.3: 10,000); read only with replay.
      hidden_sizes: widths of the ReLU MLP torso (toy environments).
      conv_network: IMPALA's image network (shallow / deep, optional LSTM core); when set it
        replaces the MLP of ``hidden_sizes``. None: MLP.
      learning: false for the control arm: the optimiser emits zero updates (``training.optim.learning_or_frozen``).
    """

    discount: float
    unroll_length: int = 20
    batch_size: int = 32
    learning_rate: float = 6e-4
    rmsprop_decay: float
    rmsprop_epsilon: float = 0.01
    rmsprop_momentum: float
    rmsprop_eps_in_sqrt: bool
    rmsprop_initial_scale: float
    max_grad_norm: float | None
    lr_schedule: LrSchedule
    total_updates: int = 10_000
    entropy_cost: float = 0.01
    baseline_cost: float
    reward_clip: float | None
    reward_transform: RewardTransform
    correction: Correction
    rho_bar: float
    c_bar: float
    pg_rho_bar: float
    lambda_: float
    epsilon_correction: float
    policy_lag: int
    replay_fraction: float
    replay_capacity: int
    hidden_sizes: tuple[int, ...] = (64, 64)
    conv_network: ConvNetworkConfig | None = None
    learning: bool

    def __post_init__(self) -> None:
        problems = []
        if self.correction not in CORRECTIONS:
            problems.append(f"correction must be one of {CORRECTIONS}, got {self.correction!r}")
        if self.reward_transform not in REWARD_TRANSFORMS:
            problems.append(f"reward_transform must be one of {REWARD_TRANSFORMS}, got {self.reward_transform!r}")
        if self.rmsprop_initial_scale < 0:
            problems.append(f"rmsprop_initial_scale must be >= 0, got {self.rmsprop_initial_scale}")
        if self.lr_schedule not in LR_SCHEDULES:
            problems.append(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        for name in ("unroll_length", "batch_size", "total_updates"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.policy_lag < 0:
            problems.append(f"policy_lag must be >= 0, got {self.policy_lag}")
        if not 0.0 <= self.discount <= 1.0:
            problems.append(f"discount must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.lambda_ <= 1.0:
            problems.append(f"lambda_ must be in [0, 1], got {self.lambda_}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            problems.append(f"max_grad_norm must be > 0 or None, got {self.max_grad_norm}")
        if self.reward_clip is not None and self.reward_clip <= 0:
            problems.append(f"reward_clip must be > 0 or None, got {self.reward_clip}")
        if not 0.0 <= self.replay_fraction < 1.0:
            problems.append(f"replay_fraction must be in [0, 1), got {self.replay_fraction}")
        elif self.replay_fraction > 0 and not 1 <= self.replay_batch_size < self.batch_size:
            problems.append(
                f"replay_fraction {self.replay_fraction} of batch_size {self.batch_size} must replay at least one row "
                "and keep at least one fresh row"
            )
        if self.replay_capacity < self.fresh_batch_size:
            problems.append(f"replay_capacity must hold one batch of fresh unrolls ({self.fresh_batch_size}), got {self.replay_capacity}")
        if not self.hidden_sizes or any(h < 1 for h in self.hidden_sizes):
            problems.append(f"hidden_sizes must be non-empty positive widths, got {self.hidden_sizes}")
        if problems:
            raise ValueError("invalid ImpalaConfig: " + "; ".join(problems))

    @property
    def replay_batch_size(self) -> int:
        """Rows of each batch drawn from the replay buffer: ``round(replay_fraction * B)``."""
        return replay_rows(self.batch_size, self.replay_fraction)

    @property
    def fresh_batch_size(self) -> int:
        """Rows of each batch that are new unrolls (B without replay); also the actor's parallel environments."""
        return self.batch_size - self.replay_batch_size

    @property
    def frames_per_update(self) -> int:
        """New environment steps consumed by one learner update (T * fresh rows; T * B without replay)."""
        return self.unroll_length * self.fresh_batch_size


def replay_rows(batch_size: int, replay_fraction: float) -> int:
    """Replayed rows of a batch of ``batch_size`` when ``replay_fraction`` of it comes from replay (§5.2.2)."""
    return int(round(batch_size * replay_fraction))


def impala_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
    """IMPALA (and IMPALA+SR): one update learns from ``batch_size`` unrolls of ``unroll_length`` steps; with
    IMPALA's replay (§5.2.2) only the new rows are charged frames (the replayed ones were charged when collected)."""
    replay = getattr(agent, "replay", None)
    fresh = agent.batch_size - (replay_rows(agent.batch_size, replay.fraction) if replay is not None else 0)
    return update_chunks(frames, agent.unroll_length * fresh * env_spec.frames_per_step, run)
