"""V-RACER's network (App. A): one Softsign MLP s -> (V(s), m(s)) and a state-independent diagonal std."""

from __future__ import annotations

import flax.linen as nn
import jax

from rlrepro.networks.softsign import output_init, softplus_inverse, softsign_torso


class VRacerNetwork(nn.Module):
    """Returns (V [..], mean [.., A], std [A]); hidden layers Glorot-uniform (the code; the printed formula is a typo)."""

    hidden_sizes: tuple[int, ...]
    action_dim: int
    init_std: float

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        x = softsign_torso(obs, self.hidden_sizes)  # first: Flax names layers in the order they are built
        out = nn.Dense(1 + self.action_dim, kernel_init=output_init())(x)
        # Sigma is shared by all states: a parameter vector mapped to R+ by Softplus (App. A).
        raw_std = self.param("raw_std", nn.initializers.constant(softplus_inverse(self.init_std)), (self.action_dim,))
        return out[..., 0], out[..., 1:], jax.nn.softplus(raw_std)
