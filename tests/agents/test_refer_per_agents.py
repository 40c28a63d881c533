"""DDPG and NAF with rank-based PER: the learners weight every sample's loss by its importance weight, the host
writes the learner's |TD errors| back as priorities, DDPG with PER explores with an OU process, and the spec
adds the variant without rehashing any other job."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pydantic import ValidationError

from rlrepro.agents.ddpg import learner as dlearner
from rlrepro.agents.ddpg.build import resolve_ddpg
from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.ddpg.networks import CriticNetwork, PolicyNetwork
from rlrepro.agents.naf import learner as nlearner
from rlrepro.agents.naf.config import NAFConfig
from rlrepro.training.refer_config import ReferConfig
from rlrepro.replay.priority import PriorityConfig
from rlrepro.specs import load_spec
from rlrepro.specs.agents.refer import DDPGAgentSpec, NAFAgentSpec, VRacerAgentSpec
from rlrepro.specs.loading import resolve_agent, resolve_env
from rlrepro.workflow import config_hash

OBS, ACT = 3, 2
WEIGHT = (0.25, 1.0)


def _batch(obs, action, mu_mean, weight) -> dlearner.Batch:
    reward, discount = jnp.array([1.0, -0.5]), jnp.array([0.9, 0.0])  # the second step ended in a terminal
    return dlearner.Batch(obs, action, reward, discount, obs * 0.5, mu_mean, jnp.asarray(weight, jnp.float32))


def _one(batch: dlearner.Batch, i: int) -> dlearner.Batch:
    return dlearner.Batch(*(x[i : i + 1] for x in batch[:-1]), jnp.ones(1))


def _weighted_mean(g0, g1):
    # L = (0.25 l_0 + 1.0 l_1) / 2  ->  grad L = (0.25 g_0 + 1.0 g_1) / 2, g_i the gradient of sample i alone
    return jax.tree.map(lambda a, b: (WEIGHT[0] * a + WEIGHT[1] * b) / 2, g0, g1)


def _assert_trees_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-7)


def test_ddpg_weights_each_samples_critic_and_policy_gradient_by_its_importance_weight():
    config = DDPGConfig(rules=ReferConfig(variant="per"), hidden_sizes=(8,))
    state = dlearner.init(config, jax.random.key(1), OBS, ACT)
    obs = jnp.array([[1.0, 0.5, -0.5], [0.2, -1.0, 0.3]])
    mean = PolicyNetwork(config.hidden_sizes, ACT).apply(state.policy, obs)
    batch = _batch(obs, mean + 0.05, mean, WEIGHT)

    @jax.jit  # one compile per batch size, not op by op
    def critic(b):
        return jax.grad(dlearner.critic_loss, has_aux=True)(state.critic, state, config, ACT, b, jnp.ones(len(b.obs)))

    @jax.jit
    def policy(b):
        return jax.grad(dlearner.policy_loss, has_aux=True)(state.policy, state, config, ACT, b, 1.0, 2.0)[0]

    (g_critic, td), g0, g1 = critic(batch), critic(_one(batch, 0))[0], critic(_one(batch, 1))[0]
    _assert_trees_close(g_critic, _weighted_mean(g0, g1))
    _assert_trees_close(policy(batch), _weighted_mean(policy(_one(batch, 0)), policy(_one(batch, 1))))
    # the priority is the critic's |Q(s, a) - y|, y = r + gamma' Q'(s', m'(s')) (0 after the terminal)
    q = CriticNetwork(config.hidden_sizes).apply(state.critic, obs, batch.action)
    next_q = CriticNetwork(config.hidden_sizes).apply(state.target_critic, obs * 0.5, PolicyNetwork(config.hidden_sizes, ACT).apply(state.target_policy, obs * 0.5))
    np.testing.assert_allclose(td, jnp.abs(q - (batch.reward + batch.discount * next_q)), rtol=1e-5)


def test_per_with_unit_weights_is_the_er_update_and_er_ignores_weights():
    obs = jnp.array([[1.0, 0.5, -0.5], [0.2, -1.0, 0.3]])
    updates = {}
    for variant, weight in (("per", [1.0, 1.0]), ("er", [1.0, 1.0]), ("er", list(WEIGHT))):
        config = DDPGConfig(rules=ReferConfig(variant=variant), hidden_sizes=(8,))
        state = dlearner.init(config, jax.random.key(2), OBS, ACT)
        mean = PolicyNetwork(config.hidden_sizes, ACT).apply(state.policy, obs)
        new, _ = dlearner.update(config, ACT, state, _batch(obs, mean + 0.05, mean, weight), jnp.float32(1.0), jnp.float32(2.0), 1.0)
        updates[variant, tuple(weight)] = jax.tree.leaves(new)
    for x, y, z in zip(updates["per", (1.0, 1.0)], updates["er", (1.0, 1.0)], updates["er", WEIGHT]):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9)  # PER with unit weights = ER
        np.testing.assert_array_equal(y, z)  # uniform replay never reads the weights


def test_naf_weights_each_samples_gradient_by_its_importance_weight():
    config = NAFConfig(rules=ReferConfig(variant="per"), hidden_sizes=(8,))
    state = nlearner.init(config, jax.random.key(3), OBS, ACT)
    obs = jnp.array([[1.0, 0.5, -0.5], [0.2, -1.0, 0.3]])
    batch = _batch(obs, jnp.full((2, ACT), 0.1), jnp.zeros((2, ACT)), WEIGHT)

    @jax.jit  # one compile per batch size, not op by op
    def grads(b):
        return jax.grad(nlearner.loss_fn, has_aux=True)(state.params, state.target, config, ACT, b, 1.0, 2.0)

    (g, out), g0, g1 = grads(batch), grads(_one(batch, 0))[0], grads(_one(batch, 1))[0]
    _assert_trees_close(g, _weighted_mean(g0, g1))
    assert out.td_error.shape == (2,) and np.all(np.asarray(out.td_error) > 0)


def _env():
    pytest.importorskip("mujoco")
    spec = load_spec("specs/refer/mujoco_ddpg.yaml")
    return resolve_env(spec, "inverted_pendulum", "smoke")


@pytest.mark.parametrize("kind", ["ddpg", "naf"])
def test_host_writes_the_learners_td_errors_back_as_priorities(kind):
    """After the first update every sampled step's priority is its |TD error| under the parameters it was
    computed with (Schaul Alg. 1, line 12), and the batch carried the memory's importance weights."""
    env = _env()
    per = PriorityConfig(alpha=0.7, beta0=0.5, sort_period=10, anneal_steps=100)
    common = dict(rules=ReferConfig(variant="per"), capacity=500, n_start=40, batch_size=8, hidden_sizes=(8,), per=per)
    if kind == "ddpg":
        from rlrepro.agents.ddpg.loop import HostDDPG

        config = DDPGConfig(**common, exploration="ornstein_uhlenbeck", anneal_learning_rate=False)
        host = HostDDPG(config, env)
        td_of = lambda s, b: dlearner.critic_loss(s.critic, s, config, host.action_dim, b, jnp.ones(8))[1]
    else:
        from rlrepro.agents.naf.loop import HostNAF

        config = NAFConfig(**common)
        host = HostNAF(config, env)
        td_of = lambda s, b: nlearner.loss_fn(s.params, s.target, config, host.action_dim, b, 1.0, 2.0)[1].td_error
    state, _ = host.run(host.init([0, 1]), config.n_start - 1)  # the first update comes at t = N_start
    seen, make_batch = [], host._batch
    host._batch = lambda h, sample: seen.append((make_batch(h, sample), sample.index - h.bank.offset[:, None])) or seen[-1][0]
    before = state.learner
    state, _ = host.run(state, 1)
    (batch, indices), = seen
    expected = np.asarray(jax.vmap(td_of)(before, batch))
    beta = 0.5 + 0.5 * config.n_start / per.anneal_steps  # beta(t = 40) = 0.7
    for i, replay in enumerate(state.host.replays):
        np.testing.assert_allclose(replay.priorities.priority[indices[i]], expected[i], rtol=1e-5, atol=1e-7)
        n = replay.committed
        assert np.all((batch.weight[i] > 0) & (batch.weight[i] <= 1))
        assert batch.weight[i].min() >= (1 / n) ** (0.7 * beta) - 1e-6  # (r / N)^(alpha beta) >= (1 / N)^(alpha beta)


