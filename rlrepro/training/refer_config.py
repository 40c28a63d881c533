"""The configuration the ReF-ER agents share (V-RACER, DDPG, NAF): the rules of §3 (``ReferConfig``) and the memory,
widths and optimiser settings common to them (``ReplayAgentConfig``). Dataclasses only, no JAX: the agents'
``config.py`` modules build on them.
"""

from __future__ import annotations

import dataclasses

from rlrepro.replay.priority import PriorityConfig


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
