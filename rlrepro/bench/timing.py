"""One way to time a jitted call for every benchmark: a first (compiling) call, then ``repeats`` timed calls.

``compare_calls`` times several calls side by side in interleaved rounds and keeps each one's median round,
so that a change in the machine's load during the measurement hits all of them alike (their ratio is what
a benchmark reports)."""

from __future__ import annotations

import statistics
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


def compare_calls(steps: dict[str, tuple[Callable[[Any], Any], Any]], repeats: int = 200, rounds: int = 7) -> dict[str, Timing]:
    """``{name: (step, state)}`` timed in ``rounds`` interleaved rounds of ``repeats`` calls each (after one
    compiling call per name); per name, the median round's seconds per call and the first call's time."""
    states, first, per_round = {}, {}, {name: [] for name in steps}
    for name, (step, state) in steps.items():
        started = time.perf_counter()
        states[name] = jax.block_until_ready(step(state))
        first[name] = time.perf_counter() - started
    for _ in range(rounds):
        for name, (step, _) in steps.items():
            state, started = states[name], time.perf_counter()
            for _ in range(repeats):
                state = step(state)
            states[name] = jax.block_until_ready(state)
            per_round[name].append((time.perf_counter() - started) / repeats)
    return {name: Timing(statistics.median(per_round[name]), first[name]) for name in steps}
