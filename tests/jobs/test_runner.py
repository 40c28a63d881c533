"""rlrepro.jobs.runner.train_job: run folders, determinism, resume after SIGKILL, clear errors.

Runs are real (toy spec of tests/conftest.py at smoke scale, 2 seeds vmapped); each costs a few seconds of XLA
compilation, so one finished run is shared by the module and copied where a test changes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
import pytest

from rlrepro.environments.errors import BackendMissingError
from rlrepro.jobs.run_folder import MetricsFileError
from rlrepro.provenance import git_commit
from rlrepro.jobs.run_lock import FinishedRunError, RunBusyError, own_run_dir
from rlrepro.workflow.retire import OtherSpecError
from rlrepro.specs import load_spec
from rlrepro.jobs import checkpoint, runner
from rlrepro.jobs.runner import read_metrics, train_job
from rlrepro.workflow import config_hash
from tests.conftest import toy_run_spec_data
from tests.factories import write_spec

REPO = Path(__file__).resolve().parents[2]
DMLAB_SPEC = REPO / "specs" / "impala" / "dmlab_single_task.yaml"
FRAMES_PER_CHUNK = 5 * 4 * 5  # unroll x batch x updates_per_chunk of the toy spec
NUM_CHUNKS = 4  # 400 smoke frames / 100


def _train(spec: Path, results: Path, **kwargs) -> list[Path]:
    args = dict(spec_path=spec, scale="smoke", variant="vtrace", env="catch", seeds=None, results=results)
    args.update(progress="lines", track=False)
    args.update(kwargs)
    return train_job(**args)


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory, make_toy_spec) -> Path:
    directory = tmp_path_factory.mktemp("specs")
    make_toy_spec(directory)
    return directory


@pytest.fixture(scope="module")
def spec(spec_dir: Path) -> Path:
    return spec_dir / "toytest" / "toy.yaml"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, spec: Path) -> Path:
    """The results base of one finished job (vtrace, catch, seeds 0 and 1). Copy it before changing it."""
    results = tmp_path_factory.mktemp("finished") / "results"
    _train(spec, results)
    return results


def _run_dirs(results: Path, variant: str = "vtrace", env: str = "catch") -> list[Path]:
    return [results / "smoke" / "runs" / "toytest" / "toy" / variant / env / f"seed{s}" for s in (0, 1)]


def _checkpoint(results: Path) -> Path:
    return results / "smoke" / "checkpoints" / "toytest" / "toy" / "vtrace" / "catch" / "seeds0-1.ckpt"


def _copy(results: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    return copy


# --------------------------------------------------------------------------------------------------
# files of a run


def test_a_run_writes_resolved_spec_metrics_and_summary(finished: Path, spec: Path):
    for seed, run_dir in enumerate(_run_dirs(finished)):
        names = ["metrics.jsonl", "spec.resolved.json", "summary.json", ".train.lock"]  # the lock: one trainer at a time
        assert sorted(p.name for p in run_dir.iterdir()) == sorted(names)
        run = json.loads((run_dir / "spec.resolved.json").read_text())["run"]
        assert run["paper"] == "toytest" and run["experiment"] == "toy"
        assert (run["variant"], run["env"], run["seed"], run["scale"]) == ("vtrace", "catch", seed, "smoke")
        assert run["frames"] == NUM_CHUNKS * FRAMES_PER_CHUNK
        assert run["config_hash"] == config_hash(load_spec(spec), "vtrace", "catch", "smoke")
        assert run["run_key"] == f"smoke/toytest/toy/vtrace/catch/seed{seed}"
        # where it ran (issue 15): this machine has no GPU, so JAX's CPU device, with the versions
        device = json.loads((run_dir / "spec.resolved.json").read_text())["device"]
        assert device["platform"] == "cpu" and device["device_count"] >= 1 and device["device_kind"]
        assert device["jax"] == jax.__version__ and device["process_count"] == 1
        assert device["cpu_cores"] == len(os.sched_getaffinity(0))  # what a CPU run's frames/s rests on (issue 31)

        records = read_metrics(run_dir / "metrics.jsonl")
        assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == NUM_CHUNKS  # one line per chunk
        assert [r["frames"] for r in records] == [FRAMES_PER_CHUNK * (i + 1) for i in range(NUM_CHUNKS)]
        assert [r["updates"] for r in records] == [5 * (i + 1) for i in range(NUM_CHUNKS)]
        # Catch episodes last 5 steps: every one of the 4 envs ends one episode per 5-step unroll.
        assert all(r["episodes"] == 5 * 4 for r in records)
        assert all(-1.0 <= r["episode_return"] <= 1.0 for r in records)

        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["run"] == run
        assert (summary["frames"], summary["updates"]) == (records[-1]["frames"], records[-1]["updates"])
        assert summary["final"]["final_fraction"] == 0.5 and summary["final"]["final_episodes"] == 2 * 20
        # the whole run: every chunk's 20 episodes, weighted by episodes (all equal here, so the plain mean)
        assert summary["final"]["run_episodes"] == NUM_CHUNKS * 20
        assert summary["final"]["run_return"] == pytest.approx(np.mean([r["episode_return"] for r in records]))
        assert (run_dir / "summary.json").stat().st_mtime_ns >= (run_dir / "metrics.jsonl").stat().st_mtime_ns
        # the job's peak resident memory (issue 15): this process (Python + JAX alone are > 100 MB) plus children
        memory = summary["memory"]
        assert memory["peak_rss_mb"] == pytest.approx(memory["self_mb"] + memory["children_mb"], abs=0.11)
        assert 100 < memory["self_mb"] < 24 * 1024 and memory["child_processes"] >= 0
    # complete: the final checkpoint stays (a forced re-run resumes at the end), the one kept back is gone
    assert checkpoint.load_meta(_checkpoint(finished))["chunk"] == NUM_CHUNKS
    assert not checkpoint.previous_path(_checkpoint(finished)).exists()


def test_the_seeds_of_a_job_are_different_runs(finished: Path, comparable_metrics):
    seed0, seed1 = (read_metrics(d / "metrics.jsonl") for d in _run_dirs(finished))
    assert comparable_metrics(seed0) != comparable_metrics(seed1)


def test_the_same_spec_seed_and_scale_give_identical_metrics(
    finished: Path, spec: Path, tmp_path: Path, comparable_metrics
):
    _train(spec, tmp_path / "again")
    for first, second in zip(_run_dirs(finished), _run_dirs(tmp_path / "again")):
        assert comparable_metrics(read_metrics(first / "metrics.jsonl")) == comparable_metrics(
            read_metrics(second / "metrics.jsonl")
        )


@pytest.mark.slow
def test_a_seed_trained_alone_equals_the_same_seed_trained_in_a_batch(
    finished: Path, spec: Path, tmp_path: Path, comparable_metrics
):
    # config_hash ignores run.seeds_per_job: splitting seeds over jobs must not change any seed's numbers.
    (alone,) = _train(spec, tmp_path / "alone", seeds=(1,))
    batched = _run_dirs(finished)[1]
    assert alone == _run_dirs(tmp_path / "alone")[1]
    # vmap over seeds may reorder float reductions: equal up to float32 rounding, chunk by chunk
    for a, b in zip(
        comparable_metrics(read_metrics(alone / "metrics.jsonl")),
        comparable_metrics(read_metrics(batched / "metrics.jsonl")),
        strict=True,
    ):
        assert a == pytest.approx(b, rel=1e-4, abs=1e-5, nan_ok=True)


# --------------------------------------------------------------------------------------------------
# checkpoints and resume


def test_running_a_finished_job_again_resumes_at_the_end_and_changes_no_metric(
    finished: Path, spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture
):
    results = _copy(finished, tmp_path)
    before = [(d / "metrics.jsonl").read_text() for d in _run_dirs(results)]
    _train(spec, results)
    assert f"at chunk {NUM_CHUNKS}/{NUM_CHUNKS}" in capsys.readouterr().out
    assert [(d / "metrics.jsonl").read_text() for d in _run_dirs(results)] == before
    for run_dir in _run_dirs(results):  # one start trained it: the one that trained nothing is not an attempt
        assert json.loads((run_dir / "summary.json").read_text())["attempts"] == [
            {"from_chunk": 0, "git_commit": git_commit()}
        ]


def test_checkpoint_every_saves_every_kth_chunk_and_the_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # NUM_CHUNKS = 4 chunks, checkpoint_every 3: after chunk 3 and after the last (4), not after 1 or 2.
    data = toy_run_spec_data()
    data["run"]["checkpoint_every"] = 3
    edited = write_spec(tmp_path / "specs", data)
    saved = []
    original = checkpoint.save
    def recording_save(path: Path, state, meta: dict) -> None:
        saved.append(meta["chunk"])
        original(path, state, meta)

    monkeypatch.setattr(checkpoint, "save", recording_save)
    _train(edited, tmp_path / "results")
    assert saved == [3, NUM_CHUNKS]


def test_a_checkpoint_of_another_config_is_ignored(
    finished: Path, spec_dir: Path, tmp_path: Path, make_toy_spec, monkeypatch: pytest.MonkeyPatch, capsys
):
    # The spec is edited after the run (another learning rate): its config hash changes, the old
    # checkpoint must not be restored, and the metrics of the old run must not survive.
    results = _copy(finished, tmp_path)
    old = [read_metrics(d / "metrics.jsonl") for d in _run_dirs(results)]
    edited = make_toy_spec(tmp_path / "edited", learning_rate=1e-2)
    assert config_hash(load_spec(edited), "vtrace", "catch", "smoke") != checkpoint.load_meta(_checkpoint(results))[
        "config_hash"
    ]

    def must_not_restore(*args, **kwargs):
        raise AssertionError("a checkpoint of another config was restored")

    monkeypatch.setattr(checkpoint, "restore", must_not_restore)
    def files() -> dict[Path, dict[str, bytes]]:
        return {d: {p.name: p.read_bytes() for p in d.iterdir() if p.name != ".train.lock"} for d in _run_dirs(results)}

    before = files()
    # The edited copy lives in another folder: without --retire, a stop before anything is written (issue 50)
    with pytest.raises(OtherSpecError, match="stopped before writing anything"):
        _train(edited, results)
    assert files() == before
    _train(edited, results, retire=True)

    out, err = capsys.readouterr()
    assert "resuming" not in out
    # said, with why (issue 33: a checkpoint was thrown away without a word)
    assert f"checkpoint {_checkpoint(results)} (chunk {NUM_CHUNKS}) not used: it was trained with another configuration" in err
    assert "no usable checkpoint: training starts at chunk 0" in err
    # the finished runs of the earlier configuration are kept, byte for byte, under retired/ (issue 50)
    [retired] = (results / "smoke" / "retired").iterdir()
    assert f"finished runs of an earlier configuration retired (kept, moved aside) to {retired}" in err
    for run_dir, files in before.items():
        kept = retired / "runs" / run_dir.relative_to(results / "smoke" / "runs")
        assert {p.name: p.read_bytes() for p in kept.iterdir()} == files
    for run_dir, old_records in zip(_run_dirs(results), old):
        records = read_metrics(run_dir / "metrics.jsonl")
        assert [r["frames"] for r in records] == [FRAMES_PER_CHUNK * (i + 1) for i in range(NUM_CHUNKS)]
        assert records[0]["learning_rate"] != old_records[0]["learning_rate"]
        run = json.loads((run_dir / "summary.json").read_text())["run"]
        assert run["config_hash"] == config_hash(load_spec(edited), "vtrace", "catch", "smoke")
    assert checkpoint.load_meta(_checkpoint(results))["config_hash"] == run["config_hash"]


def test_a_job_whose_run_folders_were_deleted_trains_again(finished: Path, spec: Path, tmp_path: Path):
    results = _copy(finished, tmp_path)
    shutil.rmtree(results / "smoke" / "runs")  # e.g. a user deleting runs to re-make them; checkpoints stay
    _train(spec, results)
    for run_dir in _run_dirs(results):
        records = read_metrics(run_dir / "metrics.jsonl")
        assert [r["frames"] for r in records] == [FRAMES_PER_CHUNK * (i + 1) for i in range(NUM_CHUNKS)]


@pytest.fixture(scope="module")
def stopped_before_summary(tmp_path_factory: pytest.TempPathFactory, spec: Path) -> Path:
    """The results base of the finished job's twin killed after its last checkpoint, before its summaries: both
    checkpoints on disk (the last chunk's and the one kept back). Copy it before changing it."""
    results = tmp_path_factory.mktemp("stopped") / "results"

    def killed(*args, **kwargs) -> None:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "_write_summary", killed)
        with pytest.raises(KeyboardInterrupt):
            _train(spec, results)
    assert checkpoint.load_meta(checkpoint.previous_path(_checkpoint(results)))["chunk"] == NUM_CHUNKS - 1
    return results


