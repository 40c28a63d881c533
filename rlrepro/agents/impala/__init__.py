"""IMPALA (Espeholt et al. 2018): V-trace actor-critic with a synchronous, optionally lagged actor."""

from rlrepro.agents.impala.actor import ActorState, EpisodeStats, init_actor, unroll
from rlrepro.agents.impala.config import CORRECTIONS, ImpalaConfig
from rlrepro.agents.impala.learner import Batch, Learner, LearnerMetrics, LearnerState, init, make_learner, update
from rlrepro.agents.impala.networks import ActorCritic, MLPTorso, make_network

__all__ = [
    "CORRECTIONS",
    "ActorCritic",
    "ActorState",
    "Batch",
    "EpisodeStats",
    "ImpalaConfig",
    "Learner",
    "LearnerMetrics",
    "LearnerState",
    "MLPTorso",
    "init",
    "init_actor",
    "make_learner",
    "make_network",
    "unroll",
    "update",
]
