"""TD(lambda) prediction (forward view over trajectories): the baseline of FRODO's random walk (Fig. 2b)."""

from rlrepro.agents.exports import lazy_exports

# the names below, each imported from its module on first use
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("TdLambdaConfig",),
        "learner": ("TdLambdaState", "init", "loss_fn", "update"),
        "build": ("build_td_lambda",),
        "loop": ("make_td_lambda_trainer",),
    },
)
