"""Host-side ReF-ER state per seed: beta (eq. 12) and the schedules of eq. 13, from the spec's rules."""

from __future__ import annotations

import dataclasses

import numpy as np

from rlrepro.losses.refer import beta_update, c_max_schedule, learning_rate_schedule, uses_rule2


@dataclasses.dataclass(frozen=True)
class ReferConfig:
    """The rules of §3 (see ``rlrepro.specs.agents.refer.ReferRulesSpec`` for each field's source)."""

    variant: str = "refer"
    c: float = 4.0
    d: float = 0.1
    a: float = 5e-7
    beta0: float = 1.0
    beta_rate: str = "eta_t"
    beta_rate_fixed: float = 1e-4
    kl_direction: str = "mu_pi"
    rho_cap: float | None = None

    @classmethod
    def from_spec(cls, rules) -> "ReferConfig":
        return cls(**rules.model_dump())


@dataclasses.dataclass(frozen=True)
class PriorityConfig:
    """Rank-based PER (``rlrepro.specs.agents.refer.PrioritisedReplaySpec``); ``anneal_steps``: the environment steps
    of the run, over which the importance exponent goes from beta0 to 1 (Schaul et al. 2016, §3.4)."""

    alpha: float = 0.7
    beta0: float = 0.5
    sort_period: int = 10
    anneal_steps: int = 1


@dataclasses.dataclass(frozen=True)
class ReplayAgentConfig:
    """What V-RACER, DDPG and NAF share: the rules, the memory (App. A: N = 2^18, refreshed every 1000 steps), the
    MLP widths, Adam's epsilon and gamma. Each agent's config adds its own fields; frozen (a jit static argument)."""

    rules: ReferConfig = ReferConfig()
    capacity: int = 262_144
    n_start: int = 262_144
    refresh_period: int = 1000
    hidden_sizes: tuple[int, ...] = (128, 128)
    adam_eps: float = 1e-8
    discount: float = 0.995
    per: PriorityConfig | None = None  # rank-based PER (DDPG and NAF with rules.variant per); None: uniform

    @classmethod
    def from_spec(cls, agent, total_steps: int = 1):
        """The one place a V-RACER, DDPG or NAF agent spec becomes its config: every other spec field maps to the
        config field of the same name (a spec field the config lacks is a TypeError, never dropped).
        ``total_steps``: the run's environment steps (PER anneals its importance exponent over them)."""
        data = agent.model_dump(exclude={"kind", "rules", "replay", "hidden_sizes", "per"})
        per = getattr(agent, "per", None)
        return cls(
            rules=ReferConfig.from_spec(agent.rules),
            capacity=agent.replay.capacity,
            n_start=agent.replay.n_start,
            refresh_period=agent.replay.refresh_period,
            hidden_sizes=tuple(agent.hidden_sizes),
            per=None if per is None else PriorityConfig(**per.model_dump(), anneal_steps=max(int(total_steps), 1)),
            **data,
        )


def initial_beta(config: ReferConfig, num_seeds: int) -> np.ndarray:
    """beta0 under rule 2; 1 otherwise (rule 1 alone and plain ER never scale the gradient)."""
    return np.full(num_seeds, config.beta0 if uses_rule2(config.variant) else 1.0, np.float32)


def step_schedules(config: ReferConfig, t: int, learning_rate: float) -> tuple[float, float]:
    """(c_max(t), eta(t)) at environment step t (eq. 13)."""
    return float(c_max_schedule(t, config.c, config.a)), float(learning_rate_schedule(t, learning_rate, config.a))


def next_beta(config: ReferConfig, beta: np.ndarray, far_fraction: np.ndarray, eta_t: float) -> np.ndarray:
    """Eq. 12 under rule 2 (rate eta(t) or the fixed rate); beta stays 1 otherwise."""
    if not uses_rule2(config.variant):
        return beta
    rate = eta_t if config.beta_rate == "eta_t" else config.beta_rate_fixed
    return np.asarray(beta_update(beta, far_fraction, config.d, rate), np.float32)
