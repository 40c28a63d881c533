"""The jitted IMPALA+SR loop on pure-JAX environments: act (carrying core state and memory), then update.

The same structure as ``rlrepro.agents.impala.loop`` (one synchronous actor, parameters ``policy_lag``
updates old from a ring buffer, ``updates_per_chunk`` steps scanned per jitted call, ``vmap`` over seeds),
with the SR actor and learner. On an environment with a chain of states (``state_observations`` and
``trigger_position``: the Chain) every chunk also reports where c peaks over the chain states; on one with
``events`` (Catch's catches and misses, Key-to-Door's key pick-up) how far c at those steps stands out (Fig. 4c, 5c).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.impala_sr.actor import SRActorState, SREpisodeStats, init_actor, unroll
from rlrepro.agents.impala_sr.config import ImpalaSRConfig
from rlrepro.agents.impala_sr.learner import LearnerState, Params, SRLearner, SRLearnerMetrics, make_learner
from rlrepro.agents.impala_sr.networks import SRActorCritic, make_sr_network
from rlrepro.environments.base import JaxEnv
from rlrepro.training.scan import ScannedTrainer, check_updates_per_chunk, lag_slot, raw_key, scanned_trainer


class SRTrainState(NamedTuple):
    """Everything one seed's run carries (a pytree of arrays): learner, actor (with memory), parameter history."""

    learner: LearnerState
    actor: SRActorState
    params_history: Params
    rng: jax.Array
    frames: jax.Array


_CHUNK_FIELDS = (*SRLearnerMetrics._fields, "episodes", "mean_return", "frames")
# Learner metrics averaged over the chunk; episodes ended in the chunk, their mean raw return; frames so far.
ChunkMetrics = NamedTuple("ChunkMetrics", [(name, jax.Array) for name in _CHUNK_FIELDS])
_CHAIN_FIELDS = ("sr_peak_position", "sr_peak_distance")
# On the Chain also: the chain position where c peaks with the current parameters, and its distance to the trigger.
ChainChunkMetrics = NamedTuple("ChainChunkMetrics", [(name, jax.Array) for name in (*_CHUNK_FIELDS, *_CHAIN_FIELDS)])


@functools.cache
def tally_chunk_metrics(names: tuple[str, ...]) -> type:
    """The chunk's metrics plus, per environment tally, its mean episode sum over the episodes ended in the chunk
    (Key-to-Door: ``door_opened`` is the door-opening rate, ``phase3_return`` the phase-3 reward: Fig. 5b), and
    the event metrics of :func:`event_metrics`."""
    return NamedTuple("TallyChunkMetrics", [(name, jax.Array) for name in (*_CHUNK_FIELDS, *names)])


#: Which state of an event c is read at: the one the event's action was taken in (s_t) or the one it led to
#: (s_{t+1}, when the episode goes on): the paper's "states that occur after critical actions".
EVENT_STATES = ("before", "after")


def event_names(env: JaxEnv, config: ImpalaSRConfig) -> tuple[str, ...]:
    """The environment's event tallies whose c the SR agent reports (none for the baseline: it has no c)."""
    return tuple(getattr(env, "events", ())) if config.sr.enabled else ()


def event_sums(network: SRActorCritic, params: Params, observations: jax.Array, dones: jax.Array,
               step_tallies: dict[str, jax.Array], events: tuple[str, ...], rooms: jax.Array | None = None,
               num_rooms: int = 1) -> dict[str, jax.Array]:
    """One batch's sums for c(s) at event steps: c of every state of ``observations`` [T + 1, B] (sum, sum of
    squares, count) and, per event (its tally non-zero on step t, [T, B]), the sum and count of c at s_t
    (``before``) and at s_{t+1} where step t did not end the episode (``after``).

    ``rooms`` [T + 1, B] (ints below ``num_rooms``; None: one room): per room the sum and count of c
    (``c_room``, ``n_room``, [num_rooms]) and per event the count of its ``after`` states in each room
    (``<event>_after_room_n``), for the contrasts of :func:`event_metrics`."""
    time, batch = observations.shape[:2]
    folded = observations.reshape((time * batch, *observations.shape[2:]))
    representation = network.apply(params, folded, method=SRActorCritic.embed)
    c = network.apply(params, representation, method=SRActorCritic.contribution).reshape((time, batch))
    in_room = jax.nn.one_hot(jnp.zeros((time, batch), jnp.int32) if rooms is None else rooms, num_rooms)
    sums = {"c": jnp.sum(c), "c2": jnp.sum(jnp.square(c)), "n": jnp.asarray(c.size, jnp.float32),
            "c_room": jnp.einsum("tb,tbr->r", c, in_room), "n_room": jnp.sum(in_room, axis=(0, 1))}
    for name in events:
        marked = step_tallies[name] != 0
        for where, mask, at in (("before", marked, c[:-1]), ("after", marked & ~dones, c[1:])):
            sums[f"{name}_{where}"] = jnp.sum(jnp.where(mask, at, 0.0))
            sums[f"{name}_{where}_n"] = jnp.sum(mask.astype(jnp.float32))
        sums[f"{name}_after_room_n"] = jnp.einsum("tb,tbr->r", (marked & ~dones).astype(jnp.float32), in_room[1:])
    return sums


