"""IMPALA (Espeholt et al. 2018): V-trace actor-critic with a synchronous, optionally lagged actor."""

from rlrepro.agents.exports import lazy_exports

# the names below, each imported from its module on first use (importing config.py alone loads no JAX)
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("CORRECTIONS", "ConvNetworkConfig", "ImpalaConfig"),
        "learner": (
            "Batch", "Learner", "LearnerMetrics", "LearnerState", "apply_to_batch", "init", "make_learner", "update",
        ),
        "networks": (
            "ActorCritic", "DeepTorso", "MLPTorso", "ShallowTorso", "initial_core_state", "make_network",
            "make_policy_step", "reset_core_state",
        ),
        "sharding": ("ShardedLearner", "make_sharded_update"),
    },
)