def test_ddpg_explores_with_the_ou_process_with_er_and_per():
    # x_1 = sigma n_1 = 0.2 n_1; x_2 = (1 - theta) x_1 + sigma n_2 = 0.85 * 0.2 n_1 + 0.2 n_2 = 0.17 n_1 + 0.2 n_2
    from rlrepro.agents.ddpg.loop import HostDDPG

    host = HostDDPG.__new__(HostDDPG)
    host.config, host.action_dim = DDPGConfig(exploration="ornstein_uhlenbeck", sigma=0.2, ou_theta=0.15), 1
    state = types.SimpleNamespace(noise_rngs=[np.random.default_rng(7)], ou=np.zeros((1, 1), np.float32))
    n1, n2 = np.random.default_rng(7).standard_normal(2)
    first = host._explore(state, np.full((1, 1), 0.5, np.float32))
    second = host._explore(state, np.full((1, 1), 0.5, np.float32))
    assert float(first.action[0, 0]) == pytest.approx(0.5 + 0.2 * n1, rel=1e-6)
    assert float(second.action[0, 0]) == pytest.approx(0.5 + 0.17 * n1 + 0.2 * n2, rel=1e-6)
    # mu is the paper's pi = m + N(0, sigma^2) at the acting parameters, whatever the OU noise did: N(0.5, 0.04)
    assert float(first.mean[0, 0]) == pytest.approx(0.5) and float(second.mean[0, 0]) == pytest.approx(0.5)
    assert float(second.std[0, 0]) == pytest.approx(0.2)
    spec = load_spec("specs/refer/mujoco_ddpg.yaml")
    for name in ("er", "per"):
        variant = next(v for v in spec.variant_list() if v.name == name)
        agent = resolve_agent(spec, variant, "paper")
        config = resolve_ddpg(agent, resolve_env(spec, "half_cheetah", "paper"), frames=10_000_000, run=spec.run)
        assert config.exploration == "ornstein_uhlenbeck" and not config.anneal_learning_rate
    assert config.per == PriorityConfig(alpha=0.7, beta0=0.5, sort_period=10, anneal_steps=10_000_000)


