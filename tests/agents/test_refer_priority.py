"""Rank-based prioritised replay (Schaul et al. 2016, §3.3-3.4) in ReF-ER's episode memory: ranks, sampling
probabilities, importance weights, beta annealing, priority updates, and consistency through FIFO evictions."""

from __future__ import annotations

import numpy as np
import pytest

from rlrepro.replay.priority import importance_exponent
from rlrepro.replay.episodes import EpisodeReplay

ALPHA = 0.7


def _episode(replay: EpisodeReplay, length: int, first_obs: float = 0.0) -> np.ndarray:
    for i in range(length):
        replay.add(np.array([first_obs + i]), np.zeros(1), 0.0, np.zeros(1), np.ones(1), 0.0)
    replay.end_episode(np.zeros(1), True, 0.0)
    return replay.stored()[-length:]


def _four_step_memory(sort_period: int = 1) -> tuple[EpisodeReplay, np.ndarray]:
    replay = EpisodeReplay(capacity=100, max_episode_steps=10, obs_dim=1, action_dim=1, discount=0.9, seed=0,
                           priority=(ALPHA, sort_period))
    slots = _episode(replay, 4)
    replay.update_priorities(slots, np.array([0.5, -2.0, 0.1, 1.0]))  # |TD errors| 0.5, 2, 0.1, 1
    return replay, slots


def test_ranks_probabilities_and_importance_weights_by_hand():
    replay, slots = _four_step_memory()
    # ranks by decreasing |TD error|: 2 -> 1, 1 -> 2, 0.5 -> 3, 0.1 -> 4
    assert replay.priorities.ranks()[slots].tolist() == [3, 1, 4, 2]
    # p(r) = r^-0.7: 1, 2^-0.7 = 0.6155722, 3^-0.7 = exp(-0.7 ln 3) = 0.4634631, 4^-0.7 = 2^-1.4 = 0.3789291;
    # sum = 2.4579644 -> P = 0.4068407, 0.2504398, 0.1885556, 0.1541638
    np.testing.assert_allclose(replay.priorities.probabilities(4), [0.4068407, 0.2504398, 0.1885556, 0.1541638], rtol=1e-6)
    # w(r) = (N P(r))^-beta / max_i (N P(i))^-beta = (P(r) / P(4))^-beta = (r / 4)^(alpha beta); beta = 0.5:
    # (1/4)^0.35 = 0.6155722, (2/4)^0.35 = 0.7845841, (3/4)^0.35 = 0.9042144, 1
    by_rank = {1: 0.6155722, 2: 0.7845841, 3: 0.9042144, 4: 1.0}
    rank_of = dict(zip(slots.tolist(), [3, 1, 4, 2]))
    sample = replay.sample(64, beta=0.5)
    np.testing.assert_allclose(sample.weight, [by_rank[rank_of[i]] for i in sample.index.tolist()], rtol=1e-6)
    assert sample.obs[:, 0].tolist() == [float(list(slots).index(i)) for i in sample.index.tolist()]  # their data


def test_sampling_frequencies_follow_the_rank_probabilities():
    replay, slots = _four_step_memory()
    counts = np.zeros(4)
    for _ in range(5000):  # 20,000 draws in batches of 4: one per equal-probability segment (stratified)
        index = replay.sample(4, beta=1.0).index
        counts += np.bincount([list(slots).index(i) for i in index.tolist()], minlength=4)
    frequency = counts / counts.sum()
    # slot order (|TD| 0.5, 2, 0.1, 1) -> ranks (3, 1, 4, 2) -> P = (0.1886, 0.4068, 0.1542, 0.2504)
    np.testing.assert_allclose(frequency, [0.1885556, 0.4068407, 0.1541638, 0.2504398], atol=0.01)


def test_stratified_segments_put_one_draw_in_each_equal_probability_segment():
    replay, slots = _four_step_memory()
    # cumulative P by rank: 0.4068, 0.6573, 0.8458, 1. Segment 0 = [0, 0.25) lies in rank 1; segment 3 = [0.75, 1)
    # in ranks 3 (up to 0.8458) or 4. So every batch of 4 has the rank-1 step first and a rank-3/4 step last.
    top, bottom = slots[1], {slots[0], slots[2]}
    for _ in range(200):
        index = replay.sample(4, beta=1.0).index
        assert index[0] == top and index[3] in bottom


