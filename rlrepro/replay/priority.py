"""Rank-based prioritised replay (Schaul et al. 2016, §3.3-3.4), the PER of the ReF-ER paper (Figs. 1 and 3).

Over the committed steps of one ``EpisodeReplay``: step i's priority is p_i = 1 / rank(i), rank 1 the largest
|TD error|; it is sampled with P(i) = p_i^alpha / sum_k p_k^alpha and its update is weighted by the importance
weight w_i = (N P(i))^-beta normalised by the largest weight over the memory (Schaul §3.4: "we always normalize
weights by 1 / max_i w_i so that they only scale the update downwards"). The largest weight is the last rank's,
so w(rank r) = (P(r) / P(N))^-beta = (r / N)^(alpha beta) in closed form. beta goes linearly from beta0 to 1
over the run (``importance_exponent``). New steps enter at the largest |TD error| seen so far, so every step is
replayed at least once soon after it enters.

Ranks are kept as an array ``order`` of ring slots sorted by |TD error| as of the last sort. Slots whose
priority changed since (and new ones) are re-placed by a merge every ``sort_period`` updates and whenever steps
entered or left the memory, so a sort costs O(N) and no full O(N log N) sort is ever needed (Schaul keeps a
binary heap as an approximately sorted array; smarties re-sorts every 10 steps). Sampling is stratified (Schaul:
B segments of equal probability, one draw in each) by inverting the exact cumulative sum of p^alpha, so the
marginal probability of rank r is P(r) exactly (Schaul's piecewise-linear approximation is not needed).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.refer import PrioritisedReplaySpec


@dataclasses.dataclass(frozen=True)
@defaults_from(PrioritisedReplaySpec)
class PriorityConfig:
    """Rank-based PER (``rlrepro.specs.agents.refer.PrioritisedReplaySpec``); ``anneal_steps``: the environment steps
    of the run, over which the importance exponent goes from beta0 to 1 (Schaul et al. 2016, §3.4)."""

    alpha: float
    beta0: float
    sort_period: int
    anneal_steps: int = 1


def importance_exponent(beta0: float, t: int, anneal_steps: int) -> float:
    """beta(t) = beta0 + (1 - beta0) min(1, t / T): linear from beta0 at t = 0 to 1 at T (Schaul §3.4)."""
    return float(beta0 + (1.0 - beta0) * min(1.0, t / max(anneal_steps, 1)))


class RankPriorities:
    """Rank-based priorities of the slots of one ring buffer of ``size`` slots (see the module docstring)."""

    def __init__(self, size: int, alpha: float, sort_period: int):
        self.alpha, self.sort_period = alpha, sort_period
        self.priority = np.zeros(size, np.float64)  # |TD error| at the step's last update (new: the largest seen)
        self.max_priority = 1.0
        self.live = np.zeros(size, bool)  # committed (sampleable) slots
        self.dirty = np.zeros(size, bool)  # priority set since the slot was last placed in ``order``
        self.placed = np.zeros(size, bool)  # live and not dirty: still where the last sort put it
        self.order = np.zeros(0, np.int64)  # slots by decreasing priority (valid right after ``sort``)
        self.keys = np.zeros(0, np.float64)  # -priority of ``order`` when placed: ascending
        self.updates_since_sort = 0
        self.members_changed = False  # steps entered or left since the last sort
        # sum_{r <= k + 1} r^-alpha for every possible count: the CDF of every memory size at once.
        self.cumulative = np.cumsum(np.arange(1, size + 1, dtype=np.float64) ** -alpha)

    def add(self, slots: np.ndarray) -> None:
        """Steps entering the memory, at the largest priority seen so far (Schaul Alg. 1, line 6)."""
        self.priority[slots] = self.max_priority
        self.live[slots], self.dirty[slots], self.placed[slots] = True, True, False
        self.members_changed = True

    def remove(self, slots: np.ndarray) -> None:
        """Steps leaving the memory (FIFO eviction of whole episodes)."""
        self.live[slots], self.placed[slots] = False, False
        self.members_changed = True

    def update(self, slots: np.ndarray, td_error: np.ndarray) -> None:
        """|TD error| of sampled steps after an update (``slots`` may repeat a step; Schaul Alg. 1, line 12)."""
        td = np.abs(np.asarray(td_error, np.float64))
        self.priority[slots] = td
        self.dirty[slots], self.placed[slots] = True, False
        self.max_priority = max(self.max_priority, float(td.max(initial=0.0)))
        self.updates_since_sort += 1

    def sort(self) -> None:
        """Re-place the changed and new slots by merging them into the clean ones (still sorted: their priorities
        did not change since they were placed), and drop slots that left. O(N) plus O(m log m) for m changes:
        one gather of a flag per stored step; the placed keys are kept beside ``order`` so that no priority is
        gathered in rank order (random access over the memory is what costs at N = 2^18)."""
        keep = self.placed[self.order]
        clean, clean_keys = self.order[keep], self.keys[keep]
        moved = np.flatnonzero(self.dirty & self.live)
        moved_keys = -self.priority[moved]
        by_key = np.argsort(moved_keys, kind="stable")
        moved, moved_keys = moved[by_key], moved_keys[by_key]
        # ascending in -priority; side="left": a moved slot goes before clean ones of equal priority (newest first)
        at = np.searchsorted(clean_keys, moved_keys, side="left")
        self.order, self.keys = np.insert(clean, at, moved), np.insert(clean_keys, at, moved_keys)
        self.dirty[moved], self.placed[moved] = False, True
        self.updates_since_sort, self.members_changed = 0, False

    def probabilities(self, count: int) -> np.ndarray:
        """P(rank r) = r^-alpha / sum_k k^-alpha for r = 1..count."""
        return np.arange(1, count + 1, dtype=np.float64) ** -self.alpha / self.cumulative[count - 1]

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(slots, importance weights) of ``batch_size`` steps, one from each of B equal-probability segments."""
        if self.members_changed or self.updates_since_sort >= self.sort_period:
            self.sort()
        n = len(self.order)
        cumulative = self.cumulative[:n]
        u = (np.arange(batch_size) + rng.random(batch_size)) * (cumulative[-1] / batch_size)
        position = np.minimum(np.searchsorted(cumulative, u, side="right"), n - 1)
        weight = ((position + 1) / n) ** (self.alpha * beta)  # (N P(r))^-beta / max_i (N P(i))^-beta
        return self.order[position], weight.astype(np.float32)

    def ranks(self) -> np.ndarray:
        """Rank (1 = largest priority) of every slot in ``order`` after a sort, -1 elsewhere (for tests)."""
        self.sort()
        rank = np.full(len(self.priority), -1, np.int64)
        rank[self.order] = np.arange(1, len(self.order) + 1)
        return rank
