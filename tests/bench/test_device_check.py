"""The device check (scripts/device-check.sh, rlrepro/bench/device_check.py) and its wheels (``make device-wheels``):
its rows read as throughput.csv rows and replace the GPU estimates, the wheels check catches what would fail on the
machine, and the whole check runs on CPU at the small sizes (slow)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlrepro.bench import device_check, device_wheels
from rlrepro.workflow.cost import COLUMNS, accelerator_hours, load_throughput

ROOT = Path(__file__).resolve().parents[2]

FIGURES = {
    "impala_atari_shallow": {"env_only": 90_000.0, "learner_only": 150_000.0, "parts_together": 56_250.0,
                             "end_to_end": 48_000.4, "policy_lag": 1.5, "network": "impala_shallow", "batch_size": 32,
                             "unroll_length": 20, "num_envs": 32, "mode": "threaded", "num_actors": 16},
    "impala_atari_deep": {"env_only": 90_000.0, "learner_only": 60_000.0, "parts_together": 36_000.0,
                          "end_to_end": 30_000.0, "policy_lag": 2.0, "network": "impala_deep", "batch_size": 32,
                          "unroll_length": 20, "num_envs": 32, "mode": "threaded", "num_actors": 16},
    "impala_toy": {"env": "catch", "batch_size": 32, "unroll_length": 20, "env_only": 1e7, "learner_only": 1e6,
                   "parts_together": 9e5, "end_to_end": {"1": 2e5, "16": 2e6, "256": 3e7}},
    "frodo_meta_update": {"kind": "atari", "inner_steps": 5, "batch_size": 30, "unroll_length": 30, "impala": 80_000.0,
                          "frodo": 20_000.0},
    "loss_search": {"compiled_k1_programs_per_h_failing": 360.0, "compiled_k8_programs_per_h_failing": 1_800.0,
                    "compiled_k32_programs_per_h_failing": 3_600.0, "hurdle_steps": 10_000},
}


def _rows(tmp_path: Path, size: str = "paper") -> Path:
    rows = device_check.rows_from(FIGURES, "gpu", "1x NVIDIA H100 80GB HBM3 + 16 CPU cores", size, "2026-11-27")
    path = tmp_path / "throughput-rows.csv"
    device_check.write_rows(path, rows)
    return path


@pytest.mark.parametrize("job", device_check.SMOKE_JOBS, ids=lambda job: job.family)
def test_every_smoke_job_is_a_job_of_its_spec_at_the_smoke_scale(job: device_check.SmokeJob):
    """The check's jobs name variants and environments by hand: a renamed variant must fail here, not on the GPU."""
    from rlrepro.specs.loading import load_spec
    from rlrepro.workflow import plan_experiment

    plan = plan_experiment(ROOT / job.spec, load_spec(ROOT / job.spec), "smoke")
    assert (job.variant, job.env) in {(j.variant, j.env) for j in plan.jobs}


def test_rows_are_throughput_rows_with_the_figures_each_benchmark_measured(tmp_path: Path):
    rows = {" ".join(r.experiments): r for r in load_throughput(_rows(tmp_path))}
    assert rows["impala/atari57_shallow impala/throughput"].frames_per_s == 48_000  # end to end, rounded
    assert rows["impala/atari57_deep"].frames_per_s == 30_000
    assert rows["impala/offpolicy_correction_toy"].frames_per_s == 3e7  # the most seeds vmapped (256)
    assert "256 seeds vmapped" in rows["impala/offpolicy_correction_toy"].source
    # FRODO's learner (20,000) is slower than the host actors (48,000): the meta-update bounds it, as measured
    assert rows["frodo/atari57 frodo/atari8_ablations"].frames_per_s == 20_000  # the meta-update, not IMPALA's
    assert rows["frodo/atari57 frodo/atari8_ablations"].status == "measured"
    # K=32 programs: 3,600 programs/h x 10,000 steps / 3,600 s = 10,000 frames/s
    assert rows["evolving_rl/search_*"].frames_per_s == 10_000
    assert all(r.status == "measured" and r.device == "gpu" and r.date == "2026-11-27" for r in rows.values())
    assert "env only 90,000, learner only 150,000" in rows["impala/atari57_shallow impala/throughput"].source
    assert "--num-actors 16 " in rows["impala/atari57_deep"].command  # the actors it ran with, not a default


