import jax.numpy as jnp

from rlrepro.bench.timing import time_calls


def test_time_calls_threads_the_state_through_first_and_timed_calls():
    calls = []

    def step(state):
        calls.append(state)
        return state + 1

    timing = time_calls(step, jnp.asarray(0), repeats=3)
    assert [int(c) for c in calls] == [0, 1, 2, 3]  # one first (compiling) call, then the timed ones
    assert timing.seconds_per_call > 0 and timing.first_call_seconds > 0


def test_time_calls_on_a_stateless_callable():
    calls = []
    timing = time_calls(lambda _: calls.append(1) or jnp.ones(2), repeats=4)
    assert len(calls) == 5 and timing.seconds_per_call >= 0
