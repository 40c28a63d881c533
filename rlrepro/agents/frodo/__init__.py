"""FRODO (Xu et al. 2020): online meta-gradient learning of the update target with a reverse-time LSTM."""

from rlrepro.agents.exports import lazy_exports

# the names below, each imported from its module on first use (importing config.py alone loads no JAX)
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("META_INPUTS", "FrodoConfig", "OptimizerConfig"),
        "learner": (
            "FrodoState", "MetaMetrics", "Networks", "Trajectory", "init", "inner_step", "make_networks",
            "meta_objective", "meta_update", "outer_loss",
        ),
        "networks": ("ActorCriticWithTorso", "MetaNetwork", "TwoConvTorso"),
    },
)