class _FixedNoise:
    """A noise generator that always draws ``n`` (the tests' arithmetic needs a known draw)."""

    def __init__(self, n: float):
        self.n = n

    def standard_normal(self, k: int) -> np.ndarray:
        return np.full(k, self.n)


def test_rho_and_kl_of_an_ou_explored_action_are_against_the_papers_pi():
    # theta 0.15, sigma 0.2, previous noise x_0 = 0.4, m(s) = 0.5 when acting, draw n = 0.5:
    #   x_1 = 0.85 * 0.4 + 0.2 * 0.5 = 0.34 + 0.1 = 0.44, a = 0.5 + 0.44 = 0.94
    #   mu = pi at the acting parameters = N(m(s), sigma^2) = N(0.5, 0.04) (§2: pi = m + N(0, sigma^2 I))
    # after an update the policy's mean is m_w(s) = 0.6, pi_w = N(0.6, 0.04):
    #   log rho = [(a - 0.5)^2 - (a - 0.6)^2] / (2 * 0.04) = [0.1936 - 0.1156] / 0.08 = 0.975
    #   D_KL = (0.6 - 0.5)^2 / (2 * 0.04) = 0.01 / 0.08 = 0.125 (the OU step's density N(0.84, 0.04) read 0.72)
    from rlrepro.agents.ddpg.loop import HostDDPG

    host = HostDDPG.__new__(HostDDPG)
    host.config, host.action_dim = DDPGConfig(exploration="ornstein_uhlenbeck", sigma=0.2, ou_theta=0.15), 1
    state = types.SimpleNamespace(noise_rngs=[_FixedNoise(0.5)], ou=np.full((1, 1), 0.4, np.float32))
    explored = host._explore(state, np.full((1, 1), 0.5, np.float32))
    assert float(explored.action[0, 0]) == pytest.approx(0.94, rel=1e-6)
    assert float(explored.mean[0, 0]) == pytest.approx(0.5, rel=1e-6)
    assert float(state.ou[0, 0]) == pytest.approx(0.44, rel=1e-6)
    obs = jnp.zeros((1, OBS))
    batch = dlearner.Batch(obs, jnp.asarray(explored.action), jnp.zeros(1), jnp.zeros(1), obs, jnp.asarray(explored.mean))
    log_rho, near, kl = dlearner._pi_terms(host.config, jnp.full((1, 1), 0.6), batch, jnp.float32(1.0 + 4.0))
    assert float(log_rho[0]) == pytest.approx(0.975, rel=1e-5)
    assert float(near[0]) == 1.0  # |log rho| = 0.975 < log 5 = 1.609
    assert float(kl[0]) == pytest.approx(0.125, rel=1e-5)
    # a policy that has not moved (m_w = 0.5): rho = 1 and D_KL = 0, however far the OU noise took the action
    log_rho, _, kl = dlearner._pi_terms(host.config, jnp.full((1, 1), 0.5), batch, jnp.float32(5.0))
    assert float(log_rho[0]) == 0.0 and float(kl[0]) == 0.0
    # the Gaussian exploration of the ReF-ER variants stores the same mu = N(m(s), sigma^2)
    host.config = DDPGConfig(exploration="gaussian", sigma=0.2)
    gaussian = host._explore(state, np.full((1, 1), 0.5, np.float32))
    assert float(gaussian.mean[0, 0]) == 0.5 and float(gaussian.action[0, 0]) == pytest.approx(0.6, rel=1e-6)


