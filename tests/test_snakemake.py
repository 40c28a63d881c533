"""The real Snakefile end to end: a spec outside the repository -> training jobs -> MLflow -> tables -> REPORT.md.

Snakemake runs as a subprocess (``-s <repo>/Snakefile -d <tmp workdir>``) at smoke scale with -c2. The toy spec
of tests/conftest.py runs only Catch at smoke scale here: 2 variants x 1 env = 2 jobs of 2 seeds, run side by side.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlrepro.specs.control import control_name

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"
VARIANTS = ("vtrace", "none")
ARMS = (*VARIANTS, *map(control_name, VARIANTS))  # and the frozen arm of each (the claim reads both)
SEEDS = (0, 1)
CLAIMS = ("vtrace_beats_none", "judged_only_at_paper_scale")
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not judged", "uninformative")


def snakemake(workdir: Path, *args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), *args]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout)


def _output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-5000:]}\n--- stderr\n{result.stderr[-5000:]}"


class Pipeline:
    """Where one end-to-end run put its files."""

    def __init__(self, workdir: Path, specs: Path, result: subprocess.CompletedProcess):
        self.workdir, self.specs, self.result = workdir, specs, result
        self.base = workdir / "results"
        self.root = self.base / "smoke"
        self.config = ["--config", "scale=smoke", f"specs={specs}", f"results={self.base}"]

    def run_dir(self, variant: str, seed: int) -> Path:
        return self.root / "runs" / "toytest" / "toy_e2e" / variant / "catch" / f"seed{seed}"

    def log(self, variant: str) -> Path:
        return self.root / "logs" / "train" / "toytest" / "toy_e2e" / variant / "catch" / "seeds0-1.log"

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.base / 'mlflow.db'}"


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory, make_toy_spec, subprocess_env) -> Pipeline:
    specs = tmp_path_factory.mktemp("hidden_specs")  # not under the repository
    # A budget of 350 frames in chunks of 100 (unroll 5 x batch 4 x 5 updates): each run trains 4 whole chunks, 400.
    make_toy_spec(specs, experiment="toy_e2e", smoke_environments=["catch"], smoke_frames=350)
    workdir = tmp_path_factory.mktemp("workdir")
    p = Pipeline(workdir, specs, None)  # type: ignore[arg-type]
    p.result = snakemake(workdir, "-c2", *p.config, env=subprocess_env)
    assert p.result.returncode == 0, _output(p.result)
    return p


def seed_runs(uri: str, experiment_name: str) -> list:
    """An experiment's seed runs in the MLflow store at ``uri`` (not its summary run)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(experiment_name)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    return [run for run in runs if "rlrepro.run_key" in run.data.tags]


@pytest.fixture(scope="module")
def mlflow_runs(pipeline: Pipeline) -> list:
    return seed_runs(pipeline.uri, "toytest/toy_e2e")


def test_every_unit_has_a_summary(pipeline: Pipeline):
    for variant in VARIANTS:
        for seed in SEEDS:
            summary = json.loads((pipeline.run_dir(variant, seed) / "summary.json").read_text())
            assert summary["run"]["variant"] == variant and summary["run"]["seed"] == seed
            assert (summary["frames"], summary["frames_budget"]) == (400, 350)  # whole chunks, the budget beside
    assert not (pipeline.root / "runs" / "toytest" / "toy_e2e" / "vtrace" / "cartpole").exists()  # not at smoke


