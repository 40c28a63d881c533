"""Atari's trivial policies: action 0 is NOOP in both action sets (why one NOOP row serves both), and the
measurement plays whole evaluation games through the project's AtariEnv."""

from __future__ import annotations

import pytest

from rlrepro import data
from rlrepro.results.trivial import protocol_key
from rlrepro.specs.environments import AtariEnvSpec

ale_py = pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")


def _games() -> list[str]:
    return [row["game"] for row in data.read_csv("atari57_human_random.csv")]


def test_action_zero_is_noop_in_the_minimal_and_full_set_of_all_57_games():
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    for game in _games():
        ale = ale_py.ALEInterface()
        ale.loadROM(ale_py.roms.get_rom_path(game))
        assert ale.getMinimalActionSet()[0] == ale_py.Action.NOOP, game
        assert ale.getLegalActionSet()[0] == ale_py.Action.NOOP, game


def test_noop_rows_are_shared_by_the_action_sets_and_random_rows_are_not():
    minimal = AtariEnvSpec(kind="atari", id="tennis", game="tennis")
    full = AtariEnvSpec(kind="atari", id="tennis", game="tennis", action_set="full")
    assert protocol_key(minimal, "noop") == protocol_key(full, "noop")
    assert protocol_key(minimal, "uniform_random") != protocol_key(full, "uniform_random")
    assert protocol_key(minimal) != protocol_key(full)


def test_measurement_plays_whole_games_to_the_frame_cap():
    """Pong with a 400-frame cap: 100 agent steps of 4 frames, whatever the no-op start (it counts in the cap)."""
    from rlrepro.environments.trivial import measure

    spec = AtariEnvSpec(kind="atari", id="pong", game="pong", max_episode_frames=400)
    score, extra = measure(spec, "noop", episodes=2, command="c", commit="x", date="d")
    assert float(extra["mean_steps"]) == 100.0 and score.episodes == 2
    assert score.mean <= 0.0 and score.mean == int(score.mean)  # Pong's points are whole; NOOP cannot win one