@pytest.mark.parametrize("damage", ["truncated", "flipped byte"])
def test_a_damaged_checkpoint_is_reported_and_the_previous_one_resumed_with_identical_metrics(
    finished: Path, stopped_before_summary: Path, spec: Path, tmp_path: Path, capfd: pytest.CaptureFixture,
    comparable_metrics, damage: str,
):
    results = _copy(stopped_before_summary, tmp_path)
    before = [read_metrics(d / "metrics.jsonl") for d in _run_dirs(finished)]
    ckpt = _checkpoint(results)
    data = bytearray(ckpt.read_bytes())
    if damage == "truncated":
        data = data[:100]
    else:  # a flipped bit in the arrays, which the unchecked format restored silently
        data[len(data) // 2] ^= 0x01
    ckpt.write_bytes(bytes(data))

    _train(spec, results)

    out, err = capfd.readouterr()
    assert f"checkpoint {ckpt}: " in err and "trying the previous one" in err
    assert f"resuming from {ckpt}.prev at chunk {NUM_CHUNKS - 1}/{NUM_CHUNKS}" in out
    for run_dir, old in zip(_run_dirs(results), before):  # the last chunk re-trained: the same numbers
        assert comparable_metrics(read_metrics(run_dir / "metrics.jsonl")) == comparable_metrics(old)
        assert (run_dir / "summary.json").exists()
    assert checkpoint.load_meta(ckpt)["chunk"] == NUM_CHUNKS  # a good checkpoint again


def test_a_checkpoint_ahead_of_the_metrics_is_passed_over_with_why_and_the_previous_one_resumed(
    finished: Path, stopped_before_summary: Path, spec: Path, tmp_path: Path, capfd: pytest.CaptureFixture,
    comparable_metrics,
):
    # metrics.jsonl lost its last line (the checkpoint of chunk 4 covers it): the one kept back, of chunk 3, is
    # usable. Training restarted from chunk 0 here without a word.
    results = _copy(stopped_before_summary, tmp_path)
    metrics = _run_dirs(results)[0] / "metrics.jsonl"
    metrics.write_text("".join(metrics.read_text().splitlines(keepends=True)[: NUM_CHUNKS - 1]))
    _train(spec, results)
    out, err = capfd.readouterr()
    ckpt = _checkpoint(results)
    assert (f"checkpoint {ckpt} (chunk {NUM_CHUNKS}) not used: {metrics} holds {NUM_CHUNKS - 1} of the {NUM_CHUNKS} "
            "chunks it covers") in err
    assert f"resuming from {ckpt}.prev at chunk {NUM_CHUNKS - 1}/{NUM_CHUNKS}" in out
    for run_dir, old in zip(_run_dirs(results), _run_dirs(finished)):
        assert comparable_metrics(read_metrics(run_dir / "metrics.jsonl")) == comparable_metrics(
            read_metrics(old / "metrics.jsonl")
        )


def test_a_finished_seed_is_never_retrained_in_another_seed_group(finished: Path, spec: Path, tmp_path: Path):
    # Seed 1 finished with seed 0 (one vmapped job); `--seeds 1` replaced its results with a different curve and
    # left seeds1.ckpt beside seeds0-1.ckpt (issue 33). The group is part of the run's identity: an error.
    results = _copy(finished, tmp_path)
    seed1 = _run_dirs(results)[1]
    assert json.loads((seed1 / "spec.resolved.json").read_text())["run"]["seed_group"] == [0, 1]
    assert json.loads((seed1 / "summary.json").read_text())["run"]["seed_group"] == [0, 1]
    def files() -> dict[str, bytes]:  # the run's files (the lock file names the latest process that held it)
        return {p.name: p.read_bytes() for p in seed1.iterdir() if p.is_file() and p.name != ".train.lock"}

    before = files()
    with pytest.raises(FinishedRunError, match=re.escape(f"{seed1} is finished, trained with seeds 0,1 in one job; "
                                                         "this job (--seeds 1)")):  # fmt: skip
        _train(spec, results, seeds=(1,))
    assert files() == before and {"summary.json", "metrics.jsonl", "spec.resolved.json"} <= set(before)
    assert not _checkpoint(results).with_name("seeds1.ckpt").exists()


def test_resuming_drops_a_torn_last_metrics_line_with_a_warning(finished: Path, spec: Path, tmp_path: Path, comparable_metrics):
    results = _copy(finished, tmp_path)
    run_dir = _run_dirs(results)[0]
    before = read_metrics(run_dir / "metrics.jsonl")
    metrics = run_dir / "metrics.jsonl"
    metrics.write_text(metrics.read_text()[:-25])  # kill -9 inside the last append
    with pytest.warns(UserWarning, match=rf"{metrics}:{NUM_CHUNKS}: dropped a torn last line"):
        _train(spec, results)
    assert comparable_metrics(read_metrics(metrics)) == comparable_metrics(before)


def test_resuming_over_a_corrupted_metrics_line_is_an_error_naming_file_and_line(
    finished: Path, spec: Path, tmp_path: Path
):
    # Not the kind of damage a crash makes: the file is left as it is for a person to look at.
    results = _copy(finished, tmp_path)
    metrics = _run_dirs(results)[0] / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    corrupted = lines[0] + lines[1].replace('"', "'", 1) + "".join(lines[2:])
    metrics.write_text(corrupted)
    with pytest.raises(MetricsFileError, match=rf"^{metrics}:2: not JSON"):
        _train(spec, results)
    assert metrics.read_text() == corrupted


def test_a_second_trainer_of_the_same_run_folder_fails_at_once(
    finished: Path, spec: Path, tmp_path: Path
):
    results = _copy(finished, tmp_path)
    before = [(d / "metrics.jsonl").read_text() for d in _run_dirs(results)]
    with own_run_dir(_run_dirs(results)[1]):  # another process holds seed 1 (this test's pid stands in for it)
        started = time.monotonic()
        with pytest.raises(RunBusyError, match=rf"{_run_dirs(results)[1]} is being trained by pid {os.getpid()}"):
            _train(spec, results)
        assert time.monotonic() - started < 30  # at once: before any training (only the spec load and jit setup)
    assert [(d / "metrics.jsonl").read_text() for d in _run_dirs(results)] == before  # nothing cut or rewritten


def _train_command(spec: Path, results: Path, *, mlflow: bool = False) -> list[str]:
    return [
        sys.executable, "-m", "rlrepro", "train", "--spec", str(spec), "--scale", "smoke", "--variant", "vtrace",
        "--env", "catch", "--seeds", "0", "--results", str(results), "--progress", "lines",
    ] + ([] if mlflow else ["--no-mlflow"])  # fmt: skip


def _default_sigint() -> None:
    # A test run started in the background of a script inherits an ignored SIGINT; the job must not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "w") as handle:
        return subprocess.Popen(
            command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=log.parent, preexec_fn=_default_sigint
        )


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        assert process.poll() is None, f"the job ended before writing {count} metric lines"
        time.sleep(0.005)
    raise AssertionError(f"no {count} lines in {path} after {timeout} s")


def test_a_job_killed_with_sigkill_resumes_without_gaps_or_duplicates(
    tmp_path: Path, make_toy_spec, subprocess_env, comparable_metrics
):
    # 40 chunks of 25 updates: long enough to be killed in the middle, short enough for a test.
    chunks, frames_per_chunk = 40, 5 * 4 * 25
    spec = make_toy_spec(tmp_path / "specs", smoke_frames=chunks * frames_per_chunk, updates_per_chunk=25)
    killed_results, reference_results = tmp_path / "killed", tmp_path / "reference"
    run_dir = killed_results / "smoke" / "runs" / "toytest" / "toy" / "vtrace" / "catch" / "seed0"
    reference_dir = reference_results / "smoke" / "runs" / "toytest" / "toy" / "vtrace" / "catch" / "seed0"

    reference = _start(_train_command(spec, reference_results), tmp_path / "reference.log", subprocess_env)
    first = _start(_train_command(spec, killed_results), tmp_path / "first.log", subprocess_env)
    try:
        _wait_for_lines(run_dir / "metrics.jsonl", 3, first)
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
    assert reference.wait(timeout=300) == 0, (tmp_path / "reference.log").read_text()
    assert not (run_dir / "summary.json").exists()
    assert len(read_metrics(run_dir / "metrics.jsonl")) < chunks

    second = subprocess.run(
        _train_command(spec, killed_results), capture_output=True, text=True, env=subprocess_env, timeout=300
    )
    assert second.returncode == 0, second.stderr
    resumed = re.search(r"resuming from .*seeds0\.ckpt at chunk (\d+)/40", second.stdout)
    assert resumed, second.stdout
    assert 2 <= int(resumed.group(1)) < chunks  # the kill came after >= 3 lines, so >= 2 checkpoints

    records = read_metrics(run_dir / "metrics.jsonl")
    assert [r["frames"] for r in records] == [frames_per_chunk * (i + 1) for i in range(chunks)]
    assert comparable_metrics(records) == comparable_metrics(read_metrics(reference_dir / "metrics.jsonl"))
    wall = [r["wall_time"] for r in records]
    assert wall == sorted(wall)  # the resumed run's clock continues from the checkpoint's
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["frames"] == chunks * frames_per_chunk
    # both starts, with the chunk each trained from: a reader of the run sees that it was resumed, and where
    assert summary["attempts"] == [{"from_chunk": c, "git_commit": git_commit()} for c in (0, int(resumed.group(1)))]
    assert json.loads((reference_dir / "summary.json").read_text())["attempts"] == [
        {"from_chunk": 0, "git_commit": git_commit()}
    ]


@pytest.mark.slow
def test_a_job_killed_with_sigkill_leaves_one_mlflow_run_without_duplicate_steps(
    tmp_path: Path, make_toy_spec, subprocess_env
):
    from mlflow import MlflowClient

    spec = make_toy_spec(tmp_path / "specs", smoke_frames=40 * 500, updates_per_chunk=25)
    results = tmp_path / "results"
    run_dir = results / "smoke" / "runs" / "toytest" / "toy" / "vtrace" / "catch" / "seed0"
    first = _start(_train_command(spec, results, mlflow=True), tmp_path / "first.log", subprocess_env)
    try:
        _wait_for_lines(run_dir / "metrics.jsonl", 3, first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    second = subprocess.run(
        _train_command(spec, results, mlflow=True), capture_output=True, text=True, env=subprocess_env, timeout=300
    )
    assert second.returncode == 0 and "resuming" in second.stdout, second.stderr

    client = MlflowClient(tracking_uri=f"sqlite:///{results / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("toytest/toy")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"  # the killed mirror was replaced
    steps = sorted(m.step for m in client.get_metric_history(runs[0].info.run_id, "total_loss"))
    assert steps == [r["frames"] for r in read_metrics(run_dir / "metrics.jsonl")] == [500 * (i + 1) for i in range(40)]


# --------------------------------------------------------------------------------------------------
# errors


def test_dmlab_fails_at_once_naming_deepmind_lab(tmp_path: Path):
    with pytest.raises(BackendMissingError, match="DeepMind Lab"):
        train_job(
            spec_path=DMLAB_SPEC, scale="smoke", variant="default", env="rooms_watermaze", seeds=None,
            results=tmp_path / "results", progress="lines", track=False,
        )  # fmt: skip
    assert not (tmp_path / "results").exists()  # nothing written, nothing trained


def test_dmlab_through_the_cli_exits_with_code_3(tmp_path: Path, subprocess_env):
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable, "-m", "rlrepro", "train", "--spec", str(DMLAB_SPEC), "--scale", "smoke",
            "--variant", "default", "--env", "rooms_watermaze", "--results", str(tmp_path / "results"),
        ],
        capture_output=True, text=True, env=subprocess_env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "DeepMind Lab" in result.stderr and "rooms_watermaze" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 30
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("variant", "env", "message"),
    [
        ("vtrce", "catch", r"--variant 'vtrce': unknown; expected one of \['vtrace', 'none'\]"),
        ("vtrace", "pong", r"--env 'pong': unknown; expected one of \['catch', 'cartpole'\]"),
    ],
)
def test_unknown_variant_or_env_names_the_spec_and_the_choices(spec: Path, tmp_path: Path, variant, env, message):
    with pytest.raises(ValueError, match=message) as error:
        _train(spec, tmp_path / "results", variant=variant, env=env)
    assert str(spec) in str(error.value)
    assert not (tmp_path / "results").exists()


def test_unknown_variant_through_the_cli_is_a_clean_error(spec: Path, tmp_path: Path, subprocess_env):
    result = subprocess.run(
        [
            sys.executable, "-m", "rlrepro", "train", "--spec", str(spec), "--scale", "smoke", "--variant", "vtrce",
            "--env", "catch", "--results", str(tmp_path / "results"), "--no-mlflow",
        ],
        capture_output=True, text=True, env=subprocess_env, timeout=60,
    )  # fmt: skip
    assert "--variant 'vtrce': unknown" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 2


# SIGTERM (a scheduler cancelling the job) in the default suite; Ctrl-C takes the same path, with the slow checks
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM])
def test_an_interrupted_job_exits_at_once_with_its_mirror_killed_and_resumes(
    tmp_path: Path, make_toy_spec, subprocess_env, signum: int
):
    from mlflow import MlflowClient

    # 40 chunks of 25 updates, as the SIGKILL test: interrupted after 2, the second process trains the other 38
    spec = make_toy_spec(tmp_path / "specs", smoke_frames=40 * 500, updates_per_chunk=25)
    results = tmp_path / "results"
    run_dir = results / "smoke" / "runs" / "toytest" / "toy" / "vtrace" / "catch" / "seed0"
    first = _start(_train_command(spec, results, mlflow=True), tmp_path / "first.log", subprocess_env)
    try:
        _wait_for_lines(run_dir / "metrics.jsonl", 2, first)
        started = time.monotonic()
        first.send_signal(signum)  # Ctrl-C, or a scheduler cancelling the job
        assert first.wait(timeout=120) == 130
        assert time.monotonic() - started < 60  # seconds (a quiet machine: a few), not minutes
    finally:
        if first.poll() is None:
            first.kill()
    log = (tmp_path / "first.log").read_text()
    assert "interrupted (a training job resumes from its last checkpoint" in log and "Traceback" not in log, log
    client = MlflowClient(tracking_uri=f"sqlite:///{results / 'mlflow.db'}")
    (mirror,) = client.search_runs([client.get_experiment_by_name("toytest/toy").experiment_id])
    assert mirror.info.status == "KILLED"

    second = subprocess.run(
        _train_command(spec, results, mlflow=True), capture_output=True, text=True, env=subprocess_env, timeout=600
    )  # the folder's lock went with the first process: no 'being trained by' error
    assert second.returncode == 0 and "resuming" in second.stdout, second.stderr
    (mirror,) = client.search_runs([client.get_experiment_by_name("toytest/toy").experiment_id])
    assert mirror.info.status == "FINISHED"


