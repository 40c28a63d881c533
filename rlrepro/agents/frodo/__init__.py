"""FRODO (Xu et al. 2020): online meta-gradient learning of the update target with a reverse-time LSTM."""

from rlrepro.agents.frodo.config import META_INPUTS, FrodoConfig, OptimizerConfig
from rlrepro.agents.frodo.learner import (
    FrodoState,
    MetaMetrics,
    Networks,
    Trajectory,
    init,
    inner_step,
    make_networks,
    meta_objective,
    meta_update,
    outer_loss,
)
from rlrepro.agents.frodo.networks import ActorCriticWithTorso, MetaNetwork, TabularValue, TwoConvTorso

__all__ = [
    "META_INPUTS",
    "ActorCriticWithTorso",
    "FrodoConfig",
    "FrodoState",
    "MetaMetrics",
    "MetaNetwork",
    "Networks",
    "OptimizerConfig",
    "TabularValue",
    "Trajectory",
    "TwoConvTorso",
    "init",
    "inner_step",
    "make_networks",
    "meta_objective",
    "meta_update",
    "outer_loss",
]
