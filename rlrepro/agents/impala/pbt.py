"""Population-based training as IMPALA used it (Espeholt et al. 2018, Appendix F; Table G.1).

The engine is a set of pure functions over a population held in one process: hyper-parameters are [M]
arrays, the members' learner states are pytrees with a leading member axis (their updates are vmapped,
``rlrepro.agents.impala.population``), and one exploit/explore step returns, for every member, whose weights
it takes and its new hyper-parameters. ``copy_members`` then gathers the weights (and optimiser state).

The rule (App. F), for each member that is *ready* (past the burn-in, and ``ready_episodes`` finished
episodes since its last step):
  1. exploit: pick another member uniformly at random; if its fitness is more than ``copy_threshold``
     (absolute, 0.05 = 5% of a human-normalised score) higher, copy its weights and hyper-parameters;
  2. explore: copy or not, each adapted hyper-parameter is multiplied with probability
     ``perturb_probability`` (0.33) by ``perturb_factor`` (1.2) or by its inverse, with equal chance
     (unbiased, unlike Jaderberg et al.'s 1.2 / 0.8).
Members that are not ready are left as they are. Decisions are taken against the fitness and
hyper-parameters as they were before the step (a member copies what its source had, not what the source
becomes in the same step).

Fitness (Table G.1): the mean capped human-normalised score ``sum_g min(1, hns_g) / N`` over the games.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import numpy as np

# What IMPALA's Atari-57 multi-task PBT adapts (§5.3.2, Table G.1); DMLab-30 leaves out the clip threshold.
ADAPTABLE: tuple[str, ...] = ("learning_rate", "entropy_cost", "rmsprop_epsilon", "max_grad_norm")


@dataclasses.dataclass(frozen=True)
class PBTConfig:
    """The exploit/explore rule's settings (App. F; Table G.1).

    Attributes:
      population_size: members (paper: 24).
      burn_in_frames: frames a member trains before its first step (paper: 20M).
      ready_episodes: finished training episodes (over all games) between a member's steps (paper: 5,000).
      copy_threshold: copy when the other member's fitness is higher by more than this, absolute (paper: 0.05).
      perturb_probability: chance that each adapted hyper-parameter is perturbed (paper: 0.33).
      perturb_factor: the perturbation multiplies by this or by its inverse (paper: 1.2).
      adapted: the hyper-parameters PBT adapts (Atari-57: all four of ``ADAPTABLE``).
      seed: seeds the rule's random choices (with the round number, so a resumed run draws the same).
      initial_learning_rate, initial_entropy_cost: log-uniform [low, high] of the initial values (Table D.1).
      initial_rmsprop_epsilon: categorical choices of the initial epsilon (Table D.1).
    """

    population_size: int = 24
    burn_in_frames: int = 20_000_000
    ready_episodes: int = 5_000
    copy_threshold: float = 0.05
    perturb_probability: float = 0.33
    perturb_factor: float = 1.2
    adapted: tuple[str, ...] = ADAPTABLE
    seed: int = 0
    initial_learning_rate: tuple[float, float] = (5e-6, 5e-3)
    initial_entropy_cost: tuple[float, float] = (5e-5, 1e-2)
    initial_rmsprop_epsilon: tuple[float, ...] = (1e-1, 1e-3, 1e-5, 1e-7)

    def __post_init__(self) -> None:
        problems = []
        if self.population_size < 1:
            problems.append(f"population_size must be >= 1, got {self.population_size}")
        if not 0.0 <= self.perturb_probability <= 1.0:
            problems.append(f"perturb_probability must be in [0, 1], got {self.perturb_probability}")
        if self.perturb_factor <= 0:
            problems.append(f"perturb_factor must be > 0, got {self.perturb_factor}")
        if unknown := set(self.adapted) - set(ADAPTABLE):
            problems.append(f"adapted: unknown hyper-parameters {sorted(unknown)}; known {ADAPTABLE}")
        if problems:
            raise ValueError("invalid PBTConfig: " + "; ".join(problems))


class Step(NamedTuple):
    """One exploit/explore step over the population (all arrays [M]).

    Attributes:
      source: the member whose weights and optimiser state each member continues from (itself if no copy).
      copied: whether the member copied another.
      hyper: the new hyper-parameters, name -> [M] (copied, then perturbed).
      factors: name -> [M] multipliers applied in the explore part (1.0 where not perturbed).
      stepped: the members that were ready (the others are unchanged).
    """

    source: np.ndarray
    copied: np.ndarray
    hyper: dict[str, np.ndarray]
    factors: dict[str, np.ndarray]
    stepped: np.ndarray


def rng_for(config: PBTConfig, round_index: int) -> np.random.Generator:
    """The generator of one step: a function of the seed and the step number only (so a resume redraws it)."""
    return np.random.default_rng([config.seed, round_index])


def exploit_explore(
    hyper: dict[str, np.ndarray], fitness: np.ndarray, ready: np.ndarray, rng: np.random.Generator, config: PBTConfig
) -> Step:
    """App. F's exploit (truncation against one random other member) and explore (x1.2 or x1/1.2 with p 0.33)."""
    fitness = np.asarray(fitness, np.float64)
    ready = np.asarray(ready, bool)
    size = fitness.shape[0]
    if ready.shape != (size,) or any(np.shape(v) != (size,) for v in hyper.values()):
        raise ValueError(f"population of {size}: fitness, ready and every hyper-parameter must be [{size}] arrays")
    source = np.arange(size)
    new = {name: np.array(value, np.float64) for name, value in hyper.items()}
    factors = {name: np.ones(size) for name in hyper}
    for i in np.flatnonzero(ready):
        if size > 1:
            other = int(rng.integers(size - 1))
            other += other >= i  # uniform over the members other than i
            if np.isfinite(fitness[other]) and (
                not np.isfinite(fitness[i]) or fitness[other] > fitness[i] + config.copy_threshold
            ):
                source[i] = other
                for name in new:
                    new[name][i] = hyper[name][other]
        for name in config.adapted:
            if name in new and rng.random() < config.perturb_probability:
                factor = config.perturb_factor if rng.random() < 0.5 else 1.0 / config.perturb_factor
                factors[name][i] = factor
                new[name][i] *= factor
    return Step(source, source != np.arange(size), new, factors, ready)