def test_tables_are_written_in_every_format(pipeline: Pipeline):
    tables = pipeline.root / "tables" / "toytest"
    names = sorted(p.name for p in tables.iterdir())
    figures = [f"toy_e2e.{name}.png" for name in ("improvement", "intervals", "profiles")]  # rliable-style figures
    assert names == sorted([f"toy_e2e.{ext}" for ext in ("csv", "json", "md", "png")] + figures)
    assert (tables / "toy_e2e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = json.loads((tables / "toy_e2e.json").read_text())
    # the frozen arm of each variant the claim reads trains at smoke too (the path check of issue 44's control)
    assert {row["variant"] for row in table["rows"]} == set(ARMS)
    frozen = json.loads((pipeline.run_dir("vtrace@frozen", 0) / "spec.resolved.json").read_text())
    assert frozen["config"]["agent"]["learning"] is False
    assert [c["claim"] for c in table["claims"]] == list(CLAIMS)
    assert table["provenance"]["scale"] == "smoke"
    md = (tables / "toy_e2e.md").read_text()
    assert "scale: **smoke**" in md and all(f"**{claim}**" in md for claim in CLAIMS)
    csv_lines = (tables / "toy_e2e.csv").read_text().splitlines()
    assert any(line.startswith("vtrace,") or ",vtrace," in line for line in csv_lines)
    # what was trained, with the budget beside it (issue 17): the table, its CSV and the report agree
    trained = "400 frames per run (budget 350; training runs whole chunks)"
    assert f"seeds: 2, {trained}\n" in md
    assert {(r["frames"], r["frames_budget"]) for r in table["rows"]} == {(400, 350)}
    header = csv_lines[0].split(",")
    assert {(line.split(",")[header.index("frames")], line.split(",")[header.index("frames_budget")])
            for line in csv_lines[1:]} == {("400", "350")}
    assert trained in (pipeline.root / "REPORT.md").read_text() and trained in (pipeline.root / "report.html").read_text()


def test_the_report_gives_every_claim_one_verdict_line(pipeline: Pipeline):
    report = (pipeline.root / "REPORT.md").read_text()
    assert report.startswith("# rlrepro report — scale 'smoke'")
    judged = report.partition("## Results per paper")[2].partition("## Claims not judged")[0]
    not_judged = report.partition("## Claims not judged at this scale")[2].partition("## Evidence")[0]
    rows = [line for line in judged.splitlines() if "(`toytest/toy_e2e` `vtrace_beats_none`)" in line]
    assert len(rows) == 1, report
    assert rows[0].strip("|").split(" | ")[3].strip().strip("*") in VERDICTS  # claim | paper | ours | verdict
    # claims not judged at this scale are listed once each, grouped with their reason
    assert "- toytest/toy_e2e: 1 claim(s) (judged_only_at_paper_scale): the claim is judged at scale(s) paper" in not_judged

def test_runs_are_mirrored_in_mlflow_once_per_unit_with_tags_and_steps(pipeline: Pipeline, mlflow_runs):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=pipeline.uri)
    keys = sorted(run.data.tags["rlrepro.run_key"] for run in mlflow_runs)
    # Keys carry the results root's identity (made once in <results>/.project), so two checkouts never collide.
    project = (pipeline.base / ".project").read_text().strip()
    assert keys == sorted(f"{project}/smoke/toytest/toy_e2e/{v}/catch/seed{s}" for v in ARMS for s in SEEDS)
    assert {run.data.tags["rlrepro.project"] for run in mlflow_runs} == {project}
    for run in mlflow_runs:  # each job's device placement is a param (issue 15): JAX's CPU here
        assert run.data.params["device.platform"] == "cpu" and int(run.data.params["device.device_count"]) >= 1
    for run in mlflow_runs:  # and its job's peak memory a metric, as in summary.json (issue 15)
        summary = json.loads((pipeline.run_dir(run.data.tags["variant"], int(run.data.tags["seed"])) / "summary.json").read_text())
        assert run.data.metrics["summary.memory.peak_rss_mb"] == summary["memory"]["peak_rss_mb"] > 100
        assert run.data.metrics["summary.attempts"] == len(summary["attempts"]) == 1  # one start trained it
    for run in mlflow_runs:
        tags = run.data.tags
        run_dir = pipeline.run_dir(tags["variant"], int(tags["seed"]))
        resolved = json.loads((run_dir / "spec.resolved.json").read_text())["run"]
        for key in ("paper", "experiment", "variant", "env", "seed", "scale", "git_commit", "spec_hash"):
            assert tags[key] == str(resolved[key]), key
        expected = ("toytest", "toy_e2e", "catch", "smoke")
        assert (tags["paper"], tags["experiment"], tags["env"], tags["scale"]) == expected
        assert run.info.status == "FINISHED"
        assert tags["rlrepro.summary_sha256"] == hashlib.sha256((run_dir / "summary.json").read_bytes()).hexdigest()
        assert (run.data.params["frames"], run.data.params["frames_budget"]) == ("400", "350")  # trained, budget

        records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        history = sorted(client.get_metric_history(run.info.run_id, "total_loss"), key=lambda m: m.step)
        assert [m.step for m in history] == [r["frames"] for r in records]  # step = frames, once each
        assert [m.value for m in history] == pytest.approx([r["total_loss"] for r in records])


def test_the_aggregate_step_publishes_a_summary_run_with_the_seed_runs_as_children(pipeline: Pipeline, mlflow_runs):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=pipeline.uri)
    experiment = client.get_experiment_by_name("toytest/toy_e2e")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    project = (pipeline.base / ".project").read_text().strip()  # another checkout's summary run has its own key
    summary = client.search_runs([experiment.experiment_id],
                                 f"tags.`rlrepro.experiment_summary` = '{project}/smoke/toytest/toy_e2e'")
    assert len(summary) == 1
    assert {run.data.tags["rlrepro.summary_run"] for run in mlflow_runs} == {summary[0].info.run_id}
    assert not any("mlflow.parentRunId" in run.data.tags for run in mlflow_runs)  # listed, not nested under it
    artifacts = {f.path for f in client.list_artifacts(summary[0].info.run_id)}
    assert {"toy_e2e.md", "toy_e2e.png", "verdicts.json"} <= artifacts


def _overlapping_jobs(runs: list) -> list[tuple[str, str]]:
    """The pairs of training jobs (here one per variant) whose MLflow runs' spans overlap in time."""
    spans = {}
    for run in runs:
        variant = run.data.tags["variant"]
        start, end = spans.get(variant, (run.info.start_time, run.info.end_time))
        spans[variant] = (min(start, run.info.start_time), max(end, run.info.end_time))
    return [(a, b) for a in spans for b in spans if a < b and spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]]