def test_a_second_trainer_process_fails_at_once_and_the_first_one_ends_with_ordered_chunks(
    tmp_path: Path, make_toy_spec, subprocess_env
):
    chunks, frames_per_chunk = 40, 5 * 4 * 25
    spec = make_toy_spec(tmp_path / "specs", smoke_frames=chunks * frames_per_chunk, updates_per_chunk=25)
    results = tmp_path / "results"
    run_dir = results / "smoke" / "runs" / "toytest" / "toy" / "vtrace" / "catch" / "seed0"
    first = _start(_train_command(spec, results), tmp_path / "first.log", subprocess_env)
    try:
        _wait_for_lines(run_dir / "metrics.jsonl", 1, first)
        os.kill(first.pid, signal.SIGSTOP)  # paused mid-run (as a slow trainer would be): it still owns the folder
        started = time.monotonic()
        second = subprocess.run(
            _train_command(spec, results), capture_output=True, text=True, env=subprocess_env, timeout=300
        )
        assert time.monotonic() - started < 120  # at once: it fails before compiling or training anything
        os.kill(first.pid, signal.SIGCONT)
        assert first.wait(timeout=600) == 0, (tmp_path / "first.log").read_text()
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
    assert second.returncode == 4
    assert f"error: {run_dir} is being trained by pid {first.pid}" in second.stderr and "Traceback" not in second.stderr
    records = read_metrics(run_dir / "metrics.jsonl")
    assert [r["frames"] for r in records] == [frames_per_chunk * (i + 1) for i in range(chunks)]


