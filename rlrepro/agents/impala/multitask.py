"""IMPALA's multi-task Atari agent (§5.3.2, App. F, App. G): one set of weights for many games, trained by a
population whose learners are vmapped in one job.

§5.3: "we allocate a fixed number of actors to each task"; the model does not know the task. App. G: the
agent plays the full 18-action set so one policy layer serves every game, with the deep feed-forward
network. Here every member has, for each game, ``actor.num_actors`` actor threads (or the synchronous
actor) stepping that game's ``num_envs`` environments; each learner update takes its B trajectories from
the games in turn (equal shares, the deterministic form of equal actor counts). Every member's update is
the same function of its own state (``rlrepro.agents.impala.population``), so the population's learners
are one ``jit(vmap(update))``: on an accelerator the 24 members train in parallel in one job.

PBT (App. F): after each update, a member past the burn-in that has finished ``ready_episodes`` training
episodes since its last step takes one exploit/explore step (``rlrepro.agents.impala.pbt``) with fitness the
mean capped human-normalised score of its training episodes in that window (Table G.1), a game without an
episode in the window keeping its previous mean (the random score, HNS 0, before its first). Without PBT
the population has one member with the spec's hyper-parameters.

The job's state (checkpointed by the runner after every chunk, so the population resumes after an
interruption) holds every member's weights, RMSProp state and hyper-parameters, the fitness windows, the
PBT round and ancestry counters; the games themselves are not checkpointed (actors start new games).

Metrics come as one row per game ([G] arrays; the runner writes row g to game g's run folder): that game's
training episodes and mean raw score in the chunk (all members), the population's learner and PBT figures
(the same in every row: copies, perturbations, how many member hyper-parameters moved from their draws, and every
member's hyper-parameters as ``member<m>_<name>`` curves, App. F / Fig. F.1; each copy of the chunk with the fitness
gap that caused it and that gap's standard error from the two windows' spread, ``pbt_copy_gaps`` /
``pbt_copy_spreads``, and how many copies so far had a gap beyond that noise, ``pbt_copies_beyond_noise``:
``rlrepro.agents.impala.pbt.beyond_noise``), and at the last chunk ``eval_return``:
the mean score of evaluation games of that game played by the member with the best fitness (``eval_scores``: each
game's).
"""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.training.actor_learner import batch_from_unrolls
from rlrepro.agents.impala.learner import LearnerState
from rlrepro.agents.impala.networks import initial_core_state, make_network, make_policy_step
from rlrepro.networks.lstm import reset_core_state
from rlrepro.agents.impala.population import Hyper, apply_step, hyper_dict, make_member_learner, with_hyper
from rlrepro.environments.atari import AtariEnv
from rlrepro.results.normalization import canonical_game_name, reference_scores
from rlrepro.training.actor_learner import HostActorLearner
from rlrepro.agents.impala.pbt import (
    PBTConfig, beyond_noise, capped_hns_fitness, exploit_explore, fitness_spread, rng_for, sample_initial,
)


class MultiTaskState(NamedTuple):
    """What the population carries between chunks (checkpointable; [M] = members, [M, G] = members x games)."""

    learner: LearnerState  # leaves [M, ...]; hyper-parameters in opt_state.hyper
    rng: jax.Array  # raw uint32 key data of the run
    version: jax.Array  # learner updates per member so far (int32)
    window_sum: np.ndarray  # [M, G] sum of raw training scores finished since the member's last PBT step
    window_count: np.ndarray  # [M, G] how many
    last_mean: np.ndarray  # [M, G] each game's mean score of the member's latest window with episodes
    fitness: np.ndarray  # [M] mean capped HNS at the member's latest step (NaN before its first)
    pbt_round: np.ndarray  # int: exploit/explore steps taken (draws are a function of seed and round)
    copies: np.ndarray  # [M] how often each member copied another
    parent: np.ndarray  # [M] the member each last copied from (itself if never)
    perturbations: np.ndarray  # [M] hyper-parameter multiplications each member had (explore, App. F)
    initial_hyper: np.ndarray  # [H, M] each member's initial draws, in hyper_dict's order (what PBT moved them from)
    window_sq: np.ndarray  # [M, G] sum of squared raw training scores in the window (its spread)
    fitness_se: np.ndarray  # [M] standard error of the fitness at the member's latest step (pbt.fitness_spread)
    copies_beyond_noise: np.ndarray  # [M] copies whose fitness gap exceeded the windows' noise (pbt.beyond_noise)