def test_two_training_jobs_ran_side_by_side_without_a_database_error(pipeline: Pipeline, mlflow_runs):
    # 4 jobs (2 variants and their frozen arms) on 2 cores: Snakemake pairs them as it likes; some two overlapped
    assert _overlapping_jobs(mlflow_runs), "no two jobs overlapped"
    for variant in ARMS:
        log = pipeline.log(variant).read_text()
        for sign in ("TrackingWarning", "tracking disabled", "database is locked", "OperationalError", "Traceback"):
            assert sign not in log, f"{pipeline.log(variant)}:\n{log}"
        assert "peak memory: " in log  # the job's peak resident memory (issue 15)


def test_on_one_machine_jobs_share_it_only_while_their_memory_requests_fit(tmp_path: Path, make_toy_spec,
                                                                         subprocess_env):
    """Every training job asks for more than half of this machine's memory (--config mem_mb): the Snakefile's
    local limit (the machine's memory, rlrepro.cluster.local_memory_mb) runs them one at a time on 2 free cores,
    where the pipeline above runs them side by side. A PBT population of 3 peaks at about 11.5 GB at cpu: two at
    once on 24 GB would be killed."""
    from rlrepro.cluster import machine_memory_mb

    specs = tmp_path / "specs"
    make_toy_spec(specs, experiment="toy_mem", smoke_environments=["catch"], smoke_frames=100)
    base = tmp_path / "results"
    result = snakemake(tmp_path, "-c2", "--config", "scale=smoke", f"specs={specs}", f"results={base}",
                       f"mem_mb={machine_memory_mb() // 2 + 1}", env=subprocess_env)
    assert result.returncode == 0, _output(result)
    runs = seed_runs(f"sqlite:///{base / 'mlflow.db'}", "toytest/toy_mem")
    assert len({run.data.tags["variant"] for run in runs}) == 4  # 2 variants and their frozen arms
    assert _overlapping_jobs(runs) == []


def test_running_snakemake_again_does_nothing(pipeline: Pipeline, subprocess_env):
    again = snakemake(pipeline.workdir, "-c2", *pipeline.config, env=subprocess_env)
    assert again.returncode == 0, _output(again)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_an_edited_spec_redraws_its_table_without_retraining(pipeline: Pipeline, subprocess_env):
    # A researcher edits a claim in the YAML: the table and the report must follow; no run retrains (its resolved
    # config is unchanged). Snakemake compares an input's content, not only its mtime: the edit changes the text
    # (a comment: the spec still validates), and the original text and mtime are put back afterwards.
    spec = next(pipeline.specs.rglob("toy_e2e.yaml"))
    text, before = spec.read_text(), spec.stat()
    spec.write_text(text + "\n# an edited statement\n")
    try:
        dry = snakemake(pipeline.workdir, "-n", *pipeline.config, env=subprocess_env, timeout=120)
    finally:
        spec.write_text(text)
        os.utime(spec, (before.st_atime, before.st_mtime))
    assert dry.returncode == 0, _output(dry)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    assert jobs.get("aggregate") == "1" and jobs.get("report") == "1", _output(dry)
    assert not [name for name in jobs if name.startswith("train_")], _output(dry)


def test_a_new_scale_after_a_smoke_run_plans_its_training_jobs(pipeline: Pipeline, subprocess_env):
    # One MLflow store (and its marker) serves every scale. Were the scale among the store rule's params, the first
    # run at another scale would re-run only that rule ("params have changed") and exit 0 having trained nothing.
    config = ["--config", "scale=cpu", f"specs={pipeline.specs}", f"results={pipeline.base}"]
    dry = snakemake(pipeline.workdir, "-n", *config, env=subprocess_env, timeout=120)
    assert dry.returncode == 0, _output(dry)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M))
    trains = sum(int(count) for name, count in jobs.items() if name.startswith("train_"))
    assert trains == len(VARIANTS) * 2, _output(dry)  # cpu scale: both variants on Catch and CartPole
    assert "mlflow_store" not in jobs, _output(dry)
    assert {"aggregate", "report"} <= set(jobs), _output(dry)
    assert not (pipeline.base / "cpu").exists()  # a dry run writes nothing


def test_mlflow_sync_afterwards_skips_every_run(pipeline: Pipeline, subprocess_env, mlflow_runs):
    result = subprocess.run(
        [sys.executable, "-m", "rlrepro", "mlflow-sync", "--scale", "smoke", "--results", str(pipeline.base)],
        cwd=pipeline.workdir, capture_output=True, text=True, env=subprocess_env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"created=0 failed=0 replaced=0 skipped={len(ARMS) * len(SEEDS)}"

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=pipeline.uri)
    experiment = client.get_experiment_by_name("toytest/toy_e2e")
    after = [r for r in client.search_runs([experiment.experiment_id], max_results=1000) if "rlrepro.run_key" in r.data.tags]
    assert sorted(r.info.run_id for r in after) == sorted(r.info.run_id for r in mlflow_runs)  # no duplicates


