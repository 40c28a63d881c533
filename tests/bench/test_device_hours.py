"""Issue 12 item 9 / issue 15: `rlrepro plan` gives device-hours per experiment on named hardware from stored
throughput figures (CPU measured here, GPU marked as estimates until measured), and prints where each comes from."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from rlrepro.workflow.cost import COLUMNS, FROZEN_COST, THROUGHPUT_CSV, load_throughput, training_frames
from rlrepro.cli import main
from rlrepro.plan_text import hours_text
from rlrepro.specs import load_spec, load_specs
from rlrepro.workflow import plan, plan_experiment

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


ROW = {"experiments": "impala/atari57_deep", "device": "gpu", "hardware": "1x Test GPU", "frames_per_s": "24000",
       "status": "estimate", "date": "2026-11-24", "command": "python -m rlrepro.bench impala-atari",
       "source": "a published figure"}


def test_every_stored_figure_names_its_hardware_and_matches_an_experiment():
    rows = load_throughput()
    keys = [f"{spec.paper}/{spec.experiment}" for _, spec in load_specs([REPO / "specs"])]
    for row in rows:
        assert any(row.matches(key) for key in keys), f"{THROUGHPUT_CSV}: {row.experiments} matches no spec"
        assert row.hardware and row.date and row.command and row.source
    # a GPU figure is measured only by the device check on a GPU machine (its command says so); the rest are estimates
    for row in rows:
        if row.device in ("gpu", "tpu") and row.status == "measured":
            assert "scripts/device-check.sh" in row.command
            assert "DEVICE_CHECK_SIZE=small" not in row.command


@pytest.mark.parametrize(("field", "value", "message"), [
    ("device", "fpga", "device 'fpga': expected one of"),
    ("frames_per_s", "fast", "frames_per_s 'fast': expected a number"),
    ("frames_per_s", "0", "frames_per_s 0.0: expected > 0"),
    ("status", "guess", "status 'guess': expected one of"),
    ("hardware", " ", "hardware is empty"),
])
def test_a_bad_figure_is_an_error_naming_the_file_row_and_field(tmp_path, field, value, message):
    path = _write(tmp_path / "throughput.csv", [ROW, {**ROW, field: value}])
    with pytest.raises(ValueError, match=f"throughput.csv:3: {message}"):
        load_throughput(path)


def _cost_row(out: str, key: str) -> list[str]:
    """The cells of experiment ``key``'s row in `rlrepro plan`'s time and device-hours table (the experiment under
    its paper's heading; columns at least two spaces apart, a figure and its marker one)."""
    paper, name = key.split("/")
    lines = out.splitlines()
    lines = lines[lines.index(paper, lines.index("time and device-hours:")):]
    return re.split(r"\s{2,}", next(line for line in lines if line.startswith(f"  {name} ")).strip())


def _source(out: str, mark: str) -> str:
    """The source line ``[mark] ...`` of the device-hours, its wrapped lines joined."""
    text = " ".join(out.partition("sources (stored figures:")[2].split())
    return text.partition(f"{mark} ")[2].partition(" [")[0]


def test_plan_at_paper_scale_prints_device_hours_and_their_sources(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["plan", "--scale", "paper", "--detail"]) == 0  # every spec: per experiment only with --detail
    out = capsys.readouterr().out
    assert "all GPU-hours (measured and estimated, the hardware above): ~" in out
    gpu = _cost_row(out, "impala/atari57_deep")[3]
    assert not gpu.startswith("~") and gpu.endswith("]")  # measured (the device check on an H100), and its source
    assert _source(out, gpu.split()[-1]).startswith("GPU measured on 1x NVIDIA H100")
    estimate = _cost_row(out, "evolving_rl/eval_atari")[3]
    assert estimate.startswith("~") and _source(out, estimate.split()[-1]).startswith("GPU estimate on")
    assert _cost_row(out, "refer/mujoco_vracer")[3] == "-"  # a CPU job: no accelerator figure
    assert "sources (stored figures: throughput.csv" in out


def test_the_stored_cpu_atari_rows_give_paper_hours_and_the_cpu_scale_keeps_its_measured_minutes(monkeypatch, capsys):
    """The measured CPU rows (the quiet 2-core machine, `python -m rlrepro.bench impala-atari`, end to end): at paper
    scale impala/atari57_shallow is 57 games x 200M frames = 11.4e9 frames, and as many in its frozen arm at IMPALA's
    measured cost 1.46 (workflow.cost.FROZEN_COST): 11.4e9 x 2.46 / 3,463 frames/s / 3,600 = 2,249.5 h. At cpu
    scale the spec's own measured minutes (60: the pipeline at that scale's smaller batches) stay the CPU figure, the
    same as the plan's time column, not the paper configuration's benchmark: since the cpu scale's one Breakout job
    (60 min on one core) decides a claim, its frozen arm (60 x 1.46 = 87.6 min) runs on the other core beside it, so
    the experiment takes the longer of the two, 1.46 h, not their sum (2.46 h)."""
    rows = [row for row in load_throughput() if row.device == "cpu"]
    assert {row.status for row in rows} == {"measured"} and all("rlrepro.bench impala-atari" in r.command for r in rows)
    shallow = next(row for row in rows if row.matches("impala/atari57_shallow"))
    assert shallow.frames_per_s == 3463 and shallow.hardware == "2-core x86-64 CPU, 24 GiB, no GPU"
    monkeypatch.chdir(REPO)
    assert main(["plan", "--scale", "paper", "--only", "impala/atari57_shallow"]) == 0
    out = capsys.readouterr().out
    cpu = _cost_row(out, "impala/atari57_shallow")[2]
    assert cpu.startswith("2,249 h [")
    assert _source(out, cpu.split()[-1]) == ("CPU measured on 2-core x86-64 CPU, 24 GiB, no GPU: python -m "
                                             "rlrepro.bench impala-atari --chunks 3 --updates-per-chunk 10 (2026-11-24)")
    assert main(["plan", "--scale", "cpu", "--only", "impala/atari57_shallow"]) == 0
    out = capsys.readouterr().out
    # one column where the CPU machine-hours equal the time here (issue 31: two identical columns)
    time, gpu = _cost_row(out, "impala/atari57_shallow")[1:3]
    legend = "It is the CPU machine-hours too"  # the time legend's words, not a column
    assert time == "1.5 h [m]" and "CPU machine-hours" not in " ".join(out.split()).replace(legend, "")
    assert gpu.endswith("]")
    assert "It is the CPU machine-hours too" in " ".join(out.split())
    assert "  1.5 h CPU-hours on 2-core x86-64 CPU, 24 GiB, no GPU" in out.splitlines()


def test_a_multitask_experiment_counts_frames_the_same_way_in_time_and_machine_hours(monkeypatch, capsys):
    """impala/atari57_multitask: its jobs' frames count once for all their games (``Job.frames_emulated``): at cpu
    scale 1 seed x (3 PBT members + the single agent) x 100,000 = 4e5 (in the spec's cpu ``expected_minutes``; no
    frozen arm there), at paper scale 285e9 (24 members and the single agent, 11.4e9 each) and the frozen arm of pbt
    (its 24 members' 273.6e9) at IMPALA's measured cost 1.46, so both columns are (285e9 + 273.6e9 x 1.46) / (4e5 /
    (60 * minutes)) / 3,600 h. The machine-hours used to divide by the sum of per-game frames: 2/3 of the time."""
    monkeypatch.chdir(REPO)
    spec = load_spec(REPO / "specs/impala/atari57_multitask.yaml")
    minutes = spec.scales["cpu"].expected_minutes
    assert training_frames(plan_experiment(Path("x.yaml"), spec, "cpu")) == 1 * (3 + 1) * 100_000
    hours = (285e9 + 273.6e9 * FROZEN_COST["impala"]) / (4e5 / (60 * minutes)) / 3_600
    assert main(["plan", "--scale", "paper", "--only", "impala/atari57_multitask"]) == 0
    out = capsys.readouterr().out
    # the machine-hours equal the time: one column shows both (issue 31), and the CPU total says the same figure
    assert _cost_row(out, "impala/atari57_multitask")[1] == hours_text(hours)
    assert "CPU machine-hours" not in " ".join(out.split()).replace("It is the CPU machine-hours too", "")
    assert f"  {hours_text(hours)} CPU-hours on 2-core x86-64 CPU, 24 GiB, no GPU" in out.splitlines()
