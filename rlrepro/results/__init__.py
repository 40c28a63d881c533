"""Scores to results: Atari human-normalised scores and rliable-style aggregates with bootstrap CIs."""

from rlrepro.results.aggregation import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    optimality_gap,
    stratified_bootstrap_ci,
    summarize,
)
from rlrepro.results.normalization import (
    HNS_TABLES,
    canonical_game_name,
    human_normalized_score,
    human_normalized_scores,
    reference_scores,
)

__all__ = [
    "HNS_TABLES",
    "aggregate_iqm",
    "aggregate_mean",
    "aggregate_median",
    "canonical_game_name",
    "human_normalized_score",
    "human_normalized_scores",
    "optimality_gap",
    "reference_scores",
    "stratified_bootstrap_ci",
    "summarize",
]