def test_an_explicit_dmlab_experiment_fails_before_training_naming_deepmind_lab(
    pipeline: Pipeline, tmp_path: Path, subprocess_env
):
    # The tracking store of the end-to-end run is copied in (a fresh store takes seconds to migrate).
    base = tmp_path / "results"
    base.mkdir()
    for name in ("mlflow.db", "mlflow.db.ready", ".mlflow-store.json"):
        shutil.copy2(pipeline.base / name, base / name)
    config = ["--config", "scale=smoke", f"specs={REPO / 'specs'}", f"results={base}", "only=impala/dmlab_single_task"]
    result = snakemake(tmp_path, "-c2", *config, env=subprocess_env, timeout=120)

    assert result.returncode != 0, _output(result)
    logs = base / "smoke" / "logs" / "train" / "impala" / "dmlab_single_task"
    text = (logs / "default" / "rooms_watermaze" / "seeds0-0.log").read_text()
    assert "DeepMind Lab is not installed" in text and "Traceback" not in text, text
    assert not (base / "smoke" / "runs").exists()


@pytest.mark.parametrize("only", ["impla", "toytest/nosuchexp"])
def test_an_only_that_matches_nothing_fails_listing_the_names_and_leaves_the_report(
    pipeline: Pipeline, subprocess_env, only: str
):
    report = (pipeline.root / "REPORT.md").read_bytes()
    result = snakemake(pipeline.workdir, "-c2", *pipeline.config, f"only={only}", env=subprocess_env, timeout=120)
    assert result.returncode != 0, _output(result)
    output = result.stdout + result.stderr  # Snakemake prints a Snakefile's error on stdout
    assert f"only={only}: '{only}' matches no spec" in output
    assert "papers: toytest; experiments: toytest/toy_e2e" in output
    assert (pipeline.root / "REPORT.md").read_bytes() == report


def test_a_narrow_only_does_not_shrink_the_report(pipeline: Pipeline, make_toy_spec, subprocess_env):
    # A second experiment, not run: only=toytest/toy_e2e must still give a report of both experiments.
    extra = make_toy_spec(pipeline.specs, experiment="toy_unrun", smoke_environments=["catch"])
    report = pipeline.root / "REPORT.md"
    before = report.read_bytes()
    try:
        report.unlink()
        result = snakemake(
            pipeline.workdir, "-c2", *pipeline.config, "only=toytest/toy_e2e", env=subprocess_env, timeout=300
        )
        assert result.returncode == 0, _output(result)
        text = report.read_text()
        assert "2 experiment(s)" in text and "### toytest/toy_e2e" in text and "### toytest/toy_unrun" in text
        assert "(`toytest/toy_e2e` `vtrace_beats_none`)" in text  # the results of the selected experiment
        assert "This run (only=toytest/toy_e2e): 1 experiment(s)" in text  # first, with its tally
        assert "This run: 1 experiment(s) (toytest/toy_e2e)" in result.stdout + result.stderr
    finally:
        extra.unlink()
        # the report step's params name the run's only=: a run without it writes the report again, as later tests
        # (and a user's next plain run) expect
        snakemake(pipeline.workdir, "-c2", *pipeline.config, env=subprocess_env, timeout=300)
        report.write_bytes(before)


def test_an_unknown_scale_is_an_error_listing_the_scales(tmp_path: Path, subprocess_env):
    result = snakemake(tmp_path, "-n", "--config", "scale=huge", f"specs={REPO / 'specs'}", env=subprocess_env, timeout=60)
    assert result.returncode != 0
    output = result.stdout + result.stderr  # Snakemake prints a Snakefile's error on stdout
    assert "--config scale=huge: unknown scale; expected one of smoke, cpu, paper" in output, _output(result)
    assert "KeyError" not in output


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("gpus=abc", "--config gpus=abc: expected a non-negative whole number"),
        ("mem_mb=-5", "--config mem_mb=-5: expected a non-negative whole number"),
        ("only=", "--config only= is empty: name PAPER or PAPER/EXPERIMENT"),
        ("results={file}", "--config results={file}: a file; expected a folder"),
    ],
)
def test_a_bad_config_value_is_an_error_naming_the_key(tmp_path: Path, subprocess_env, setting: str, message: str):
    # Before: int()'s "invalid literal" without the key, a NotADirectoryError, and only= planned every paper.
    file = tmp_path / "a_file"
    file.write_text("")
    args = ["-n", "--config", "scale=smoke", f"specs={REPO / 'specs' / 'frodo'}", setting.format(file=file)]
    result = snakemake(tmp_path, *args, env=subprocess_env, timeout=300)
    output = result.stdout + result.stderr  # Snakemake prints a Snakefile's error on stdout
    assert result.returncode != 0 and message.format(file=file) in output, _output(result)


def test_the_lock_files_of_a_killed_snakemake_are_removed_by_the_next_run(pipeline: Pipeline, subprocess_env):
    # What kill -9 of Snakemake leaves: its lock files, naming the outputs it was making.
    lockdir = pipeline.workdir / ".snakemake" / "locks"
    lockdir.mkdir(parents=True, exist_ok=True)
    (lockdir / "0.output.lock").write_text(str(pipeline.root / "REPORT.md") + "\n")
    (lockdir / "0.input.lock").write_text(str(pipeline.root / "tables" / "toytest" / "toy_e2e.md") + "\n")
    result = snakemake(pipeline.workdir, "-c2", *pipeline.config, env=subprocess_env)
    assert result.returncode == 0, _output(result)
    assert "removed 2 stale Snakemake lock file(s)" in result.stderr
    assert "Nothing to be done" in result.stdout + result.stderr
    assert not list(lockdir.glob("*.lock"))


