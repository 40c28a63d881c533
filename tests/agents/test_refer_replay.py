"""ReF-ER's episode FIFO replay (Alg. 1-2, App. B): eviction, sampling, Q^ret refresh, reward and state scaling."""

from __future__ import annotations

import numpy as np
import pytest

from rlrepro.replay.episodes import EPSILON, EpisodeReplay, Sample, episode_q_ret, state_statistics
from rlrepro.losses.refer import retrace_q_ret


def _fill(replay: EpisodeReplay, lengths, terminals, rng, v_boot=2.0):
    for n, terminal in zip(lengths, terminals):
        for _ in range(n):
            replay.add(rng.normal(size=2), rng.normal(size=1), float(rng.normal()), np.zeros(1), np.ones(1), float(rng.normal()))
        replay.end_episode(np.zeros(2), terminal, v_boot)


def test_fifo_removes_whole_oldest_episodes_while_over_capacity():
    replay = EpisodeReplay(capacity=10, max_episode_steps=6, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    rng = np.random.default_rng(0)
    _fill(replay, [4, 3], [True, False], rng)
    assert replay.committed == 7 and len(replay.episodes) == 2
    _fill(replay, [5], [True], rng)  # 12 > 10: the 4-step episode goes, 8 remain
    assert replay.committed == 8 and [e[1] for e in replay.episodes] == [3, 5]
    for _ in range(40):  # many more episodes through the ring: never above N, episodes never split
        _fill(replay, [int(rng.integers(1, 7))], [bool(rng.integers(2))], rng)
        assert replay.committed <= 10
        assert replay.committed == sum(e[1] for e in replay.episodes)
        stored = replay.stored()
        assert replay.first[stored[0]] and replay.last[stored[-1]]
        assert replay.first[stored].sum() == replay.last[stored].sum() == len(replay.episodes)


def test_sampling_is_uniform_over_committed_steps_only():
    replay = EpisodeReplay(capacity=100, max_episode_steps=50, obs_dim=1, action_dim=1, discount=0.9, seed=1)
    for i in range(20):
        replay.add(np.array([float(i)]), np.zeros(1), 0.0, np.zeros(1), np.ones(1), 0.0)
    replay.end_episode(np.zeros(1), True, 0.0)
    for i in range(5):  # a running episode: not sampleable until it ends
        replay.add(np.array([100.0 + i]), np.zeros(1), 0.0, np.zeros(1), np.ones(1), 0.0)
    obs = replay.sample(20_000).obs[:, 0]
    assert obs.max() < 20
    counts = np.bincount(obs.astype(int), minlength=20)
    assert counts.min() > 850 and counts.max() < 1150  # 1000 expected per step


def test_full_refresh_equals_exact_per_episode_recomputation_with_terminal_and_truncated_ends():
    replay = EpisodeReplay(capacity=30, max_episode_steps=8, obs_dim=2, action_dim=1, discount=0.95, seed=2)
    rng = np.random.default_rng(3)
    _fill(replay, [8, 5, 7, 6, 8, 4], [True, False, True, False, False, True], rng, v_boot=1.5)  # wraps the ring
    idx = replay.stored()
    replay.log_rho[idx] = rng.normal(scale=0.7, size=len(idx))  # as if refreshed by sampled updates
    replay.update_reward_scale()
    replay.set_q_ret(np.asarray(retrace_q_ret(*replay.refresh_inputs())))
    for start, length, _, terminal in replay.episodes:  # exact recomputation, episode by episode (eq. 8)
        ep = (start + np.arange(length)) % replay.size
        rho_bar = np.minimum(1.0, np.exp(replay.log_rho[ep]))
        v_boot = 0.0 if terminal else 1.5
        expected = episode_q_ret(replay.reward[ep] * replay.reward_scale, replay.v[ep], rho_bar, v_boot, 0.95)
        np.testing.assert_allclose(replay.q_ret[ep], expected, rtol=1e-4, atol=1e-5)


def test_committed_episode_gets_rho_one_returns_and_write_back_corrects_the_previous_step():
    replay = EpisodeReplay(capacity=10, max_episode_steps=3, obs_dim=1, action_dim=1, discount=0.5, seed=0)
    for r, v in [(1.0, 10.0), (2.0, 20.0), (4.0, 30.0)]:
        replay.add(np.zeros(1), np.zeros(1), r, np.zeros(1), np.ones(1), v)
    replay.end_episode(np.zeros(1), False, 8.0)  # truncated, V(s_T) = 8
    # rho = 1: Q^ret_2 = 4 + 0.5*8 = 8; Q^ret_1 = 2 + 0.5*8 = 6; Q^ret_0 = 1 + 0.5*6 = 4
    np.testing.assert_allclose(replay.q_ret[:3], [4.0, 6.0, 8.0])
    # step 2 sampled: new V = 12, rho = 0.5 -> Q^ret_1 = r_2 + gamma (V_2 + rho_bar (Q^ret_2 - V_2)) = 2 + 0.5 (12 + 0.5 (8 - 12)) = 7
    replay.write_back(np.array([2]), np.array([12.0]), np.log(np.array([0.5])), 4.0)
    np.testing.assert_allclose(replay.q_ret[:3], [4.0, 7.0, 8.0])
    replay.write_back(np.array([0]), np.array([1.0]), np.array([0.0]), 4.0)  # an episode's first step corrects nothing before it
    np.testing.assert_allclose(replay.q_ret[:3], [4.0, 7.0, 8.0])


def test_far_fraction_counts_stored_ratios_outside_the_band():
    replay = EpisodeReplay(capacity=10, max_episode_steps=4, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    _fill(replay, [4], [True], np.random.default_rng(0))
    # c_max = 2: rho 2.0 and 0.4 are far (near iff 1/2 < rho < 2, strict), 1.0 and 1.9 near
    replay.set_log_rho(replay.stored(), np.log([1.0, 2.0, 0.4, 1.9]).astype(np.float32), 2.0)
    assert replay.far_fraction() == pytest.approx(0.5)
    replay.recount_far(1.8)  # a smaller c_max: 1.9 is far too
    assert replay.far_fraction() == pytest.approx(0.75)


def test_the_far_fraction_metric_leaves_out_the_steps_no_update_has_scored():
    # episode 1 (4 steps) scored at c_max 2: rho 1.0, 2.0, 0.4, 1.9 -> 2 far of 4; episode 2 (4 steps) just committed,
    # never sampled: its rho is the 1 of acting time. n_far / N = 2 / 8 = 0.25 reads it as near; the metric: 2 / 4 = 0.5
    replay = EpisodeReplay(capacity=10, max_episode_steps=4, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    rng = np.random.default_rng(0)
    _fill(replay, [4], [True], rng)
    assert np.isnan(replay.scored_far_fraction())  # nothing scored yet
    replay.set_log_rho(replay.stored(), np.log([1.0, 2.0, 0.4, 1.9]).astype(np.float32), 2.0)
    _fill(replay, [4], [True], rng)
    assert replay.far_fraction() == pytest.approx(2 / 8)  # eq. 12's n_far / N (the paper's stale approximation)
    assert replay.scored_far_fraction() == pytest.approx(2 / 4)
    assert replay._bank.scored_far_fractions() == pytest.approx([0.5])
    # once an update scores a step of episode 2 (rho 1.0: near), it counts: 2 / 5 = 0.4
    replay.set_log_rho(replay.stored()[4:5], np.zeros(1, np.float32), 2.0)
    assert replay.scored_far_fraction() == pytest.approx(2 / 5)
    # a new step of a running episode reuses no scored flag of the slot it overwrites (the ring wraps)
    _fill(replay, [4, 4], [True, True], rng)  # capacity 10: episodes 1 and 2 are evicted, 3 and 4 never scored
    assert np.isnan(replay.scored_far_fraction())


def test_incremental_far_count_equals_a_full_recount():
    """Notes §6: the n_far kept O(B) per step through refreshes (with repeated indices), commits and FIFO evictions
    equals a recount of the whole memory at the same c_max."""
    rng = np.random.default_rng(3)
    replay = EpisodeReplay(capacity=60, max_episode_steps=12, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    c_max, checked = 1.5, 0
    for _ in range(40):
        for _ in range(int(rng.integers(1, 13))):
            replay.add(np.zeros(2), np.zeros(1), 1.0, np.zeros(1), np.ones(1), 0.0)
        replay.end_episode(np.zeros(2), bool(rng.integers(2)), 0.0)
        for _ in range(3):
            index = replay.sample(16).index  # uniform with replacement: repeats happen
            replay.write_back(index, np.zeros(16, np.float32), rng.normal(0.0, 0.5, 16).astype(np.float32), c_max)
            recount = np.count_nonzero(np.abs(replay.log_rho[replay.stored()]) >= np.log(c_max))
            assert replay.n_far == recount
            checked += recount > 0
    assert replay.committed <= 60 and checked > 50  # evictions happened and the count was not trivially 0


def test_a_memory_pickled_before_the_far_count_recounts_at_its_next_refresh():
    import pickle

    replay = EpisodeReplay(capacity=10, max_episode_steps=4, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    _fill(replay, [4], [True], np.random.default_rng(0))
    replay.log_rho[replay.stored()] = np.log([1.0, 2.0, 0.4, 1.9])
    old = dict(replay.__dict__)
    del old["far"], old["n_far"]
    restored = EpisodeReplay.__new__(EpisodeReplay)
    restored.__setstate__(pickle.loads(pickle.dumps(old)))
    restored.set_log_rho(restored.stored()[:1], np.zeros(1, np.float32), 2.0)
    assert restored.far_fraction() == pytest.approx(0.5)


def test_reward_scale_is_the_root_mean_square_and_state_statistics_eqs_14_15():
    replay = EpisodeReplay(capacity=10, max_episode_steps=3, obs_dim=1, action_dim=1, discount=0.9, seed=0)
    for r in (1.0, -1.0, 3.0):
        replay.add(np.zeros(1), np.zeros(1), r, np.zeros(1), np.ones(1), 0.0)
    replay.end_episode(np.zeros(1), True, 0.0)
    # mean r^2 = (1 + 1 + 9) / 3 = 11/3; sigma_r = 1.9148542; scale = 1 / (sigma_r + 1e-7) = 0.5222330
    assert replay.update_reward_scale() == pytest.approx(0.5222330, rel=1e-6)
    obs = np.array([[1.0, 0.0], [3.0, 0.0], [5.0, 0.0]])
    mean, inv_std = state_statistics(obs)
    # mean (3, 0); std (sqrt(8/3) = 1.6329932, 0) -> 1 / (std + eps): 0.6123724 and 1e7 (a constant feature)
    np.testing.assert_allclose(mean, [3.0, 0.0])
    np.testing.assert_allclose(inv_std, [0.6123724, 1.0 / EPSILON], rtol=1e-6)


def test_transitions_give_the_next_state_and_no_bootstrap_only_after_a_terminal_step():
    replay = EpisodeReplay(capacity=10, max_episode_steps=3, obs_dim=1, action_dim=1, discount=0.9, seed=0)
    for terminal, base in ((True, 0.0), (False, 10.0)):
        for i in range(2):
            replay.add(np.array([base + i]), np.zeros(1), 2.0, np.zeros(1), np.ones(1), 0.0)
        replay.end_episode(np.array([base + 5.0]), terminal, 0.0)
    replay.reward_scale = 0.5
    r, discount, next_obs = replay.transitions(np.arange(4))
    np.testing.assert_allclose(r, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(discount, [0.9, 0.0, 0.9, 0.9])  # terminal end: 0; truncated end: gamma
    np.testing.assert_allclose(next_obs[:, 0], [1.0, 5.0, 11.0, 15.0])


def test_the_loops_fast_unique_is_numpys_unique():
    """``set_log_rho`` counts n_far over the distinct sampled steps with ``_unique`` (sort and compare neighbours)
    instead of ``np.unique``: the same sorted values, whatever the repeats (a minibatch repeats steps)."""
    from rlrepro.replay.episodes import _unique

    rng = np.random.default_rng(0)
    for size, high in ((0, 5), (1, 5), (2, 1), (256, 40), (256, 100_000), (1000, 3)):
        index = rng.integers(0, high, size)
        np.testing.assert_array_equal(_unique(index), np.unique(index))
    np.testing.assert_array_equal(_unique(np.array([7, 3, 7, 7, 0, 3])), [0, 3, 7])


def test_a_minibatch_holds_the_rows_of_its_ring_indices_across_the_wrap():
    """``sample`` gathers with ``take``: every field is the stored row of its index (bit for bit), also after the
    ring wrapped (head > 0), and the indices are committed steps only."""
    replay = EpisodeReplay(capacity=30, max_episode_steps=8, obs_dim=2, action_dim=1, discount=0.9, seed=2)
    rng = np.random.default_rng(3)
    _fill(replay, [int(n) for n in rng.integers(1, 9, 25)], [bool(t) for t in rng.integers(0, 2, 25)], rng)
    assert replay.head > 0  # wrapped
    replay.mu_mean[:] = rng.normal(size=replay.mu_mean.shape)
    replay.mu_std[:] = rng.uniform(0.5, 2.0, size=replay.mu_std.shape)
    replay.q_ret[:] = rng.normal(size=replay.q_ret.shape)
    s = replay.sample(64)
    assert set(s.index) <= set(replay.stored())
    for got, stored in ((s.obs, replay.obs), (s.action, replay.action), (s.mu_mean, replay.mu_mean),
                        (s.mu_std, replay.mu_std), (s.q_ret, replay.q_ret)):
        assert got.dtype == stored.dtype
        np.testing.assert_array_equal(got, stored[s.index])
    np.testing.assert_array_equal(s.weight, np.ones(64, np.float32))


def test_every_seeds_minibatch_is_standardised_with_its_own_statistics_bit_for_bit():
    """Eqs. 14-15 for all seeds at once equal seed by seed (the loop's old per-seed arithmetic), bit for bit."""
    from rlrepro.training.refer_host import standardise_seeds

    rng = np.random.default_rng(4)
    obs = rng.normal(3.0, 5.0, size=(3, 256, 11)).astype(np.float32)
    mean = rng.normal(size=(3, 11)).astype(np.float32)
    inv_std = rng.uniform(0.1, 10.0, size=(3, 11)).astype(np.float32)
    batch = standardise_seeds(obs, mean, inv_std)
    assert batch.dtype == np.float32
    for i in range(3):
        np.testing.assert_array_equal(batch[i], (obs[i] - mean[i]) * inv_std[i])


def _memories(seed: int, priority=None) -> list[EpisodeReplay]:
    """Three memories that wrapped their rings, with different reward scales and far counts."""
    rng = np.random.default_rng(seed)
    replays = []
    for s in range(3):
        replay = EpisodeReplay(capacity=30, max_episode_steps=8, obs_dim=2, action_dim=1, discount=0.9, seed=s,
                               priority=priority)
        _fill(replay, [int(n) for n in rng.integers(1, 9, 12 + 4 * s)], [bool(t) for t in rng.integers(0, 2, 24)], rng)
        replay.update_reward_scale()
        replay.set_log_rho(replay.stored(), rng.normal(0.0, 0.6, replay.committed).astype(np.float32), 1.5)
        replays.append(replay)
    assert all(r.head > 0 for r in replays) and len({r.reward_scale for r in replays}) == 3
    return replays


@pytest.mark.parametrize("priority", [None, (0.7, 3)], ids=["uniform", "prioritised"])
def test_a_bank_of_seeds_gives_each_seed_exactly_what_its_own_memory_gives(priority):
    """One gather and one scatter for every seed (``ReplayBank``) equal seed-by-seed calls on separate memories, bit
    for bit: draws, minibatches, write-backs with repeated steps, n_far, transitions and priorities, across the
    ring's wrap and with a reward scale per seed."""
    import pickle

    from rlrepro.replay.episodes import ReplayBank

    banked = _memories(5, priority)
    alone = [pickle.loads(pickle.dumps(r)) for r in banked]  # the same memories, each its own
    bank = ReplayBank(banked)
    rng = np.random.default_rng(6)
    for step in range(30):
        sample = bank.sample(16, 0.6)
        own = [r.sample(16, 0.6) for r in alone]
        for field in Sample._fields:
            got = getattr(sample, field) - (bank.offset[:, None] if field == "index" else 0)
            np.testing.assert_array_equal(got, np.stack([getattr(s, field) for s in own]), err_msg=field)
        moves = bank.transitions(sample.index)
        for got, expected in zip(moves, zip(*(r.transitions(s.index) for r, s in zip(alone, own)))):
            np.testing.assert_array_equal(got, np.stack(expected))
        v = rng.normal(size=(3, 16)).astype(np.float32)
        log_rho = rng.normal(0.0, 0.6, (3, 16)).astype(np.float32)
        if step % 2:
            bank.write_back(bank.plan(sample.index, 1.5, write_back=True), v, log_rho, 1.5)
            for i, (r, s) in enumerate(zip(alone, own)):
                r.write_back(s.index, v[i], log_rho[i], 1.5)
        else:
            bank.set_log_rho(bank.plan(sample.index, 1.5), log_rho, 1.5)
            for i, (r, s) in enumerate(zip(alone, own)):
                r.set_log_rho(s.index, log_rho[i], 1.5)
        if priority is not None:
            td = rng.exponential(size=(3, 16))
            bank.update_priorities(sample.index, td)
            for r, s, t in zip(alone, own, td):
                r.update_priorities(s.index, t)
        np.testing.assert_array_equal(bank.far_fractions(), np.array([r.far_fraction() for r in alone], np.float32))
    for r, a in zip(banked, alone):
        assert r.n_far == a.n_far and np.shares_memory(r.q_ret, bank.q_ret)
        for name in ReplayBank.FIELDS:
            np.testing.assert_array_equal(getattr(r, name), getattr(a, name), err_msg=name)


def test_a_pickled_bank_member_comes_back_as_its_own_memory_with_only_its_rows():
    """Checkpoints pickle the memories, not the bank: each carries its own rows, and a host rebuilds the bank."""
    import pickle

    from rlrepro.replay.episodes import ReplayBank

    replays = _memories(7)
    alone = pickle.dumps(replays[1])
    bank = ReplayBank(replays)
    data = pickle.dumps(replays[1])
    assert len(data) == len(alone)  # its rows, not the three seeds' block
    restored = pickle.loads(data)
    assert restored._bank is not bank and len(restored._bank.replays) == 1
    for name in ReplayBank.FIELDS:
        np.testing.assert_array_equal(getattr(restored, name), getattr(replays[1], name), err_msg=name)
    restored.q_ret[:] = 0.0  # its own storage now
    assert np.any(bank.q_ret != 0.0)


def test_a_chunk_ending_at_a_commit_reports_the_far_fraction_of_the_scored_steps():
    # The host's last step returned eq. 12's n_far / N = 2 / 8 (its beta update uses it); the chunk's metric must
    # not read the episode just committed, never sampled, as near: 2 far of the 4 scored steps = 0.5
    import types

    from rlrepro.training.refer_host import HostState, ReferHost

    replay = EpisodeReplay(capacity=10, max_episode_steps=4, obs_dim=2, action_dim=1, discount=0.9, seed=0)
    rng = np.random.default_rng(0)
    _fill(replay, [4], [True], rng)
    replay.set_log_rho(replay.stored(), np.log([1.0, 2.0, 0.4, 1.9]).astype(np.float32), 2.0)
    _fill(replay, [4], [True], rng)
    host = HostState([None], [replay], np.zeros((1, 2), np.float32), np.ones(1, np.float32))
    agent = ReferHost.__new__(ReferHost)
    agent.env_spec = types.SimpleNamespace(frames_per_step=1)
    agent._memory_kl = lambda host, learner: np.full(1, np.nan)
    step = (np.zeros(1), np.zeros(1), np.ones(1), replay._bank.far_fractions(), np.ones(1), 2.0, 1e-4)
    metrics = agent._metrics(types.SimpleNamespace(host=host, learner=None), [0], [step])
    assert float(step[3][0]) == pytest.approx(0.25)
    assert float(metrics.far_fraction[0]) == pytest.approx(0.5)
