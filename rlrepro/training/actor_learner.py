"""An IMPALA actor-learner on one host: actor threads step vector environments, the learner consumes unrolls.

IMPALA section 3 and the released code's single-machine mode (notes section 1.6): actors copy the
learner's latest parameters at the start of each unroll, act for T steps and send the unroll of
T + 1 observations (the first is the last of the previous unroll), the behaviour logits and the
core state at its start through a bounded queue; the learner dequeues B trajectories, updates and
publishes new parameters. The policy lag that results (learner version minus the version an
unroll was acted with) is measured for every batch.

Table 1's other single-machine organisations: ``mode="a2c_sync_traj"`` (actor threads play whole unrolls, the
learner waits for all of them and updates once, then every actor starts again with the new parameters) and
``mode="a3c"`` (worker threads each compute the gradient of their own unroll at their own parameter snapshot and
apply it to shared parameters). ``mode="sync"`` with lag 0 is batched A2C with a synchronised step: one batched
forward pass for all environments, one vector step that waits for all of them.

``mode="sync"`` replaces the threads with a deterministic schedule: before every update the actor
plays one unroll with the parameters exactly ``policy_lag`` updates old. Runs are then
reproducible for tests and give the controlled lag of the paper's Fig. E.1.

The environment and policy are behind two small protocols so that other agents can reuse this loop.
"""

from __future__ import annotations

import collections
import math
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.environments.atari import AtariEnv
from rlrepro.training.placement import ACTOR_DEVICE_ENV, actor_device_setting
from rlrepro.training.unroll import Batch


class HostEnv(Protocol):
    """What the actor needs of an environment (``rlrepro.environments.atari.AtariEnv`` is one)."""

    num_envs: int
    num_actions: int

    def reset(self) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> Any: ...


class Unroll(NamedTuple):
    """T steps of N environments, time-major numpy arrays, as an actor sends them.

    ``observations``, ``prev_actions`` and ``prev_rewards`` have T + 1 entries: entry t is what the
    agent saw at step t. The previous action and raw reward are those of the previous step even across
    an episode end (zero only before the very first step), as the released code feeds them
    (``scalable_agent`` ``Agent._torso``/``unroll``: only the core state is reset after ``done``) and as
    the learner re-feeds them from ``actions``/``rewards``: the actor and the learner see the same inputs.
    ``episode_returns`` lists the raw scores of the games that ended during the unroll.
    """

    observations: np.ndarray
    prev_actions: np.ndarray
    prev_rewards: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    behaviour_logits: np.ndarray
    initial_core_state: Any
    episode_returns: tuple[float, ...]
    param_version: int


#: ``policy_step(params, observation, prev_action, prev_reward, core_state, key) -> (action, logits, core_state, key)``:
#: one jitted acting step for the B environments of an actor. It splits ``key`` itself (``sample_action``) and
#: returns the key to carry to the next step, so that an acting step is one dispatch and one ``jax.device_get`` of
#: ``(action, logits)`` (``play_unroll``); the actions equal those of splitting the key on the host first.
PolicyStep = Callable[[Any, np.ndarray, np.ndarray, np.ndarray, Any, jax.Array], tuple[Any, Any, Any, jax.Array]]


class HostState(NamedTuple):
    """What one seed's run carries between chunks (checkpointable)."""

    learner: Any
    rng: jax.Array  # raw uint32 key data
    version: jax.Array  # number of learner updates so far (int32)



def batch_from_unrolls(unrolls: list[Unroll]) -> Batch:
    """Concatenate unrolls along the environment axis into one learner batch."""
    cat = lambda name, axis=1: np.concatenate([getattr(u, name) for u in unrolls], axis=axis)  # noqa: E731
    core = jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *[u.initial_core_state for u in unrolls])
    return Batch(
        observations=jnp.asarray(cat("observations")),
        actions=jnp.asarray(cat("actions")),
        rewards=jnp.asarray(cat("rewards")),
        dones=jnp.asarray(cat("dones")),
        behaviour_logits=jnp.asarray(cat("behaviour_logits")),
        initial_core_state=core,
        prev_action=jnp.asarray(cat("prev_actions")[0]),
        prev_reward=jnp.asarray(cat("prev_rewards")[0]),
    )