def test_frodo_is_bounded_by_the_host_actors_when_they_are_slower_than_its_learner(tmp_path: Path):
    figures = dict(FIGURES, frodo_meta_update=dict(FIGURES["frodo_meta_update"], frodo=600_000.0))
    rows = device_check.rows_from(figures, "gpu", "1x H100 + 16 CPU cores", "paper", "2026-11-27")
    frodo = next(r for r in rows if r["experiments"].startswith("frodo/"))
    assert (float(frodo["frames_per_s"]), frodo["status"]) == (48_000, "estimate")  # the actors' end to end
    assert "600,000 frames/s" in frodo["source"]


def test_a_benchmark_that_failed_gives_no_row(tmp_path: Path):
    figures = {k: v for k, v in FIGURES.items() if k != "impala_atari_deep"}
    rows = device_check.rows_from(figures, "gpu", "1x H100 + 16 CPU cores", "paper", "2026-11-27")
    assert [r["experiments"] for r in rows if "deep" in r["experiments"]] == []


def test_the_atari_rows_take_the_faster_placement_of_the_actors_policy_and_name_the_other():
    """On an accelerator the Atari benches run twice (actors' policy on the learner's device, then on the host CPU,
    end to end only): each row quotes the faster, its command and placement, the other's figure, and the parts
    measured by the learner-device run; FRODO's bound follows the faster shallow placement."""
    cpu_run = {"env_only": None, "learner_only": None, "parts_together": None, "actor_device": "cpu", "policy_lag": 1.2}
    figures = dict(
        FIGURES,
        impala_atari_deep_cpu_actors={**FIGURES["impala_atari_deep"], **cpu_run, "end_to_end": 45_000.0},
        impala_atari_shallow_cpu_actors={**FIGURES["impala_atari_shallow"], **cpu_run, "end_to_end": 40_000.0},
        frodo_meta_update=dict(FIGURES["frodo_meta_update"], frodo=600_000.0),
    )
    rows = {r["experiments"]: r for r in device_check.rows_from(figures, "gpu", "1x H100 + 16 CPU cores", "paper",
                                                                 "2026-11-27")}  # fmt: skip
    deep, shallow = rows["impala/atari57_deep"], rows["impala/atari57_shallow impala/throughput"]
    assert float(deep["frames_per_s"]) == 45_000  # the host CPU's run was faster
    assert "--actor-device cpu --end-to-end-only" in deep["command"] and "--chunks 2" in deep["command"]
    assert "policy on the cpu device" in deep["source"] and "policy lag 1.20" in deep["source"]
    assert "the faster of two placements: policy on the learner device 30,000 frames/s" in deep["source"]
    assert "env only 90,000, learner only 60,000 frames/s" in deep["source"]  # the learner-device run's parts
    assert float(shallow["frames_per_s"]) == 48_000 and "--actor-device learner" in shallow["command"]
    assert "policy on the cpu device 40,000 frames/s" in shallow["source"]
    frodo = rows["frodo/atari57 frodo/atari8_ablations"]
    assert (float(frodo["frames_per_s"]), frodo["status"]) == (48_000, "estimate")
    only_cpu = {k: v for k, v in figures.items() if k != "impala_atari_deep"}  # the learner-device run failed
    deep = next(r for r in device_check.rows_from(only_cpu, "gpu", "1x H100 + 16 CPU cores", "paper", "2026-11-27")
                if r["experiments"] == "impala/atari57_deep")
    assert float(deep["frames_per_s"]) == 45_000 and "env only" not in deep["source"] and "faster" not in deep["source"]


