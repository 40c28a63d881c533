"""The Synthetic Returns Atari specs (Pong, Skiing) through the real Snakefile at smoke scale, on real ALE games:
the SR agent on the host actor-learner with its 2,000-slot episodic memory, both variants, tables and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_snakemake_atari import run_smoke

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")


@pytest.mark.slow
def test_the_sr_atari_specs_run_end_to_end_at_smoke_scale(tmp_path: Path, subprocess_env: dict[str, str]):
    # one Snakemake run for both specs: their four jobs share its two cores
    root = run_smoke(tmp_path, "synthetic_returns/pong,synthetic_returns/skiing", subprocess_env, timeout=1200)
    report = (root / "REPORT.md").read_text()
    for game in ("pong", "skiing"):
        runs = root / f"runs/synthetic_returns/{game}"
        sr = json.loads((runs / f"sr/{game}/seed0/summary.json").read_text())
        baseline = json.loads((runs / f"baseline/{game}/seed0/summary.json").read_text())
        assert sr["frames"] == baseline["frames"] == 3200  # 2 chunks x 5 updates x T 20 x B 4 x 4 frames
        assert sr["final"]["sr_loss"] > 0 and baseline["final"]["sr_loss"] == 0  # the baseline trains no SR module
        assert sr["final"]["eval_return"] == sr["final"]["eval_return"]  # a real evaluation game was played (not NaN)
        assert (root / f"tables/synthetic_returns/{game}.sr_loss.png").exists()  # the SR loss's diagnostic curve
        assert f"synthetic_returns/{game}" in report
    assert "-4336.9" in (root / "tables/synthetic_returns/skiing.md").read_text()  # the reference scores beside ours
