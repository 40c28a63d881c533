"""NAF's network (eq. 4, App. A): one Softsign MLP s -> V(s), m(s) and the lower-triangular L(s) (softplus diagonal)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.softsign import output_init, softsign_torso


class NAFNetwork(nn.Module):
    """Returns (V [..], m [.., A], L [.., A, A])."""

    hidden_sizes: tuple[int, ...]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        a = self.action_dim
        n_l = a * (a + 1) // 2
        out = nn.Dense(1 + a + n_l, kernel_init=output_init())(softsign_torso(obs, self.hidden_sizes))
        v, m, entries = out[..., 0], out[..., 1 : 1 + a], out[..., 1 + a :]
        rows, cols = jnp.tril_indices(a)
        l = jnp.zeros((*out.shape[:-1], a, a)).at[..., rows, cols].set(entries)
        diag = jnp.arange(a)
        l = l.at[..., diag, diag].set(jax.nn.softplus(l[..., diag, diag]))
        return v, m, l


def naf_q(v: jax.Array, m: jax.Array, l: jax.Array, a: jax.Array) -> jax.Array:
    """Eq. 4: Q(s, a) = V(s) - [a - m]^T L L^T [a - m]."""
    z = jnp.einsum("...ji,...j->...i", l, a - m)  # L^T (a - m)
    return v - jnp.sum(z**2, axis=-1)