def test_the_second_placement_runs_on_an_accelerator_only_right_after_its_bench():
    """The most informative benches first (a budget cut skips the last): deep then shallow, each with its
    CPU-placed second run; none of those on a CPU-only machine (both placements are one device there)."""
    names = [b.name for b in device_check.benches(16)]
    assert names[:4] == ["impala_atari_deep", "impala_atari_deep_cpu_actors", "impala_atari_shallow",
                         "impala_atari_shallow_cpu_actors"]  # fmt: skip
    assert not [b for b in device_check.benches(2, accelerator=False) if b.name.endswith("_cpu_actors")]
    for bench in device_check.benches(16):
        if bench.name.startswith("impala_atari"):
            for arguments in bench.arguments.values():
                placement = arguments[arguments.index("--actor-device") + 1]
                assert placement == ("cpu" if bench.name.endswith("_cpu_actors") else "learner")
                assert ("--end-to-end-only" in arguments) == (placement == "cpu")


def test_merge_replaces_the_estimates_so_the_plan_quotes_the_measured_rows(tmp_path: Path):
    # the stored file as it stood before the first GPU run: published estimates for the accelerators, the CPU rows
    with open(ROOT / "rlrepro/bench/throughput.csv", newline="", encoding="utf-8") as handle:
        cpu_rows = [row for row in csv.DictReader(handle) if row["device"] == "cpu"]
    estimate = dict(status="estimate", date="2026-11-24", command="python -m rlrepro.bench ...", source="published")
    into = tmp_path / "throughput.csv"
    device_check.write_rows(into, [
        dict(estimate, experiments="impala/atari57_deep impala/atari57_shallow impala/throughput", device="gpu",
             hardware="1x NVIDIA A100 + 10 CPU cores", frames_per_s="24000"),
        dict(estimate, experiments="impala/dmlab*", device="gpu", hardware="1x NVIDIA P100", frames_per_s="21000"),
        dict(estimate, experiments="frodo/atari57 frodo/atari8_ablations", device="tpu", hardware="8 TPU cores",
             frames_per_s="185000"),
        *cpu_rows,
    ])  # fmt: skip
    before = load_throughput(into)
    assert accelerator_hours("impala/atari57_deep", 200_000_000, before).status == "estimate"
    said = device_check.merge(_rows(tmp_path), into)
    after = load_throughput(into)
    deep = accelerator_hours("impala/atari57_deep", 200_000_000, after)
    assert deep.status == "measured" and deep.hours == pytest.approx(200_000_000 / 30_000 / 3600)
    frodo = accelerator_hours("frodo/atari57", 10**9, after)  # the TPU estimate gave way to the GPU measurement
    assert frodo.device == "gpu" and frodo.status == "measured"
    assert accelerator_hours("impala/dmlab30", 10**9, after).status == "estimate"  # no measurement: kept
    # the CPU rows (the quiet reference machine's) stay
    assert [r for r in after if r.device == "cpu"] == [r for r in before if r.device == "cpu"]
    # IMPALA's one estimate row (shallow, deep, throughput) and FRODO's TPU row
    assert sum(line.startswith("replaced") for line in said) == 2


@pytest.mark.parametrize("bad", ["cpu", "small"])
def test_merge_refuses_cpu_rows_and_small_size_rows(tmp_path: Path, bad: str):
    if bad == "cpu":
        rows = device_check.rows_from(FIGURES, "cpu", "2-core x86-64 CPU, no GPU", "paper", "2026-11-27")
        path = tmp_path / "rows.csv"
        device_check.write_rows(path, rows)
    else:
        path = _rows(tmp_path, size="small")
    into = tmp_path / "throughput.csv"
    into.write_bytes((ROOT / "rlrepro/bench/throughput.csv").read_bytes())
    with pytest.raises(ValueError, match="cpu row" if bad == "cpu" else "small sizes"):
        device_check.merge(path, into)
    assert into.read_bytes() == (ROOT / "rlrepro/bench/throughput.csv").read_bytes()


def _wheel(folder: Path, name: str, version: str, requires: list[str], tag: str = "py3-none-any", size: int = 0) -> Path:
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
            f"Requires-Dist: {r}\n" for r in requires)
        archive.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
        if size:
            archive.writestr("payload.bin", os.urandom(size))
    return path