@pytest.mark.slow
def test_ctrl_c_with_two_jobs_exits_in_seconds_with_runs_killed_and_the_next_sync_repairs_them(
    tmp_path: Path, make_toy_spec, subprocess_env
):
    import os
    import signal
    import time

    specs = tmp_path / "specs"
    # No claims, so no frozen arm: the two jobs on 2 cores are the two variants' (with the arm Snakemake may start
    # the arm's first, and the wait below for both variants' chunks would outlast the arm's jobs)
    make_toy_spec(specs, experiment="toy_ctrlc", smoke_environments=["catch"], smoke_frames=400 * 500, updates_per_chunk=25,
                  claims=False)
    workdir = tmp_path / "work"
    workdir.mkdir()
    base = workdir / "results"
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), "-c2", "--config",
               "scale=smoke", f"specs={specs}", f"results={base}"]  # fmt: skip
    # Its own process group, which receives the SIGINT as a terminal's Ctrl-C reaches every process in it.
    with open(tmp_path / "snakemake.log", "w") as log:
        process = subprocess.Popen(command, cwd=workdir, env=subprocess_env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    runs = base / "smoke" / "runs" / "toytest" / "toy_ctrlc"
    try:
        deadline = time.monotonic() + 600
        while not all(
            (runs / v / "catch" / "seed0" / "metrics.jsonl").is_file()
            and len((runs / v / "catch" / "seed0" / "metrics.jsonl").read_text().splitlines()) >= 2
            for v in VARIANTS
        ):
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "snakemake.log").read_text()
            time.sleep(0.2)
        started = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=300)
        assert time.monotonic() - started < 60, "Ctrl-C took more than a minute"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for variant in VARIANTS:
        log = (base / "smoke" / "logs" / "train" / "toytest" / "toy_ctrlc" / variant / "catch" / "seeds0-1.log").read_text()
        assert "database is locked" not in log and "Traceback" not in log, log

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{base / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("toytest/toy_ctrlc")
    assert sorted(r.info.status for r in client.search_runs([experiment.experiment_id])) == ["KILLED"] * 4
    sync = [sys.executable, "-m", "rlrepro", "mlflow-sync", "--scale", "smoke", "--results", str(base)]
    first = subprocess.run(sync, cwd=workdir, capture_output=True, text=True, env=subprocess_env, timeout=300)
    assert first.stdout.strip() == "created=0 failed=0 replaced=4 skipped=0", first.stderr
    for run in client.search_runs([experiment.experiment_id]):  # every chunk on disk is in MLflow
        folder = runs / run.data.tags["variant"] / "catch" / f"seed{run.data.tags['seed']}"
        lines = len((folder / "metrics.jsonl").read_text().splitlines())
        assert run.info.status == "KILLED" and len(client.get_metric_history(run.info.run_id, "episode_return")) == lines
    again = subprocess.run(sync, cwd=workdir, capture_output=True, text=True, env=subprocess_env, timeout=300)
    assert again.stdout.strip() == "created=0 failed=0 replaced=0 skipped=4", again.stderr


@pytest.mark.slow
def test_after_kill_9_of_snakemake_the_same_command_recovers_and_finishes(tmp_path: Path, make_toy_spec, subprocess_env):
    import os
    import signal
    import time

    specs = tmp_path / "specs"
    make_toy_spec(specs, experiment="toy_kill", smoke_environments=["catch"], smoke_frames=40 * 500, updates_per_chunk=25)
    workdir = tmp_path / "work"
    workdir.mkdir()
    base = workdir / "results"
    config = ["--config", "scale=smoke", f"specs={specs}", f"results={base}"]
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), "-c2", *config]
    with open(tmp_path / "first.log", "w") as log:
        process = subprocess.Popen(command, cwd=workdir, env=subprocess_env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    metrics = base / "smoke" / "runs" / "toytest" / "toy_kill" / "vtrace" / "catch" / "seed0" / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 600
        while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 2):
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # Snakemake and its jobs, as a lost terminal or the OOM killer
        process.wait()
    assert list((workdir / ".snakemake" / "locks").glob("*.lock")), "the killed Snakemake left no lock (nothing tested)"

    again = snakemake(workdir, "-c2", *config, env=subprocess_env)  # the README's command, unchanged
    assert again.returncode == 0, _output(again)
    assert "removed 2 stale Snakemake lock file(s)" in again.stderr
    assert (base / "smoke" / "REPORT.md").is_file()
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["frames"] for r in records] == [500 * (i + 1) for i in range(40)]  # resumed: no gap, no duplicate


# --------------------------------------------------------------------------------------------------
# the repository's own specs


