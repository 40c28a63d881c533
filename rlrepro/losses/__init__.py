"""Pure single-stream loss functions (rlax style): per-step terms; the learner reduces, vmaps."""

from rlrepro.losses.dqn import ddqn_loss, dqn_loss, dqnclipped_case, dqnclipped_loss, dqnreg_loss
from rlrepro.losses.frodo import (
    ActorCriticTerms,
    consistency_errors,
    discounted_returns,
    fixed_target_actor_critic_terms,
    lambda_returns,
    prediction_errors,
    target_actor_critic_terms,
)
from rlrepro.losses.policy_gradient import entropy, log_prob, policy_gradient_loss
from rlrepro.losses.vtrace import VTraceOutput, vtrace

__all__ = [
    "ActorCriticTerms",
    "consistency_errors",
    "discounted_returns",
    "fixed_target_actor_critic_terms",
    "lambda_returns",
    "prediction_errors",
    "target_actor_critic_terms",
    "VTraceOutput",
    "ddqn_loss",
    "dqn_loss",
    "dqnclipped_case",
    "dqnclipped_loss",
    "dqnreg_loss",
    "entropy",
    "log_prob",
    "policy_gradient_loss",
    "vtrace",
]
