"""The Synthetic Returns Atari specs (Pong, Skiing) through the real Snakefile at smoke scale, on real ALE games:
the SR agent on the host actor-learner with its 2,000-slot episodic memory, both variants, tables and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_snakemake_atari import run_smoke

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")


@pytest.mark.slow
@pytest.mark.parametrize("experiment,game", [("pong", "pong"), ("skiing", "skiing")])
def test_the_sr_atari_spec_runs_end_to_end_at_smoke_scale(tmp_path: Path, subprocess_env: dict[str, str], experiment, game):
    root = run_smoke(tmp_path, f"synthetic_returns/{experiment}", subprocess_env, timeout=900)
    runs = root / f"runs/synthetic_returns/{experiment}"
    sr = json.loads((runs / f"sr/{game}/seed0/summary.json").read_text())
    baseline = json.loads((runs / f"baseline/{game}/seed0/summary.json").read_text())
    assert sr["frames"] == baseline["frames"] == 3200  # 2 chunks x 5 updates x T 20 x B 4 x 4 frames
    assert sr["final"]["sr_loss"] > 0 and baseline["final"]["sr_loss"] == 0  # the baseline trains no SR module
    assert sr["final"]["eval_return"] == sr["final"]["eval_return"]  # a real evaluation game was played (not NaN)
    table = (root / f"tables/synthetic_returns/{experiment}.md").read_text()
    assert (root / f"tables/synthetic_returns/{experiment}.sr_loss.png").exists()  # the SR loss's diagnostic curve
    report = (root / "REPORT.md").read_text()
    assert f"synthetic_returns/{experiment}" in report
    if experiment == "skiing":
        assert "-4336.9" in table  # the reference scores beside ours
