"""rlrepro.environments.atari on real ALE games: the protocol, life loss, episode ends and autoreset."""

from __future__ import annotations

import numpy as np
import pytest

from rlrepro.environments.atari import AtariEnv
from rlrepro.specs.environments import AtariEnvSpec

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")


def spec(game: str = "breakout", **changes) -> AtariEnvSpec:
    return AtariEnvSpec(kind="atari", id=game, game=game, **changes)


def play(env: AtariEnv, steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [env.step(rng.integers(0, env.num_actions, env.num_envs)) for _ in range(steps)]


def test_observations_and_action_sets_follow_the_spec():
    env = AtariEnv(spec("pong"), num_envs=2, seed=0, num_threads=1)
    obs = env.reset()
    assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
    assert env.num_actions == 6  # Pong's minimal action set
    env.close()
    full = AtariEnv(spec("pong", action_set="full", resolution=64, frame_stack=2), num_envs=1, seed=0, num_threads=1)
    assert full.num_actions == 18 and full.reset().shape == (1, 2, 64, 64)
    full.close()


def test_a_lost_life_ends_the_learning_episode_but_not_the_game():
    env = AtariEnv(spec("breakout"), num_envs=2, seed=1, num_threads=1)
    env.reset()
    steps = play(env, 1500)
    done = np.array([s.done for s in steps])
    game_over = np.array([s.game_over for s in steps])
    life_losses = done & ~game_over
    assert life_losses.sum() >= 4  # a random Breakout player loses lives long before the game ends
    # The score of a game is its raw points from reset to game over, over all five lives.
    rewards = np.array([s.reward for s in steps])
    for column in range(2):
        ends = np.flatnonzero(game_over[:, column])
        if ends.size:
            first = ends[0]
            assert steps[first].episode_return[column] == pytest.approx(rewards[: first + 1, column].sum())
            assert life_losses[:first, column].sum() == 4  # five lives: four losses, then the game over
    env.close()


def test_evaluation_plays_whole_games_without_life_loss_ends():
    env = AtariEnv(spec("breakout"), num_envs=2, seed=1, num_threads=1, training=False)
    env.reset()
    steps = play(env, 1500)
    assert all((s.done == s.game_over).all() for s in steps)
    env.close()


def test_the_frame_cap_truncates_and_resets_in_the_same_step():
    cap = 400  # frames: 100 agent steps with action repeat 4
    env = AtariEnv(spec("pong", max_episode_frames=cap), num_envs=1, seed=0, num_threads=1)
    first = env.reset()
    steps = play(env, 120)
    ends = [i for i, s in enumerate(steps) if s.game_over[0]]
    assert ends, "the cap must end the game"
    end = steps[ends[0]]
    assert end.truncated[0] and end.done[0]
    # Same-step autoreset: the observation returned with the end is the next game's first one, which
    # (after the no-op start) looks like a fresh game, not the continuation of the truncated one.
    before = steps[ends[0] - 1].observation[0]
    assert not np.array_equal(end.observation[0], before)
    assert end.observation.shape == first.shape
    env.close()


def test_no_dummy_transition_follows_an_end():
    """Games capped at 50 agent steps end at steps 50, 100, 150, 200: no extra reset step between them.

    With gymnasium's next-step autoreset each game would take 51 steps (one dummy transition whose
    action is ignored), so the ends would drift to 50, 101, 152, ...
    """
    env = AtariEnv(spec("pong", max_episode_frames=200, noop_max=0), num_envs=2, seed=3, num_threads=1)
    env.reset()
    steps = play(env, 200)
    for column in range(2):
        ends = [i + 1 for i, s in enumerate(steps) if s.done[column]]
        assert ends == [50, 100, 150, 200]
    env.close()


@pytest.mark.parametrize("frames", [3, 4])
def test_max_pooling_more_than_two_frames_is_rejected_by_the_spec(tmp_path, frames):
    """ale-py max-pools the last 2 frames or none: 3 and 4 are errors naming the field, never silently 2."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=f"max_pool_frames {frames} is not implemented"):
        spec(max_pool_frames=frames)
    assert spec(max_pool_frames=1).max_pool_frames == 1 and spec().max_pool_frames == 2


def test_max_pool_frames_3_in_a_spec_file_names_the_file_and_the_field(tmp_path):
    from rlrepro.specs import load_spec
    from rlrepro.specs.loading import SpecError

    text = open("specs/impala/atari57_shallow.yaml").read()
    assert "kind: atari" in text
    path = tmp_path / "atari57_shallow.yaml"
    path.write_text(text.replace("kind: atari,", "kind: atari, max_pool_frames: 3,", 1))
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(path) in str(error.value) and "max_pool_frames" in str(error.value) and "not implemented" in str(error.value)