def test_wheels_check_passes_a_folder_whose_needs_are_met(tmp_path: Path):
    _wheel(tmp_path, "pydantic", "2.14.3", ["pydantic-core==2.50.4", "typing-extensions>=4.14",
                                            'email-validator>=2; extra == "email"'])
    _wheel(tmp_path, "pydantic_core", "2.50.4", ["typing-extensions"], tag="cp312-cp312-manylinux_2_17_x86_64")
    _wheel(tmp_path, "gymnasium", "1.4.0", ["numpy>=1.21", 'importlib-metadata; python_version < "3.10"'])
    assert device_wheels.check(tmp_path, ["typing-extensions", "numpy"]) == []


def test_wheels_check_finds_what_would_fail_on_the_machine(tmp_path: Path):
    _wheel(tmp_path, "jax", "0.11.2", [])  # never carried
    _wheel(tmp_path, "minigrid", "3.2.0", ["pygame-ce>=2.4"])  # its need neither in the image nor carried
    _wheel(tmp_path, "ale_py", "0.12.1", [], tag="cp311-cp311-manylinux_2_17_x86_64")  # Python 3.11 only
    _wheel(tmp_path, "glfw", "2.10.0", [])
    _wheel(tmp_path, "glfw", "2.11.0", [], size=2048)  # two versions
    problems = "\n".join(device_wheels.check(tmp_path, ["numpy"], limit_bytes=1024))
    assert "jax-0.11.2-py3-none-any.whl: JAX, CUDA and PyTorch stay the machine's own" in problems
    assert "minigrid-3.2.0-py3-none-any.whl needs pygame-ce>=2.4" in problems
    assert "ale_py-0.12.1-cp311-cp311-manylinux_2_17_x86_64.whl: not installable on CPython 3.12" in problems
    assert "glfw: 2 versions" in problems
    assert "over the 0 MiB allowed" in problems  # 1024 bytes: shown rounded


def test_every_carried_package_has_a_pin_in_the_jax_latest_lock_and_none_is_in_the_image():
    names = device_wheels.read_names(device_wheels.NAMES)
    lock = device_wheels.lock_versions(device_wheels.LOCK)
    assert len(device_wheels.pins(names, lock)) == len(names)
    assert not set(names) & set(device_wheels.read_names(device_wheels.IMAGE))
    assert not [n for n in names if device_wheels.FORBIDDEN.match(n)]
    with pytest.raises(ValueError, match="no pin for not-a-package"):
        device_wheels.pins([*names, "not-a-package"], lock)


@pytest.mark.slow
def test_device_check_runs_on_cpu_at_the_small_sizes(tmp_path: Path):
    """The whole check as CI runs it: every smoke job says cpu, every benchmark writes its figures, the rows load."""
    out = tmp_path / "out"
    env = dict(os.environ, JAX_PLATFORMS="cpu", DEVICE_CHECK_SIZE="small", DEVICE_CHECK_OUT=str(out),
               DEVICE_WHEELS=str(tmp_path / "no-wheels"), PYTHON=sys.executable, DEVICE_CHECK_BUDGET_S="1500")
    result = subprocess.run(["bash", "scripts/device-check.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=1800)
    log = (out / "device-check.log").read_text()
    assert result.returncode == 0, log[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["passed"] and summary["platform"] == "cpu" and summary["size"] == "small"
    assert sorted(summary["smoke"]) == sorted(job.family for job in device_check.SMOKE_JOBS)
    assert {r["device"] for r in summary["smoke"].values()} == {"cpu"}
    assert set(summary["benchmarks"].values()) == {"ok"}
    rows = load_throughput(out / "throughput-rows.csv")
    assert len(rows) == 5 and {r.device for r in rows} == {"cpu"}
    with open(out / "throughput-rows.csv", newline="") as handle:
        assert tuple(csv.DictReader(handle).fieldnames) == COLUMNS
    assert "smoke jobs" in log and "throughput rows (5)" in log  # what it printed is in the log