def test_stored_means_stay_in_the_action_box_so_the_kl_keeps_the_papers_bound():
    # §5.1: DDPG bounds m to (-1, 1)^d_A, so D_KL(mu || pi) <= ||2 * 1||^2 / (2 sigma^2) = 4 d_A / (2 * 0.04)
    # = 2 d_A / sigma^2 = 50 d_A. An OU process far from 0 (x = 3 in every dimension) must not carry the stored
    # mean out of the box: it stays the policy's tanh output 0.9.
    from rlrepro.agents.ddpg.loop import HostDDPG

    host = HostDDPG.__new__(HostDDPG)
    host.config, host.action_dim = DDPGConfig(exploration="ornstein_uhlenbeck", sigma=0.2, ou_theta=0.15), 2
    state = types.SimpleNamespace(noise_rngs=[_FixedNoise(1.0)], ou=np.full((1, 2), 3.0, np.float32))
    explored = host._explore(state, np.full((1, 2), 0.9, np.float32))
    assert np.all(explored.action > 1.0)  # the action itself leaves the box (the environment clips it)
    np.testing.assert_allclose(explored.mean, 0.9)
    worst = dlearner._pi_terms(host.config, jnp.full((1, 2), -1.0), dlearner.Batch(
        jnp.zeros((1, OBS)), jnp.asarray(explored.action), jnp.zeros(1), jnp.zeros(1), jnp.zeros((1, OBS)),
        jnp.asarray(explored.mean)), jnp.float32(5.0))[2]
    assert float(worst[0]) <= 2 * 2 / 0.2**2  # (1.9^2 * 2) / 0.08 = 90.25 <= 100