def sample_action(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a ~ softmax(logits)`` (IMPALA's behaviour policy mu) with a fresh subkey; returns ``(action int32, next key)``.

    The split is the actors' sequence ``key, step_key = jax.random.split(key)``, done inside the policy step's jit
    instead of on the host: the same keys, so the same actions for the same seed (one dispatch fewer per step).
    """
    key, step_key = jax.random.split(key)
    return jax.random.categorical(step_key, logits).astype(jnp.int32), key


@dataclass
class ActorState:
    """What an actor carries from one unroll to the next."""

    observation: np.ndarray
    prev_action: np.ndarray
    prev_reward: np.ndarray
    core_state: Any
    key: jax.Array


def start_actor(env: HostEnv, initial_core_state: Any, key: jax.Array) -> ActorState:
    """Reset the environments and the recurrent state."""
    n = env.num_envs
    return ActorState(env.reset(), np.zeros(n, np.int32), np.zeros(n, np.float32), initial_core_state, key)


def play_unroll(
    env: HostEnv,
    policy_step: PolicyStep,
    reset_core: Callable[[Any, np.ndarray], Any],
    params: Any,
    version: int,
    state: ActorState,
    unroll_length: int,
) -> tuple[ActorState, Unroll]:
    """Act for ``unroll_length`` steps with ``params``; returns the new actor state and the unroll."""
    observations, prev_actions, prev_rewards = [state.observation], [state.prev_action], [state.prev_reward]
    actions, rewards, dones, logits_list, returns = [], [], [], [], []
    # A copy: an agent whose state is a large host buffer updates it in place while acting (IMPALA+SR's episodic
    # memory), and the unroll must carry the state as it was at its first observation.
    initial_core, core, key = jax.tree.map(np.copy, state.core_state), state.core_state, state.key
    obs, prev_action, prev_reward = state.observation, state.prev_action, state.prev_reward
    for _ in range(unroll_length):
        action, logits, core, key = policy_step(params, obs, prev_action, prev_reward, core, key)
        action, logits = jax.device_get((action, logits))  # one device-to-host transfer per step
        action = np.asarray(action, np.int32)
        step = env.step(action)
        core = reset_core(core, step.done)
        # Not zeroed after a done: the learner feeds a_t, r_t to step t + 1 whatever done_t (see Unroll).
        prev_action, prev_reward = action, np.asarray(step.reward, np.float32)
        obs = step.observation
        actions.append(action)
        rewards.append(step.reward)
        dones.append(step.done)
        logits_list.append(np.asarray(logits, np.float32))
        returns.extend(float(r) for r in step.episode_return[step.game_over])
        observations.append(obs)
        prev_actions.append(prev_action)
        prev_rewards.append(prev_reward)
    unroll = Unroll(
        observations=np.stack(observations),
        prev_actions=np.stack(prev_actions),
        prev_rewards=np.stack(prev_rewards),
        actions=np.stack(actions),
        rewards=np.stack(rewards).astype(np.float32),
        dones=np.stack(dones),
        behaviour_logits=np.stack(logits_list),
        initial_core_state=initial_core,
        episode_returns=tuple(returns),
        param_version=version,
    )
    return ActorState(obs, prev_action, prev_reward, core, key), unroll


class ParameterStore:
    """The learner's latest parameters and their version, read by actor threads."""

    def __init__(self, params: Any, version: int = 0):
        self._lock = threading.Lock()
        self._params, self._version = params, version

    def publish(self, params: Any, version: int) -> None:
        with self._lock:
            self._params, self._version = params, version

    def latest(self) -> tuple[Any, int]:
        with self._lock:
            return self._params, self._version


@dataclass
class BatchStats:
    """What the learner saw in one batch: policy lag and finished games."""

    policy_lag: float
    episode_returns: list[float] = field(default_factory=list)


class ThreadedActors:
    """Actor threads feeding a bounded queue of unrolls (IMPALA's single-machine mode)."""

    def __init__(
        self,
        envs: list[HostEnv],
        policy_step: PolicyStep,
        reset_core: Callable[[Any, np.ndarray], Any],
        initial_core: Callable[[int], Any],
        store: ParameterStore,
        *,
        unroll_length: int,
        key: jax.Array,
        queue_size: int = 2,
    ):
        self.queue: queue.Queue[Unroll] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        keys = jax.random.split(key, len(envs))
        self._threads = [
            threading.Thread(
                target=self._run,
                args=(env, policy_step, reset_core, initial_core, store, unroll_length, k),
                name=f"actor-{i}",
                daemon=True,
            )
            for i, (env, k) in enumerate(zip(envs, keys))
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, env, policy_step, reset_core, initial_core, store, unroll_length, key) -> None:
        try:
            state = start_actor(env, initial_core(env.num_envs), key)
            while not self._stop.is_set():
                params, version = store.latest()
                state, unroll = play_unroll(env, policy_step, reset_core, params, version, state, unroll_length)
                while not self._stop.is_set():
                    try:
                        self.queue.put(unroll, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as error:  # surfaced in the learner thread by get()
            self._errors.append(error)
            self._stop.set()

    def get(self, timeout: float = 600.0) -> Unroll:
        """The next unroll; re-raises an actor's exception in the learner thread."""
        return _next_result(self.queue, self._errors, timeout, "an actor thread failed", "no unroll from the actors")

    def stop(self) -> None:
        _stop_threads(self._stop, self._threads)


class LaggedActor:
    """The deterministic mode: one unroll per update, acted with parameters exactly ``lag`` updates old."""

    def __init__(
        self,
        env: HostEnv,
        policy_step: PolicyStep,
        reset_core: Callable[[Any, np.ndarray], Any],
        initial_core: Callable[[int], Any],
        *,
        lag: int,
        unroll_length: int,
        key: jax.Array,
    ):
        self._env, self._policy_step, self._reset_core = env, policy_step, reset_core
        self._lag, self._unroll_length = lag, unroll_length
        self._history: collections.deque[tuple[Any, int]] = collections.deque(maxlen=lag + 1)
        self._state = start_actor(env, initial_core(env.num_envs), key)

    def record(self, params: Any, version: int) -> None:
        """Remember the learner's parameters after each update (and the initial ones)."""
        self._history.append((params, version))

    def get(self) -> Unroll:
        params, version = self._history[0]  # the oldest kept: exactly `lag` updates old once warmed up
        self._state, unroll = play_unroll(
            self._env, self._policy_step, self._reset_core, params, version, self._state, self._unroll_length
        )
        return unroll

    def stop(self) -> None:
        pass


class VersionedStore(ParameterStore):
    """A ``ParameterStore`` actors can wait on until a given parameter version is published."""

    def __init__(self, params: Any, version: int = 0):
        super().__init__(params, version)
        self._published = threading.Condition(self._lock)

    def publish(self, params: Any, version: int) -> None:
        with self._published:
            self._params, self._version = params, version
            self._published.notify_all()

    def wait_for(self, version: int, stop: threading.Event) -> tuple[Any, int] | None:
        """The parameters once their version is at least ``version`` (None if ``stop`` is set first)."""
        with self._published:
            while self._version < version:
                if stop.is_set():
                    return None
                self._published.wait(timeout=0.1)
            return self._params, self._version


class SyncTrajectoryActors(ThreadedActors):
    """Batched A2C with synchronised trajectories (IMPALA Fig. 2(b), Table 1): every actor thread plays a whole
    unroll of its own environment with the current parameters, without waiting for the other actors between
    steps; the learner waits for all of them, updates once, and only then do the actors start the next unroll, with
    the new parameters (no policy lag). The only synchronisation is that barrier, once per n steps;
    ``barrier_waits["actor-i"]`` counts actor ``i``'s passes through it. As in Fig. 2(b) each actor has one environment
    (``HostActorLearner`` enforces it): an actor with several would synchronise them every step (Fig. 2(a))."""

    def __init__(self, envs: list[HostEnv], policy_step: PolicyStep, reset_core: Callable[[Any, np.ndarray], Any],
                 initial_core: Callable[[int], Any], store: VersionedStore, *, unroll_length: int, key: jax.Array):
        self.barrier_waits: collections.Counter[str] = collections.Counter()
        super().__init__(envs, policy_step, reset_core, initial_core, store, unroll_length=unroll_length, key=key,
                         queue_size=len(envs))

    def _run(self, env, policy_step, reset_core, initial_core, store, unroll_length, key) -> None:
        name = threading.current_thread().name
        try:
            state = start_actor(env, initial_core(env.num_envs), key)
            expected = store.latest()[1]
            while not self._stop.is_set():
                latest = store.wait_for(expected, self._stop)  # the barrier: the learner's update of this round
                if latest is None:
                    return
                self.barrier_waits[name] += 1
                params, version = latest
                state, unroll = play_unroll(env, policy_step, reset_core, params, version, state, unroll_length)
                self.queue.put(unroll)  # never blocks: one unroll per actor per round, queue_size = actors
                expected = version + 1
        except BaseException as error:  # surfaced in the learner thread by get()
            self._errors.append(error)
            self._stop.set()


class WorkerResult(NamedTuple):
    """One A3C worker step, as the worker reports it after applying its gradient."""

    episode_returns: tuple[float, ...]
    policy_lag: int  # gradients other workers applied between this worker's snapshot and its own gradient
    metrics: Any


class SharedLearner:
    """The shared parameters and optimiser state of A3C: workers apply their gradients one at a time under a lock,
    up to a ``limit`` of applied gradients that the chunk loop raises.

    A lock rather than Mnih et al.'s lock-free Hogwild writes: JAX arrays are immutable, so an unlocked
    read-modify-write would not interleave element-wise as Hogwild's in-place writes do; it would silently drop
    whole gradients (last writer wins). The lock covers only the apply (a clip and an RMSProp step); acting and the
    gradient, the bulk of a worker's time, run outside it, so the workers stay asynchronous.
    """

    def __init__(self, state: Any, apply: Callable[[Any, Any, Any], tuple[Any, Any]], version: int = 0):
        self.state, self.version, self.limit = state, version, version
        self._apply = apply
        self._changed = threading.Condition()

    def latest(self) -> tuple[Any, int]:
        with self._changed:
            return self.state.params, self.version

    def allow(self, count: int) -> None:
        """Let ``count`` more gradients be applied."""
        with self._changed:
            self.limit += count
            self._changed.notify_all()

    def apply(self, grads: Any, metrics: Any, stop: threading.Event) -> tuple[int, Any] | None:
        """Apply one worker's gradient to the shared state (waits while the limit is reached); the new version."""
        with self._changed:
            while self.version >= self.limit:
                if stop.is_set():
                    return None
                self._changed.wait(timeout=0.1)
            self.state, metrics = self._apply(self.state, grads, metrics)
            self.version += 1
            self._changed.notify_all()
            return self.version, metrics

    def wait_until(self, version: int, timeout: float = 600.0) -> None:
        """Block until ``version`` gradients have been applied."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.version < version:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"A3C workers applied {self.version} of {version} gradients")
                self._changed.wait(timeout=0.1)


class AsyncGradientWorkers:
    """A3C on one machine (Mnih et al. 2016; IMPALA Table 1): each worker thread copies the shared parameters,
    plays one unroll of its own environment with that snapshot (batch-1 forward passes: ``HostActorLearner`` gives
    every worker one environment, as the paper's 32 workers had), computes the gradient of the loss on its own
    unroll at its snapshot (a batch-1 backward pass over T steps), and applies it to the shared parameters;
    workers never wait for each other except for the lock around the apply (``SharedLearner``)."""

    def __init__(self, envs: list[HostEnv], policy_step: PolicyStep, reset_core: Callable[[Any, np.ndarray], Any],
                 initial_core: Callable[[int], Any], shared: SharedLearner,
                 gradient: Callable[[Any, Unroll], tuple[Any, Any]], *, unroll_length: int, key: jax.Array):
        self.results: queue.Queue[WorkerResult] = queue.Queue()
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        keys = jax.random.split(key, len(envs))
        self._threads = [
            threading.Thread(target=self._run, name=f"a3c-worker-{i}", daemon=True,
                             args=(env, policy_step, reset_core, initial_core, shared, gradient, unroll_length, k))
            for i, (env, k) in enumerate(zip(envs, keys))
        ]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _run(self, env, policy_step, reset_core, initial_core, shared, gradient, unroll_length, key) -> None:
        try:
            state = start_actor(env, initial_core(env.num_envs), key)
            while not self._stop.is_set():
                params, version = shared.latest()  # the worker's own snapshot
                state, unroll = play_unroll(env, policy_step, reset_core, params, version, state, unroll_length)
                grads, metrics = gradient(params, unroll)
                applied = shared.apply(grads, metrics, self._stop)
                if applied is None:
                    return
                new_version, metrics = applied
                self.results.put(WorkerResult(unroll.episode_returns, new_version - 1 - version, metrics))
        except BaseException as error:  # surfaced in the chunk loop by get()
            self._errors.append(error)
            self._stop.set()

    def get(self, timeout: float = 600.0) -> WorkerResult:
        """The next worker step's report; re-raises a worker's exception."""
        return _next_result(self.results, self._errors, timeout, "an A3C worker failed", "no gradient from the A3C workers")

    def stop(self) -> None:
        _stop_threads(self._stop, self._threads)


ONE_ENV_PER_ACTOR = ("a2c_sync_traj", "a3c")


def check_one_env_per_actor(mode: str, num_envs: int, num_actors: int) -> None:
    """Table 1's A3C workers and Fig. 2(b)'s sync-traj actors each act on one environment (batch-1 forward passes;
    A3C also batch-1 backward passes); with several per thread they would step them in lockstep, i.e. batched A2C
    with a synchronised step inside every thread (issue 28). Raises ValueError naming the fix."""
    if mode in ONE_ENV_PER_ACTOR and num_envs != num_actors:
        raise ValueError(
            f"actor.mode {mode}: one environment per {'worker' if mode == 'a3c' else 'actor'} (IMPALA Table 1, "
            f"Fig. 2(b)): actor.num_actors ({num_actors}) must equal the environment's num_envs ({num_envs})"
        )


def actor_device(setting: str | None = None) -> jax.Device:
    """The device of the actors' policy for ``setting`` (default: ``$RLREPRO_ACTOR_DEVICE``, ``placement``):
    ``learner``, the learner's first local device; ``cpu``, the host CPU (the same device on a CPU-only machine).

    Raises:
        ValueError: a bad setting, or ``cpu`` where JAX was started without its CPU backend.
    """
    setting = actor_device_setting(setting)
    if setting == "learner":
        return jax.local_devices()[0]
    try:
        return jax.devices("cpu")[0]
    except RuntimeError as error:
        platforms = os.environ.get("JAX_PLATFORMS")
        raise ValueError(f"${ACTOR_DEVICE_ENV}=cpu: JAX has no CPU backend here (JAX_PLATFORMS={platforms!r}): add "
                         f"cpu to JAX_PLATFORMS or set {ACTOR_DEVICE_ENV}=learner") from error


_EVALUATION_STREAM = 0x65_76_61_6C  # "eval": folded into the run's key, apart from the actors' keys


def evaluation_keys(rng: Any, version: int) -> tuple[jax.Array, Callable[[int], int]]:
    """The evaluation's policy key and emulator seed per round, derived from the run's raw key data ``rng``.

    Different runs (seeds) get different games and action samples; the same run, at the same parameter
    ``version``, gets the same ones (a resumed run evaluates as the uninterrupted one would).
    """
    run_key = jax.random.wrap_key_data(jax.numpy.asarray(rng, jax.numpy.uint32))
    key = jax.random.fold_in(jax.random.fold_in(run_key, _EVALUATION_STREAM), version)
    policy_key, env_key = jax.random.split(key)

    def env_seed(round_index: int) -> int:
        return int(jax.random.randint(jax.random.fold_in(env_key, round_index), (), 0, 2**31 - 1))

    return policy_key, env_seed


class HostActorLearner:
    """The acting half of a host actor-learner, shared by the agents that learn from Atari unrolls.

    Starts the actors (threads feeding a queue, or the lagged synchronous actor), hands the learner
    unrolls, publishes the learner's parameters after each update and plays the evaluation games.
    A subclass sets ``policy_step`` (a ``PolicyStep``) and overrides ``_initial_core`` / ``_reset_core``
    if its agent is recurrent; its learner decides how many unrolls an update takes.
    """

    policy_step: PolicyStep

    def __init__(self, env_spec: Any, actor_spec: Any, *, unroll_length: int, policy_lag: int = 0):
        if env_spec.num_envs % actor_spec.num_actors:
            raise ValueError(f"num_envs {env_spec.num_envs} is not divisible by actor.num_actors {actor_spec.num_actors}")
        check_one_env_per_actor(actor_spec.mode, env_spec.num_envs, actor_spec.num_actors)
        self.env_spec, self.actor_spec = env_spec, actor_spec
        self.envs_per_actor = env_spec.num_envs // actor_spec.num_actors
        self._unroll_length, self._policy_lag = unroll_length, policy_lag
        self._source: Any = None
        self._store: ParameterStore | None = None
        self._run_rng: np.ndarray | None = None
        # Where the actors' policy runs ($RLREPRO_ACTOR_DEVICE); A3C's workers act and take their gradients at the
        # shared parameters, on the learner's device, whatever the setting.
        self.actor_device = actor_device("learner" if actor_spec.mode == "a3c" else None)

    def _initial_core(self, n: int) -> Any:
        return ()

    def _reset_core(self, core: Any, done: np.ndarray) -> Any:
        return core

    def _actor_params(self, params: Any) -> Any:
        """The actors' copy of the parameters, on the actors' device (one device: replicated arrays would run
        everywhere)."""
        return jax.device_put(params, self.actor_device)

    def _start_actors(self, params: Any, rng: Any, version: int) -> None:
        """Start the actors (first chunk, or after a resume) acting with ``params``; ``rng`` is raw key data."""
        seed = int(np.asarray(rng)[0] % (2**31))
        # The actors' keys live where their policy runs: a step's split and sampling stay on that device.
        key = jax.device_put(jax.random.wrap_key_data(jnp.asarray(rng, jnp.uint32)), self.actor_device)
        self._run_rng = np.asarray(rng)  # the evaluation games derive their seeds and policy key from it
        if self.actor_spec.mode == "sync":
            env = AtariEnv(self.env_spec, num_envs=self.env_spec.num_envs, seed=seed)
            self._source = LaggedActor(
                env, self.policy_step, self._reset_core, self._initial_core,
                lag=self._policy_lag, unroll_length=self._unroll_length, key=key,
            )  # fmt: skip
            self._source.record(self._actor_params(params), version)
        else:
            envs = [
                AtariEnv(self.env_spec, num_envs=self.envs_per_actor, seed=seed + 1000 * i, num_threads=1)
                for i in range(self.actor_spec.num_actors)
            ]
            common = dict(unroll_length=self._unroll_length, key=key)
            if self.actor_spec.mode == "a2c_sync_traj":
                self._store = VersionedStore(self._actor_params(params), version)
                self._source = SyncTrajectoryActors(
                    envs, self.policy_step, self._reset_core, self._initial_core, self._store, **common
                )
            elif self.actor_spec.mode == "a3c":
                self._source = AsyncGradientWorkers(
                    envs, self.policy_step, self._reset_core, self._initial_core, self._shared_learner(),
                    self._worker_gradient, **common,
                )
            else:
                self._store = ParameterStore(self._actor_params(params), version)
                self._source = ThreadedActors(
                    envs, self.policy_step, self._reset_core, self._initial_core, self._store,
                    queue_size=self.actor_spec.queue_size, **common,
                )

    def _shared_learner(self) -> SharedLearner:
        """A3C: the shared parameters the workers apply their gradients to (set up by the agent's trainer)."""
        raise NotImplementedError(f"{type(self).__name__} has no A3C mode")

    def _worker_gradient(self, params: Any, unroll: Unroll) -> tuple[Any, Any]:
        """A3C: a worker's gradient on its own unroll at its own parameter snapshot (set by the agent's trainer)."""
        raise NotImplementedError(f"{type(self).__name__} has no A3C mode")

    def _next_unroll(self) -> Unroll:
        return self._source.get()

    def _publish(self, params: Any, version: int) -> None:
        """Hand the actors the learner's parameters after an update."""
        params = self._actor_params(params)
        if self._store is not None:
            self._store.publish(params, version)
        else:
            self._source.record(params, version)

    def _learn_chunk(
        self, learner: Any, version: int, to_batch: Callable[[list[Unroll]], Any], metrics_type: Any, *,
        batch_size: int, total_updates: int, frames_per_update: int,
    ) -> tuple[Any, int, Any]:
        """``updates_per_chunk`` updates (``self.update``), each on ``batch_size`` streams of unrolls from the actors'
        queue made into a batch by ``to_batch``, publishing the parameters after each; returns the learner state, its
        version and the chunk's ``metrics_type`` (``_chunk_metrics``)."""
        started = time.monotonic()
        lags, returns, learner_metrics = [], [], []
        for _ in range(self.updates_per_chunk):
            unrolls = [self._next_unroll() for _ in range(batch_size // self.envs_per_actor)]
            lags.extend(version - u.param_version for u in unrolls)
            returns.extend(r for u in unrolls for r in u.episode_returns)
            learner, metrics = self.update(learner, to_batch(unrolls))
            version += 1
            self._publish(learner.params, version)
            learner_metrics.append(metrics)
        metrics = self._chunk_metrics(
            metrics_type, learner.params, version, total_updates=total_updates, frames_per_update=frames_per_update,
            started=started, returns=returns, lags=lags, learner_metrics=learner_metrics,
        )  # fmt: skip
        return learner, version, metrics

    def _chunk_metrics(
        self, metrics_type: Any, params: Any, version: int, *, total_updates: int, frames_per_update: int,
        started: float, returns: list[float], lags: list[int], learner_metrics: list[Any],
    ) -> Any:
        """A chunk's ``metrics_type`` as [1] arrays (one seed per job): frames, games, fps, policy lag, the
        learner metrics' means, and ``eval_return`` after the last update (which also stops the actors).

        ``fps`` counts the chunk's updates only once they are done: JAX dispatches the learner's updates
        asynchronously, so the clock is read after ``params`` and the metrics are ready (otherwise the last
        dispatched updates would be counted before they ran, and a short chunk could show more frames/s than
        the learner can do at all).
        """
        jax.block_until_ready((params, learner_metrics))
        elapsed = time.monotonic() - started
        final = version >= total_updates
        scores = self.evaluate_scores(params, version) if final else []
        if final:
            self.stop()
        values = {k: float(np.mean([getattr(m, k) for m in learner_metrics])) for k in learner_metrics[0]._fields}
        values.update(
            frames=version * frames_per_update,
            episodes=len(returns),
            mean_return=float(np.mean(returns)) if returns else math.nan,
            fps=len(learner_metrics) * frames_per_update / elapsed,
            policy_lag=float(np.mean(lags)),
            eval_return=float(np.mean(scores)) if scores else math.nan,
            eval_scores=scores,  # each game's own (metrics types that keep them: EVAL_SCORES)
        )
        return metrics_type(**{name: np.asarray([values[name]]) for name in metrics_type._fields})

    def stop(self) -> None:
        if self._source is not None:
            self._source.stop()
            self._source = None

    def evaluate(self, params: Any, version: int, rng: Any = None) -> float:
        """Mean raw score of ``evaluation.episodes`` whole games: ``evaluate_scores``' mean."""
        return float(np.mean(self.evaluate_scores(params, version, rng)))

    def evaluate_scores(self, params: Any, version: int, rng: Any = None) -> list[float]:
        """Raw scores of ``evaluation.episodes`` whole games (no life-loss ends, up to ``noop_max`` no-ops), in order.

        The games' emulator seeds and the policy's sampling key come from ``evaluation_keys(rng, version)``,
        ``rng`` being the run's raw key data (default: the one the actors were started with): each seed of an
        experiment plays its own evaluation games, so intervals over seeds include the evaluation noise.
        """
        rng = self._run_rng if rng is None else rng
        if rng is None:
            raise ValueError("evaluate needs the run's key data: pass rng, or start the actors first")
        spec = self.env_spec.evaluation
        n = min(spec.episodes, 16)
        scores: list[float] = []
        key, env_seeds = evaluation_keys(rng, version)
        params, key = self._actor_params(params), jax.device_put(key, self.actor_device)  # where the actors act
        round_index = 0
        while len(scores) < spec.episodes:
            env = AtariEnv(self.env_spec, num_envs=n, seed=env_seeds(round_index), training=False, noop_max=spec.noop_max)
            obs, finished = env.reset(), np.zeros(n, bool)
            core = self._initial_core(n)
            prev_action, prev_reward = np.zeros(n, np.int32), np.zeros(n, np.float32)
            round_scores = np.zeros(n)
            while not finished.all():
                action, _, core, key = self.policy_step(params, obs, prev_action, prev_reward, core, key)
                action = jax.device_get(action)
                step = env.step(np.asarray(action))
                newly = step.game_over & ~finished
                round_scores[newly] = step.episode_return[newly]
                finished |= step.game_over
                core = self._reset_core(core, step.done)
                prev_action = np.asarray(action, np.int32)  # as in training (see Unroll)
                prev_reward = np.asarray(step.reward, np.float32)
                obs = step.observation
            env.close()
            scores.extend(round_scores[: spec.episodes - len(scores)].tolist())
            round_index += 1
        return scores


def _next_result(results: queue.Queue, errors: list, timeout: float, failed: str, silent: str) -> Any:
    """The next item of a thread pool's queue, polled so that a thread's exception is re-raised here (``failed``)
    and a pool that produces nothing for ``timeout`` seconds is an error (``silent``)."""
    deadline = time.monotonic() + timeout
    while True:
        if errors:
            raise RuntimeError(failed) from errors[0]
        try:
            return results.get(timeout=0.1)
        except queue.Empty:
            if time.monotonic() > deadline:
                raise TimeoutError(silent) from None


def _stop_threads(stop: threading.Event, threads: list) -> None:
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
