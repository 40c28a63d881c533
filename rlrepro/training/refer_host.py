"""The host loop of the ReF-ER agents (Alg. 1), shared by V-RACER, DDPG and NAF: seeds stepped in lockstep, with
the behaviour record of an action (``Action``); their shared configuration is ``refer_config.ReplayAgentConfig``.

Per environment step t (F = 1): every seed's environment takes its pending action, the step enters the seed's
episode memory (``EpisodeReplay``), ended episodes are committed; then the agent's ``_learn_and_act`` makes, once
N_start steps are stored, one jitted call vmapped over seeds (every seed's update and next action) and refreshes
the memory (V-RACER: V, rho and Q^ret; DDPG and NAF: rho, and the priorities under PER). ``ReferHost`` is that
loop; ``TransitionHost`` adds what DDPG and NAF share (Q-learning targets from stored transitions, exploration
around the deterministic m(s)); each agent's host supplies its compiled functions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from rlrepro.environments.mujoco import MujocoHostEnv, task_shape
from rlrepro.losses.refer import TransitionBatch, initial_beta, next_beta, step_schedules
from rlrepro.replay.episodes import EpisodeReplay, ReplayBank, Sample, state_statistics
from rlrepro.replay.priority import importance_exponent
from rlrepro.training.lockstep import LockstepHost, LockstepState, SeedEnvs, episode_fields, to_host
from rlrepro.training.program import seed_keys


class Action(NamedTuple):
    """The action in network units and the behaviour statistics mu stored with it, and V(s) (0 where unused)."""

    action: jax.Array
    mean: jax.Array
    std: jax.Array
    v: jax.Array


class HostState(SeedEnvs):
    """Environments, replay memories (in one ``ReplayBank``), current observations, beta and the state statistics of
    every seed. Pickled (checkpoints) without the bank, which is rebuilt from the memories when unpickled."""

    def __init__(self, envs: list[MujocoHostEnv], replays: list[EpisodeReplay], obs: np.ndarray, beta: np.ndarray):
        super().__init__(envs, obs)
        self.replays, self.beta = replays, beta
        self.bank = ReplayBank(replays)
        self.obs_mean = np.zeros((len(envs), obs.shape[1]), np.float32)
        self.obs_inv_std = np.ones((len(envs), obs.shape[1]), np.float32)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "bank"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.bank = ReplayBank(self.replays)


LoopState = LockstepState  # (learner, keys, the actions chosen for the current observations with mu and V, host)


class ChunkMetrics(NamedTuple):
    """Per seed over the chunk: episodes and their mean return; the learner's mean loss, the minibatch KL(mu||pi)
    (an estimate of the memory's average D_KL under uniform sampling; under PER it leans to the large TD errors),
    the near fraction of minibatches; at the chunk's end: the far-policy fraction of the memory among the steps an
    update has scored (``EpisodeReplay.scored_far_fraction``: the newest episode, never sampled, is not read as near), beta,
    c_max, eta, the reward scale and the memory's average D_KL(mu_k || pi_w(.|s_k)) over every stored step with the
    current policy (Fig. 2's quantity; DDPG and NAF; NaN where not computed)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    loss: np.ndarray
    kl: np.ndarray
    near_fraction: np.ndarray
    far_fraction: np.ndarray
    beta: np.ndarray
    c_max: np.ndarray
    learning_rate: np.ndarray
    reward_scale: np.ndarray
    memory_kl: np.ndarray


def standardise_seeds(obs: np.ndarray, mean: np.ndarray, inv_std: np.ndarray) -> np.ndarray:
    """Eqs. 14-15 on every seed's minibatch at once: ``obs`` [seed, B, obs_dim], ``mean`` and ``inv_std``
    [seed, obs_dim] (each seed its own statistics). The same float32 arithmetic as seed by seed, in two array
    operations instead of two per seed."""
    return (obs - mean[:, None]) * inv_std[:, None]


class ReferHost(LockstepHost):
    """A compiled ReF-ER agent for one task: ``init`` a batch of seeds, ``run`` steps, read metrics.

    Subclasses compile their functions in ``_compile`` and give ``_start`` (learner, keys and first actions),
    ``_learn_and_act`` (one step's update and next actions) and ``_end_episodes`` (commit ended episodes).
    """

    def __init__(self, config: Any, env_spec: Any):
        self.obs_dim, self.action_dim, self.max_episode_steps, self.action_scale = task_shape(env_spec)
        self.config, self.env_spec = config, env_spec
        self._compile()

    def _compile(self) -> None:
        raise NotImplementedError

    def _start(self, seeds: list[int], host: HostState) -> tuple[Any, jax.Array, Action]:
        raise NotImplementedError

    def _learn_and_act(self, host: HostState, learner: Any, keys: jax.Array) -> tuple[Any, jax.Array, Action, Any]:
        raise NotImplementedError

    def _end_episodes(self, host: HostState, ended: list[tuple[int, np.ndarray, bool]], learner: Any) -> None:
        raise NotImplementedError

    def init(self, seeds: list[int]) -> LoopState:
        envs = [MujocoHostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        c = self.config
        priority = None if c.per is None else (c.per.alpha, c.per.sort_period)
        replays = [
            EpisodeReplay(c.capacity, self.max_episode_steps, self.obs_dim, self.action_dim, c.discount, s + 1_000_003, priority)
            for s in seeds
        ]
        host = HostState(envs, replays, obs, initial_beta(c.rules, len(seeds)))
        learner, keys, pending = self._start(seeds, host)
        return LoopState(learner, keys, pending, host)

    def _standardise(self, host: HostState, obs: np.ndarray) -> np.ndarray:
        return ((obs - host.obs_mean) * host.obs_inv_std).astype(np.float32)

    def _set_state_statistics(self, host: HostState) -> None:
        """Eqs. 14-15 from the first N_start samples of every seed."""
        for i, replay in enumerate(host.replays):
            host.obs_mean[i], host.obs_inv_std[i] = state_statistics(replay.observations())

    def _advance(self, state: LoopState) -> tuple[LoopState, tuple | None]:
        """One environment step of every seed, then (once N_start steps are stored) its update and next action."""
        self._store_and_step(state.host, state.pending, state.learner)
        learner, keys, pending, out = self._learn_and_act(state.host, state.learner, state.keys)
        return LoopState(learner, keys, pending, state.host), out

    def _memory_kl(self, host: HostState, learner: Any) -> np.ndarray:
        """The memory's average D_KL(mu || pi_w) per seed (NaN: not computed by this agent)."""
        return np.full(len(host.envs), np.nan)

    def _store_and_step(self, host: HostState, pending: Action, learner: Any) -> None:
        action, mean, std, v = (np.asarray(x) for x in pending)
        ended: list[tuple[int, np.ndarray, bool]] = []
        for i in range(len(host.envs)):
            obs, reward, terminated, truncated, next_obs = host.step_env(i, action[i] * self.action_scale)
            host.replays[i].add(host.obs[i], action[i], reward, mean[i], std[i], v[i])
            if terminated or truncated:
                ended.append((i, obs, terminated))
            host.obs[i] = next_obs
        if ended:
            self._end_episodes(host, ended, learner)
        host.steps += 1

    def _metrics(self, state: LoopState, mark: list[int], outs: list) -> ChunkMetrics:
        """The chunk's metrics; with updates in it, the memory's KL with the current policy (``_memory_kl``)."""
        host, n = state.host, len(state.host.envs)
        nan = np.full(n, np.nan)
        if outs:
            loss, kl, near = (np.mean(np.stack([np.asarray(o[j]) for o in outs]), axis=0) for j in range(3))
            beta, c_max, eta = outs[-1][4], np.full(n, outs[-1][5]), np.full(n, outs[-1][6])
            far = host.bank.scored_far_fractions()  # the steps no update has scored yet left out (not read as near)
        else:
            loss = kl = near = far = c_max = eta = nan
            beta = host.beta
        return ChunkMetrics(
            **episode_fields(host, mark, self.env_spec.frames_per_step),
            loss=loss, kl=kl, near_fraction=near, far_fraction=far, beta=np.asarray(beta, np.float64),
            c_max=c_max, learning_rate=eta,
            reward_scale=np.array([r.reward_scale for r in host.replays]),
            memory_kl=self._memory_kl(host, state.learner) if outs else nan,
        )


class TransitionHost(ReferHost):
    """DDPG and NAF (Alg. 4 and §2): Q-learning targets from stored transitions (so the periodic refresh only
    updates the reward scale and recounts n_far), uniform or rank-based prioritised sampling, and exploration
    m_w(s) + Gaussian N(0, sigma^2 I) noise (ReF-ER variants, NAF) or an Ornstein-Uhlenbeck process (DDPG with ER
    or PER; reset at every episode start), drawn on the host from a generator per seed. The stored mu is the paper's
    pi = m_w(s) + N(0, sigma^2 I) at the acting parameters, whatever noise explored (§2: pi defines rho and D_KL).

    Subclasses compile ``self._init`` (keys -> learner), ``self._step`` (learner, batch, beta, c_max, lr_scale, obs
    -> learner, output, m(obs)) and ``self._mean`` (acting parameters, obs -> m(obs)), and name the acting
    parameters (``_acting_params``).
    """

    def _acting_params(self, learner: Any) -> Any:
        raise NotImplementedError

    def _start(self, seeds: list[int], host: HostState) -> tuple[Any, jax.Array, Action]:
        keys = seed_keys(seeds)
        learner = self._init(keys)
        host.noise_rngs = [np.random.default_rng(s + 2_000_003) for s in seeds]
        host.ou = np.zeros((len(seeds), self.action_dim), np.float32)
        mean = np.asarray(self._mean(self._acting_params(learner), self._standardise(host, host.obs)))
        return learner, keys, self._explore(host, mean)

    def _explore(self, host: HostState, mean: np.ndarray) -> Action:
        """m_w(s) + Gaussian or OU noise (App. A), stored with the behaviour mu = N(m_w(s), sigma^2 I).

        Gaussian: a ~ N(m_w(s), sigma^2 I). OU (unit time step): x_t = (1 - theta) x_{t-1} + sigma n_t, a_t = m_w(s_t)
        + x_t. Either way the stored mu is the paper's pi = m_w + N(0, sigma^2 I) at the acting parameters (§2: "we
        include exploratory Gaussian noise in the policy ... to compute rho_t or the Kullback-Leibler divergence"):
        rho and D_KL then measure how far the policy has moved since it acted, never how wide the noise was. A policy
        that never moves has rho = 1 and D_KL = 0 for every stored step, and D_KL <= 2 d_A / sigma^2 because both
        means are tanh outputs in (-1, 1)^d_A (§5.1). The OU step's own density, N(m_w(s) + (1 - theta) x_{t-1},
        sigma^2 I), would read the noise as policy change: a policy that never moves gave a far fraction of 0.87 and a
        D_KL of 7.9 on HalfCheetah (0.000 and 0.003 with pi; ``scripts/ddpg_behaviour_kl.py --frozen``), and the
        stored mean m + (1 - theta) x_{t-1} can leave the action box.
        """
        c = self.config
        noise = np.stack([rng.standard_normal(self.action_dim) for rng in host.noise_rngs]).astype(np.float32)
        if c.exploration == "ornstein_uhlenbeck":  # dx = -theta x + sigma dW, unit time step
            host.ou = (1.0 - c.ou_theta) * host.ou + c.sigma * noise
            noise = host.ou
        else:
            noise = c.sigma * noise
        sigma = np.full_like(mean, c.sigma)
        return Action(mean + noise, mean.astype(np.float32), sigma, np.zeros(len(mean), np.float32))

    def _learn_and_act(self, host: HostState, learner: Any, keys: jax.Array):
        c, t = self.config, host.steps
        obs = self._standardise(host, host.obs)
        if t < c.n_start:
            return learner, keys, self._explore(host, np.asarray(self._mean(self._acting_params(learner), obs))), None
        if t == c.n_start:
            self._set_state_statistics(host)
            obs = self._standardise(host, host.obs)
        c_max, _ = step_schedules(c.rules, t, 1.0)
        if (t - c.n_start) % c.refresh_period == 0:
            for replay in host.replays:
                replay.update_reward_scale()
                replay.recount_far(c_max)
        lr_scale = 1.0 / (1.0 + c.rules.a * t) if c.anneal_learning_rate else 1.0
        is_beta = 1.0 if c.per is None else importance_exponent(c.per.beta0, t, c.per.anneal_steps)
        sample = host.bank.sample(c.batch_size, is_beta)
        learner, out, mean = self._step(learner, self._batch(host, sample), host.beta, c_max, lr_scale, obs)
        plan = host.bank.plan(sample.index, c_max)  # while the update runs (dispatched asynchronously)
        out, mean = to_host((out, mean))
        host.bank.set_log_rho(plan, out.log_rho, c_max)
        if c.per is not None:
            host.bank.update_priorities(sample.index, out.td_error)
        far = host.bank.far_fractions()
        eta = c.policy_learning_rate * lr_scale
        host.beta = next_beta(c.rules, host.beta, far, eta)
        metrics = (out.critic_loss, out.kl, out.near, far, host.beta.copy(), c_max, eta)
        return learner, keys, self._explore(host, mean), metrics

    def _memory_kl(self, host: HostState, learner: Any) -> np.ndarray:
        """Fig. 2: the memory's average D_KL(mu_k || pi_w(.|s_k)) over every stored step, with the current policy.

        pi_w = N(m_w(s), sigma^2 I) and mu_k = N(m_mu,k, sigma^2 I) share sigma, so both KL directions are
        ||m_w(s_k) - m_mu,k||^2 / (2 sigma^2). Every seed's whole ring goes through m_w in one call (a fixed shape:
        one compile); the committed steps are averaged. Unlike the minibatch KL it does not lean to the steps a
        prioritised memory draws most (the paper refreshes it every 1e5 steps; here every chunk).
        """
        bank, n = host.bank, len(host.envs)
        obs = standardise_seeds(bank.obs.reshape(n, bank.size, -1), host.obs_mean, host.obs_inv_std)
        mean = np.asarray(self._mean(self._acting_params(learner), obs))
        kl = np.sum((mean - bank.mu_mean.reshape(n, bank.size, -1)) ** 2, axis=-1) / (2.0 * self.config.sigma**2)
        return np.array([kl[i, r.stored()].mean() if r.committed else np.nan for i, r in enumerate(host.replays)])

    def _batch(self, host: HostState, sample: Sample) -> Any:
        """The vmapped learner's batch: every seed's transitions, states standardised with the seed's statistics."""
        reward, discount, next_obs = host.bank.transitions(sample.index)
        return TransitionBatch(
            obs=standardise_seeds(sample.obs, host.obs_mean, host.obs_inv_std),
            action=sample.action,
            reward=reward,
            discount=discount,
            next_obs=standardise_seeds(next_obs, host.obs_mean, host.obs_inv_std),
            mu_mean=sample.mu_mean,
            weight=sample.weight,
        )

    def _end_episodes(self, host: HostState, ended: list[tuple[int, np.ndarray, bool]], learner: Any) -> None:
        """Commit ended episodes (Q-learning targets need s_T, not V(s_T)); restart their OU processes."""
        for i, obs, terminated in ended:
            host.replays[i].end_episode(obs, terminated, 0.0)
            host.ou[i] = 0.0
