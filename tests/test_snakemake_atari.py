"""The repository's IMPALA specs through the real Snakefile at smoke scale, on real ALE games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_snakemake import REPO, _output, snakemake

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")


def run_smoke(tmp_path: Path, only: str, subprocess_env: dict[str, str], timeout: float) -> Path:
    base = tmp_path / "results"
    config = ["--config", "scale=smoke", f"specs={REPO / 'specs'}", f"only={only}", f"results={base}"]
    result = snakemake(tmp_path, "-c2", *config, env=subprocess_env, timeout=timeout)
    assert result.returncode == 0, _output(result)
    return base / "smoke"


@pytest.mark.slow
def test_the_whole_impala_paper_at_smoke_scale(tmp_path: Path, subprocess_env: dict[str, str]):
    root = run_smoke(tmp_path, "impala", subprocess_env, timeout=1800)
    for experiment in ("offpolicy_correction_toy", "atari57_shallow", "atari57_deep", "atari57_multitask", "throughput"):
        assert (root / f"tables/impala/{experiment}.png").exists()
    report = (root / "REPORT.md").read_text()
    assert "impala/dmlab30" in report and "DeepMind Lab is not installed" in report
    # IMPALA shallow on real Pong through every step of a user's run (the default suite trains Atari through the
    # runner, tests/agents/test_dqn_atari.py, and the toy spec through Snakemake, tests/test_snakemake.py).
    summary = json.loads((root / "runs/impala/atari57_shallow/default/pong/seed0/summary.json").read_text())
    assert -21 <= summary["final"]["eval_return"] <= 21  # an evaluation game of real Pong was played
    assert summary["final"]["fps"] > 0 and summary["frames"] >= 16_000
    table = (root / "tables/impala/atari57_shallow.md").read_text()
    assert "(paper 20.4)" in table  # Table C.1 shallow Pong score beside ours
    assert "## Human-normalised scores" in table
    # not judged at smoke, grouped by where each is judged: Breakout learned (cpu); the median and 57 games (paper)
    assert "impala/atari57_shallow: 1 claim(s) (learns_breakout_cpu): the claim is judged at scale(s) cpu" in report
    assert "impala/atari57_shallow: 58 claim(s) (median_hns_shallow, score_alien," in report
    # IMPALA §5.3.2 at smoke scale: one job per variant trains one agent (PBT: a population of 2) on Pong and
    # Breakout at once and writes a run folder per game; the population is checkpointed after every chunk.
    for variant in ("pbt", "no_pbt"):
        for game in ("pong", "breakout"):
            summary = json.loads((root / f"runs/impala/atari57_multitask/{variant}/{game}/seed0/summary.json").read_text())
            assert summary["frames"] == 4000 and summary["final"]["eval_return"] == summary["final"]["eval_return"]
            # each evaluation game's score (the spec's smoke evaluation.episodes), their mean the eval_return
            scores = summary["eval_scores"]
            assert len(scores) == 2 and abs(sum(scores) / 2 - summary["final"]["eval_return"]) < 1e-9
        assert (root / f"checkpoints/impala/atari57_multitask/{variant}/all_environments/seeds0.ckpt").exists()
    pbt = json.loads((root / "runs/impala/atari57_multitask/pbt/pong/seed0/summary.json").read_text())["final"]
    assert pbt["pbt_steps"] > 0 and pbt["best_fitness"] == pbt["best_fitness"]  # PBT stepped and scored members
    table = (root / "tables/impala/atari57_multitask.md").read_text()
    assert "(paper 8.58)" in table and "## Human-normalised scores" in table  # Table C.1 multi-task Pong
    # the median, PBT's exploit step and the 57 games at paper scale; the cpu claims, kept for the record, judged at
    # no scale with the measured reason (the cpu budget leaves every agent at random play)
    assert "impala/atari57_multitask: 59 claim(s) (median_hns_multitask, pbt_copied_better_members, score_" in report
    assert "impala/atari57_multitask: 1 claim(s) (pbt_beats_fixed_hyperparameters_cpu): judged at no scale: " in report
    assert ("impala/atari57_multitask: 3 claim(s) (above_trivial_pong_cpu, above_trivial_breakout_cpu, "
            "above_trivial_boxing_cpu): judged at no scale: ") in report


@pytest.mark.slow  # the DQN Atari path also runs in the default suite through the runner (tests/agents/test_dqn_atari.py)
def test_evolving_rl_eval_atari_smoke_runs_dqnreg_on_boxing_end_to_end(tmp_path: Path, subprocess_env: dict[str, str]):
    root = run_smoke(tmp_path, "evolving_rl/eval_atari", subprocess_env, timeout=600)
    summary = json.loads((root / "runs/evolving_rl/eval_atari/dqnreg/boxing/seed0/summary.json").read_text())
    assert -100 <= summary["final"]["best_eval_return"] <= 100  # a real Boxing game was evaluated
    assert summary["frames"] >= 4000 and summary["final"]["loss"] >= 0
    table = (root / "tables/evolving_rl/eval_atari.md").read_text()
    assert "(paper 100" in table  # Table 1's DQNReg Boxing score beside ours
    report = (root / "REPORT.md").read_text()
    assert "evolving_rl/eval_atari: 5 claim(s)" in report