def test_the_dag_of_the_repository_specs_builds(tmp_path: Path, subprocess_env):
    result = snakemake(tmp_path, "-n", "--config", f"specs={REPO / 'specs'}", env=subprocess_env, timeout=60)
    assert result.returncode == 0, _output(result)
    jobs = re.findall(r"^(train_\w+)\s+1$", result.stdout, flags=re.M)
    assert jobs and not any("dmlab" in job for job in jobs)  # DMLab left out of the default target
    # Issue 32: the cpu scale's opt-in set (runs that decide no claim there) is left out of the default job too
    every_rule = re.findall(r"^(train_\w+)\s+\d+$", result.stdout, flags=re.M)
    assert any(job.startswith("train_frodo_catch") for job in every_rule)
    assert not any(job.startswith(("train_frodo_atari", "train_impala_atari57_deep")) for job in every_rule)
    # Issue 46: the main job shows IMPALA learning Atari (atari57_shallow's cpu scale: Breakout, and its frozen arm)
    assert any(job.startswith("train_impala_atari57_shallow") for job in every_rule)
    assert not (tmp_path / "results").exists()  # a dry run writes nothing
    # Issue 31 item 10: a job prints one line of what it does and its log, not its input and output lists (a job of
    # 16 seeds listed 16 summary paths; the aggregate step every summary of its experiment: lines of 1,000+ columns)
    per_job = (result.stdout + result.stderr).partition("\nReasons:")[0]  # the dry run's reasons summary follows
    assert not re.search(r"^    (input|output): .*summary\.json", per_job, flags=re.M)
    assert re.search(r"^Job \d+: train impala/offpolicy_correction_toy corr=vtrace__lag=32__replay=0\.0__B=32 on catch, "
                     r"seeds 0-15\n    log: results/cpu/logs/train/impala/offpolicy_correction_toy/", per_job, flags=re.M)
    assert re.search(r"^Job \d+: tables of frodo/random_walk: results/cpu/tables/frodo/random_walk\.md$", per_job,
                     flags=re.M)
    # the longest: the log path of the IMPALA toy's longest variant name's frozen arm (135 columns); was 1,500+
    assert max(len(line) for line in per_job.splitlines()) <= 136


def test_set_curves_runs_the_opt_in_experiments_only_and_an_unknown_set_is_an_error(tmp_path: Path, subprocess_env):
    specs = f"specs={REPO / 'specs' / 'frodo'}"
    result = snakemake(tmp_path, "-n", "--config", specs, "set=curves", env=subprocess_env, timeout=60)
    assert result.returncode == 0, _output(result)
    jobs = re.findall(r"^(train_\w+)\s+\d+$", result.stdout, flags=re.M)
    assert {job.split("_s0_")[0] for job in jobs} == {"train_frodo_atari57", "train_frodo_atari8_ablations"}
    result = snakemake(tmp_path, "-n", "--config", specs, "set=curvez", env=subprocess_env, timeout=60)
    assert result.returncode != 0
    assert "set=curvez: 'curvez' is no set of these specs; expected one of all, curves, default" in _output(result)


def test_snakemake_lint_passes(tmp_path: Path, subprocess_env):
    result = snakemake(tmp_path, "--lint", "--config", f"specs={REPO / 'specs'}", env=subprocess_env, timeout=60)
    assert result.returncode == 0, _output(result)


# --------------------------------------------------------------------------------------------------
# robustness (issue 33)


@pytest.mark.slow
def test_a_tracking_server_that_is_down_costs_seconds_and_never_the_tables(
    tmp_path: Path, make_toy_spec, subprocess_env
):
    import socket

    # A port that is bound and never listened on: connections are refused for the whole test.
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{dead.getsockname()[1]}"
        specs = tmp_path / "specs"
        make_toy_spec(specs, experiment="toy_down", smoke_environments=["catch"], smoke_seeds=1, smoke_frames=200)
        workdir = tmp_path / "work"
        workdir.mkdir()
        base = workdir / "results"
        env = {**subprocess_env, "MLFLOW_TRACKING_URI": uri}
        # Before: training finished, then mlflow-publish retried for 2,478 s and failed the aggregate rule, whose
        # tables Snakemake then deleted. The bound is the test's own timeout (a loaded 2-core machine needed more
        # than 600 s for the two tiny jobs and the tables).
        result = snakemake(workdir, "-c2", "--config", "scale=smoke", f"specs={specs}", f"results={base}", env=env,
                           timeout=1500)  # fmt: skip
    assert result.returncode == 0, _output(result)
    tables = base / "smoke" / "tables" / "toytest"
    assert {p.name for p in tables.iterdir()} >= {f"toy_down.{ext}" for ext in ("md", "csv", "json", "png")}
    assert (base / "smoke" / "REPORT.md").is_file()
    log = (base / "smoke" / "logs" / "aggregate" / "toytest" / "toy_down.log").read_text()
    assert "rlrepro mlflow-sync: gave up" in log and f"rlrepro mlflow-publish: not published to {uri}" in log, log
    assert "Traceback" not in log, log