# --------------------------------------------------------------------------------------------------
# a chunk's wall time


def test_a_chunks_wall_time_includes_the_work_jax_dispatched_asynchronously(tmp_path: Path):
    """``wall_time`` is read once the chunk's results are ready (issue 17; issue 11 item 13 for the Atari fps).

    The program's chunk is one jitted call of dependent matmuls: JAX returns from it at once and computes in the
    background. Its blocked duration is measured alone (best of 3); the first chunk's wall time must be at least
    half of it. Reading the clock before ``device_get`` timed the dispatch only (milliseconds, far below half).
    """
    import jax
    import jax.numpy as jnp

    from rlrepro.training.program import TrainerProgram
    from rlrepro.jobs.runner import _train_chunks

    class Metrics(NamedTuple):
        frames: jax.Array
        episodes: jax.Array
        mean_return: jax.Array

    @jax.jit
    def chunk(x):
        y = jax.lax.fori_loop(0, 400, lambda _, y: jnp.tanh(y @ y * 1e-3 + 1e-3), x)
        one = jnp.ones((1,), jnp.float32) + 0 * jnp.sum(y)  # ready only once the loop ran
        return y, Metrics(one * 10, one.astype(jnp.int32), one)

    state = jnp.full((384, 384), 1e-2, jnp.float32)
    jax.block_until_ready(chunk(state))  # compiled
    blocked = []
    for _ in range(3):
        started = time.monotonic()
        jax.block_until_ready(chunk(state))
        blocked.append(time.monotonic() - started)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.resolved.json").write_text(json.dumps({"run": {"frames": 20}}))
    program = TrainerProgram(lambda keys: state, chunk, num_chunks=2, updates_per_chunk=1, frames_per_chunk=10)
    _train_chunks(program, state, 0, 0.0, [run_dir], tmp_path / "c.ckpt", "h", (0,), "t", "lines", [], 0.5)
    records = read_metrics(run_dir / "metrics.jsonl")
    assert records[0]["wall_time"] >= 0.5 * min(blocked), (records, blocked)