def test_importance_exponent_anneals_linearly_from_beta0_to_one():
    # beta(t) = 0.5 + 0.5 min(1, t / 100): 0.5, 0.625, 0.75, 0.875, 1, 1
    assert [importance_exponent(0.5, t, 100) for t in (0, 25, 50, 75, 100, 250)] == [0.5, 0.625, 0.75, 0.875, 1.0, 1.0]
    replay, _ = _four_step_memory()
    # at beta = 0.75 the weights are (r / 4)^0.525: rank 1 -> 0.25^0.525 = 0.4829682
    weights = replay.sample(4, beta=importance_exponent(0.5, 50, 100)).weight
    assert weights[0] == pytest.approx(0.4829682, rel=1e-6)


def test_new_steps_enter_at_the_largest_priority_seen_and_updates_move_them():
    replay, slots = _four_step_memory()
    replay.priorities.ranks()  # ranked: slot 1 (|TD| 2) first
    new = _episode(replay, 2, first_obs=10.0)
    ranks = replay.priorities.ranks()
    assert replay.priorities.priority[new].tolist() == [2.0, 2.0]  # the largest |TD error| so far
    assert sorted(ranks[new].tolist()) == [1, 2] and ranks[slots[1]] == 3  # ahead of the old maximum (newest first)
    replay.update_priorities(new, np.array([0.05, 0.3]))  # after an update: their own |TD errors|
    ranks = replay.priorities.ranks()
    assert ranks[new].tolist() == [6, 4] and ranks[slots].tolist() == [3, 1, 5, 2]


def test_updated_priorities_rerank_after_sort_period_updates():
    replay, slots = _four_step_memory(sort_period=3)
    replay.sample(4, beta=1.0)  # sorted: slot 1 (|TD| 2) at rank 1
    replay.update_priorities(slots[1:2], np.array([0.01]))  # now the smallest
    assert replay.sample(4, beta=1.0).index[0] == slots[1]  # 1 update since the sort: ranks kept (smarties: 10)
    replay.update_priorities(slots[3:4], np.array([1.0]))
    replay.update_priorities(slots[3:4], np.array([1.0]))  # the 3rd update since the sort: re-rank at the next draw
    index = replay.sample(4, beta=1.0).index
    assert index[0] == slots[3] and replay.priorities.ranks()[slots[1]] == 4


def test_fifo_eviction_keeps_the_priority_structure_consistent():
    replay = EpisodeReplay(capacity=12, max_episode_steps=6, obs_dim=1, action_dim=1, discount=0.9, seed=4,
                           priority=(ALPHA, 5))
    rng = np.random.default_rng(5)
    for k in range(60):  # many episodes through the ring: evictions, slot reuse, updates between them
        _episode(replay, int(rng.integers(1, 7)), first_obs=100.0 * k)
        for _ in range(int(rng.integers(0, 4))):
            sample = replay.sample(5, beta=0.6)
            stored = set(replay.stored().tolist())
            assert set(sample.index.tolist()) <= stored  # never an evicted or running step
            replay.update_priorities(sample.index, rng.exponential(size=5))
        p = replay.priorities
        p.sort()
        assert sorted(p.order.tolist()) == sorted(replay.stored().tolist())  # exactly the committed steps
        assert np.flatnonzero(p.live).tolist() == sorted(replay.stored().tolist())
        assert np.all(np.diff(p.priority[p.order]) <= 0)  # by decreasing |TD error|
    # a reused slot enters again at the largest priority, not with its evicted step's value
    new = _episode(replay, 3, first_obs=-1.0)
    assert np.all(replay.priorities.priority[new] == replay.priorities.max_priority)


def test_uniform_memory_has_unit_weights_and_old_pickles_load_uniform():
    replay = EpisodeReplay(capacity=20, max_episode_steps=5, obs_dim=1, action_dim=1, discount=0.9, seed=0)
    _episode(replay, 5)
    assert replay.priorities is None and replay.sample(8).weight.tolist() == [1.0] * 8
    state = dict(replay.__dict__)
    del state["priorities"]  # a checkpoint written before PER existed
    restored = EpisodeReplay.__new__(EpisodeReplay)
    restored.__setstate__(state)
    assert restored.priorities is None and restored.sample(3).weight.tolist() == [1.0] * 3