class MultiTaskMetrics(NamedTuple):
    """One chunk, as [G] arrays (one row per game)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    fps: np.ndarray
    policy_lag: np.ndarray
    total_loss: np.ndarray
    pg_loss: np.ndarray
    baseline_loss: np.ndarray
    entropy: np.ndarray
    grad_norm: np.ndarray
    learning_rate: np.ndarray
    best_member: np.ndarray
    best_fitness: np.ndarray
    mean_fitness: np.ndarray
    pbt_steps: np.ndarray
    pbt_copies: np.ndarray
    pbt_perturbations: np.ndarray
    pbt_hyper_moved: np.ndarray
    pbt_copies_beyond_noise: np.ndarray
    pbt_copy_gaps: np.ndarray  # [G, K]: the fitness gap (source - copier) of each of the chunk's K copies
    pbt_copy_spreads: np.ndarray  # [G, K]: each copy's gap standard error from the two fitness windows
    best_learning_rate: np.ndarray
    best_entropy_cost: np.ndarray
    best_rmsprop_epsilon: np.ndarray
    best_max_grad_norm: np.ndarray
    eval_return: np.ndarray
    eval_scores: np.ndarray


class _GameActors(HostActorLearner):
    """One member's actors on one game (threads or the synchronous actor of ``HostActorLearner``)."""

    def __init__(self, env_spec: Any, actor_spec: Any, policy_step: Any, network: Any, *, unroll_length: int, policy_lag: int):
        self.policy_step = policy_step
        self._network = network
        super().__init__(env_spec, actor_spec, unroll_length=unroll_length, policy_lag=policy_lag)

    def _initial_core(self, n: int) -> Any:
        return jax.tree.map(np.asarray, initial_core_state(self._network, n))

    def _reset_core(self, core: Any, done: np.ndarray) -> Any:
        return reset_core_state(core, done) if core != () else core


