"""The ReF-ER replay memory (Novati & Koumoutsakos 2019, Alg. 1-2, App. B): whole episodes, FIFO, per seed.

Time steps are written as they happen into a ring buffer; an episode becomes sampleable when it ends
(``end_episode``), and whole episodes are removed oldest first while more than ``capacity`` steps are stored.
Each step keeps the behaviour statistics (mean, std), the last V and log rho computed for it (refreshed when it
is sampled) and its Retrace target Q^ret (in scaled-reward units). The far-policy count n_far is kept up to date
as ratios are refreshed and episodes enter and leave (O(B) per step, not O(N): at N = 2^18 a recount per step
cost more than the update), each step classified with the c_max of its last refresh; ``recount_far`` reclassifies
the whole memory with the current c_max (the trainers call it with every full Q^ret refresh). Rewards are stored raw; the learner sees them
divided by sqrt(mean r^2) + eps (eq. 16), so stored Q^ret are recomputed whenever the scale changes. With
``priorities`` (rank-based PER, ``rlrepro.replay.priority``) steps are drawn by rank of |TD error| instead of
uniformly, the priority structure following every commit and eviction.

Storage: the arrays of every seed's memory are rows of one block (``ReplayBank``), so that a lockstep step's
sampling, write-back and transitions for all seeds are one numpy call each instead of one per seed, and a
write-back's reads that the update cannot change are gathered while the update runs (``ReplayBank.plan``): the
host work that bounds the loop's speed (``python -m rlrepro.bench refer``). A memory on its own is a bank of one.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from rlrepro.replay.priority import RankPriorities

EPSILON = 1e-7  # App. B, eqs. 14-16


class Sample(NamedTuple):
    """A minibatch of stored steps and what the learner reads; ``weight``: the importance weights of prioritised
    sampling (ones when uniform). From ``EpisodeReplay.sample``: one seed, ``index`` its ring indices [B]; from
    ``ReplayBank.sample``: every seed, ``index`` the slots of the bank [seed, B], the other fields [seed, B, ...]."""

    index: np.ndarray
    obs: np.ndarray
    action: np.ndarray
    mu_mean: np.ndarray
    mu_std: np.ndarray
    q_ret: np.ndarray
    weight: np.ndarray


class Refresh(NamedTuple):
    """A write-back's plan (``ReplayBank.plan``): the sampled slots [k, B] of memories ``rows``, their distinct slots
    and those of them far before the update; for a V/Q^ret write-back also the sampled steps that are not an
    episode's first (``inner``), the step before each (``prev``), its scaled reward r_t and the inner steps' Q^ret
    before the update (None when planned for ``set_log_rho`` only)."""

    slots: np.ndarray
    rows: np.ndarray
    unique: np.ndarray
    was_far: np.ndarray
    inner: np.ndarray | None = None  # None: planned for set_log_rho only
    prev: np.ndarray | None = None
    scaled_reward: np.ndarray | None = None
    q_ret: np.ndarray | None = None


class EpisodeReplay:
    """Episode-based FIFO replay of one seed, ``capacity`` = N committed steps at most (plus the running episode)."""

    def __init__(
        self, capacity: int, max_episode_steps: int, obs_dim: int, action_dim: int, discount: float, seed: int,
        priority: tuple[float, int] | None = None,
    ):
        """``priority``: (alpha, sort_period) of rank-based prioritised sampling; None: uniform sampling."""
        self.capacity, self.discount = capacity, discount
        self.size = capacity + max_episode_steps + 1  # room for N committed steps and one running episode
        n = self.size
        self.obs = np.zeros((n, obs_dim), np.float32)
        self.action = np.zeros((n, action_dim), np.float32)
        self.mu_mean = np.zeros((n, action_dim), np.float32)
        self.mu_std = np.ones((n, action_dim), np.float32)
        self.reward = np.zeros(n, np.float32)
        self.v = np.zeros(n, np.float32)
        self.log_rho = np.zeros(n, np.float32)  # rho = 1 when stored: the behaviour is the policy of the moment
        self.q_ret = np.zeros(n, np.float32)
        self.far = np.zeros(n, bool)  # far-policy at its last rho refresh: |log rho| >= log c_max (c_max of then)
        self.n_far: int | None = 0  # far steps among the committed ones
        self.scored = np.zeros(n, bool)  # its rho computed by an update since it was stored (not only at acting)
        self.first = np.zeros(n, bool)
        self.last = np.zeros(n, bool)
        self.v_boot = np.zeros(n, np.float32)  # at an episode's last step: V(s_T) if truncated, 0 if terminal
        self.terminal = np.zeros(n, bool)  # at an episode's last step: it terminated (no bootstrap)
        self.final_obs = np.zeros((n, obs_dim), np.float32)  # at an episode's last step: s_T (Q-learning targets)
        self.episodes: deque[tuple[int, int, np.ndarray, bool]] = deque()  # (start, length, s_T, terminated)
        self.head = 0  # start of the oldest stored episode
        self.committed = 0  # steps of ended episodes (sampleable)
        self.running = 0  # steps of the episode in progress
        self.reward_scale = 1.0
        self.rng = np.random.default_rng(seed)
        self.priorities = None if priority is None else RankPriorities(self.size, *priority)
        ReplayBank([self])  # its arrays become the one row of a bank (a host puts every seed in one)

    def __getstate__(self) -> dict:
        """Pickle (checkpoints) this seed's arrays and bookkeeping, not the bank: the format is one memory's."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_bank", "_row")}

    def __setstate__(self, state: dict) -> None:
        """Unpickle (checkpoints); a memory pickled before n_far was kept is recounted at its next refresh."""
        if "far" not in state:
            state = {**state, "far": np.zeros(len(state["log_rho"]), bool), "n_far": None}
        if "scored" not in state:  # pickled before scoring was kept: every step counts, as it then did
            state = {**state, "scored": np.ones(len(state["log_rho"]), bool)}
        self.__dict__.update({"priorities": None, **state})  # pickled before PER existed: uniform
        ReplayBank([self])

    # --- writing -------------------------------------------------------------------------------------------------
    def add(self, obs: np.ndarray, action: np.ndarray, reward: float, mu_mean: np.ndarray, mu_std: np.ndarray, v: float) -> None:
        """One step of the running episode: s_t, a_t, r_{t+1}, mu_t = (mean, std) and V(s_t) at acting time."""
        if self.running >= self.size - self.capacity:
            raise ValueError(f"episode longer than max_episode_steps ({self.size - self.capacity - 1})")
        i = (self.head + self.committed + self.running) % self.size
        self.obs[i], self.action[i], self.reward[i] = obs, action, reward
        self.mu_mean[i], self.mu_std[i], self.v[i], self.log_rho[i], self.far[i] = mu_mean, mu_std, v, 0.0, False
        self.scored[i] = False
        self.first[i], self.last[i], self.v_boot[i] = self.running == 0, False, 0.0
        self.running += 1

    def end_episode(self, last_obs: np.ndarray, terminated: bool, v_last: float) -> None:
        """Commit the running episode (its Q^ret computed with rho = 1, smarties (iii)); evict oldest episodes."""
        if self.running == 0:
            return
        start = (self.head + self.committed) % self.size
        end = (start + self.running - 1) % self.size
        self.last[end], self.terminal[end], self.final_obs[end] = True, terminated, last_obs
        self.v_boot[end] = 0.0 if terminated else v_last
        self.episodes.append((start, self.running, np.asarray(last_obs, np.float32), terminated))
        idx = (start + np.arange(self.running)) % self.size
        self.q_ret[idx] = episode_q_ret(
            self.reward[idx] * self.reward_scale, self.v[idx], np.ones(len(idx)), self.v_boot[end], self.discount
        )
        self.committed += self.running
        self.n_far += int(np.count_nonzero(self.far[idx]))
        self.running = 0
        if self.priorities is not None:
            self.priorities.add(idx)
        while self.committed > self.capacity:  # FIFO removal of whole episodes (Alg. 1)
            start, length, _, _ = self.episodes.popleft()
            gone = (start + np.arange(length)) % self.size
            self.n_far -= int(np.count_nonzero(self.far[gone]))
            if self.priorities is not None:
                self.priorities.remove(gone)
            self.head = (self.head + length) % self.size
            self.committed -= length

    # --- reading -------------------------------------------------------------------------------------------------
    def stored(self) -> np.ndarray:
        """Ring indices of the committed steps, oldest first."""
        return (self.head + np.arange(self.committed)) % self.size

    def draw(self, batch_size: int, beta: float = 1.0) -> tuple[np.ndarray, np.ndarray | None]:
        """Ring indices of ``batch_size`` committed time steps (not episodes; §3): uniformly (weights None), or by
        rank of |TD error| with importance exponent ``beta`` when prioritised (indices, importance weights)."""
        if self.priorities is None:
            i = self.rng.integers(0, self.committed, batch_size)
            i += self.head  # in place: (head + draw) % size, as one allocation
            i %= self.size
            return i, None
        return self.priorities.sample(batch_size, beta, self.rng)

    # The per-seed reads and writes below are the bank's (``ReplayBank``) on this seed's row.
    def sample(self, batch_size: int, beta: float = 1.0) -> Sample:
        """``batch_size`` stored steps of this seed (``draw``) and what the learner reads of them."""
        sample = self._bank.sample(batch_size, beta, rows=[self._row])
        return Sample(sample.index[0] - self._bank.offset[self._row], *(x[0] for x in sample[1:]))

    def update_priorities(self, index: np.ndarray, td_error: np.ndarray) -> None:
        """The sampled steps' |TD error| after an update (prioritised memories only)."""
        self.priorities.update(index, td_error)

    def transitions(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ReplayBank.transitions`` of this seed's steps ``index``."""
        return tuple(x[0] for x in self._bank.transitions(self._slots(index)))

    def set_log_rho(self, index: np.ndarray, log_rho: np.ndarray, c_max: float) -> None:
        """``ReplayBank.set_log_rho`` on this seed's steps ``index``."""
        plan = self._bank.plan(self._slots(index), c_max, rows=[self._row])
        self._bank.set_log_rho(plan, np.asarray(log_rho)[None], c_max)

    def write_back(self, index: np.ndarray, v: np.ndarray, log_rho: np.ndarray, c_max: float) -> None:
        """``ReplayBank.write_back`` on this seed's steps ``index``."""
        plan = self._bank.plan(self._slots(index), c_max, rows=[self._row], write_back=True)
        self._bank.write_back(plan, np.asarray(v)[None], np.asarray(log_rho)[None], c_max)

    def _slots(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(index)[None] + self._bank.offset[self._row]

    def far_fraction(self) -> float:
        """n_far / N from the last rho computed for every stored step (stale for unsampled ones, as the paper)."""
        return self.n_far / self.committed if self.committed else 0.0

    def scored_far_fraction(self) -> float:
        """The far fraction of the committed steps whose rho an update has computed (NaN if none): the metric.

        A step's rho is 1 when it is stored (the behaviour is the policy of the moment) until an update samples it,
        so the episode just committed, never sampled yet, would read near whatever the policy has done since: n_far
        / N read at a commit is low by about the newest episode's share of the memory. Eq. 12 keeps using n_far / N
        (``far_fraction``, the paper's approximation from outdated weights); the reported metric leaves the
        never-scored steps out."""
        idx = self.stored()
        scored = self.scored[idx]
        n = int(np.count_nonzero(scored))
        return int(np.count_nonzero(self.far[idx] & scored)) / n if n else float("nan")

    def recount_far(self, c_max: float) -> None:
        """Reclassify every stored step with the current c_max (its stored rho) and recount n_far exactly."""
        idx = self.stored()
        self.far[idx] = np.abs(self.log_rho[idx]) >= np.log(c_max)
        self.n_far = int(np.count_nonzero(self.far[idx]))

    # --- refreshing ------------------------------------------------------------------------------------------------
    def refresh_inputs(self) -> tuple[np.ndarray, ...]:
        """Flat arrays (length ``size``, oldest first, zero-padded) for ``retrace_q_ret`` over the whole memory."""
        idx = self.stored()
        nxt = (idx + 1) % self.size
        last = self.last[idx]
        pad = self.size - len(idx)
        r = np.pad(self.reward[idx] * self.reward_scale, (0, pad))
        v = np.pad(np.where(last, 0.0, self.v[nxt]), (0, pad))
        rho_bar = np.pad(np.where(last, 0.0, np.minimum(1.0, np.exp(self.log_rho[nxt]))), (0, pad))
        discount = np.pad(np.where(last, 0.0, self.discount), (0, pad))
        bootstrap = np.pad(np.where(last, self.discount * self.v_boot[idx], 0.0), (0, pad))
        return tuple(x.astype(np.float32) for x in (r, v, rho_bar, discount, bootstrap))

    def set_q_ret(self, q_ret: np.ndarray) -> None:
        """Store a full recomputation (the output of ``retrace_q_ret`` on ``refresh_inputs``)."""
        self.q_ret[self.stored()] = q_ret[: self.committed]

    def update_reward_scale(self) -> float:
        """Eq. 16: rewards divided by sigma_r + eps, sigma_r = sqrt(mean r^2) over the memory (the second moment)."""
        if self.committed:
            r = self.reward[self.stored()].astype(np.float64)
            self.reward_scale = float(1.0 / (np.sqrt(np.mean(r**2)) + EPSILON))
        return self.reward_scale

    def observations(self) -> np.ndarray:
        """Every stored observation, the running episode's included (for the state statistics of eqs. 14-15)."""
        idx = (self.head + np.arange(self.committed + self.running)) % self.size
        return self.obs[idx]


class ReplayBank:
    """Every seed's memory in one block: each array of ``EpisodeReplay`` is a row of a [seed, size, ...] array, held
    here flat ([seed * size, ...]: slot = seed's offset + ring index), so that one gather or scatter serves every
    seed of a lockstep step. The memories keep their own bookkeeping (episodes, head, counts, n_far, reward scale,
    random generator, priorities) and their arrays as views of their rows; the results are those of seed-by-seed
    calls, bit for bit.

    Reads take ``slots`` [k, B] (rows of k seeds' slots) and ``rows`` (which memories those are; all by default);
    ``set_log_rho`` and ``write_back`` take the ``plan`` of their slots, made while the update runs. Building a bank
    copies the memories' arrays into the block (a memory belongs to the last bank built over it).
    """

    FIELDS = ("obs", "action", "mu_mean", "mu_std", "reward", "v", "log_rho", "q_ret", "far", "scored", "first", "last",
              "v_boot", "terminal", "final_obs")

    def __init__(self, replays: list[EpisodeReplay]):
        self.replays = replays
        self.size = replays[0].size
        if any(r.size != self.size or r.discount != replays[0].discount for r in replays):
            raise ValueError("a replay bank holds memories of one size and discount")
        self.discount = replays[0].discount
        self.offset = np.arange(len(replays)) * self.size
        self.all_rows = np.arange(len(replays))
        for name in self.FIELDS:
            block = np.stack([getattr(r, name) for r in replays])
            setattr(self, name, block.reshape(len(replays) * self.size, *block.shape[2:]))
            for row, replay in enumerate(replays):
                setattr(replay, name, block[row])
        for row, replay in enumerate(replays):
            replay._bank, replay._row = self, row

    def _rows(self, rows: list[int] | np.ndarray | None) -> np.ndarray:
        return self.all_rows if rows is None else np.asarray(rows)

    def _reward_scales(self, slots: np.ndarray) -> np.ndarray:
        """Each slot's memory's reward scale, in float32 (the arithmetic of a float32 array times a Python float)."""
        return np.array([r.reward_scale for r in self.replays], np.float32)[slots // self.size]

    def sample(self, batch_size: int, beta: float = 1.0, rows: list[int] | None = None) -> Sample:
        """Every memory's ``draw`` (in row order, each from its own generator) and one gather per array."""
        rows = self._rows(rows)
        draws = [self.replays[r].draw(batch_size, beta) for r in rows]
        slots = np.stack([i for i, _ in draws])
        slots += self.offset[rows, None]
        weight = np.stack([np.ones(batch_size, np.float32) if w is None else w for _, w in draws])
        # ``take`` gathers rows like ``x[i]`` (same values) at a fraction of fancy indexing's per-call cost
        return Sample(slots, self.obs.take(slots, 0), self.action.take(slots, 0), self.mu_mean.take(slots, 0),
                      self.mu_std.take(slots, 0), self.q_ret.take(slots), weight)

    def update_priorities(self, slots: np.ndarray, td_error: np.ndarray, rows: list[int] | None = None) -> None:
        """The sampled steps' |TD error| after an update (prioritised memories only)."""
        for k, r in enumerate(self._rows(rows)):
            self.replays[r].update_priorities(slots[k] - self.offset[r], td_error[k])

    def transitions(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scaled r_{t+1}, discount: gamma, or 0 after a terminal step; s_{t+1}, s_T at an episode's end) of the
        steps at ``slots``, for the Q-learning targets of DDPG and NAF (rewards scaled as App. B says)."""
        nxt = slots + 1
        nxt[slots % self.size == self.size - 1] -= self.size  # the ring wraps within its row
        last = self.last.take(slots)
        next_obs = np.where(last[..., None], self.final_obs.take(slots, 0), self.obs.take(nxt, 0))
        discount = np.where(last & self.terminal.take(slots), 0.0, self.discount).astype(np.float32)
        return (self.reward.take(slots) * self._reward_scales(slots)).astype(np.float32), discount, next_obs

    def far_fractions(self) -> np.ndarray:
        """Every memory's n_far / N (float32)."""
        return np.array([r.far_fraction() for r in self.replays], np.float32)

    def scored_far_fractions(self) -> np.ndarray:
        """Every memory's far fraction among its scored steps (``EpisodeReplay.scored_far_fraction``; float32)."""
        return np.array([r.scored_far_fraction() for r in self.replays], np.float32)

    def plan(self, slots: np.ndarray, c_max: float, rows: list[int] | None = None, write_back: bool = False) -> Refresh:
        """What a ``set_log_rho`` (or, with ``write_back``, a ``write_back``) of the steps at ``slots`` reads that the
        update cannot change, gathered while the jitted update runs (the host would otherwise wait idle, and these
        gathers miss the caches the update has just used)."""
        rows = self._rows(rows)
        for r in rows:
            if self.replays[r].n_far is None:  # restored from a checkpoint written before n_far was kept
                self.replays[r].recount_far(c_max)
        flat = slots.ravel()
        unique = _unique(flat)
        plan = Refresh(slots, rows, unique, unique[self.far.take(unique)])
        if not write_back:
            return plan
        inner = flat[~self.first.take(flat)]
        prev = inner - 1
        prev[inner % self.size == 0] += self.size  # the ring wraps within its row
        return plan._replace(inner=inner, prev=prev, scaled_reward=self.reward.take(prev) * self._reward_scales(prev),
                             q_ret=self.q_ret.take(inner))

    def set_log_rho(self, plan: Refresh, log_rho: np.ndarray, c_max: float) -> None:
        """Store the current log rho of the planned steps (a step may repeat) and keep each memory's n_far counted:
        near iff 1/c_max < rho < c_max (strict, §3)."""
        self.log_rho[plan.slots] = log_rho
        far = np.abs(self.log_rho.take(plan.unique)) >= np.log(c_max)
        self.far[plan.unique] = far
        self.scored[plan.unique] = True
        n = len(self.replays)
        change = np.bincount(plan.unique[far] // self.size, minlength=n)
        change -= np.bincount(plan.was_far // self.size, minlength=n)
        for r in plan.rows:
            self.replays[r].n_far += int(change[r])

    def write_back(self, plan: Refresh, v: np.ndarray, log_rho: np.ndarray, c_max: float) -> None:
        """Store the current V and log rho of the planned steps, and correct the Q^ret of the step before each
        (smarties@2019: Q^ret[t-1] = r_t + gamma V_t + gamma min(1, rho_t) (Q^ret[t] - V_t))."""
        if plan.inner is None:
            raise ValueError("write_back needs a plan made with write_back=True")
        self.v[plan.slots] = v
        self.set_log_rho(plan, log_rho, c_max)
        rho_bar = np.minimum(1.0, np.exp(self.log_rho.take(plan.inner)))
        v_inner = self.v.take(plan.inner)
        self.q_ret[plan.prev] = plan.scaled_reward + self.discount * (v_inner + rho_bar * (plan.q_ret - v_inner))


def _unique(index: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``index`` (as ``np.unique``, without its per-call overhead, a third of the
    write-back's cost at B = 256)."""
    s = np.sort(index)
    keep = np.empty(len(s), bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def episode_q_ret(r: np.ndarray, v: np.ndarray, rho_bar: np.ndarray, v_boot: float, discount: float) -> np.ndarray:
    """Q^ret of one episode by the backward recursion (eq. 8): Q^ret_t = r_{t+1} + gamma V^tbc_{t+1}.

    ``r[t]`` = r_{t+1} (scaled), ``v[t]`` = V(s_t), ``rho_bar[t]`` = min(1, rho_t); V^tbc_T = ``v_boot``.
    """
    q_ret = np.zeros(len(r), np.float64)
    v_tbc_next = v_boot
    for t in range(len(r) - 1, -1, -1):
        q_ret[t] = r[t] + discount * v_tbc_next
        v_tbc_next = v[t] + rho_bar[t] * (q_ret[t] - v[t])
    return q_ret.astype(np.float32)


def state_statistics(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. 14-15: mean and 1 / (std + eps) of the first N_start observations (the learner's input scaling)."""
    mean = obs.mean(axis=0)
    std = obs.std(axis=0)
    return mean.astype(np.float32), (1.0 / (std + EPSILON)).astype(np.float32)
