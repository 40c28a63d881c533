"""Functional equivalence (§3.3): hash a program's outputs on fixed random inputs; probe whether it is TD-like.

Released-code setting (notes §1.3): a batch of 10 transitions, floats and states U(-100, 100) (states of
size 4), actions in {0, 1, 2}, and random 2-layer MLPs of width 4 as the Q-network and its target. The key
is the outputs rounded to 5 significant digits (NaN and inf map to fixed tokens), so algebraically equal
programs collide while float rounding does not split them.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.dqn.networks import QNetwork
from rlrepro.search.interpreter import make_interpreter, transition_inputs
from rlrepro.search.program import Program, encode

_OBS, _ACTIONS, _BATCH = 4, 3, 10


class _Probe:
    """Fixed random inputs and networks; compiled interpreters per (slots, network calls)."""

    def __init__(
        self, constants: tuple[float, ...], low: float, high: float, batch: int, seed: int,
        target_scale: float = 1.0, terminal_fraction: float = 0.5,
    ):
        rng = np.random.default_rng(seed)
        net = QNetwork(num_actions=_ACTIONS, hidden_sizes=(4, 4))
        self.apply = net.apply
        self.params = net.init(jax.random.key(seed), jnp.zeros((1, _OBS)))
        self.target = _scale_output(net.init(jax.random.key(seed + 1), jnp.zeros((1, _OBS))), target_scale)
        f = lambda *shape: jnp.asarray(rng.uniform(low, high, shape), jnp.float32)  # noqa: E731
        discount = jnp.asarray(np.where(rng.random(batch) < terminal_fraction, 0.0, 0.99), jnp.float32)
        self.batch = _Batch(f(batch, _OBS), jnp.asarray(rng.integers(0, _ACTIONS, batch), jnp.int32), f(batch), discount, f(batch, _OBS))
        self.inputs = transition_inputs(self.batch, constants, _OBS, _ACTIONS)
        self._compiled: dict[Any, Any] = {}

    def _fn(self, calls: tuple[bool, ...], grad: bool):
        key = (calls, grad)
        if key not in self._compiled:
            run = make_interpreter(self.apply, _OBS, _ACTIONS, calls)
            if grad:
                def f(program, dq):
                    return jax.grad(lambda d: jnp.sum(run(self.params, self.target, self.inputs, program, jax.random.key(0), d)))(dq)
            else:
                def f(program, dq):
                    return run(self.params, self.target, self.inputs, program, jax.random.key(0), dq)
            self._compiled[key] = jax.jit(f)
        return self._compiled[key]

    def outputs(self, program: Program) -> np.ndarray:
        arrays, calls = encode(program)
        return np.asarray(self._fn(calls, False)(arrays, jnp.zeros((self.batch.r_t.shape[0], _ACTIONS))))

    def grad_q(self, program: Program) -> np.ndarray:
        """d loss / d Q(s_tm1, a_tm1) per transition."""
        arrays, calls = encode(program)
        n = self.batch.r_t.shape[0]
        g = np.asarray(self._fn(calls, True)(arrays, jnp.zeros((n, _ACTIONS))))
        return g[np.arange(n), np.asarray(self.batch.a_tm1)]

    def deltas(self) -> list[np.ndarray]:
        """TD errors Q - (r + g B) on the probe inputs: B = max_a Q'(s', a) (DQN) or Q'(s', argmax_a Q(s', a))
        (double DQN), g = gamma_t or 1 (undiscounted)."""
        b = self.batch
        n = len(b.a_tm1)
        q = np.asarray(self.apply(self.params, b.obs_tm1))[np.arange(n), np.asarray(b.a_tm1)]
        target_next = np.asarray(self.apply(self.target, b.obs_t))
        online_next = np.asarray(self.apply(self.params, b.obs_t))
        bootstraps = (target_next.max(-1), target_next[np.arange(n), online_next.argmax(-1)])
        r, gamma = np.asarray(b.r_t), np.asarray(b.discount_t)
        return [q - (r + g * m) for m in bootstraps for g in (gamma, 1.0)]

    def non_bootstrapped(self) -> list[np.ndarray]:
        """Regression targets without a bootstrap: Q - r (reward regression) and Q (a constant target)."""
        b = self.batch
        q = np.asarray(self.apply(self.params, b.obs_tm1))[np.arange(len(b.a_tm1)), np.asarray(b.a_tm1)]
        return [q - np.asarray(b.r_t), q]


def _scale_output(params: Any, scale: float) -> Any:
    """The Q-network's parameters with its output layer (the last Dense) times ``scale``: outputs times scale."""
    if scale == 1.0:
        return params
    layers = params["params"]
    last = max(layers, key=lambda name: int(name.rsplit("_", 1)[-1]))
    scaled = {**layers, last: jax.tree.map(lambda x: x * scale, layers[last])}
    return {**params, "params": scaled}


class _Batch:
    def __init__(self, obs_tm1, a_tm1, r_t, discount_t, obs_t):
        self.obs_tm1, self.a_tm1, self.r_t, self.discount_t, self.obs_t = obs_tm1, a_tm1, r_t, discount_t, obs_t


@functools.lru_cache(maxsize=4)
def _hash_probe(constants: tuple[float, ...]) -> _Probe:
    return _Probe(constants, -100.0, 100.0, _BATCH, seed=12345)


@functools.lru_cache(maxsize=4)
def _td_probe(constants: tuple[float, ...]) -> _Probe:
    """Inputs in [-1, 1]; the target network's outputs scaled by 10 and 1 transition in 8 terminal, so the bootstrap
    term gamma M dominates the TD error: a regression onto r (or onto a constant) no longer resembles TD there."""
    return _Probe(constants, -1.0, 1.0, 256, seed=777, target_scale=TD_PROBE_TARGET_SCALE, terminal_fraction=0.125)


TD_PROBE_TARGET_SCALE = 10.0
TD_LIKE = 0.9  # td_likeness at or above this counts as TD-like


def _token(x: float) -> str:
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return f"{x:.5g}"


def functional_hash(program: Program) -> str:
    """A key shared by programs that compute the same loss on the fixed random inputs."""
    out = _hash_probe(program.constants).outputs(program)
    return hashlib.sha1(",".join(_token(float(v)) for v in out).encode()).hexdigest()[:16]


def td_likeness(program: Program) -> float:
    """How closely d loss / d Q(s, a) follows a bootstrapped TD error, in [-1, 1] (>= ``TD_LIKE``: TD-like).

    The correlation of the gradient with the TD error Q - (r + g B), best over the DQN and double-DQN bootstraps
    B and g = gamma_t or 1, on a probe where the bootstrap term dominates the TD error (``_td_probe``); minus
    how much better the gradient follows a non-bootstrapped regression target (Q - r, or Q alone) when it does:
    (Q - Y)^2, double DQN, 0.5 (Q - Y)^2 + 0.1 Q and DQNClipped score about 1; (Q - r)^2 and (Q - 1)^2 score low
    (Evolving RL §4.2-4.3: TD is "Q regressed onto r + gamma max Q_targ").
    """
    probe = _td_probe(program.constants)
    g = probe.grad_q(program)
    if not np.all(np.isfinite(g)) or np.std(g) < 1e-12:
        return 0.0
    td = max(_correlation(g, d) for d in probe.deltas())
    other = max(_correlation(g, d) for d in probe.non_bootstrapped())
    return float(td - max(0.0, other - td))


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    return 0.0 if np.std(y) < 1e-12 else float(np.corrcoef(x, y)[0, 1])
