"""The real command line: validate, plan and schema, in process (capsys) and as `python -m rlrepro`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlrepro.cli import main
from rlrepro.specs import load_specs
from tests.factories import toy_spec_data, write_spec

REPO = Path(__file__).resolve().parents[1]


def spec_data() -> dict[str, Any]:
    return toy_spec_data(
        variants=[{"name": "a"}, {"name": "b", "agent": {"loss.correction": "none"}}, {"name": "c"}],
        budget={"frames": 2_000_000_000, "seeds": 3},
        scales={"smoke": {"frames": 100, "seeds": 1, "variants": ["a"]}, "cpu": {"frames": 1500, "seeds": 4}},
        run={"seeds_per_job": 2},
    )


def write(folder: Path, data: dict[str, Any] | None = None) -> Path:
    return write_spec(folder, spec_data() if data is None else data)


def plan_row(out: str, section: str, key: str) -> list[str]:
    """The cells of experiment ``key``'s row (paper/experiment: the experiment under its paper's heading) in the table
    under the line ``section`` of `rlrepro plan`'s text (columns at least two spaces apart, a figure and its marker
    one)."""
    paper, name = key.split("/")
    lines = out.splitlines()
    lines = lines[lines.index(paper, lines.index(section)):]
    row = next(line for line in lines if line.startswith(f"  {name} "))
    return re.split(r"\s{2,}", row.strip())


def bad_spec(folder: Path) -> Path:
    """A spec whose learning rate is the quoted string '1e-3'."""
    path = write(folder)
    text = path.read_text(encoding="utf-8")
    assert "learning_rate: 0.001" in text
    path.write_text(text.replace("learning_rate: 0.001", "learning_rate: '1e-3'"), encoding="utf-8")
    return path


# --- validate ------------------------------------------------------------------------------------------------


def test_validate_all_real_specs_by_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    count = len(load_specs([REPO / "specs"]))
    assert f"{count} spec(s) valid" in out
    assert "ok  specs/impala/offpolicy_correction_toy.yaml  48 variants" in out


def test_validate_a_file_outside_the_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path)
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"ok  {path}  3 variants" in captured.out
    assert "1 spec(s) valid" in captured.out
    assert captured.err == ""


def test_validate_an_invalid_spec_exits_2_with_the_problem_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_spec(tmp_path)
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: 1 invalid spec file(s)")
    assert str(path) in captured.err
    assert "agent.optimizer.learning_rate: expected a valid number; found '1e-3' (str)" in captured.err


def test_validate_a_missing_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlrepro", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_python_m_rlrepro_validate(tmp_path: Path) -> None:
    ok = _run("validate", cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    assert re.search(r"^\d+ spec\(s\) valid$", ok.stdout, re.M)

    bad = _run("validate", str(bad_spec(tmp_path)), cwd=tmp_path)
    assert bad.returncode == 2
    assert "agent.optimizer.learning_rate" in bad.stderr
    assert "Traceback" not in bad.stderr


# --- plan ----------------------------------------------------------------------------------------------------


def test_plan_lists_units_and_the_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path), "--units"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["experiment", "runs", "jobs", "frames", "trained", "(budget)"]
    listing = lines[lines.index("run units (trained: whole chunks of the budget):") + 1:]
    assert listing[0] == "toy/mini"  # the units of an experiment under its name
    assert listing[1].split() == ["variant", "env", "seed", "trained", "budget"]
    units = [line.split() for line in listing[2:] if line.startswith("  ") and line.split()[0] in "abc"]
    # 3 variants x 2 envs x 4 seeds, 1,500 frames each, jobs of 2 seeds
    assert len(units) == 24
    # a chunk is unroll 5 x batch 4 x 50 updates = 1,000 frames: a budget of 1,500 trains 2 whole chunks, 2,000
    assert ["b", "cartpole", "3", "2,000", "1,500"] in units
    assert " ".join(out.split()).endswith(  # the sentence wraps at 80 columns
        "24 run unit(s) in 12 job(s) at scale 'cpu'; total 48,000 frames trained (budget 36,000: training runs whole chunks)"
    )
    assert "estimated total time: 0 min; 1 experiment(s) without an estimate." in out


def test_plan_without_units_is_one_line_per_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the experiments under their paper: 24 runs of 2 whole chunks of 1,000 frames (budget 1,500 each)
    assert lines[2:4] == ["toy", "  mini        24    12          48,000 (36,000)"]
    # no time and no CPU figure: the two columns are the same, shown once
    assert plan_row(out, "time and device-hours:", "toy/mini") == ["mini", "unknown", "-"]
    assert "unknown: the spec states no measured minutes." in " ".join(out.split())
    assert "(list every run unit with --units)" in lines
    assert "run units" not in out


def test_plan_sums_the_expected_minutes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = spec_data()
    data["scales"]["cpu"]["expected_minutes"] = 12.5
    write(tmp_path, data)
    other = spec_data()
    other["paper"] = "other"
    other["scales"]["cpu"]["expected_minutes"] = 30
    write(tmp_path, other)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "estimated total time: 42 min.\n" in out  # 12.5 + 30, as measured
    assert "2-core x86-64 CPU" in out  # the hardware the estimate is for is named
    # At paper scale the cpu rate is scaled by frames: toy/mini runs 36,000 frames in 12.5 min at cpu scale
    # (48 frames/s); its paper scale is 18 units x 2e9 = 3.6e10 frames -> 3.6e10 / 48 / 3600 = 208,333 h (whole hours
    # from 1,000 h on).
    assert main(["plan", "--scale", "paper", "--specs", str(tmp_path)]) == 0
    assert plan_row(capsys.readouterr().out, "time and device-hours:", "toy/mini")[1] == "208,333 h"


def test_plan_into_head_ends_without_a_traceback() -> None:
    # 1,818 unit lines at paper scale: far more than a pipe holds, so the writer meets the closed pipe.
    command = f"{sys.executable} -m rlrepro plan --scale paper --units --specs {REPO / 'specs'} | head -2"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


def test_plan_at_smoke_and_paper_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "smoke", "--specs", str(tmp_path)]) == 0
    # a budget of 100 frames trains one whole chunk of 1,000
    assert ("2 run unit(s) in 2 job(s) at scale 'smoke'; total 2,000 frames trained (budget 200: training runs whole "
            "chunks)") in " ".join(capsys.readouterr().out.split())
    assert main(["plan", "--scale", "paper", "--specs", str(tmp_path)]) == 0
    # 3 x 2 x 3 = 18 units of 2e9 frames (beyond int32), jobs of seeds (0, 1) and (2,)
    assert " ".join(capsys.readouterr().out.split()).endswith(
        "18 run unit(s) in 12 job(s) at scale 'paper'; total 36,000,000,000 frames trained")


def test_plan_only_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    other = spec_data()
    other["paper"] = "other"
    write(tmp_path, other)
    assert main(["plan", "--scale", "smoke", "--specs", str(tmp_path), "--only", "other"]) == 0
    out = capsys.readouterr().out
    assert "2 run unit(s) in 2 job(s)" in out
    assert "other" in out.splitlines() and "toy" not in out.splitlines()  # the paper headings


def test_plan_total_of_the_real_specs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    expected_units = expected_frames = 0
    from rlrepro.specs.control import control_seeds, controlled_variants

    for _, spec in load_specs([REPO / "specs"]):
        size = spec.scale("smoke")
        envs = len(size.environments or spec.environments)
        names = size.variants or [v.name for v in spec.variant_list()]
        frozen = len(set(controlled_variants(spec, "smoke")) & set(names))  # each arm: at most CONTROL_SEEDS seeds
        expected_units += envs * (len(names) * size.seeds + frozen * control_seeds(size.seeds))
        if spec.experiment == "atari57_multitask":  # one agent per member for all its games: pbt (2) + no_pbt (1)
            assert (envs, len(names), size.seeds, frozen) == (2, 2, 1, 2)  # and the frozen arm of each
            expected_frames += 2 * (2 + 1) * size.frames
            continue
        expected_frames += envs * (len(names) * size.seeds + frozen * control_seeds(size.seeds)) * size.frames
    monkeypatch.chdir(REPO)
    assert main(["plan", "--scale", "smoke"]) == 0
    summary = " ".join(capsys.readouterr().out.split())  # the total wraps at 80 columns
    match = re.search(r"([\d,]+) run unit\(s\) in [\d,]+ job\(s\) at scale 'smoke'; total [\d,]+ frames trained "
                      r"\(budget ([\d,]+): training runs whole chunks\); ([\d,]+) proposals trained", summary)
    assert match, summary
    assert int(match[1].replace(",", "")) == expected_units
    assert int(match[2].replace(",", "")) + int(match[3].replace(",", "")) == expected_frames  # searches: budget = proposals


def test_plan_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 24
    assert set(rows[0]) == {"paper", "experiment", "variant", "env", "seed", "frames", "frames_trained", "counts"}
    assert {(r["variant"], r["env"]) for r in rows} == {(v, e) for v in "abc" for e in ("catch", "cartpole")}


def test_plan_json_numbers_are_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["frames"] for r in rows) == 36_000
    assert sorted({r["seed"] for r in rows}) == [0, 1, 2, 3]


def test_plan_of_an_invalid_spec_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_spec(tmp_path)
    assert main(["plan", "--specs", str(tmp_path)]) == 2
    assert "agent.optimizer.learning_rate" in capsys.readouterr().err


# --- bad input gets a clear error, never a traceback -------------------------------------------------------------


@pytest.mark.parametrize("only", ["impla", "toy/nosuchexp", "toy,impla"])
def test_plan_with_an_only_that_matches_nothing_exits_2_listing_the_known_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], only: str
) -> None:
    write(tmp_path)
    assert main(["plan", "--scale", "smoke", "--specs", str(tmp_path), "--only", only]) == 2
    err = capsys.readouterr().err
    unknown = [item for item in only.split(",") if item != "toy"]
    assert f"error: only={only}: {', '.join(map(repr, unknown))} matches no spec" in err
    assert "papers: toy; experiments: toy/mini" in err


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("a,b", "expected comma-separated non-negative integers such as 0,1,2; found 'a' in 'a,b'"),
        ("-1", "expected comma-separated non-negative integers such as 0,1,2; found '-1' in '-1'"),
        ("0,,1", "expected comma-separated non-negative integers such as 0,1,2; found '' in '0,,1'"),
        ("1,1", "expected distinct seeds; found '1,1'"),
    ],
)
def test_train_with_bad_seeds_is_a_usage_error(tmp_path: Path, seeds: str, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rlrepro", "train", "--spec", str(write(tmp_path)), "--scale", "smoke", "--variant", "a",
         "--env", "catch", f"--seeds={seeds}", "--results", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"argument --seeds: {message}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "results").exists()  # no seed-1 folder, nothing trained


def test_a_read_only_results_folder_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o500)
    if os.geteuid() == 0:  # root writes through permissions: make mkdir below the folder fail as it would for a user
        real_mkdir = os.mkdir

        def read_only_mkdir(path, *args, **kwargs):
            if str(path).startswith(str(results) + os.sep):
                raise PermissionError(13, "Permission denied", str(path))
            return real_mkdir(path, *args, **kwargs)

        monkeypatch.setattr(os, "mkdir", read_only_mkdir)
    try:
        code = main(["train", "--spec", str(write(tmp_path)), "--scale", "smoke", "--variant", "a", "--env", "catch",
                     "--results", str(results), "--no-mlflow"])  # fmt: skip
    finally:
        results.chmod(0o700)
    err = capsys.readouterr().err
    assert code == 5
    assert f"error: permission denied: {results / 'smoke'}" in err and "read-only results folder" in err


def test_a_results_folder_on_a_read_only_file_system_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    results = tmp_path / "results"
    real_mkdir = os.mkdir

    def read_only_mkdir(path, *args, **kwargs):  # a read-only mount (EROFS), which permissions do not explain
        if str(path).startswith(str(results)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only_mkdir)
    code = main(["train", "--spec", str(write(tmp_path)), "--scale", "smoke", "--variant", "a", "--env", "catch",
                 "--results", str(results), "--no-mlflow"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 5 and "is on a read-only file system: pass a writable folder with --results" in err, err


def test_results_naming_a_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.txt"
    results.write_text("not a folder\n")
    code = main(["train", "--spec", str(write(tmp_path)), "--scale", "smoke", "--variant", "a", "--env", "catch",
                 "--results", str(results), "--no-mlflow"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"error: {results / 'smoke'}" in err and "is not a folder" in err and "--results" in err, err
    assert results.read_text() == "not a folder\n"


def test_aggregate_while_the_experiment_trains_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["aggregate", "--spec", str(write(tmp_path)), "--scale", "smoke", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: toy/mini: 2 run(s) not finished (no summary.json)"), err
    assert "wait for the training jobs to finish" in err


def test_train_help_describes_every_option_with_a_working_example(capsys: pytest.CaptureFixture[str]) -> None:
    from rlrepro.cli import build_parser
    from rlrepro.specs import load_spec

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    for action in train._actions:
        assert action.help and action.help.strip(), f"--{action.dest} has no description"
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    assert "example:" in text
    example = " ".join(text.split("example:")[1].splitlines()[1:3]).replace("\\", " ").split()
    assert example[:2] == ["rlrepro", "train"], example
    args = dict(zip(example[2::2], example[3::2]))
    spec = load_spec(REPO / args["--spec"])  # the example names a spec, variant and env that exist
    assert args["--variant"] in {v.name for v in spec.variant_list()}
    assert args["--env"] in {e.id for e in spec.environments}


def test_plan_states_the_frames_the_toy_trains_at_smoke_scale_beside_its_budget(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: the IMPALA toy's smoke budget is 12,800 frames; a chunk is unroll 20 x batch 8 (the smoke override)
    x 25 updates = 4,000 frames, so a run trains ceil(12,800 / 4,000) = 4 whole chunks = 16,000 frames."""
    spec = REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml"
    assert main(["plan", "--scale", "smoke", "--specs", str(spec), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    # with replay (fraction 0.5) an update charges its 4 new rows only: chunks of 2,000 frames, 7 whole ones; so does
    # the equal-updates control (batch 4, no replay)
    replay = {r["variant"].split("@")[0].endswith("replay=0.5__B=32") for r in rows}
    assert replay == {True, False}
    assert {(r["frames_trained"], r["frames"], r["counts"]) for r in rows} == {(16_000, 12_800, "frames"), (14_000, 12_800, "frames")}
    # a frozen arm ('<variant>@frozen') trains what its variant trains
    four_new = lambda variant: variant.split("@")[0].endswith(("replay=0.5__B=32", "B=16"))  # noqa: E731
    assert all(r["frames_trained"] == (14_000 if four_new(r["variant"]) else 16_000) for r in rows)
    assert main(["plan", "--scale", "smoke", "--specs", str(spec)]) == 0
    out = capsys.readouterr().out
    trained = sum(r["frames_trained"] for r in rows)
    assert f"{trained:,} ({12_800 * len(rows):,})" in out
    assert " ".join(out.split()).endswith(
        f"total {trained:,} frames trained (budget {12_800 * len(rows):,}: training runs whole chunks)")
