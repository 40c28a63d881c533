"""The configuration the ReF-ER agents share (V-RACER, DDPG, NAF): the rules of §3 (``ReferConfig``) and the memory,
widths and optimiser settings common to them (``ReplayAgentConfig``). Dataclasses only, no JAX: the agents'
``config.py`` modules build on them.
"""

from __future__ import annotations

import dataclasses

from rlrepro.replay.priority import PriorityConfig
from rlrepro.specs.agents.common import defaults_from, spec_values
from rlrepro.specs.agents.refer import EpisodeReplaySpec, ReferRulesSpec


@dataclasses.dataclass(frozen=True)
@defaults_from(ReferRulesSpec)
class ReferConfig:
    """The rules of §3 (see ``rlrepro.specs.agents.refer.ReferRulesSpec`` for each field's source)."""

    variant: str = "refer"  # the spec requires it (no default there)
    c: float
    d: float
    a: float
    beta0: float
    beta_rate: str
    beta_rate_fixed: float
    kl_direction: str
    rho_cap: float | None

    @classmethod
    def from_spec(cls, rules) -> "ReferConfig":
        return cls(**rules.model_dump())


@dataclasses.dataclass(frozen=True)
@defaults_from(EpisodeReplaySpec)
class ReplayAgentConfig:
    """What V-RACER, DDPG and NAF share: the rules, the memory (App. A: N = 2^18, refreshed every 1000 steps), the
    MLP widths, Adam's epsilon and gamma. Each agent's config adds its own fields; frozen (a jit static argument)."""

    rules: ReferConfig = ReferConfig()
    capacity: int
    n_start: int
    refresh_period: int
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
            **spec_values(ReplayAgentConfig, agent.replay),
            hidden_sizes=tuple(agent.hidden_sizes),
            per=None if per is None else PriorityConfig(**per.model_dump(), anneal_steps=max(int(total_steps), 1)),
            **data,
        )
