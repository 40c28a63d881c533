"""gymnasium MuJoCo v5 tasks through the host environment layer; R_random measured and cached; flow control fails."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from pydantic import ValidationError

from rlrepro.environments.availability import FLOW_CONTROL_MESSAGE, missing_backend, require_backend
from rlrepro.environments.errors import BackendMissingError
from rlrepro.environments.mujoco import MujocoHostEnv, random_score
from rlrepro.specs.environments import FlowControlEnvSpec, MujocoEnvSpec


def _spec(**kw) -> MujocoEnvSpec:
    base = dict(kind="mujoco", id="pendulum", name="InvertedPendulum-v5", paper_name="InvertedPendulum-v2",
                changes_from_paper="healthy reward no longer paid on the terminal step", comparable_to_paper=False)
    return MujocoEnvSpec(**{**base, **kw})


def test_spec_records_version_and_rejects_unversioned_names():
    assert _spec().version == "v5"
    with pytest.raises(ValidationError):
        _spec(name="InvertedPendulum")
    with pytest.raises(ValidationError):
        _spec(name="InvertedPendulum-v2")  # gym v2 needs mujoco-py (notes §7.1): not built on


def test_continuous_steps_clip_actions_and_resume_from_pickle():
    env = MujocoHostEnv(_spec(), seed=3)
    obs = env.reset()
    assert obs.shape == (4,) and obs.dtype == np.float32 and env.action_dim == 1 and env.num_actions is None
    np.testing.assert_allclose([env.action_low[0], env.action_high[0]], [-3.0, 3.0])
    for a in (0.1, -9.0, 0.5):
        env.step(np.array([a]))
    assert env.actions[1][0] == pytest.approx(-3.0)  # clipped to the box
    copy = pickle.loads(pickle.dumps(env))
    out_a = env.step(np.array([0.2]))
    out_b = copy.step(np.array([0.2]))
    np.testing.assert_array_equal(out_a[0], out_b[0])
    assert out_a[1:] == out_b[1:]


def test_random_score_is_measured_once_and_cached_with_provenance(tmp_path):
    first = random_score(_spec(), tmp_path, episodes=20, seed=0)
    # A random policy drops the pole within a few steps: the return (one per step alive) is small.
    assert 1.0 <= first["random_score"] <= 30.0
    assert first["source"] == "measured" and first["episodes"] == 20 and first["versions"]["mujoco"]
    (cached,) = tmp_path.glob("*.json")
    record = json.loads(cached.read_text())
    record["random_score"] = -1.0  # the cache, not a new measurement, is read next time
    cached.write_text(json.dumps(record))
    assert random_score(_spec(), tmp_path, episodes=20, seed=0)["random_score"] == -1.0
    assert random_score(_spec(random_score=5.0), tmp_path)["source"] == "spec"


def test_flow_control_fails_at_once_with_a_clear_message():
    spec = FlowControlEnvSpec(kind="flow_control", id="swimmer_wake", solver="cubismup_2d", parallel_simulations=12)
    assert missing_backend(spec) == (f"{FLOW_CONTROL_MESSAGE} The spec asks for the cubismup_2d solver at Re 400, "
                                     "at most 400 actions per episode, 12 simulations per learner.")
    with pytest.raises(BackendMissingError, match="CUDA Navier-Stokes solver"):
        require_backend(spec)
    assert missing_backend(_spec()) is None


def test_the_flow_control_spec_validates_and_its_run_fails_at_once(tmp_path, capsys):
    from pathlib import Path

    from rlrepro.cli import main
    from rlrepro.specs import load_spec

    path = Path(__file__).resolve().parents[2] / "specs" / "refer" / "flow_control.yaml"
    assert load_spec(path).environments[0].kind == "flow_control"
    code = main(["train", "--spec", str(path), "--scale", "smoke", "--variant", "refer", "--env", "swimmer_cylinder_wake",
                 "--results", str(tmp_path), "--no-mlflow"])
    assert code != 0
    assert "CUDA Navier-Stokes solver" in capsys.readouterr().err
    assert not list(tmp_path.rglob("metrics.jsonl"))  # nothing trained


def test_zero_action_and_random_episodes_share_one_loop():
    """InvertedPendulum-v5 pays 1 per step except the terminal one: every return is its episode's length - 1."""
    from rlrepro.environments.mujoco import episode_returns, random_episode_returns

    for policy in ("zero_action", "uniform_random"):
        returns, mean_steps = episode_returns(_spec(), 3, 0, policy)
        assert sum(returns) == pytest.approx(3 * (mean_steps - 1.0))
    assert random_episode_returns(_spec(), 3, 0) == episode_returns(_spec(), 3, 0, "uniform_random")[0]
    with pytest.raises(ValueError, match="zero_action"):
        episode_returns(_spec(), 1, 0, "noop")
