"""IMPALA + synthetic returns (Raposo et al. 2021): state-associative credit assignment on the V-trace agent."""

from rlrepro.agents.impala_sr.config import ImpalaSRConfig, SRConfig
from rlrepro.agents.impala_sr.learner import LearnerState, SRBatch, SRLearnerMetrics, init, loss_fn, make_learner, update
from rlrepro.agents.impala_sr.networks import SRActorCritic, make_sr_network

__all__ = [
    "ImpalaSRConfig",
    "LearnerState",
    "SRActorCritic",
    "SRBatch",
    "SRConfig",
    "SRLearnerMetrics",
    "init",
    "loss_fn",
    "make_learner",
    "make_sr_network",
    "update",
]
