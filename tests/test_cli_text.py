"""What the terminal shows: a job's last line, a return before any episode ends, a run's last lines, --version,
validate within 80 columns, and no MLflow INFO lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rlrepro.cli import job_summary_line, main


def test_a_return_before_any_episode_ends_says_so() -> None:
    from rlrepro.jobs.progress import return_text

    assert return_text(math.nan) == "no episode finished yet" and return_text(math.nan, short=True) == "no episode finished yet"
    assert return_text(0.2664) == "return 0.266" and return_text(0.2664, short=True) == "ret 0.266"


def test_a_job_ends_with_its_summary_and_where_its_runs_are(tmp_path: Path, monkeypatch) -> None:
    dirs = []
    for seed, final in ((0, 0.25), (1, math.nan)):
        run = tmp_path / "runs" / "p" / "e" / "v" / "catch" / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"frames": 19_200, "frames_unit": "frames", "wall_time": 90.0 + seed,
                                                      "final": {"final_return": final}}))
        dirs.append(run)
    line = job_summary_line(dirs)
    assert line == (f"done: final return 0.25, no episode finished (2 seeds); 19,200 frames per seed in 1.5 min\n"
                    f"runs in {dirs[0].parent}")
    monkeypatch.chdir(tmp_path)  # under the working directory: the short path
    assert job_summary_line(dirs[:1]).endswith("min\nruns in runs/p/e/v/catch/seed0")


def test_a_multi_task_job_names_each_task_beside_its_return(tmp_path: Path, monkeypatch) -> None:
    """A multi-task job writes a run folder per task (IMPALA's one agent on 3 games, one seed): its summary counts
    tasks, not 3 seeds, names each task's return, and points to the variant's folder, not to the first game's."""
    dirs = []
    for game, final in (("pong", -19.5), ("breakout", 1.786), ("boxing", math.nan)):
        run = tmp_path / "runs" / "p" / "e" / "v" / game / "seed0"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"frames": 128_000, "wall_time": 1152.0,
                                                      "final": {"final_return": final}}))
        dirs.append(run)
    monkeypatch.chdir(tmp_path)
    assert job_summary_line(dirs) == ("done: 3 tasks x 1 seed; 128,000 frames per seed in 19.2 min\n"
                                      "final return pong -19.5, breakout 1.786, boxing no episode finished\n"
                                      "runs in runs/p/e/v")


def test_a_run_ends_with_the_reports_path_and_the_verdict_tally(tmp_path: Path) -> None:
    from rlrepro.results.report import TALLY_FILE, run_end_text

    assert run_end_text(tmp_path) == f"No report yet under {tmp_path}."
    (tmp_path / TALLY_FILE).write_text(json.dumps({"experiments": 2, "claims": {"reproduced": 2, "not judged": 9}}))
    assert run_end_text(tmp_path) == (f"Report: {tmp_path / 'report.html'}\n"
                                      "2 experiment(s), 11 claim(s): 2 reproduced, 9 not judged")


def test_version_and_validate_fit_80_columns(capsys, monkeypatch) -> None:
    import pytest

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("rlrepro ")
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80
    assert main(["validate", "specs/impala/offpolicy_correction_toy.yaml", "specs/frodo/catch.yaml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= 80, out
    assert "ok  specs/impala/offpolicy_correction_toy.yaml  48 variants" in out


def test_mlflow_logs_no_info_lines_in_a_jobs_output(monkeypatch) -> None:
    import logging
    import os

    from rlrepro.cli import _quiet_libraries

    monkeypatch.delenv("MLFLOW_LOGGING_LEVEL", raising=False)
    _quiet_libraries()
    assert os.environ["MLFLOW_LOGGING_LEVEL"] == "WARNING"
    assert not logging.getLogger("mlflow").isEnabledFor(logging.INFO)
    assert not logging.getLogger("alembic").isEnabledFor(logging.INFO)
