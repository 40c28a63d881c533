"""Optimiser set-ups, each written once: RMSProp with either epsilon placement and initial accumulator (TF1's
semantics, as IMPALA, IMPALA+SR and FRODO use it), the learning-rate schedules, and global-norm clipping in front.

No JAX at import: ``OptimizerConfig`` is read by planning (FRODO's and TD(lambda)'s chunk plans); optax is
imported where an optimiser is made.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import optax


def learning_rate_schedule(learning_rate: Any, kind: str, total_steps: int) -> optax.Schedule:
    """``kind`` "constant", or "linear_to_zero": linear from ``learning_rate`` to 0 at ``total_steps``."""
    import optax

    if kind == "constant":
        return optax.constant_schedule(learning_rate)
    return optax.linear_schedule(learning_rate, 0.0, total_steps)


def rmsprop(learning_rate: Any, *, decay: float, epsilon: Any, initial_scale: float, eps_in_sqrt: bool,
            momentum: float) -> optax.GradientTransformation:
    """optax's RMSProp; TF1 semantics with ``eps_in_sqrt`` True and ``initial_scale`` 1 (notes of IMPALA §1.5);
    ``momentum`` 0: none. ``learning_rate`` and ``epsilon`` may be traced arrays (PBT members)."""
    import optax

    return optax.rmsprop(learning_rate, decay=decay, eps=epsilon, initial_scale=initial_scale,
                         eps_in_sqrt=eps_in_sqrt, momentum=momentum or None)


def clipped(optimizer: optax.GradientTransformation, max_grad_norm: float | None) -> optax.GradientTransformation:
    """``optimizer`` after a global-norm clip of the gradients at ``max_grad_norm`` (None: no clip)."""
    import optax

    if max_grad_norm is None:
        return optimizer
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optimizer)


def learning_or_frozen(optimizer: optax.GradientTransformation, learning: bool) -> optax.GradientTransformation:
    """``optimizer``, or for the control arm (``learning`` false: ``rlrepro.specs.control``) the same transformation
    made to emit zero updates and keep its state: the parameters stay at their initialisation exactly (p + 0 = p),
    the state keeps its type (a PBT member's injected hyper-parameters are still read and written), and nothing
    uses the gradients, so XLA drops the backward pass."""
    import jax
    import jax.numpy as jnp
    import optax

    if learning:
        return optimizer

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        del params
        return jax.tree.map(jnp.zeros_like, updates), state

    return optax.GradientTransformation(optimizer.init, update)


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """RMSProp (optax, eps inside the square root: finite second derivatives) after an optional global-norm clip.

    Attributes:
      learning_rate: step size.
      decay: second-moment decay.
      epsilon: added to the second moment inside the square root.
      initial_scale: initial second-moment accumulator (TF1: 1, optax default: 0).
      eps_in_sqrt: epsilon inside the square root (required when differentiated through, as FRODO does: the
        spec rejects false there; TD(lambda) may use either).
      momentum: momentum (0: none).
      max_grad_norm: global gradient-norm clip (Table 1: 1e4 for both optimisers); None: no clip.
      lr_schedule: "constant", or "linear_to_zero" over ``total_steps``.
      total_steps: optimiser steps of the whole run (sets the schedule only).
      learning: false for the control arm: zero updates (``learning_or_frozen``).
    """

    learning_rate: float
    decay: float = 0.9
    epsilon: float = 1e-8
    initial_scale: float = 0.0
    eps_in_sqrt: bool = True
    momentum: float = 0.0
    max_grad_norm: float | None = None
    lr_schedule: Literal["constant", "linear_to_zero"] = "constant"
    total_steps: int = 1
    learning: bool = True

    @classmethod
    def from_spec(cls, spec: Any, total_steps: int, *, learning: bool) -> "OptimizerConfig":
        """From an ``RMSPropSpec`` (every field of the same name), the run's optimiser steps and the agent's
        ``learning`` (false: the control arm's optimiser, ``learning_or_frozen``)."""
        return cls(**spec.model_dump(exclude={"kind"}), total_steps=total_steps, learning=learning)

    def make(self) -> optax.GradientTransformation:
        """The optax transformation (differentiable: FRODO backpropagates through its state)."""
        schedule = learning_rate_schedule(self.learning_rate, self.lr_schedule, max(1, self.total_steps))
        optimizer = rmsprop(schedule, decay=self.decay, epsilon=self.epsilon, initial_scale=self.initial_scale,
                            eps_in_sqrt=self.eps_in_sqrt, momentum=self.momentum)
        return learning_or_frozen(clipped(optimizer, self.max_grad_norm), self.learning)