def test_a_run_of_a_budget_between_chunks_states_the_frames_it_trained_and_its_budget(tmp_path: Path, make_toy_spec):
    """Issue 17: a smoke budget of 250 frames with chunks of unroll 5 x batch 4 x 5 updates = 100 frames trains
    ceil(250 / 100) = 3 whole chunks = 300 frames: the plan, the metrics, summary.json and the MLflow params (the
    resolved config) all say 300, with the budget of 250 beside it."""
    from rlrepro.tracking import flatten_config
    from rlrepro.workflow import chunk_plan

    spec = make_toy_spec(tmp_path / "specs", experiment="toy_budget", smoke_frames=250, smoke_seeds=1,
                         smoke_environments=["catch"])
    [run_dir] = _train(spec, tmp_path / "results", seeds=(0,))
    planned = chunk_plan(load_spec(spec), "vtrace", "catch", "smoke")
    assert (planned.frames, planned.num_chunks) == (300, 3)
    assert [r["frames"] for r in read_metrics(run_dir / "metrics.jsonl")] == [100, 200, 300]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["frames"], summary["frames_budget"], summary["frames_unit"]) == (300, 250, "frames")
    params = flatten_config(json.loads((run_dir / "spec.resolved.json").read_text())["config"])
    assert (params["frames"], params["frames_budget"]) == ("300", "250")


