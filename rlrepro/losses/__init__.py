"""Pure single-stream loss functions (rlax style): per-step terms; the learner reduces, vmaps."""

from rlrepro.losses.policy_gradient import entropy, log_prob, policy_gradient_loss
from rlrepro.losses.vtrace import VTraceOutput, vtrace

__all__ = ["VTraceOutput", "entropy", "log_prob", "policy_gradient_loss", "vtrace"]