def event_metrics(sums: dict[str, jax.Array], events: tuple[str, ...],
                  contrasts: tuple[tuple[str, str], ...] = ()) -> dict[str, jax.Array]:
    """``sr_c_z_<event>_<before|after>``: mean c at the event's states minus mean c over all states, in standard
    deviations of c over all states (from :func:`event_sums` summed over a chunk); NaN where no event happened.
    A spike (Fig. 4c catches, Fig. 5c key pick-up) is a large positive value, a dip (missed catches) a negative one.

    Per ``(event, reference)`` of ``contrasts``, the same run's contrasts at the states after the events, each
    event read against the states of its own room: ``zr`` = mean c after the event minus the mean c of the rooms
    those states are in (weighted by where the event happened), in the same standard deviations. An untrained c
    reads about 0 there however the rooms' c differ (against all states instead, 4 of 8 untrained seeds read
    above 1 on the key-minus-apples contrast on Key-to-Door: measured at the cpu settings, learning rate 0). ``sr_c_zr_<event>`` = zr at the event (Fig. 5c: the
    key's spike in phase 1), ``sr_c_dz_<event>_vs_<reference>`` = zr at the event minus zr at the reference (the
    key's spike above the apples), ``sr_c_dz_<event>_vs_abs_<reference>`` = zr at the event minus |zr at the
    reference| (the spike against how far c at the reference strays from its room's either way: "mostly flat")."""
    mean = sums["c"] / sums["n"]
    sd = jnp.sqrt(jnp.maximum(sums["c2"] / sums["n"] - jnp.square(mean), 0.0))
    found = {}
    for name in events:
        for where in EVENT_STATES:
            count = sums[f"{name}_{where}_n"]
            at = sums[f"{name}_{where}"] / jnp.maximum(count, 1.0)
            found[f"sr_c_z_{name}_{where}"] = jnp.where((count > 0) & (sd > 0), (at - mean) / jnp.maximum(sd, 1e-12),
                                                         jnp.nan)

    def within_room(name: str) -> jax.Array:
        count, where = sums[f"{name}_after_n"], sums[f"{name}_after_room_n"]
        room_mean = sums["c_room"] / jnp.maximum(sums["n_room"], 1.0)
        matched = jnp.sum(where * room_mean) / jnp.maximum(jnp.sum(where), 1.0)
        at = sums[f"{name}_after"] / jnp.maximum(count, 1.0)
        return jnp.where((count > 0) & (sd > 0), (at - matched) / jnp.maximum(sd, 1e-12), jnp.nan)

    for event, reference in contrasts:
        at, ref = within_room(event), within_room(reference)
        found[f"sr_c_zr_{event}"] = at
        found[f"sr_c_dz_{event}_vs_{reference}"] = at - ref
        found[f"sr_c_dz_{event}_vs_abs_{reference}"] = at - jnp.abs(ref)
    return found


def has_chain_probe(env: JaxEnv) -> bool:
    """Whether ``env`` exposes its chain states and trigger (the Chain)."""
    return hasattr(env, "state_observations") and hasattr(env, "trigger_position")


def contribution_profile(network: SRActorCritic, params: Params, env: JaxEnv) -> jax.Array:
    """c(s) at every chain position (the SR profile of the paper's Fig. 3c, on the current parameters)."""
    representation = network.apply(params, env.state_observations(), method=SRActorCritic.embed)
    return network.apply(params, representation, method=SRActorCritic.contribution)


def init_train_state(key: jax.Array, env: JaxEnv, config: ImpalaSRConfig, learner: SRLearner) -> SRTrainState:
    """Fresh learner, B reset environments with empty memories, a history filled with the initial parameters."""
    learner_key, actor_key, rng = jax.random.split(raw_key(key), 3)
    learner_state = learner.init(learner_key)
    lag = config.impala.policy_lag
    history = jax.tree.map(lambda p: jnp.broadcast_to(p, (lag + 1, *p.shape)), learner_state.params)
    actor = init_actor(actor_key, env, make_sr_network(config, env.num_actions), config)
    return SRTrainState(learner_state, actor, history, rng, jnp.zeros((), jnp.int32))