class MultiTaskTrainer:
    """A population of IMPALA learners, each with actors on every game; PBT between updates."""

    def __init__(
        self,
        config: ImpalaConfig,
        env_specs: list[Any],
        actor_spec: Any,
        *,
        updates_per_chunk: int,
        pbt: PBTConfig | None,
    ):
        self.config, self.env_specs, self.actor_spec, self.pbt = config, list(env_specs), actor_spec, pbt
        self.updates_per_chunk = updates_per_chunk
        self.population = pbt.population_size if pbt else 1
        self.metrics_type = multitask_metrics_type(self.population, Hyper._fields)
        shapes = set()
        for spec in self.env_specs:
            probe = AtariEnv(spec, num_envs=1, seed=0, num_threads=1)
            shapes.add((probe.num_actions, probe.observation_shape))
            probe.close()
        if len(shapes) != 1:
            raise ValueError(
                f"multi-task games must share actions and observations (action_set: full, one resolution): got {shapes}"
            )
        (self.num_actions, self.observation_shape), = shapes
        self.network = make_network(config, self.num_actions)
        learner = make_member_learner(config, self.observation_shape, self.num_actions)
        self._init = jax.jit(jax.vmap(learner.init))
        self._update = jax.jit(jax.vmap(learner.update))
        self.policy_step = make_policy_step(self.network)
        references = reference_scores()
        pairs = [references[canonical_game_name(spec.game)] for spec in self.env_specs]
        self.random = np.array([p[0] for p in pairs])
        self.human = np.array([p[1] for p in pairs])
        self.frames_per_update = config.frames_per_update * self.env_specs[0].action_repeat
        self._actors: list[list[_GameActors]] | None = None
        self._cursor = 0  # the game the next trajectory comes from
        self._chunk_copies: list[tuple[float, float]] = []  # (fitness gap, its standard error) of this chunk's copies
        envs_per_actor = self.env_specs[0].num_envs // actor_spec.num_actors
        if config.batch_size % envs_per_actor:
            raise ValueError(f"batch_size {config.batch_size} must be a multiple of the environments per actor ({envs_per_actor})")
        self.unrolls_per_update = config.batch_size // envs_per_actor

    # -- state -------------------------------------------------------------------------------------------
    def init(self, key_data: jax.Array) -> MultiTaskState:
        key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
        learner_key, rng = jax.random.split(key)
        members = jax.random.split(learner_key, self.population)
        learner = self._init(jax.vmap(jax.random.key_data)(members))
        if self.pbt is not None:  # Table D.1's ranges; the clip threshold starts at Table G.1's 40
            initial = sample_initial(
                np.random.default_rng([self.pbt.seed, *np.asarray(key_data, np.uint32).tolist()]), self.population,
                learning_rate=self.pbt.initial_learning_rate, entropy_cost=self.pbt.initial_entropy_cost,
                rmsprop_epsilon=self.pbt.initial_rmsprop_epsilon,
                max_grad_norm=math.inf if self.config.max_grad_norm is None else self.config.max_grad_norm,
            )  # fmt: skip
            learner = with_hyper(learner, initial)
        m, g = self.population, len(self.env_specs)
        return MultiTaskState(
            learner=learner,
            rng=jax.random.key_data(rng),
            version=jnp.zeros((), jnp.int32),
            window_sum=np.zeros((m, g)),
            window_count=np.zeros((m, g), np.int64),
            last_mean=np.tile(self.random, (m, 1)),
            fitness=np.full(m, np.nan),
            pbt_round=np.zeros((), np.int64),
            copies=np.zeros(m, np.int64),
            parent=np.arange(m),
            perturbations=np.zeros(m, np.int64),
            initial_hyper=np.stack([np.asarray(v, np.float64) for v in hyper_dict(learner).values()]),
            window_sq=np.zeros((m, g)),
            fitness_se=np.full(m, np.inf),
            copies_beyond_noise=np.zeros(m, np.int64),
        )

    def _member_params(self, learner: LearnerState, member: int) -> Any:
        return jax.tree.map(lambda x: x[member], learner.params)

    def _start(self, state: MultiTaskState) -> None:
        """Start every member's actors on every game (first chunk, or after a resume)."""
        key = jax.random.wrap_key_data(jnp.asarray(state.rng, jnp.uint32))
        self._actors = []
        for member in range(self.population):
            row = []
            for game, spec in enumerate(self.env_specs):
                actors = _GameActors(spec, self.actor_spec, self.policy_step, self.network,
                                     unroll_length=self.config.unroll_length, policy_lag=self.config.policy_lag)  # fmt: skip
                member_key = jax.random.fold_in(key, member * 1_000 + game)
                actors._start_actors(self._member_params(state.learner, member), jax.random.key_data(member_key),
                                     int(state.version))  # fmt: skip
                row.append(actors)
            self._actors.append(row)

    def stop(self) -> None:
        for row in self._actors or []:
            for actors in row:
                actors.stop()
        self._actors = None

    # -- one chunk ---------------------------------------------------------------------------------------
    def _member_batch(self, member: int, version: int, returns: list[list[float]], lags: list[int]) -> Any:
        unrolls = []
        for i in range(self.unrolls_per_update):
            game = (self._cursor + i) % len(self.env_specs)
            unroll = self._actors[member][game]._next_unroll()
            lags.append(version - unroll.param_version)
            returns[game].extend(unroll.episode_returns)
            unrolls.append((game, unroll))
        return batch_from_unrolls([u for _, u in unrolls]), unrolls

    def run_chunk(self, state: MultiTaskState) -> tuple[MultiTaskState, MultiTaskMetrics]:
        if self._actors is None:
            self._start(state)
        started = time.monotonic()
        state = state._replace(
            window_sum=np.array(state.window_sum), window_count=np.array(state.window_count),
            last_mean=np.array(state.last_mean), fitness=np.array(state.fitness), copies=np.array(state.copies),
            parent=np.array(state.parent), perturbations=np.array(state.perturbations),
            window_sq=np.array(state.window_sq), fitness_se=np.array(state.fitness_se),
            copies_beyond_noise=np.array(state.copies_beyond_noise),
        )  # fmt: skip
        self._chunk_copies: list[tuple[float, float]] = []
        learner, version = state.learner, int(state.version)
        games = len(self.env_specs)
        chunk_returns: list[list[float]] = [[] for _ in range(games)]
        lags: list[int] = []
        learner_metrics = []
        for _ in range(self.updates_per_chunk):
            batches = []
            for member in range(self.population):
                member_returns: list[list[float]] = [[] for _ in range(games)]
                batch, _ = self._member_batch(member, version, member_returns, lags)
                batches.append(batch)
                for game, scores in enumerate(member_returns):
                    chunk_returns[game].extend(scores)
                    state.window_sum[member, game] += sum(scores)
                    state.window_sq[member, game] += sum(x * x for x in scores)
                    state.window_count[member, game] += len(scores)
            self._cursor = (self._cursor + self.unrolls_per_update) % games
            stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *batches)
            learner, metrics = self._update(learner, stacked)
            version += 1
            learner_metrics.append(metrics)
            state = state._replace(learner=learner, version=jnp.asarray(version, jnp.int32))
            if self.pbt is not None:
                state = self._maybe_step(state, version)
                learner = state.learner
            for member in range(self.population):
                params = self._member_params(learner, member)
                for actors in self._actors[member]:
                    actors._publish(params, version)
        return state, self._metrics(state, version, started, chunk_returns, lags, learner_metrics)

    def _maybe_step(self, state: MultiTaskState, version: int) -> MultiTaskState:
        """App. F's exploit/explore for the members that are ready (past burn-in, enough episodes)."""
        ready = (state.window_count.sum(axis=1) >= self.pbt.ready_episodes) & (
            version * self.frames_per_update >= self.pbt.burn_in_frames
        )
        if not ready.any():
            return state
        counts = state.window_count
        means = np.where(counts > 0, state.window_sum / np.maximum(counts, 1), state.last_mean)
        fitness = np.where(ready, capped_hns_fitness(means, self.random, self.human), state.fitness)
        spread = fitness_spread(state.window_sum, state.window_sq, counts, self.random, self.human)
        fitness_se = np.where(ready, spread, state.fitness_se)
        hyper = {k: np.asarray(v, np.float64) for k, v in hyper_dict(state.learner).items()}
        step = exploit_explore(hyper, fitness, ready, rng_for(self.pbt, int(state.pbt_round)), self.pbt)
        learner = apply_step(state.learner, step)
        keep = ~ready[:, None]
        # Each copy with the fitness gap that caused it and the gap's noise (issue 46: a copy must come from a better
        # member, not from the spread of two short windows).
        beyond = np.zeros_like(state.copies_beyond_noise)
        for member in np.flatnonzero(step.copied):
            source = step.source[member]
            gap = float(fitness[source] - fitness[member])
            noise = float(np.hypot(fitness_se[member], fitness_se[source]))
            self._chunk_copies.append((gap, noise))
            beyond[member] = beyond_noise(gap, noise, self.pbt)
        return state._replace(
            learner=learner,
            last_mean=np.where(ready[:, None], means, state.last_mean),
            window_sum=np.where(keep, state.window_sum, 0.0),
            window_sq=np.where(keep, state.window_sq, 0.0),
            window_count=np.where(keep, state.window_count, 0),
            # A copying member takes over its source's standing until its own next window is scored.
            fitness=np.where(step.copied, fitness[step.source], fitness),
            fitness_se=np.where(step.copied, fitness_se[step.source], fitness_se),
            copies_beyond_noise=state.copies_beyond_noise + beyond,
            pbt_round=np.asarray(int(state.pbt_round) + 1),
            copies=state.copies + step.copied,
            parent=np.where(step.copied, step.source, state.parent),
            perturbations=state.perturbations + sum((f != 1.0).astype(np.int64) for f in step.factors.values()),
        )

    def best_member(self, state: MultiTaskState) -> int:
        """The member with the highest fitness (member 0 before any is scored)."""
        fitness = np.asarray(state.fitness, np.float64)
        return int(np.nanargmax(fitness)) if np.isfinite(fitness).any() else 0

    def _metrics(
        self, state: MultiTaskState, version: int, started: float, returns: list[list[float]], lags: list[int],
        learner_metrics: list[Any],
    ) -> MultiTaskMetrics:  # fmt: skip
        jax.block_until_ready((state.learner.params, learner_metrics))
        elapsed = time.monotonic() - started
        games = len(self.env_specs)
        best = self.best_member(state)
        final = version >= self.config.total_updates
        scores: list[list[float]] = [[] for _ in range(games)]
        if final:
            params = self._member_params(state.learner, best)
            scores = [self._actors[best][g].evaluate_scores(params, version) for g in range(games)]
            self.stop()
        mean = lambda name: float(np.mean([np.mean(getattr(m, name)) for m in learner_metrics]))  # noqa: E731
        hyper = {k: float(np.asarray(v)[best]) for k, v in hyper_dict(state.learner).items()}
        fitness = np.asarray(state.fitness, np.float64)
        shared = dict(
            frames=version * self.frames_per_update,
            fps=len(learner_metrics) * self.population * self.frames_per_update / elapsed,
            policy_lag=float(np.mean(lags)),
            total_loss=mean("total_loss"), pg_loss=mean("pg_loss"), baseline_loss=mean("baseline_loss"),
            entropy=mean("entropy"), grad_norm=mean("grad_norm"), learning_rate=mean("learning_rate"),
            best_member=best,
            best_fitness=float(np.nanmax(fitness)) if np.isfinite(fitness).any() else math.nan,
            mean_fitness=float(np.nanmean(fitness)) if np.isfinite(fitness).any() else math.nan,
            pbt_steps=int(state.pbt_round), pbt_copies=int(np.sum(state.copies)),
            pbt_perturbations=int(np.sum(state.perturbations)), pbt_hyper_moved=self._moved(state),
            pbt_copies_beyond_noise=int(np.sum(state.copies_beyond_noise)),
            best_learning_rate=hyper["learning_rate"], best_entropy_cost=hyper["entropy_cost"],
            best_rmsprop_epsilon=hyper["rmsprop_epsilon"], best_max_grad_norm=hyper["max_grad_norm"],
        )  # fmt: skip
        shared.update(member_curves(state.learner))
        rows = {name: np.full(games, value, np.float64) for name, value in shared.items()}
        rows["episodes"] = np.array([len(r) for r in returns], np.float64)
        rows["mean_return"] = np.array([np.mean(r) if r else math.nan for r in returns])
        rows["eval_return"] = np.array([np.mean(s) if s else math.nan for s in scores], np.float64)
        rows["eval_scores"] = np.array(scores, np.float64)  # [games, episodes] at the last chunk, [games, 0] before
        copies = self._chunk_copies
        rows["pbt_copy_gaps"] = np.array([[gap for gap, _ in copies]] * games, np.float64).reshape(games, len(copies))
        rows["pbt_copy_spreads"] = np.array([[sd for _, sd in copies]] * games, np.float64).reshape(games, len(copies))
        return self.metrics_type(**{name: rows[name] for name in self.metrics_type._fields})

    def _moved(self, state: MultiTaskState) -> int:
        """How many (member, adapted hyper-parameter) pairs differ from the member's initial draw (copied or
        perturbed away from it; App. F's exploit and explore)."""
        current = hyper_dict(state.learner)
        adapted = set(self.pbt.adapted) if self.pbt is not None else set()
        return int(sum(
            np.sum(~np.isclose(np.asarray(current[name], np.float64), state.initial_hyper[h], rtol=1e-6))
            for h, name in enumerate(current) if name in adapted
        ))  # fmt: skip


def member_curves(learner: LearnerState) -> dict[str, float]:
    """Every member's hyper-parameters as ``member<m>_<name>`` metrics: PBT's schedules as curves (Fig. F.1)."""
    return {f"member{m}_{name}": float(value) for name, values in hyper_dict(learner).items()
            for m, value in enumerate(np.asarray(values))}  # fmt: skip


def multitask_metrics_type(population: int, hyper_names: tuple[str, ...]) -> type:
    """``MultiTaskMetrics`` with one field per member and hyper-parameter (``member_curves``' names)."""
    members = tuple(f"member{m}_{name}" for name in hyper_names for m in range(population))
    return NamedTuple("MultiTaskMetrics", [(f, np.ndarray) for f in (*MultiTaskMetrics._fields, *members)])