@pytest.mark.slow
def test_after_kill_9_of_snakemake_alone_its_training_jobs_are_stopped_and_the_same_command_finishes(
    tmp_path: Path, make_toy_spec, subprocess_env
):
    import os
    import signal
    import time

    from rlrepro.recovery import orphaned_trainer_pids

    specs = tmp_path / "specs"
    make_toy_spec(specs, experiment="toy_orphan", smoke_environments=["catch"], smoke_frames=40 * 500, updates_per_chunk=25)
    workdir = tmp_path / "work"
    workdir.mkdir()
    base = workdir / "results"
    config = ["--config", "scale=smoke", f"specs={specs}", f"results={base}"]
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), "-c2", *config]
    with open(tmp_path / "first.log", "w") as log:
        process = subprocess.Popen(command, cwd=workdir, env=subprocess_env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    metrics = base / "smoke" / "runs" / "toytest" / "toy_orphan" / "vtrace" / "catch" / "seed0" / "metrics.jsonl"
    orphans: list[int] = []
    try:
        deadline = time.monotonic() + 600
        while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 2):
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            time.sleep(0.2)
        process.kill()  # kill -9 of Snakemake alone (a lost terminal kills its group; the OOM killer one process)
        process.wait()
        orphans = orphaned_trainer_pids(workdir)
        assert orphans, "no training job outlived the killed Snakemake (nothing tested)"
        for pid in orphans:  # frozen, so they cannot finish their few chunks before the next run looks (a loaded
            os.kill(pid, signal.SIGSTOP)  # machine starts Snakemake slower); its SIGTERM comes with a SIGCONT
        # Before: the same command failed at once ("... is being trained by pid ...").
        again = snakemake(workdir, "-c2", *config, env=subprocess_env)
    finally:
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert again.returncode == 0, _output(again)
    assert f"stopped {len(orphans)} training job(s) (pid {', '.join(map(str, orphans))})" in again.stderr
    assert "being trained by" not in again.stdout + again.stderr
    assert (base / "smoke" / "REPORT.md").is_file()
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["frames"] for r in records] == [500 * (i + 1) for i in range(40)]  # resumed: no gap, no duplicate


# --------------------------------------------------------------------------------------------------
# a spec of one's own, and a spec edited in place, never replace finished runs (issue 50)


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (its lock files aside) by its path relative to it: the sha256 of its bytes."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".train.lock"}


def _mlflow_runs(uri: str, experiment: str, view: str = "ALL") -> dict[str, tuple]:
    """The experiment's MLflow runs, deleted ones included: id -> (lifecycle, status, name, tags)."""
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id], max_results=1000, run_view_type=getattr(ViewType, view))
    return {r.info.run_id: (r.info.lifecycle_stage, r.info.status, r.info.run_name, dict(r.data.tags)) for r in runs}


def test_a_copied_and_edited_spec_stops_before_writing_naming_both_specs_and_the_ways_on(
    pipeline: Pipeline, make_toy_spec, tmp_path: Path, subprocess_env
):
    # A new user copies the spec elsewhere, changes its seeds and a hyper-parameter, and runs it into the same results
    # folder. Before: its jobs trained into the repository spec's run folders, rewrote its table and report and
    # replaced its MLflow runs, without a word. Now nothing is written; the message says why and what to do.
    mine = tmp_path / "myspecs"
    make_toy_spec(mine, experiment="toy_e2e", smoke_environments=["catch"], smoke_frames=350, smoke_seeds=3,
                  learning_rate=1e-3)
    files, runs = _files(pipeline.base), _mlflow_runs(pipeline.uri, "toytest/toy_e2e")
    config = ["--config", "scale=smoke", f"specs={mine}", f"results={pipeline.base}"]
    result = snakemake(pipeline.workdir, "-c2", *config, env=subprocess_env, timeout=300)
    output = _output(result)
    assert result.returncode != 0, output
    assert "stopped before writing anything: this run would replace finished runs of another spec" in output
    original, copy = next(pipeline.specs.rglob("toy_e2e.yaml")), mine / "toytest" / "toy_e2e.yaml"
    assert f"finished runs:  {original}" in output and f"this spec:      {copy}" in output
    assert "agent.optimizer.learning_rate: 0.002 -> 0.001" in output and "scales.smoke.seeds: 2 -> 3" in output
    assert "--config results=results/mine" in output and "--config retire=yes moves them" in output
    assert _files(pipeline.base) == files  # run folders, tables, report, MLflow's store: byte for byte
    assert _mlflow_runs(pipeline.uri, "toytest/toy_e2e") == runs
    # The explicit flag gets past the stop: a dry run says what it would retire, and moves nothing.
    dry = snakemake(pipeline.workdir, "-n", *config, "retire=yes", env=subprocess_env, timeout=120)
    assert dry.returncode == 0, _output(dry)
    assert "finished runs of an earlier configuration would be retired (kept, moved aside)" in dry.stderr
    assert _files(pipeline.base) == files


