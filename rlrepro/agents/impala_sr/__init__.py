"""IMPALA + synthetic returns (Raposo et al. 2021): state-associative credit assignment on the V-trace agent."""

from rlrepro.agents.exports import lazy_exports

# the names below, each imported from its module on first use (importing config.py alone loads no JAX)
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("ImpalaSRConfig", "SRConfig"),
        "learner": ("LearnerState", "SRBatch", "SRLearnerMetrics", "init", "loss_fn", "make_learner", "update"),
        "networks": ("SRActorCritic", "make_sr_network"),
    },
)