def train_step(
    state: SRTrainState, env: JaxEnv, config: ImpalaSRConfig, learner: SRLearner
) -> tuple[SRTrainState, tuple[SRLearnerMetrics, SREpisodeStats, dict[str, jax.Array]]]:
    """One unroll with the lagged parameters, one learner update, the new snapshot into the ring buffer; on an
    environment with events, the batch's :func:`event_sums` with the updated parameters."""
    rng, unroll_key = jax.random.split(state.rng)
    lag = config.impala.policy_lag
    slot = lag_slot(state.learner.step, lag)
    params = jax.tree.map(lambda history: history[slot], state.params_history)
    actor, batch, stats = unroll(
        unroll_key, params, state.actor, env=env, network=make_sr_network(config, env.num_actions),
        unroll_length=config.impala.unroll_length,
    )
    learner_state, metrics = learner.update(state.learner, batch)
    history = jax.tree.map(lambda h, p: h.at[slot].set(p), state.params_history, learner_state.params)
    frames = state.frames + config.frames_per_update
    events = event_names(env, config)
    rooms = env.rooms_of(batch.observations) if hasattr(env, "rooms_of") else None
    sums = event_sums(make_sr_network(config, env.num_actions), learner_state.params, batch.observations, batch.dones,
                      stats.step_tallies, events, rooms, getattr(env, "num_rooms", 1)) if events else {}
    # the per-step amounts stay here: the chunk keeps scalars only
    return SRTrainState(learner_state, actor, history, rng, frames), (metrics, stats._replace(step_tallies={}), sums)


def run_chunk(
    state: SRTrainState, env: JaxEnv, config: ImpalaSRConfig, learner: SRLearner, updates_per_chunk: int
) -> tuple[SRTrainState, Any]:
    """``updates_per_chunk`` train steps in a ``lax.scan``; metrics averaged over the chunk."""

    def step(carry: SRTrainState, _: None) -> tuple[SRTrainState, tuple[SRLearnerMetrics, SREpisodeStats, dict]]:
        return train_step(carry, env, config, learner)

    state, (metrics, stats, sums) = jax.lax.scan(step, state, None, length=updates_per_chunk)
    episodes = jnp.sum(stats.ended.astype(jnp.int32))
    mean_return = jnp.where(episodes > 0, jnp.sum(stats.returns) / jnp.maximum(episodes, 1), jnp.nan)
    values = {**jax.tree.map(jnp.mean, metrics)._asdict(), "episodes": episodes, "mean_return": mean_return,
              "frames": state.frames}
    if stats.tallies:
        per_episode = {name: jnp.where(episodes > 0, jnp.sum(total) / jnp.maximum(episodes, 1), jnp.nan)
                       for name, total in stats.tallies.items()}
        if sums:
            per_episode |= event_metrics(jax.tree.map(lambda x: jnp.sum(x, axis=0), sums), event_names(env, config),
                                         tuple(getattr(env, "contrasts", ())))
        return state, tally_chunk_metrics(tuple(per_episode))(**values, **per_episode)
    if not has_chain_probe(env):
        return state, ChunkMetrics(**values)
    profile = contribution_profile(make_sr_network(config, env.num_actions), state.learner.params, env)
    peak = jnp.argmax(profile).astype(jnp.float32)
    return state, ChainChunkMetrics(
        **values, sr_peak_position=peak, sr_peak_distance=jnp.abs(peak - env.trigger_position)
    )


def make_sr_trainer(env: JaxEnv, config: ImpalaSRConfig, *, updates_per_chunk: int) -> ScannedTrainer:
    """Build the jitted IMPALA+SR loop for a pure-JAX ``env`` (``config.impala.total_updates`` sets the lr schedule)."""
    check_updates_per_chunk(updates_per_chunk)
    learner = make_learner(config, env.observation_shape, env.num_actions)
    init_fn = functools.partial(init_train_state, env=env, config=config, learner=learner)
    chunk_fn = functools.partial(run_chunk, env=env, config=config, learner=learner, updates_per_chunk=updates_per_chunk)
    # With an LSTM core the seeds' inits run one after another: the vmapped init of the whole train state never
    # returned on XLA's CPU runtime (jax 0.10.2, lstm_size 256, 2 seeds: every thread idle; lstm_size 8 ran), while
    # the vmapped training chunks run (as FRODO's LSTM, ``make_frodo_trainer``).
    return scanned_trainer(init_fn, chunk_fn, init_seeds_one_by_one=config.lstm_size is not None)
