"""IMPALA (Espeholt et al. 2018): V-trace actor-critic with a synchronous, optionally lagged actor."""

from rlrepro.agents.impala.actor import ActorState, EpisodeStats, init_actor, unroll
from rlrepro.agents.impala.config import CORRECTIONS, ConvNetworkConfig, ImpalaConfig
from rlrepro.agents.impala.learner import (
    Batch,
    Learner,
    LearnerMetrics,
    LearnerState,
    apply_to_batch,
    init,
    make_learner,
    update,
)
from rlrepro.agents.impala.networks import (
    ActorCritic,
    DeepTorso,
    MLPTorso,
    ShallowTorso,
    initial_core_state,
    make_network,
    make_policy_step,
    reset_core_state,
)
from rlrepro.agents.impala.sharding import ShardedLearner, make_sharded_update

__all__ = [
    "CORRECTIONS",
    "ActorCritic",
    "ActorState",
    "Batch",
    "ConvNetworkConfig",
    "DeepTorso",
    "EpisodeStats",
    "ImpalaConfig",
    "Learner",
    "LearnerMetrics",
    "LearnerState",
    "MLPTorso",
    "ShallowTorso",
    "ShardedLearner",
    "apply_to_batch",
    "init",
    "init_actor",
    "initial_core_state",
    "make_learner",
    "make_network",
    "make_policy_step",
    "make_sharded_update",
    "reset_core_state",
    "unroll",
    "update",
]
