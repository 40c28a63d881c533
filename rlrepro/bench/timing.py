"""One way to time a jitted call for every benchmark: a first (compiling) call, then ``repeats`` timed calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Timing(NamedTuple):
    seconds_per_call: float  # mean over the timed calls, results blocked on
    first_call_seconds: float  # the first call: compilation included


def time_calls(step: Callable[[Any], Any], state: Any = None, repeats: int = 5) -> Timing:
    """Time ``state = step(state)``; stateless callables take and ignore the state (``lambda _: fn()``)."""
    started = time.perf_counter()
    state = jax.block_until_ready(step(state))
    first = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(repeats):
        state = jax.block_until_ready(step(state))
    return Timing((time.perf_counter() - started) / repeats, first)