def copy_members(tree: Any, source: np.ndarray) -> Any:
    """Every member's leaves replaced by its source member's (the exploit's copy of weights and optimiser state)."""
    index = np.asarray(source)
    return jax.tree.map(lambda leaf: leaf[index], tree)


#: A copy counts as caused by a better member, not by window noise, when the fitness gap is at least this many
#: standard errors of the gap (one-sided 0.025 under normal window means) as well as above ``copy_threshold``.
NOISE_Z = 1.96


def fitness_spread(
    window_sum: np.ndarray, window_sq: np.ndarray, window_count: np.ndarray, random: np.ndarray, human: np.ndarray
) -> np.ndarray:
    """Standard error of each member's window fitness ([M, G] window sums, sums of squares, counts -> [M]).

    ``sqrt(sum_g s_g^2 / (n_g (h_g - r_g)^2)) / G`` with ``s_g`` the sample SD of the window's scores of game g: the
    noise of Table G.1's mean of per-game normalised means (the cap ignored). Infinite when a game has fewer than 2
    episodes in the window (its noise cannot be measured; the fitness then reads an older mean for it).
    """
    n = np.asarray(window_count, np.float64)
    mean = np.asarray(window_sum, np.float64) / np.maximum(n, 1)
    var = (np.asarray(window_sq, np.float64) - n * mean**2) / np.maximum(n - 1, 1)
    term = np.maximum(var, 0.0) / np.maximum(n, 1) / (np.asarray(human) - np.asarray(random)) ** 2
    se = np.sqrt(term.sum(axis=-1)) / n.shape[-1]
    return np.where((n >= 2).all(axis=-1), se, np.inf)


def beyond_noise(gap: float, spread: float, config: PBTConfig) -> bool:
    """Whether a copy's fitness ``gap`` is above App. F's threshold and ``NOISE_Z`` of its ``spread`` (the gap's
    standard error): a difference the two windows' noise alone would not make."""
    return bool(gap > config.copy_threshold and gap >= NOISE_Z * spread)


def capped_hns_fitness(mean_scores: np.ndarray, random: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Table G.1's fitness ``sum_g min(1, (s_g - r_g) / (h_g - r_g)) / N`` per member ([M, G] scores -> [M])."""
    hns = (np.asarray(mean_scores, np.float64) - random) / (human - random)
    return np.minimum(1.0, hns).mean(axis=-1)


def sample_initial(
    rng: np.random.Generator,
    size: int,
    *,
    learning_rate: tuple[float, float],
    entropy_cost: tuple[float, float],
    rmsprop_epsilon: tuple[float, ...],
    max_grad_norm: float,
) -> dict[str, np.ndarray]:
    """Initial hyper-parameters from Table D.1's ranges: log-uniform learning rate and entropy cost,
    categorical RMSProp epsilon; the clip threshold starts at Table G.1's value for every member."""

    def log_uniform(bounds: tuple[float, float]) -> np.ndarray:
        low, high = np.log(bounds[0]), np.log(bounds[1])
        return np.exp(rng.uniform(low, high, size))

    return {
        "learning_rate": log_uniform(learning_rate),
        "entropy_cost": log_uniform(entropy_cost),
        "rmsprop_epsilon": np.asarray(rmsprop_epsilon, np.float64)[rng.integers(len(rmsprop_epsilon), size=size)],
        "max_grad_norm": np.full(size, float(max_grad_norm)),
    }
