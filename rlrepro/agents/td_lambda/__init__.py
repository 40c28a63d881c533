"""TD(lambda) prediction (forward view over trajectories): the baseline of FRODO's random walk (Fig. 2b)."""

from rlrepro.agents.td_lambda.learner import TdLambdaConfig, TdLambdaState, init, loss_fn, update
from rlrepro.agents.td_lambda.trainer import build_td_lambda, make_td_lambda_trainer

__all__ = ["TdLambdaConfig", "TdLambdaState", "build_td_lambda", "init", "loss_fn", "make_td_lambda_trainer", "update"]
