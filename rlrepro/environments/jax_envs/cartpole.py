"""CartPole (Barto, Sutton & Anderson 1983) with the exact dynamics of gymnasium's CartPole-v1, in pure JAX."""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.environments.base import TimeStep

# Physical constants of gymnasium's CartPoleEnv.
GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_POLE_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_POLE_LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds per step
X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360  # 12 degrees in radians
INIT_BOUND = 0.05
NUM_ACTIONS = 2  # 0: push left, 1: push right


class CartPoleState(NamedTuple):
    """Cart position/velocity, pole angle/angular velocity (float32 scalars) and steps taken in the episode."""

    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array
    step_count: jax.Array


@dataclasses.dataclass(frozen=True)
class CartPole:
    """CartPole-v1: reward 1 per step (the terminal step included), time limit ``max_steps``.

    Terminates when |x| > 2.4 or |theta| > 12 degrees; truncates when ``max_steps`` steps have been
    taken without termination (when both happen at once only ``terminated`` is set, since the
    state is truly terminal). Initial state uniform in [-0.05, 0.05]^4; euler integration.
    Observation: float32 (x, x_dot, theta, theta_dot). ``step`` auto-resets in the same call.
    """

    max_steps: int = 500

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"CartPole needs max_steps >= 1, got max_steps={self.max_steps}")

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (4,)

    def reset(self, key: jax.Array) -> tuple[CartPoleState, TimeStep]:
        """Start an episode from a state uniform in [-0.05, 0.05]^4."""
        state = _initial_state(key)
        timestep = TimeStep(
            observation=_observe(state),
            reward=jnp.zeros((), jnp.float32),
            terminated=jnp.zeros((), jnp.bool_),
            truncated=jnp.zeros((), jnp.bool_),
        )
        return state, timestep

    def step(self, key: jax.Array, state: CartPoleState, action: ArrayLike) -> tuple[CartPoleState, TimeStep]:
        """Integrate one euler step; on termination or truncation return the new episode's observation."""
        state, timestep, _ = self.step_observed(key, state, action)
        return state, timestep

    def step_observed(self, key: jax.Array, state: CartPoleState, action: ArrayLike) -> tuple[CartPoleState, TimeStep, jax.Array]:
        """``step``, and the observation the step reached before any automatic reset (a replay's next state: at a
        time limit the agent bootstraps from it, as gymnasium's ``step`` returns it before ``reset``)."""
        next_state = _integrate(state, action)
        terminated = (jnp.abs(next_state.x) > X_THRESHOLD) | (jnp.abs(next_state.theta) > THETA_THRESHOLD)
        truncated = (next_state.step_count >= self.max_steps) & ~terminated
        fresh_state = _initial_state(key)
        state = jax.tree.map(
            lambda fresh, old: jnp.where(terminated | truncated, fresh, old), fresh_state, next_state
        )
        timestep = TimeStep(
            observation=_observe(state),
            reward=jnp.ones((), jnp.float32),
            terminated=terminated,
            truncated=truncated,
        )
        return state, timestep, _observe(next_state)


def _integrate(state: CartPoleState, action: ArrayLike) -> CartPoleState:
    # Frictionless cart-pole equations of motion in gymnasium's exact operation order, then euler.
    force = jnp.where(jnp.asarray(action) == 1, FORCE_MAG, -FORCE_MAG)
    cos_theta = jnp.cos(state.theta)
    sin_theta = jnp.sin(state.theta)
    temp = (force + POLE_MASS_LENGTH * state.theta_dot**2 * sin_theta) / TOTAL_MASS
    theta_acc = (GRAVITY * sin_theta - cos_theta * temp) / (
        HALF_POLE_LENGTH * (4.0 / 3.0 - MASS_POLE * cos_theta**2 / TOTAL_MASS)
    )
    x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos_theta / TOTAL_MASS
    return CartPoleState(
        x=state.x + TAU * state.x_dot,
        x_dot=state.x_dot + TAU * x_acc,
        theta=state.theta + TAU * state.theta_dot,
        theta_dot=state.theta_dot + TAU * theta_acc,
        step_count=state.step_count + 1,
    )


def _initial_state(key: jax.Array) -> CartPoleState:
    x, x_dot, theta, theta_dot = jax.random.uniform(key, (4,), jnp.float32, -INIT_BOUND, INIT_BOUND)
    return CartPoleState(x, x_dot, theta, theta_dot, jnp.zeros((), jnp.int32))


def _observe(state: CartPoleState) -> jax.Array:
    return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)
