"""Environments: pure-JAX toy tasks (jit/vmap-able) and host environments (Atari, MuJoCo, ...)."""