def test_each_evaluation_games_score_reaches_the_last_record_and_the_summary_apart_from_the_means(tmp_path: Path):
    """A metric of shape [runs, games] (``eval_scores``: each evaluation game's score, none before the last chunk) is
    kept as a list in the last chunk's record and in summary.json, never averaged into ``final``."""
    from types import SimpleNamespace

    from rlrepro.jobs.run_folder import EVAL_SCORES, RESOLVED, SUMMARY, append_metrics, read_json, write_json_atomic

    class Metrics(NamedTuple):
        mean_return: np.ndarray
        episodes: np.ndarray
        eval_return: np.ndarray
        eval_scores: np.ndarray

    program = SimpleNamespace(frames_per_chunk=100, updates_per_chunk=2)
    chunks = [
        Metrics(np.array([1.0, 2.0]), np.array([3, 4]), np.full(2, np.nan), np.zeros((2, 0))),
        Metrics(np.array([1.5, 2.5]), np.array([3, 4]), np.array([-20.0, 3.0]), np.array([[-21.0, -19.0], [2.0, 4.0]])),
    ]
    records = [runner._records(m, chunk, program, wall_time=1.0, num_seeds=2) for chunk, m in enumerate(chunks, start=1)]
    assert EVAL_SCORES not in records[0][0] and records[1][1][EVAL_SCORES] == [2.0, 4.0]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_json_atomic(run_dir / RESOLVED, {"run": {"frames": 200}})
    for chunk in records:
        append_metrics(run_dir, chunk[0])
    runner._write_summary(run_dir, final_fraction=0.5)
    summary = read_json(run_dir / SUMMARY)
    assert summary[EVAL_SCORES] == [-21.0, -19.0] and EVAL_SCORES not in summary["final"]
    assert summary["final"]["eval_return"] == -20.0
