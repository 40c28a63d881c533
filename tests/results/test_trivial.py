"""Trivial-policy scores: the protocol key, the loader's errors, a real measurement on Catch, and the shipped CSV."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from rlrepro.results import trivial
from rlrepro.results.trivial import (
    TrivialScore,
    TrivialScoresError,
    TrivialScoresMissing,
    TrivialScoresUnavailable,
    protocol_key,
    score_row,
    trivial_level,
    trivial_scores,
    write_rows,
)
from rlrepro.specs.environments import AtariEnvSpec, DmlabEnvSpec, GymEnvSpec, GymSuiteSpec, JaxEnvSpec

REPO = Path(__file__).resolve().parents[2]


def _catch(**kwargs) -> JaxEnvSpec:
    return JaxEnvSpec(kind="jax", id="catch", name="catch", kwargs={"rows": 6, "columns": 11, **kwargs})


def _atari(**fields) -> AtariEnvSpec:
    return AtariEnvSpec(**{"kind": "atari", "id": "pong", "game": "pong", **fields})


def _score(policy: str, mean: float) -> TrivialScore:
    return TrivialScore(policy=policy, mean=mean, sd=0.5, episodes=10, low=mean - 0.3, high=mean + 0.3,
                        protocol="p", command="rlrepro trivial-scores --env catch", commit="abc", date="2026-11-26")


def _store(path: Path, env, *scores: TrivialScore) -> None:
    write_rows([score_row(env, s) for s in scores], path)


# --- protocol key ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"max_episode_frames": 27_000},
        {"sticky_action_prob": 0.25},
        {"action_set": "full"},
        {"evaluation": {"noop_max": 0}},
        {"action_repeat": 3},
        {"fire_reset": True},
        {"game": "breakout"},
    ],
)
def test_atari_protocol_key_changes_with_what_a_trivial_policy_scores_under(change):
    assert protocol_key(_atari(**change)) != protocol_key(_atari())


@pytest.mark.parametrize(
    "change",
    [
        {"resolution": 42},
        {"frame_stack": 1},
        {"grayscale": False},
        {"num_envs": 4},
        {"life_loss_terminal": False},  # training only: evaluation plays whole games
        {"evaluation": {"episodes": 3, "epsilon": 0.01}},  # the agent's evaluation, not the trivial policy's
        {"noop_max": 0},  # training no-op starts; evaluation uses evaluation.noop_max
        {"id": "other"},
    ],
)
def test_atari_protocol_key_ignores_what_does_not_change_a_trivial_score(change):
    assert protocol_key(_atari(**change)) == protocol_key(_atari())


def test_protocol_key_is_readable_and_changes_with_kwargs_and_time_limit():
    assert protocol_key(_catch()).startswith("jax:catch:")
    assert protocol_key(_catch(rows=7)) != protocol_key(_catch())
    gym = dict(kind="gym", id="cp", name="CartPole-v0")
    assert protocol_key(GymEnvSpec(**gym)) != protocol_key(GymEnvSpec(**gym, max_episode_steps=100))


# --- loader ---------------------------------------------------------------------------------------------------


def test_scores_round_trip_and_the_level_is_the_best_policy(tmp_path):
    path = tmp_path / "scores.csv"
    _store(path, _catch(), _score("uniform_random", -0.8), _score("noop", -0.7))
    scores = trivial_scores(_catch(), path)
    assert set(scores) == {"uniform_random", "noop"}
    assert scores["noop"].mean == -0.7 and scores["noop"].low == pytest.approx(-1.0) and scores["noop"].episodes == 10
    assert scores["noop"].command == "rlrepro trivial-scores --env catch" and scores["noop"].commit == "abc"
    assert trivial_level(_catch(), path).policy == "noop"


def test_stale_protocol_raises_with_the_command_and_the_stale_rows(tmp_path):
    path = tmp_path / "scores.csv"
    _store(path, _catch(), _score("uniform_random", -0.8), _score("noop", -0.7))
    with pytest.raises(TrivialScoresMissing) as error:
        trivial_scores(_catch(rows=7), path)  # the spec changed: the stored rows are another protocol's
    message = str(error.value)
    assert "rlrepro trivial-scores --env catch" in message
    assert '"rows":7' in message and '"rows":6' in message and "stale" in message


def test_missing_rows_and_a_missing_policy_raise_a_clear_error(tmp_path):
    path = tmp_path / "scores.csv"
    with pytest.raises(TrivialScoresMissing, match=r"uniform_random, noop.*jax environment 'catch'.*trivial-scores"):
        trivial_scores(_catch(), path)
    _store(path, _catch(), _score("uniform_random", -0.8))
    with pytest.raises(TrivialScoresMissing, match=r"\(noop\)"):
        trivial_scores(_catch(), path)
    assert issubclass(TrivialScoresMissing, TrivialScoresError) and issubclass(TrivialScoresError, LookupError)


def test_unmeasurable_and_policyless_environments_say_why(tmp_path):
    with pytest.raises(TrivialScoresUnavailable, match="DeepMind Lab"):
        trivial_scores(DmlabEnvSpec(kind="dmlab", id="w", level="rooms_watermaze"), tmp_path / "x.csv")
    walk = JaxEnvSpec(kind="jax", id="rw", name="random_walk")
    with pytest.raises(TrivialScoresUnavailable, match="prediction task"):
        trivial_scores(walk, tmp_path / "x.csv")
    suite = GymSuiteSpec(kind="gym_suite", id="s", environments=[GymEnvSpec(kind="gym", id="cp", name="CartPole-v0")])
    with pytest.raises(TrivialScoresError, match="members"):
        trivial_scores(suite, tmp_path / "x.csv")


def test_module_imports_without_jax_or_gymnasium():
    import subprocess

    code = ("import sys; import rlrepro.results.trivial; "
            "print(sorted(m for m in ('jax', 'gymnasium', 'ale_py', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- measurement on a real environment --------------------------------------------------------------------------


def test_catch_trivial_policies_score_what_the_rules_give():
    """Catch 6 x 11: the paddle starts in column 5 and the ball falls 5 steps from a uniform top-row column.

    Always action 0 (left) ends in column 0: it catches iff the ball is in column 0, p = 1/11, mean
    1/11 - 10/11 = -9/11. Uniform random is blind to the ball as well, so it too catches with p = 1/11.
    Every episode lasts 5 steps and scores +1 or -1.
    """
    from rlrepro.environments.trivial import measure

    expected, n = -9 / 11, 2000
    se = math.sqrt(1 - expected**2) / math.sqrt(n)
    for policy in ("noop", "uniform_random"):
        score, extra = measure(_catch(), policy, episodes=n, seed=3, command="c", commit="x", date="d")
        assert score.episodes == n and float(extra["mean_steps"]) == 5.0
        assert abs(score.mean - expected) < 4 * se, (policy, score.mean)
        assert score.low < score.mean < score.high and score.interval == "student_t_95"
        # Returns are +-1 only: the sample variance is fixed by the mean.
        assert score.sd == pytest.approx(math.sqrt((1 - score.mean**2) * n / (n - 1)), rel=1e-6)


def test_summary_of_a_sample_with_no_spread_and_of_one_episode():
    from rlrepro.environments.trivial import summarize

    assert summarize([0.0, 0.0]) == (0.0, 0.0, 0.0, 0.0, "no spread: every episode scored the same")
    mean, sd, low, high, _ = summarize([1.0, 3.0])  # t(0.975, 1) = 12.706, sd = sqrt(2), se = 1
    assert (mean, sd) == (2.0, pytest.approx(math.sqrt(2))) and (low, high) == (pytest.approx(2 - 12.7062, abs=1e-3),
                                                                              pytest.approx(2 + 12.7062, abs=1e-3))
    assert math.isnan(summarize([5.0])[2])


def test_the_command_measures_missing_rows_then_has_nothing_to_do(tmp_path):
    from rlrepro.environments.trivial import run_trivial_scores

    path, lines = tmp_path / "scores.csv", []
    spec = [REPO / "specs" / "frodo" / "catch.yaml"]
    run_trivial_scores(spec, filters=["catch"], episodes=20, csv_path=path, command="cmd", out=lines.append)
    assert set(trivial_scores(_catch(), path)) == {"uniform_random", "noop"}
    assert trivial_scores(_catch(), path)["noop"].episodes == 20
    lines.clear()
    before = path.read_bytes()
    run_trivial_scores(spec, filters=["catch"], episodes=20, csv_path=path, command="cmd", out=lines.append)
    assert lines[0].startswith("nothing to measure") and path.read_bytes() == before


# --- the shipped scores -----------------------------------------------------------------------------------------


def _spec_environments():
    from rlrepro.environments.trivial import spec_environments

    return spec_environments([REPO / "specs"])


def _lacking(kinds: set[str], exclude: bool) -> list[str]:
    rows = trivial.read_rows()
    recorded = {r["protocol_key"] for r in rows if r["status"] in ("not_measurable", "no_policy") and r["reason"]}
    lacking = []
    for path, scale, env in _spec_environments():
        if (env.kind in kinds) == exclude:
            continue
        if trivial.unavailable_reason(env) is not None:
            if protocol_key(env) not in recorded:
                lacking.append(f"{path.name}:{scale}:{env.id} (no row stating why it is not measured)")
            continue
        try:
            trivial_scores(env)
        except TrivialScoresMissing:
            lacking.append(f"{path.parent.name}/{path.name}:{scale}:{env.id} ({protocol_key(env)})")
    return sorted(set(lacking))


def test_every_environment_of_the_specs_has_scores_or_a_stated_reason():
    """Fails when a spec adds an environment (or changes a protocol) without measuring it: `rlrepro trivial-scores`."""
    lacking = _lacking({"atari"}, exclude=True)
    assert not lacking, f"{len(lacking)} environment(s) without trivial scores:\n" + "\n".join(lacking)


def test_every_atari_game_of_the_specs_has_scores():
    lacking = _lacking({"atari"}, exclude=False)
    assert not lacking, f"{len(lacking)} Atari game(s) without trivial scores:\n" + "\n".join(lacking)


@pytest.mark.parametrize("game", ["tennis", "pitfall"])
@pytest.mark.parametrize("action_set", ["minimal", "full"])
def test_noop_scores_zero_on_tennis_and_pitfall_under_the_evaluation_protocol(game, action_set):
    """Issues 25 and 28: always-NOOP scores 0.0 on both for 108,000 frames (no-op starts, no sticky actions)."""
    scores = trivial_scores(_atari(id=game, game=game, action_set=action_set))
    assert scores["noop"].mean == 0.0 and scores["noop"].episodes >= 2
    assert scores["uniform_random"].mean < 0.0  # random play loses points on both (random -23.8 and -229.4 in DQN's table)


# --- issue 46: levels from at least 30 games, bars flagged against the interval's upper end ---------------------


def _scored(policy: str, mean: float, high: float, episodes: int) -> TrivialScore:
    return TrivialScore(policy=policy, mean=mean, sd=1.0, episodes=episodes, low=2 * mean - high, high=high,
                        protocol="p", command="c", commit="abc", date="2026-11-29")


def test_the_level_is_the_policy_whose_interval_reaches_highest_not_the_best_mean(tmp_path):
    # noop: mean -0.7, interval up to -0.6; random: mean -0.8 from few episodes, interval up to -0.2. A bar at -0.5
    # clears noop's interval but sits inside random's: the level is random's upper end, -0.2.
    path = tmp_path / "scores.csv"
    _store(path, _catch(), _scored("noop", -0.7, -0.6, 30), _scored("uniform_random", -0.8, -0.2, 30))
    level = trivial_level(_catch(), path)
    assert (level.policy, level.high) == ("uniform_random", -0.2)


def test_a_level_from_fewer_than_30_episodes_says_so_with_the_command():
    assert trivial.MIN_EPISODES == 30
    assert trivial.too_few_episodes(_catch(), _scored("noop", 0.0, 0.0, 30)) == ""
    short = trivial.too_few_episodes(_catch(), _scored("uniform_random", 0.0, 1.0, 3))
    assert short == "only 3 episode(s) of uniform_random, fewer than the 30 a level needs: rlrepro trivial-scores --env catch"


def test_rows_of_fewer_than_30_episodes_are_measured_again(tmp_path):
    from rlrepro.environments.trivial import DEFAULT_EPISODES, plan_missing
    from tests.factories import toy_spec_data, write_spec

    assert min(min(policies.values()) for policies in DEFAULT_EPISODES.values()) >= trivial.MIN_EPISODES
    spec = write_spec(tmp_path, toy_spec_data(environments=[{"kind": "jax", "id": "catch", "name": "catch",
                                                             "kwargs": {"rows": 6, "columns": 11}}]))
    rows = [score_row(_catch(), _scored("noop", -0.7, -0.6, 3)), score_row(_catch(), _scored("uniform_random", -0.8, -0.7, 30))]
    todo, _, _ = plan_missing([spec], [], [{k: str(v) for k, v in r.items()} for r in rows])
    assert [policy for _, policy in todo] == ["noop"]  # the 3-episode row; the 30-episode one stands
    todo, _, _ = plan_missing([spec], [], [{k: str(v) for k, v in r.items()} for r in rows], episodes=100)
    assert sorted(policy for _, policy in todo) == ["noop", "uniform_random"]


def test_every_trivial_row_a_cpu_scale_claim_reads_rests_on_30_episodes():
    """The rows behind the cpu-scale claims' trivial levels (above_trivial, weak bars, orderings on returns)."""
    from rlrepro.specs import load_spec
    from rlrepro.specs.experiment import RETURN_METRICS

    short = []
    for path, scale, env in _spec_environments():
        if scale != "cpu" or trivial.unavailable_reason(env) is not None:
            continue
        spec = load_spec(path)
        used = {e for c in spec.claims if "cpu" in c.judged_at for e in (
            [c.environment] if c.kind == "above_trivial" or (c.kind == "threshold" and c.metric in RETURN_METRICS)
            else (c.environments or [x.id for x in spec.environments]) if c.kind == "ordering" and c.metric in RETURN_METRICS
            else [])}  # fmt: skip
        if env.id not in used:
            continue
        try:
            scores = trivial_scores(env)
        except TrivialScoresMissing:
            continue  # test_every_environment_of_the_specs_has_scores... names it
        short += [f"{path.name}:{env.id}:{p} ({s.episodes})" for p, s in scores.items() if s.episodes < trivial.MIN_EPISODES]
    assert not short, "rows under 30 episodes (rlrepro trivial-scores re-measures them): " + ", ".join(short)
