"""The host V-RACER + ReF-ER loop (Alg. 1): the shared ReF-ER host loop with V-RACER's update and Retrace targets.

Per environment step t (F = 1): once N_start steps are stored, every seed samples B stored steps uniformly,
takes one gradient step at eta(t) with beta and c_max(t), and chooses its next action with the new parameters,
all in one jitted call vmapped over seeds. The sampled steps' V and rho are written back with the local Q^ret
correction; beta follows eq. 12 from the far fraction of the memory. Every ``refresh_period`` steps the reward
scale (eq. 16) is recomputed and Q^ret with it, over the whole memory (``retrace_q_ret``). Episodes enter the
memory when they end: terminated ones bootstrap from 0, truncated ones from V(s_T).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from rlrepro.training.lockstep import split_seed_keys, to_host
from rlrepro.training.refer_host import ChunkMetrics, HostState, LoopState, ReferHost, standardise_seeds
from rlrepro.agents.vracer import learner as vlearner
from rlrepro.agents.vracer.actor import Action, act
from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.losses.refer import next_beta, retrace_q_ret, step_schedules

__all__ = ["ChunkMetrics", "HostState", "HostVRacer", "LoopState"]


def _update_and_act(config: VRacerConfig, action_dim: int, state, batch, beta, c_max, lr, obs, key):
    state, out = vlearner.update(config, action_dim, state, batch, beta, c_max, lr)
    key, act_key = jax.random.split(key)
    return state, out, act(config, action_dim, state.params, obs, act_key), key


def _act(config: VRacerConfig, action_dim: int, params, obs, key):
    key, act_key = jax.random.split(key)
    return act(config, action_dim, params, obs, act_key), key


class HostVRacer(ReferHost):
    """A compiled V-RACER for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def _compile(self) -> None:
        config, dims = self.config, (self.config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: vlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_act, *dims), in_axes=(0, 0, 0, None, None, 0, 0)))
        self._act = jax.jit(jax.vmap(functools.partial(_act, *dims)))
        self._refresh = jax.jit(jax.vmap(retrace_q_ret))
        network = vlearner.make_network(config, self.action_dim)
        self._values = jax.jit(jax.vmap(lambda params, obs: network.apply(params, obs)[0]))

    def _start(self, seeds: list[int], host: HostState) -> tuple[Any, jax.Array, Action]:
        net_keys, act_keys = split_seed_keys(seeds)
        learner = self._init(net_keys)
        pending, act_keys = self._act(learner.params, self._standardise(host, host.obs), act_keys)
        return learner, act_keys, pending

    def _learn_and_act(self, host: HostState, learner, keys):
        c, t = self.config, host.steps
        obs = self._standardise(host, host.obs)
        c_max, eta = step_schedules(c.rules, t, c.learning_rate)
        if t < c.n_start:
            pending, keys = self._act(learner.params, obs, keys)
            return learner, keys, pending, None
        if t == c.n_start:  # eqs. 14-16 from the first N_start samples, then Q^ret in the new units
            self._set_state_statistics(host)
            obs = self._standardise(host, host.obs)
            self._refresh_memory(host, c_max)
        elif (t - c.n_start) % c.refresh_period == 0:
            self._refresh_memory(host, c_max)
        sample = host.bank.sample(c.batch_size)
        batch = vlearner.Batch(
            obs=standardise_seeds(sample.obs, host.obs_mean, host.obs_inv_std),
            action=sample.action,
            mu_mean=sample.mu_mean,
            mu_std=sample.mu_std,
            q_ret=sample.q_ret,
        )
        learner, out, pending, keys = self._step(learner, batch, host.beta, c_max, eta, obs, keys)
        plan = host.bank.plan(sample.index, c_max, write_back=True)  # while the update runs (async dispatch)
        out, pending = to_host((out, pending))
        host.bank.write_back(plan, out.v, out.log_rho, c_max)
        far = host.bank.far_fractions()
        host.beta = next_beta(c.rules, host.beta, far, eta)
        return learner, keys, pending, (out.loss, out.kl, out.near, far, host.beta.copy(), c_max, eta)

    def _refresh_memory(self, host: HostState, c_max: float) -> None:
        """Reward scale (eq. 16), Q^ret of every stored step from the stored V and rho (eq. 8), and n_far recounted
        with the current c_max."""
        for replay in host.replays:
            replay.update_reward_scale()
            replay.recount_far(c_max)
        inputs = [np.stack(x) for x in zip(*(replay.refresh_inputs() for replay in host.replays))]
        q_ret = np.asarray(self._refresh(*inputs))
        for replay, q in zip(host.replays, q_ret):
            replay.set_q_ret(q)

    def _end_episodes(self, host: HostState, ended: list[tuple[int, np.ndarray, bool]], learner: Any) -> None:
        """Commit ended episodes; truncated ones need V(s_T) from the current network."""
        last_obs = host.obs.copy()
        for i, obs, _ in ended:
            last_obs[i] = obs
        v_last = np.zeros(len(host.envs), np.float32)
        if any(not terminated for _, _, terminated in ended):
            v_last = np.asarray(self._values(learner.params, self._standardise(host, last_obs)))
        for i, obs, terminated in ended:
            host.replays[i].end_episode(obs, terminated, float(v_last[i]))