def test_a_spec_edited_in_place_retrains_and_keeps_the_earlier_runs_findable(
    make_toy_spec, tmp_path: Path, subprocess_env
):
    # The everyday flow: edit a hyper-parameter of a spec and run again. It must still just work (the runs of the new
    # configuration train), and the earlier configuration's finished runs, tables and MLflow runs are kept: moved to
    # <scale>/retired/<time>/, named in the new table and the report, their MLflow runs tagged rlrepro.retired.
    # Before: the runs were trained again over the old folders and their MLflow runs deleted.
    # One chunk per run on Catch: 2 jobs of 2 seeds, then the edited variant's job again.
    specs = tmp_path / "specs"
    spec = make_toy_spec(specs, experiment="toy_edit", smoke_environments=["catch"], smoke_frames=100)
    workdir = tmp_path / "work"
    workdir.mkdir()
    p = Pipeline(workdir, specs, None)  # type: ignore[arg-type]
    first = snakemake(workdir, "-c2", *p.config, env=subprocess_env)
    assert first.returncode == 0, _output(first)
    runs_dir = p.root / "runs" / "toytest" / "toy_edit"
    # each variant and its frozen arm (the claim reads both variants): an edit of 'none' changes its arm's run too
    before = {variant: _files(runs_dir / variant) for variant in ARMS}
    table_before = _files(p.root / "tables" / "toytest")
    mirrors_before = _mlflow_runs(p.uri, "toytest/toy_edit", "ACTIVE_ONLY")
    seed_mirrors = {i: r for i, r in mirrors_before.items() if "rlrepro.run_key" in r[3]}
    edited = {i: r for i, r in seed_mirrors.items() if r[3]["variant"] in ("none", "none@frozen")}
    old = json.loads((runs_dir / "none" / "catch" / "seed0" / "summary.json").read_text())["run"]
    old_arm = json.loads((runs_dir / "none@frozen" / "catch" / "seed0" / "summary.json").read_text())["run"]
    assert len(before["none"]) == 2 * 3 and len(seed_mirrors) == 8 and len(edited) == 4

    # the variant 'none' gets another policy lag: its runs train again, those of 'vtrace' stay as they are
    text = spec.read_text()
    spec.write_text(text.replace("    loss.correction: none\n", "    loss.correction: none\n    policy_lag: 2\n"))
    second = snakemake(workdir, "-c2", *p.config, env=subprocess_env)
    assert second.returncode == 0, _output(second)
    [retired] = sorted((p.root / "retired").iterdir())
    assert (f"finished runs of an earlier configuration retired (kept, moved aside) to {retired.relative_to(workdir)}"
            in second.stderr)
    # the earlier runs, byte for byte, and the tables of that time beside them; the unchanged variant left alone
    assert _files(retired / "runs" / "toytest" / "toy_edit") == {
        f"{arm}/{k}": v for arm in ("none", "none@frozen") for k, v in before[arm].items()}
    assert _files(runs_dir / "vtrace") == before["vtrace"] and _files(runs_dir / "vtrace@frozen") == before["vtrace@frozen"]
    assert _files(retired / "tables" / "toytest") == table_before
    manifest = json.loads((retired / "retired.json").read_text())["experiments"]["toytest/toy_edit"]
    assert manifest["spec_source"] == spec.as_posix() and manifest["why"].startswith("the spec was edited")
    assert {r["config_hash"] for r in manifest["runs"].values()} == {old["config_hash"], old_arm["config_hash"]}
    # the new configuration's runs in the usual place
    new = json.loads((runs_dir / "none" / "catch" / "seed0" / "summary.json").read_text())["run"]
    assert new["config_hash"] != old["config_hash"] and new["spec_source"] == spec.as_posix()
    # which configuration each number comes from, and where the earlier one is
    table = json.loads((p.root / "tables" / "toytest" / "toy_edit.json").read_text())
    assert {row["variant"]: row["config_hash"] for row in table["rows"]}["none"] == new["config_hash"]
    where = f"retired/{retired.name}"
    md = (p.root / "tables" / "toytest" / "toy_edit.md").read_text()
    hashes = ", ".join(f"`{h}`" for h in sorted({old["config_hash"], old_arm["config_hash"]}))  # the variant's and its arm's
    assert f"- earlier configuration retired (kept): `{where}`, 4 run(s) of config hash(es) {hashes}" in md
    assert f"An earlier configuration's 4 run(s) (config hash(es) {hashes}) are kept in `{where}`" in (
        p.root / "REPORT.md").read_text()
    # MLflow: the earlier mirrors are kept (not deleted), re-keyed and tagged; the new runs have mirrors of their own
    mirrors = _mlflow_runs(p.uri, "toytest/toy_edit", "ACTIVE_ONLY")
    for run_id, (_, _, name, tags) in edited.items():
        assert mirrors[run_id][3]["rlrepro.retired"] == f"results/smoke/{where}"
        assert mirrors[run_id][2] == f"{name} (retired {retired.name})"
        assert mirrors[run_id][3]["rlrepro.run_key"] == f"{tags['rlrepro.run_key']} (retired {retired.name})"
    def unlinked(run: tuple) -> tuple:  # the current runs are linked to the experiment's new summary run
        return (*run[:3], {k: v for k, v in run[3].items() if k != "rlrepro.summary_run"})

    kept = {i: unlinked(r) for i, r in seed_mirrors.items() if i not in edited}
    assert {i: unlinked(mirrors[i]) for i in kept} == kept
    fresh = [r for i, r in mirrors.items() if i not in mirrors_before and "rlrepro.run_key" in r[3]]
    assert sorted(r[3]["rlrepro.run_key"] for r in fresh) == sorted(r[3]["rlrepro.run_key"] for r in edited.values())