def test_every_per_field_reaches_the_config():
    base = {"kind": "ddpg", "rules": {"variant": "per"}, "per": {"alpha": 0.6, "beta0": 0.4, "sort_period": 3}}
    config = DDPGConfig.from_spec(DDPGAgentSpec.model_validate(base), total_steps=1234)
    assert config.per == PriorityConfig(alpha=0.6, beta0=0.4, sort_period=3, anneal_steps=1234)
    naf = NAFConfig.from_spec(NAFAgentSpec.model_validate({**base, "kind": "naf"}), total_steps=5)
    assert naf.per == PriorityConfig(alpha=0.6, beta0=0.4, sort_period=3, anneal_steps=5)
    assert DDPGConfig.from_spec(DDPGAgentSpec.model_validate({"kind": "ddpg", "rules": {"variant": "er"}})).per is None


@pytest.mark.parametrize(
    "data,message",
    [
        ({"kind": "ddpg", "rules": {"variant": "per"}}, "needs the agent's 'per' block"),
        ({"kind": "naf", "rules": {"variant": "refer"}, "per": {}}, "set only with rules.variant per"),
        ({"kind": "vracer", "rules": {"variant": "per"}}, "V-RACER with PER is not implemented"),
    ],
)
def test_per_block_and_variant_go_together(data, message):
    model = {"ddpg": DDPGAgentSpec, "naf": NAFAgentSpec, "vracer": VRacerAgentSpec}[data["kind"]]
    with pytest.raises(ValidationError, match=message):
        model.model_validate(data)


def test_adding_per_rehashes_no_other_job():
    """The hashes of the cpu-scale ER jobs as they were before the per block existed (dumped on main, dfd5a5f).
    Re-frozen in session 24, when new agent fields rehashed every DDPG and NAF job (NAF's ``rule2_gradient``: no
    effect on ER's numbers; main f8c01dd: 927929ab4005 and 93370d60f2c9), and again when DDPG's ``ou_behaviour`` left
    the spec (mu is the paper's pi whatever noise explored: the ER job's numbers change; its hash is again the one of
    the runs before session 24, which stored the same mu)."""
    for path, env, frozen in (("specs/refer/mujoco_ddpg.yaml", "half_cheetah", "927929ab4005"),
                              ("specs/refer/mujoco_naf.yaml", "inverted_pendulum", "a588b66a7c1d")):
        assert config_hash(load_spec(path), "er", env, "cpu") == frozen


def test_memory_kl_is_the_average_over_every_committed_step():
    # sigma 0.2, policy mean 0.1 everywhere, committed behaviours m_mu = 0, 0.2, 0.4:
    #   KL_k = (0.1 - m_mu,k)^2 / (2 * 0.04) = 0.01 / 0.08, 0.01 / 0.08, 0.09 / 0.08 = 0.125, 0.125, 1.125; mean 0.4583
    # the running episode's step (m_mu = 5) is not in the memory yet and is left out
    from rlrepro.agents.ddpg.loop import HostDDPG
    from rlrepro.training.refer_host import HostState
    from rlrepro.replay.episodes import EpisodeReplay

    replay = EpisodeReplay(8, 4, 1, 1, 0.9, seed=0)
    for mu in (0.0, 0.2, 0.4):
        replay.add(np.zeros(1), np.zeros(1), 0.0, np.array([mu]), np.array([0.2]), 0.0)
    replay.end_episode(np.zeros(1), True, 0.0)
    replay.add(np.zeros(1), np.zeros(1), 0.0, np.array([5.0]), np.array([0.2]), 0.0)
    host = HostState([None], [replay], np.zeros((1, 1), np.float32), np.ones(1, np.float32))
    ddpg = HostDDPG.__new__(HostDDPG)
    ddpg.config = DDPGConfig(sigma=0.2)
    ddpg._mean = lambda params, obs: np.full((*obs.shape[:-1], 1), 0.1, np.float32)
    ddpg._acting_params = lambda learner: None
    assert ddpg._memory_kl(host, None) == pytest.approx([(0.125 + 0.125 + 1.125) / 3], rel=1e-5)
