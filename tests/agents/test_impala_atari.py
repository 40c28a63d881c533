"""Tests of IMPALA's Atari networks (shallow, deep, LSTM core), the recurrent learner, policy_step and sharding."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.agents.impala.learner import Batch, apply_to_batch, loss_fn, make_learner
from rlrepro.agents.impala.networks import (
    ActorCritic,
    init_params,
    initial_core_state,
    make_network,
    make_policy_step,
)
from rlrepro.networks.lstm import reset_core_state

T, B, A = 6, 4, 5  # B even: the sharded test splits it over 2 devices
SMALL_OBS = (4, 36, 36)  # channels first; 36 -> 8 -> 3 through the A3C convs, fast to run


def _config(**network: object) -> ImpalaConfig:
    base = dict(fc_size=32)
    base.update(network)
    return ImpalaConfig(
        unroll_length=T, batch_size=B, conv_network=ConvNetworkConfig(**base),
        learning_rate=1e-3, lr_schedule="constant", max_grad_norm=40.0,
    )


def _count(config: ImpalaConfig, observation_shape: tuple[int, ...], num_actions: int) -> int:
    network = make_network(config, num_actions)
    shapes = jax.eval_shape(lambda: init_params(network, jax.random.key(0), observation_shape))
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes))


def _init(network: ActorCritic) -> object:
    """Parameters for SMALL_OBS, initialised under jit (eager conv init is slow on a busy CPU)."""
    return jax.jit(lambda key: init_params(network, key, SMALL_OBS))(jax.random.key(0))


def _random_batch(config: ImpalaConfig, seed: int, dones: np.ndarray | None = None) -> Batch:
    rng = np.random.default_rng(seed)
    network = make_network(config, A)
    core = jax.tree.map(lambda c: jnp.asarray(rng.normal(size=c.shape), jnp.float32), initial_core_state(network, B))
    return Batch(
        observations=jnp.asarray(rng.integers(0, 256, (T + 1, B, *SMALL_OBS)), jnp.uint8),
        actions=jnp.asarray(rng.integers(0, A, (T, B)), jnp.int32),
        rewards=jnp.asarray(rng.normal(size=(T, B)) * 2, jnp.float32),
        dones=jnp.asarray(rng.random((T, B)) < 0.2 if dones is None else dones),
        behaviour_logits=jnp.asarray(rng.normal(size=(T, B, A)), jnp.float32),
        initial_core_state=core,
        prev_action=jnp.asarray(rng.integers(0, A, (B,)), jnp.int32),
        prev_reward=jnp.asarray(rng.normal(size=(B,)), jnp.float32),
    )


# --- parameter counts -------------------------------------------------------------------------

# Language LSTM of the released DMLab agent, which these networks do not build (notes §2.1): 1000 x 20
# word embeddings, LSTM 64 on 20-d inputs (4 * (20 + 64) * 64 + 4 * 64), and its 64 outputs as extra
# core inputs (4 * 64 * 256 LSTM input weights).
_LANGUAGE_PARAMS = 1000 * 20 + (4 * (20 + 64) * 64 + 4 * 64) + 4 * 64 * 256


def test_parameter_counts_match_the_notes():
    # The notes' Atari figures (§7.1) round consistently with the full 18-action set (with 6 actions the
    # LSTM variant would give 1.20M instead of 1.21M).
    atari = ImpalaConfig(conv_network=ConvNetworkConfig(kind="impala_shallow"))
    heads = 257 * 18 + 257  # policy (18 actions) + value on 256 features
    # A3C convs, VALID, 84 -> 20 -> 9: 8*8*4*16+16, 4*4*16*32+32, FC 9*9*32*256+256.
    shallow = 4112 + 8224 + 663_808 + heads
    assert _count(atari, (4, 84, 84), 18) == shallow
    assert round(shallow / 1e6, 2) == 0.68  # notes §7.1: 0.68M
    lstm = 4 * (256 + 256) * 256 + 4 * 256
    shallow_lstm = dataclasses.replace(atari, conv_network=ConvNetworkConfig(lstm_size=256))
    assert _count(shallow_lstm, (4, 84, 84), 18) == shallow + lstm
    assert round((shallow + lstm) / 1e6, 2) == 1.21  # notes §7.1: 1.21M; caption: "1.2 million"
    # Deep: stages (in, out) (4, 16), (16, 32), (32, 32); each conv 3x3 + 4 block convs; 84 -> 42 -> 21 -> 11.
    convs = sum(9 * i * o + o + 4 * (9 * o * o + o) for i, o in ((4, 16), (16, 32), (32, 32)))
    deep = convs + 11 * 11 * 32 * 256 + 256 + heads
    assert _count(dataclasses.replace(atari, conv_network=ConvNetworkConfig(kind="impala_deep")), (4, 84, 84), 18) == deep
    assert round(deep / 1e6, 2) == 1.09  # notes §7.1: 1.09M
    nature = dataclasses.replace(atari, conv_network=ConvNetworkConfig(shallow_torso="nature_3conv", fc_size=512))
    assert _count(nature, (4, 84, 84), 18) == 8224 + 32_832 + 36_928 + 7 * 7 * 64 * 512 + 512 + 513 * 19

    # DMLab (72 x 96 RGB, 9 actions, LSTM 256 on [FC 256, reward, one-hot action]) + the language LSTM:
    # notes §2.1 derive ~1.23M (shallow) and ~1.63M (deep); the caption says 1.2M and 1.6M.
    dmlab = dict(lstm_size=256, last_action_reward_inputs=True)
    for kind, expected in (("impala_shallow", 1.23), ("impala_deep", 1.63)):
        config = dataclasses.replace(atari, conv_network=ConvNetworkConfig(kind=kind, **dmlab))
        assert round((_count(config, (3, 72, 96), 9) + _LANGUAGE_PARAMS) / 1e6, 2) == expected, kind


# --- shapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, torso", [("impala_shallow", "a3c_2conv"), ("impala_shallow", "nature_3conv"),
                                         ("impala_deep", "a3c_2conv")])
@pytest.mark.parametrize("lstm_size", [None, 16])
def test_output_shapes(kind, torso, lstm_size):
    config = _config(kind=kind, shallow_torso=torso, lstm_size=lstm_size, last_action_reward_inputs=True)
    network = make_network(config, A)
    params = jax.eval_shape(lambda: init_params(network, jax.random.key(0), (4, 84, 84)))
    obs = jax.ShapeDtypeStruct((T + 1, B, 4, 84, 84), jnp.uint8)
    ints = jax.ShapeDtypeStruct((T + 1, B), jnp.int32)
    out = jax.eval_shape(
        lambda p, o, a: network.apply(p, o, a, a.astype(jnp.float32), a > 0, initial_core_state(network, B),
                                      method=ActorCritic.unroll),
        params, obs, ints,
    )
    chex.assert_shape(out[:2], [(T + 1, B, A), (T + 1, B)])
    core = [(B, lstm_size)] * 2 if lstm_size else []
    chex.assert_shape(jax.tree.leaves(out[2]), core)


def test_feed_forward_call_refuses_recurrent_networks():
    network = make_network(_config(lstm_size=8), A)
    params = jax.eval_shape(lambda: init_params(network, jax.random.key(0), SMALL_OBS))
    with pytest.raises(ValueError, match="unroll"):
        jax.eval_shape(network.apply, params, jnp.zeros((2, *SMALL_OBS), jnp.uint8))
    batch = _random_batch(_config(), seed=0)  # feed-forward: initial_core_state is ()
    with pytest.raises(ValueError, match="initial_core_state"):
        jax.eval_shape(lambda p: apply_to_batch(network, p, batch), params)


# --- recurrent core ---------------------------------------------------------------------------


def test_lstm_state_resets_where_an_episode_ended():
    # Streams 0 and 1 end an episode at transition t = 2, so observations[3:] start fresh: the unroll
    # equals [0..2] from the initial state, then [3..T] from a zero state with last action/reward
    # a_2, r_2. Stream 2 never ends one: its second half depends on the state carried over.
    config = _config(lstm_size=16, last_action_reward_inputs=True)
    dones = np.zeros((T, B), bool)
    dones[2, :2] = True
    batch = _random_batch(config, seed=1, dones=dones)
    network = make_network(config, A)
    params = _init(network)
    logits, values = jax.jit(apply_to_batch, static_argnums=0)(network, params, batch)

    @jax.jit
    def run(obs, last_actions, last_rewards, core):
        return network.apply(params, obs, last_actions, last_rewards, jnp.zeros(obs.shape[:2], bool), core,
                             method=ActorCritic.unroll)

    last_actions = jnp.concatenate([batch.prev_action[None], batch.actions])
    last_rewards = jnp.concatenate([batch.prev_reward[None], batch.rewards])
    first = run(batch.observations[:3], last_actions[:3], last_rewards[:3], batch.initial_core_state)
    second = run(batch.observations[3:], last_actions[3:], last_rewards[3:], initial_core_state(network, B))
    np.testing.assert_allclose(logits[:3], first[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(values[:3], first[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logits[3:, :2], second[0][:, :2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(values[3:, :2], second[1][:, :2], rtol=1e-5, atol=1e-5)
    assert not np.allclose(logits[3:, 2], second[0][:, 2], atol=1e-4)


# --- learner ----------------------------------------------------------------------------------


def test_recurrent_learner_update_lowers_the_loss_on_a_fixed_batch():
    config = dataclasses.replace(_config(lstm_size=16, last_action_reward_inputs=True), learning_rate=1e-2)
    learner = make_learner(config, SMALL_OBS, A)
    state = learner.init(jax.random.key(0))
    batch = _random_batch(config, seed=2)
    update = jax.jit(learner.update)
    losses = []
    for _ in range(8):
        state, metrics = update(state, batch)
        losses.append(float(metrics.total_loss))
    assert np.all(np.isfinite(losses)) and float(metrics.grad_norm) > 0
    assert losses[-1] < losses[0] - 0.05 * abs(losses[0]), losses


def test_masked_steps_add_nothing_to_the_loss():
    config = _config(lstm_size=8)
    network = make_network(config, A)
    params = _init(network)
    # Next-step autoreset: every episode ends at transition T - 2, step T - 1 is the dummy one.
    dones = np.zeros((T, B), bool)
    dones[T - 2] = True
    batch = _random_batch(config, seed=3, dones=dones)
    mask = jnp.ones((T, B)).at[T - 1].set(0.0)
    loss = jax.jit(lambda b: loss_fn(params, b, config, network))
    masked = loss(batch._replace(mask=mask))[1]
    # The done before it cuts the traces, so with the mask its action and behaviour logits change nothing.
    altered = batch._replace(mask=mask, actions=batch.actions.at[T - 1].add(1) % A,
                             behaviour_logits=batch.behaviour_logits.at[T - 1].set(0.0))
    chex.assert_trees_all_close(loss(altered)[1], masked, rtol=1e-6)
    assert not np.isclose(loss(batch)[0], masked.total_loss)


# --- actor ------------------------------------------------------------------------------------


def test_policy_step_shapes_and_determinism():
    # Agreement with the learner is tested on the real actor path, across episode ends, in
    # tests/agents/test_impala_host.py (test_the_actor_and_the_learner_compute_the_same_logits_...).
    config = _config(lstm_size=16, last_action_reward_inputs=True)
    network = make_network(config, A)
    params = _init(network)
    batch = _random_batch(config, seed=4)
    policy_step = make_policy_step(network)
    core, last_action, last_reward = batch.initial_core_state, batch.prev_action, batch.prev_reward
    key = jax.random.key(5)
    action, logits, new_core, next_key = policy_step(params, batch.observations[0], last_action, last_reward, core, key)
    chex.assert_shape([action, logits], [(B,), (B, A)])
    chex.assert_trees_all_equal_shapes(new_core, core)
    assert action.dtype == jnp.int32
    again = policy_step(params, batch.observations[0], last_action, last_reward, core, key)
    chex.assert_trees_all_equal((action, logits, new_core), again[:3])
    # The key is split inside the jit exactly as the actors split it on the host before (same keys, same actions).
    carried, step_key = jax.random.split(key)
    np.testing.assert_array_equal(jax.random.key_data(next_key), jax.random.key_data(carried))
    np.testing.assert_array_equal(action, jax.random.categorical(step_key, logits))
    chex.assert_trees_all_close(reset_core_state(new_core, jnp.ones(B, bool)), initial_core_state(network, B))


# --- sharding ---------------------------------------------------------------------------------

_SHARDED_SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    from tests.agents.test_impala_atari import _config, _random_batch, SMALL_OBS, A, T
    from rlrepro.agents.impala.learner import make_learner
    from rlrepro.agents.impala.sharding import make_sharded_update

    assert len(jax.local_devices()) == 2, jax.local_devices()
    config = _config(lstm_size=8, last_action_reward_inputs=True)
    learner = make_learner(config, SMALL_OBS, A)
    batch = jax.tree.map(np.asarray, _random_batch(config, seed=6))
    sharded = make_sharded_update(learner)
    state = sharded.init(jax.random.key(0))
    device_batch = sharded.shard_batch(batch)
    assert len(device_batch.observations.sharding.device_set) == 2
    assert device_batch.observations.addressable_shards[0].data.shape[1] == batch.observations.shape[1] // 2
    assert "all-reduce" in sharded.update.lower(state, device_batch).compile().as_text()
    single_update = jax.jit(learner.update, device=jax.devices()[0])
    single = jax.device_put(learner.init(jax.random.key(0)), jax.devices()[0])
    single_batch = jax.device_put(batch, jax.devices()[0])
    for _ in range(2):
        state, metrics = sharded.update(state, device_batch)
        single, single_metrics = single_update(single, single_batch)
    assert state.params["params"]["policy"]["kernel"].sharding.is_fully_replicated
    for got, want in zip(jax.tree.leaves((state, metrics)), jax.tree.leaves((single, single_metrics))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-6)
    try:
        sharded.shard_batch(batch._replace(actions=batch.actions[:, :1]))
    except ValueError as error:
        assert "divisible" in str(error)
    else:
        raise AssertionError("an odd batch size was accepted")
    print("SHARDED_OK", float(metrics.total_loss), float(single_metrics.total_loss))
    """
)


@pytest.mark.slow  # a fresh process compiling both updates (45 s); multi-device runs only on an accelerator cluster
def test_sharded_update_equals_the_single_device_update_on_two_fake_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", _SHARDED_SCRIPT], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SHARDED_OK" in result.stdout
