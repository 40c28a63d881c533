"""rlrepro.tracking: store creation, live tracker, re-ingestion, sqlite concurrency, failure isolation.

MLflow is slow to import and to migrate a fresh sqlite store (~2-4 s), so one store is created per
session and copied into each test's tmp_path (with its ``.ready`` marker, so ensure_store takes its fast path).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rlrepro import tracking as T
from rlrepro.tracking import client as client_module
from rlrepro.tracking import live as live_module
from rlrepro.tracking import publish as publish_module
from rlrepro.tracking import reach
from rlrepro.tracking import store as store_module
from rlrepro.jobs.run_lock import own_run_dir

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------------
# helpers


def make_run(
    runs_root: Path,
    *,
    paper: str = "toy",
    experiment: str = "catch",
    variant: str = "base",
    env: str = "Catch",
    seed: int = 0,
    steps: int = 5,
    frames_per_step: int = 1000,
    complete: bool = True,
    config: dict | None = None,
    final_return: float = 1.0,
) -> Path:
    """Fabricate a run folder as the trainer writes it."""
    run_key = f"{paper}/{experiment}/{variant}/{env}/seed{seed}"
    run_dir = runs_root / paper / experiment / variant / env / f"seed{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = {"agent": {"lr": 3e-4, "net": {"torso": "shallow", "widths": [16, 32]}}, "discount": 0.99}
    resolved = {
        "run": {
            "paper": paper,
            "experiment": experiment,
            "variant": variant,
            "env": env,
            "seed": seed,
            "scale": "smoke",
            "spec_hash": "abc123",
            "git_commit": "deadbeef",
            "run_key": run_key,
        },
        "config": config,
        "spec": {"name": experiment, "variants": [variant]},
    }
    (run_dir / "spec.resolved.json").write_text(json.dumps(resolved, indent=1))
    write_metrics(run_dir, range(steps), frames_per_step=frames_per_step)
    if complete:
        write_summary(run_dir, final_return=final_return, frames=steps * frames_per_step)
    return run_dir


def metric_record(i: int, frames_per_step: int = 1000) -> dict:
    return {
        "frames": (i + 1) * frames_per_step,
        "updates": i + 1,
        "wall_time": 0.5 * (i + 1),
        "return": float(i),
        "loss": 1.0 / (i + 1),
    }


def write_metrics(run_dir: Path, steps, frames_per_step: int = 1000) -> list[dict]:
    recs = [metric_record(i, frames_per_step) for i in steps]
    with (run_dir / "metrics.jsonl").open("a") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    return recs


def write_summary(run_dir: Path, final_return: float = 1.0, frames: int = 5000) -> None:
    summary = {"final": {"return": final_return}, "frames": frames, "wall_time": 2.5}
    (run_dir / "summary.json").write_text(json.dumps(summary))


def client_for(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def runs_for_key(uri: str, run_key: str) -> list:
    client = client_for(uri)
    exps = client.search_experiments()
    return client.search_runs([e.experiment_id for e in exps], filter_string=f"tags.`rlrepro.run_key` = '{run_key}'")


def all_active_runs(uri: str) -> list:
    client = client_for(uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=1000)


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


# --------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def template_db(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("template")
    uri = f"sqlite:///{d}/mlflow.db?timeout=60"
    T.ensure_store(uri)
    return d / "mlflow.db"


@pytest.fixture
def store(tmp_path, template_db, monkeypatch) -> str:
    """A ready, empty sqlite store in this test's results dir; returns its URI."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(template_db, results / "mlflow.db")
    shutil.copy(template_db.with_name("mlflow.db.ready"), results / "mlflow.db.ready")
    return T.default_tracking_uri(results)


# --------------------------------------------------------------------------------------------------
# tests


def test_import_is_cheap():
    code = "import sys, rlrepro.tracking; print('mlflow' in sys.modules, 'sqlalchemy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_default_tracking_uri(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = T.default_tracking_uri(tmp_path / "results")
    assert uri == f"sqlite:///{(tmp_path / 'results').resolve()}/mlflow.db?timeout={T.SQLITE_TIMEOUT_S}"
    assert T.sqlite_db_path(uri) == (tmp_path / "results" / "mlflow.db").resolve()
    assert T.sqlite_db_path("http://localhost:5000") is None
    assert T.sqlite_db_path("sqlite://") is None
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert T.default_tracking_uri(tmp_path) == "http://mlflow.example:5000"
    T.ensure_store("http://mlflow.example:5000")  # non-sqlite: no-op, no network


def test_sqlite_timeout_query_reaches_sqlite(tmp_path):
    """SQLAlchemy's pysqlite dialect passes ?timeout= to sqlite3.connect (the busy timeout)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/t.db?timeout=42")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 42000
    engine.dispose()


def test_ensure_store_two_processes_at_once(tmp_path):
    results = tmp_path / "results"
    uri = f"sqlite:///{results}/mlflow.db?timeout=60"
    code = "import sys; from rlrepro.tracking import ensure_store; ensure_store(sys.argv[1])"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, uri], env=subprocess_env(), stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    db = results / "mlflow.db"
    assert store_module._db_revision(db) is not None
    assert (results / "mlflow.db.ready").exists()
    # idempotent, and the fast path neither imports mlflow nor takes long
    code = (
        "import sys, time; from rlrepro.tracking import ensure_store; t = time.perf_counter(); "
        "ensure_store(sys.argv[1]); print('mlflow' in sys.modules, time.perf_counter() - t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, uri], env=subprocess_env(), capture_output=True, text=True, check=True
    )
    imported, secs = out.stdout.split()
    assert imported == "False" and float(secs) < 0.5
    T.ensure_store(uri)
    # the store works
    client = client_for(uri)
    assert client.get_experiment("0") is not None


def test_round_trip_start_log_finish(store, tmp_path):
    config = {
        "agent": {"lr": 3e-4, "net": {"torso": "shallow", "widths": [16, 32]}},
        "discount": 0.99,
        "weird key/with:chars": True,
        "long": "x" * 7000,
    }
    run_dir = make_run(tmp_path / "runs", steps=3, complete=False, config=config)
    with (run_dir / "metrics.jsonl").open("a") as fh:  # NaN as the trainer may write it, plus a torn line
        fh.write('{"frames": 3500, "updates": 4, "wall_time": 1.9, "return": NaN, "loss": 0.3}\n')
    tracker = T.RunTracker(run_dir, uri=store).start()
    assert tracker.active
    new = write_metrics(run_dir, range(3, 6))
    tracker.log(new)
    tracker.log({"frames": 7000, "return": 9.0, "note": "not a metric", "flag": True})
    write_summary(run_dir, final_return=5.0, frames=6000)
    tracker.finish()
    assert tracker.enabled and not tracker.active

    client = client_for(store)
    run = client.get_run(tracker.run_id)
    tags = run.data.tags
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "Catch s0 · base"
    assert client.get_experiment(run.info.experiment_id).name == "toy/catch"
    expected_tags = {
        "paper": "toy", "experiment": "catch", "variant": "base", "env": "Catch", "seed": "0",
        "scale": "smoke", "git_commit": "deadbeef", "spec_hash": "abc123",
        "rlrepro.run_key": "toy/catch/base/Catch/seed0",
        "rlrepro.summary_sha256": hashlib.sha256((run_dir / "summary.json").read_bytes()).hexdigest(),
    }
    assert {k: tags.get(k) for k in expected_tags} == expected_tags
    params = run.data.params
    assert params["agent.lr"] == "0.0003"
    assert params["agent.net.torso"] == "shallow"
    assert params["agent.net.widths"] == "[16, 32]"
    assert params["weird key_with_chars"] == "true"
    assert len(params["long"]) == T.MAX_PARAM_VAL_LENGTH and "truncated" in params["long"]

    hist = client.get_metric_history(tracker.run_id, "return")
    by_step = {m.step: m.value for m in hist}
    assert sorted(by_step) == [1000, 2000, 3000, 3500, 4000, 5000, 6000, 7000]
    assert by_step[2000] == 1.0 and by_step[7000] == 9.0 and math.isnan(by_step[3500])
    assert len(client.get_metric_history(tracker.run_id, "loss")) == 7
    for not_metric in ("updates", "wall_time", "note", "flag"):
        assert client.get_metric_history(tracker.run_id, not_metric) == []
    # frames is a metric too (31.8): a chart's x-axis menu offers it
    assert sorted(m.value for m in client.get_metric_history(tracker.run_id, "frames"))[-1] == 7000

    artifacts = {a.path for a in client.list_artifacts(tracker.run_id)}
    assert artifacts == {"spec.resolved.json", "summary.json"}
    # artifacts live beside the DB, not in the working directory
    assert Path(run.info.artifact_uri.removeprefix("file://")).is_relative_to(tmp_path / "results")

    # a resumed run re-mirrors from the files: the old MLflow run is replaced, not duplicated
    with T.RunTracker(run_dir, uri=store) as again:
        pass
    assert again.replaced_runs == [tracker.run_id]
    runs = runs_for_key(store, "toy/catch/base/Catch/seed0")
    assert [r.info.run_id for r in runs] == [again.run_id]
    assert len(client.get_metric_history(again.run_id, "return")) == 7  # everything in metrics.jsonl


def test_context_manager_marks_failed_run(store, tmp_path):
    run_dir = make_run(tmp_path / "runs", complete=False)
    with pytest.raises(ValueError):
        with T.RunTracker(run_dir, uri=store) as tracker:
            raise ValueError("training blew up")
    run = client_for(store).get_run(tracker.run_id)
    assert run.info.status == "FAILED" and "rlrepro.summary_sha256" not in run.data.tags


def test_sync_all_idempotent_replace_and_partial(store, tmp_path):
    runs = tmp_path / "runs"
    a = make_run(runs, seed=0)
    make_run(runs, seed=1)
    make_run(runs, paper="other", experiment="walk", env="RandomWalk", seed=0)

    assert T.sync_all(runs, uri=store) == {"created": 3, "replaced": 0, "skipped": 0, "failed": 0}
    assert T.sync_all(runs, uri=store) == {"created": 0, "replaced": 0, "skipped": 3, "failed": 0}
    assert len(all_active_runs(store)) == 3
    assert T.sync_all(runs, uri=store, only="other") == {"created": 0, "replaced": 0, "skipped": 1, "failed": 0}

    write_summary(a, final_return=42.0)  # changed result -> the mirror is stale
    assert T.sync_run_dir(a, uri=store) == "replaced"
    assert T.sync_run_dir(a, uri=store) == "skipped"
    assert len(all_active_runs(store)) == 3

    # a partial folder is mirrored as KILLED without summary tag, then replaced once complete
    p = make_run(runs, seed=2, complete=False)
    assert T.sync_run_dir(p, uri=store) == "created"
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed2")
    assert mirror.info.status == "KILLED" and "rlrepro.summary_sha256" not in mirror.data.tags
    assert T.sync_run_dir(p, uri=store) == "skipped"  # unchanged partial folder: its KILLED mirror is current
    write_metrics(p, range(5, 6))
    assert T.sync_run_dir(p, uri=store) == "replaced"  # still partial, one more chunk: re-mirrored from the files
    write_metrics(p, range(6, 8))
    write_summary(p, frames=8000)
    assert T.sync_all(runs, uri=store) == {"created": 0, "replaced": 1, "skipped": 3, "failed": 0}
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed2")
    assert mirror.info.status == "FINISHED"
    assert len(client_for(store).get_metric_history(mirror.info.run_id, "return")) == 8
    assert len(all_active_runs(store)) == 4

    # a live (RUNNING) mirror of an unfinished run that a trainer holds is left alone; a broken folder is
    # counted, not fatal
    live_dir = make_run(runs, seed=3, complete=False)
    with own_run_dir(live_dir):
        live = T.RunTracker(live_dir, uri=store).start()
        (runs / "broken" / "x").mkdir(parents=True)
        (runs / "broken" / "x" / "spec.resolved.json").write_text("{not json")
        counts = T.sync_all(runs, uri=store)
        assert counts == {"created": 0, "replaced": 0, "skipped": 5, "failed": 1}
        assert [r.info.run_id for r in runs_for_key(store, "toy/catch/base/Catch/seed3")] == [live.run_id]
        live.finish("KILLED")


def test_sync_repairs_a_mirror_left_running_by_a_trainer_that_is_gone(store, tmp_path):
    # What Ctrl-C or kill -9 leaves: a RUNNING mirror, an incomplete folder, no process holding its lock.
    runs = tmp_path / "runs"
    killed = make_run(runs, seed=0, complete=False)
    left = T.RunTracker(killed, uri=store).start()  # never finished: RUNNING, as after kill -9
    completed = make_run(runs, seed=1, complete=False)
    interrupted = T.RunTracker(completed, uri=store).start()
    interrupted.mark_killed()  # then the run was resumed and completed by a trainer without MLflow
    write_metrics(completed, range(5, 7))
    write_summary(completed, frames=7000)

    assert T.sync_all(runs, uri=store) == {"created": 0, "replaced": 2, "skipped": 0, "failed": 0}
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed0")
    assert mirror.info.run_id != left.run_id and mirror.info.status == "KILLED"
    assert len(client_for(store).get_metric_history(mirror.info.run_id, "return")) == 5  # every chunk on disk
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed1")
    assert mirror.info.status == "FINISHED" and len(client_for(store).get_metric_history(mirror.info.run_id, "return")) == 7
    assert T.sync_all(runs, uri=store) == {"created": 0, "replaced": 0, "skipped": 2, "failed": 0}  # idempotent


CONCURRENT_WRITER = textwrap.dedent(
    """
    import json, sys, warnings
    from pathlib import Path
    from rlrepro.tracking import RunTracker
    warnings.simplefilter("error")
    run_dir, uri = Path(sys.argv[1]), sys.argv[2]
    tracker = RunTracker(run_dir, uri=uri).start()
    steps = 1000                       # 2 metrics per record -> 2,000 metric values
    for lo in range(0, steps, 50):     # batches of 100 values, as a trainer flushing every 50 records
        recs = [{"frames": 4 * (i + 1), "updates": i + 1, "wall_time": 0.0, "return": float(i), "loss": -float(i)}
                for i in range(lo, lo + 50)]
        tracker.log(recs)
    (run_dir / "summary.json").write_text(json.dumps({"final": {"return": 999.0}, "frames": 4000}))
    tracker.finish()
    assert tracker.enabled
    print(tracker.run_id)
    """
)


def test_a_job_whose_experiment_tag_another_job_inserted_first_sets_it_again(store, tmp_path, monkeypatch):
    """Two jobs of a new experiment tag it at once. MLflow's SQL store sets a tag by a select, then an insert: the
    second job's insert fails on the tag's unique key (seen in test_three_concurrent_writers, and in 1 of 24
    processes racing on one tag: ``(sqlite3.IntegrityError) UNIQUE constraint failed: experiment_tags.key,
    experiment_tags.experiment_id``). Here the other job's insert lands between this job's select and insert, for
    each tag; the job sets the tag again (an update now), and its mirror starts instead of being disabled."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import BAD_REQUEST

    real_client, raced = client_module._client, []

    class Racing:
        def __init__(self, client):
            self.client = client

        def __getattr__(self, name):
            return getattr(self.client, name)

        def set_experiment_tag(self, experiment_id, key, value):
            if key not in raced:
                raced.append(key)
                real_client(store).set_experiment_tag(experiment_id, key, value)  # the other job's insert
                raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: experiment_tags.key, "
                                      "experiment_tags.experiment_id", error_code=BAD_REQUEST)  # as MLflow raises it
            return self.client.set_experiment_tag(experiment_id, key, value)

    monkeypatch.setattr(live_module, "_client", lambda uri: Racing(real_client(uri)))  # the tracker makes its client
    tracker = T.RunTracker(make_run(tmp_path / "runs"), uri=store).start()
    assert tracker.active and raced == [T.EXPERIMENT_KIND_TAG, T.NOTE_TAG]
    tracker.finish()
    assert tracker.enabled
    tags = client_for(store).get_experiment(tracker.experiment_id).tags
    assert tags[T.EXPERIMENT_KIND_TAG] == T.EXPERIMENT_KIND and "Runs: one per" in tags[T.NOTE_TAG]


def test_three_concurrent_writers(store, tmp_path):
    run_dirs = [make_run(tmp_path / "runs", seed=s, steps=0, complete=False) for s in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_WRITER, str(d), store],
            env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for d in run_dirs
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-2000:] for o in outs]
    client = client_for(store)
    for out, _ in outs:
        run_id = out.strip().splitlines()[-1]
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED"
        for key in ("return", "loss"):
            hist = client.get_metric_history(run_id, key)
            assert len(hist) == 1000
            assert sorted(m.step for m in hist) == [4 * (i + 1) for i in range(1000)]
    assert len(all_active_runs(store)) == 3


def test_broken_uri_disables_tracking_without_raising(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the store's directory should be")
    uri = f"sqlite:///{blocker}/sub/mlflow.db"
    run_dir = make_run(tmp_path / "runs", complete=False)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    t0 = time.perf_counter()
    with pytest.warns(T.TrackingWarning, match="mlflow-sync") as caught:
        with T.RunTracker(run_dir, uri=uri) as tracker:
            tracker.log([metric_record(10)])
            tracker.log([metric_record(11)])
    assert len(caught) == 1  # one warning, not one per call
    assert time.perf_counter() - t0 < 10
    assert not tracker.enabled and tracker.run_id is None
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    with pytest.raises(OSError):
        T.sync_run_dir(run_dir, uri=uri)  # the explicit sync command does report the failure


def test_lock_errors_are_retried_then_disable(store, tmp_path, monkeypatch):
    """A store that stays locked: retried with backoff, then one warning; a transient lock: recovered."""
    import sqlite3

    assert reach._is_transient(sqlite3.OperationalError("database is locked"))
    assert not reach._is_transient(ValueError("bad param"))

    run_dir = make_run(tmp_path / "runs", complete=False)
    tracker = T.RunTracker(run_dir, uri=store, retries=3).start()
    calls = {"n": 0}
    real = tracker._client.log_batch

    def flaky(*a, **kw):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise sqlite3.OperationalError("database is locked")
        return real(*a, **kw)

    monkeypatch.setattr(tracker._client, "log_batch", flaky)
    tracker.log([metric_record(10)])
    assert tracker.enabled and calls["n"] == 3

    def locked(*a, **kw):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(tracker._client, "log_batch", locked)
    with pytest.warns(T.TrackingWarning):
        tracker.log([metric_record(11)])
    assert not tracker.enabled
    tracker.log([metric_record(12)])  # no-op, no second warning
    tracker.finish()
    # the abandoned mirror is marked FAILED (not left RUNNING), so the next sync replaces it
    assert client_for(store).get_run(tracker.run_id).info.status == "FAILED"
    assert T.sync_run_dir(run_dir, uri=store) == "replaced"


# --------------------------------------------------------------------------------------------------
# tracking outages: training never waits on tracking; the sync says what it waits for and gives up


def _unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


DEAD_SERVER_TRACKER = textwrap.dedent(
    """
    import sys, time, warnings
    from pathlib import Path
    from rlrepro.tracking import trackers_for
    run_dirs, uri = [Path(p) for p in sys.argv[2:]], sys.argv[1]
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trackers = trackers_for(run_dirs, uri=uri)
        for tracker in trackers:
            tracker.start()
        for i in range(3):
            for tracker in trackers:
                tracker.log([{"frames": 1000 * (i + 1), "updates": i + 1, "loss": 0.5}])
        for tracker in trackers:
            tracker.finish()
    print(len(caught), round(time.monotonic() - started, 1), [t.enabled for t in trackers])
    print(caught[0].message if caught else "")
    """
)


def test_a_tracking_server_that_is_down_costs_one_short_probe_and_one_warning(tmp_path):
    uri = f"http://127.0.0.1:{_unused_port()}"
    run_dirs = [make_run(tmp_path / "runs", seed=s, complete=False) for s in (0, 1)]
    before = [{p.name: p.read_bytes() for p in d.iterdir()} for d in run_dirs]
    # MLflow's own HTTP retries took minutes per call here; the old code did not end within the timeout.
    out = subprocess.run(
        [sys.executable, "-c", DEAD_SERVER_TRACKER, uri, *map(str, run_dirs)],
        env=subprocess_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    counts, message = out.stdout.splitlines()[:2]
    warnings_count, seconds, enabled = counts.split(" ", 2)
    assert warnings_count == "1" and enabled == "[False, False]"  # one warning for the job, not one per run
    assert float(seconds) < T.PROBE_TIMEOUT_S + 10
    assert f"no answer from {uri}" in message and "mlflow-sync" in message
    assert [{p.name: p.read_bytes() for p in d.iterdir()} for d in run_dirs] == before


def test_mlflow_sync_to_a_server_that_is_down_says_what_it_waits_for_and_gives_up(tmp_path):
    uri = f"http://127.0.0.1:{_unused_port()}"
    make_run(tmp_path / "results" / "smoke" / "runs", seed=0)
    command = [sys.executable, "-m", "rlrepro", "mlflow-sync", "--scale", "smoke", "--results", str(tmp_path / "results"),
               "--uri", uri, "--wait", "4"]  # fmt: skip
    started = time.monotonic()
    out = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 40
    assert out.returncode == 6, out.stderr
    assert f"waiting up to 4 s for the tracking server {uri}" in out.stderr
    assert "gave up" in out.stderr and "run folders" in out.stderr and "Traceback" not in out.stderr
    best_effort = subprocess.run(command + ["--best-effort", "--wait", "0"], env=subprocess_env(), capture_output=True,
                                 text=True, timeout=60)  # fmt: skip
    assert best_effort.returncode == 0 and "gave up" in best_effort.stderr


def test_marking_killed_never_waits_on_a_locked_store(store, tmp_path, capfd):
    # Ctrl-C while the other job holds the sqlite write lock: the trainer must still exit in seconds.
    import sqlite3

    run_dir = make_run(tmp_path / "runs", complete=False)
    tracker = T.RunTracker(run_dir, uri=store).start()
    holder_connection = sqlite3.connect(str(T.sqlite_db_path(store)), timeout=1)
    holder_connection.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        tracker.mark_killed()
        assert time.monotonic() - started < T.KILL_MARK_TIMEOUT_S + 2
    finally:
        holder_connection.rollback()
        holder_connection.close()
    assert "`rlrepro mlflow-sync` repairs it" in capfd.readouterr().err
    assert T.sync_run_dir(run_dir, uri=store) == "replaced"
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed0")
    assert mirror.info.status == "KILLED" and mirror.info.run_id != tracker.run_id


@pytest.mark.slow
def test_a_tracking_server_killed_mid_run_costs_seconds_and_one_warning(tmp_path):
    port = _unused_port()
    uri = f"http://127.0.0.1:{port}"
    env = subprocess_env() | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}", "--default-artifact-root", str(tmp_path / "art")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while T.probe_store(uri) is not None:
            assert time.monotonic() < deadline and server.poll() is None, "the mlflow server did not start"
            time.sleep(1)
        run_dir = make_run(tmp_path / "runs", complete=False)
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tracker = T.RunTracker(run_dir, uri=uri).start()
            tracker.log([metric_record(10)])
            assert tracker.active and not caught, [str(w.message) for w in caught]
            os.killpg(server.pid, 9)  # the server dies mid-run
            server.wait(timeout=30)
            started = time.monotonic()
            for i in range(11, 15):
                tracker.log([metric_record(i)])
            tracker.finish()
            assert time.monotonic() - started < 60  # MLflow's defaults took minutes per call
        assert len(caught) == 1 and not tracker.enabled
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 9)
            server.wait(timeout=30)


def test_sync_of_a_torn_metrics_file_warns_naming_it_and_a_corrupted_one_fails_naming_the_line(store, tmp_path):
    runs = tmp_path / "runs"
    torn = make_run(runs, seed=0, steps=4, complete=False)
    metrics = torn / "metrics.jsonl"
    metrics.write_text(metrics.read_text()[:-12])  # kill -9 inside the last append
    with pytest.warns(UserWarning, match=rf"{metrics}:4: dropped a torn last line"):
        assert T.sync_run_dir(torn, uri=store) == "created"
    (mirror,) = runs_for_key(store, "toy/catch/base/Catch/seed0")
    assert mirror.info.status == "KILLED"  # not FINISHED: the folder has no summary
    assert len(client_for(store).get_metric_history(mirror.info.run_id, "return")) == 3

    corrupted = make_run(runs, seed=1, steps=4)
    lines = (corrupted / "metrics.jsonl").read_text().splitlines(keepends=True)
    (corrupted / "metrics.jsonl").write_text(lines[0] + lines[1][:-5] + "\n" + "".join(lines[2:]))
    with pytest.raises(ValueError, match=rf"{corrupted / 'metrics.jsonl'}:2: not JSON"):
        T.sync_run_dir(corrupted, uri=store)
    assert runs_for_key(store, "toy/catch/base/Catch/seed1") == []  # nothing half-mirrored that looks complete


def test_sync_with_an_only_that_matches_no_run_folder_is_an_error(store, tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, seed=0)
    with pytest.raises(ValueError, match=r"--only 'impla' matches no run folder under .*; there are runs of toy/catch/base"):
        T.sync_all(runs, uri=store, only="impla")
    assert T.sync_all(runs, uri=store, only="toy/catch")["created"] == 1


# --------------------------------------------------------------------------------------------------
# namespaces: two checkouts on one store (issue 15)


def test_project_namespace_is_made_once_per_results_root_and_the_environment_overrides_it(tmp_path, monkeypatch):
    monkeypatch.delenv(T.PROJECT_ENV, raising=False)
    first, second = tmp_path / "checkout-a" / "results", tmp_path / "checkout-b" / "results"
    a = T.project_namespace(first)
    assert a == T.project_namespace(first) == (first / ".project").read_text().strip()  # stable: read back
    assert a.startswith("checkout-a-") and len(a) == len("checkout-a-") + 8
    assert T.project_namespace(second) != a  # same folder names under another checkout: another identity
    monkeypatch.setenv(T.PROJECT_ENV, "lab.team-1")
    assert T.project_namespace(first) == "lab.team-1"
    monkeypatch.setenv(T.PROJECT_ENV, "a/b")
    with pytest.raises(ValueError, match="RLREPRO_PROJECT.*'a/b'"):
        T.project_namespace(first)


def test_two_results_roots_syncing_to_one_store_keep_both_sets_of_runs(store, tmp_path, monkeypatch):
    """The report of issue 15: the second checkout's sync said created=0 replaced=8 (it replaced the first's runs)."""
    monkeypatch.delenv(T.PROJECT_ENV, raising=False)
    bases = [tmp_path / "one" / "results", tmp_path / "two" / "results"]
    for base, value in zip(bases, (1.0, 2.0)):
        for seed in range(4):
            make_run(base / "smoke" / "runs", seed=seed, final_return=value)
    projects = [T.project_namespace(base) for base in bases]
    counts = [T.sync_all(base / "smoke" / "runs", uri=store, project=p) for base, p in zip(bases, projects)]
    assert counts == [{"created": 4, "replaced": 0, "skipped": 0, "failed": 0}] * 2
    runs = all_active_runs(store)
    assert len(runs) == 8
    for project in projects:
        mine = [r for r in runs if r.data.tags["rlrepro.project"] == project]
        assert sorted(r.data.tags["rlrepro.run_key"] for r in mine) == [
            f"{project}/toy/catch/base/Catch/seed{s}" for s in range(4)
        ]
    # idempotent per checkout: a second sync of either touches nothing of the other
    assert T.sync_all(bases[0] / "smoke" / "runs", uri=store, project=projects[0])["skipped"] == 4
    assert len(all_active_runs(store)) == 8


def test_a_mirror_made_before_projects_is_replaced_not_duplicated(store, tmp_path):
    run_dir = make_run(tmp_path / "runs")
    assert T.sync_run_dir(run_dir, uri=store) == "created"  # no project: the old key
    assert T.sync_run_dir(run_dir, uri=store, project="p1") == "replaced"
    runs = all_active_runs(store)
    assert [r.data.tags["rlrepro.run_key"] for r in runs] == ["p1/toy/catch/base/Catch/seed0"]


def test_cluster_executors_with_the_default_sqlite_store_are_warned(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    message = T.shared_sqlite_warning("slurm", tmp_path / "results")
    assert message is not None
    assert str((tmp_path / "results" / "mlflow.db").resolve()) in message and "MLFLOW_TRACKING_URI" in message
    assert T.shared_sqlite_warning(None, tmp_path) is None  # local run (`snakemake -c2`)
    assert T.shared_sqlite_warning("local", tmp_path) is None
    assert T.shared_sqlite_warning("dryrun", tmp_path) is None
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    assert T.shared_sqlite_warning("slurm", tmp_path) is None  # a server: nothing to warn about


def test_publishing_to_a_server_that_is_down_probes_once_and_sends_nothing(tmp_path, monkeypatch):
    # The pipeline's aggregate rule ended with `mlflow-publish` here: MLflow's own HTTP retries inside ten of ours
    # took 2,478 s and failed the rule (Snakemake then deleted the tables). One probe must decide it.
    uri = f"http://127.0.0.1:{_unused_port()}"
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"rows": [], "claims": []}))
    monkeypatch.setattr(publish_module, "_client", lambda uri: pytest.fail("an MLflow client was made after the probe failed"))
    with pytest.raises(T.StoreUnreachableError, match=f"no answer from {uri}"):
        T.publish_experiment(uri=uri, scale="smoke", paper="toy", experiment="catch", spec={}, spec_path="s.yaml",
                             table_json=table, files=[])  # fmt: skip


def test_bounded_http_requests_turn_mlflow_telemetry_off_unless_the_user_set_it(monkeypatch):
    # its thread unset a variable while our request read os.environ: KeyError '_MLFLOW_TELEMETRY_SESSION_ID'
    monkeypatch.delenv("MLFLOW_DISABLE_TELEMETRY", raising=False)
    T.bound_http_requests()
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true"
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")
    T.bound_http_requests()
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "false"


def test_publishing_to_a_tracking_server_adds_no_retries_of_ours_to_mlflow_s_own(monkeypatch):
    # MLflow's HTTP client retries each request (bounded by HTTP_BOUNDS); ten tries of ours on top multiplied them.
    calls = []

    def refused():
        calls.append(1)
        raise ConnectionError("Connection refused")

    with pytest.raises(ConnectionError):
        reach._bounded_retry("http://127.0.0.1:1")(refused)
    assert len(calls) == 1
    calls.clear()
    monkeypatch.setattr(time, "sleep", lambda s: None)
    with pytest.raises(ConnectionError):
        reach._bounded_retry("sqlite:////tmp/x.db")(refused)  # a locked sqlite file passes: it is waited for
    assert len(calls) == 10


def test_mlflow_publish_best_effort_keeps_the_tables_and_exits_0_when_the_server_is_down(tmp_path, toy_spec):
    uri = f"http://127.0.0.1:{_unused_port()}"
    tables = tmp_path / "results" / "smoke" / "tables" / "toytest"
    tables.mkdir(parents=True)
    (tables / "toy.json").write_text(json.dumps({"rows": [], "claims": []}))
    (tables / "toy.md").write_text("table\n")
    command = [sys.executable, "-m", "rlrepro", "mlflow-publish", "--spec", str(toy_spec), "--scale", "smoke",
               "--results", str(tmp_path / "results"), "--uri", uri]  # fmt: skip
    strict = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert strict.returncode != 0 and "StoreUnreachableError" in strict.stderr
    best = subprocess.run(command + ["--best-effort"], env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert best.returncode == 0, best.stderr
    assert f"not published to {uri}" in best.stderr and "Traceback" not in best.stderr
    assert "run this command again when the tracking server is up" in best.stderr
    assert (tables / "toy.md").read_text() == "table\n"


# --------------------------------------------------------------------------------------------------
# what the MLflow UI shows (issue 31.8)


def test_run_names_are_short_and_distinct_with_variant_env_and_seed():
    # today every run read `corr=none__lag...` in the runs table's name column (about 24 characters wide)
    grid = ["corr=vtrace__lag=32__replay=0.0", "corr=none__lag=0__replay=0.5"]
    assert [T.run_name(v, "catch", 1, grid) for v in grid] == ["catch s1 · vtrace lag32 replay0",
                                                               "catch s1 · none lag0 replay0.5"]  # fmt: skip
    assert T.run_name("frodo", "catch", 0) == "catch s0 · frodo"
    # two variants that would read alike keep their full names
    alike = ["target=none__lag=0", "corr=none__lag=0"]
    assert [T.run_name(v, "catch", 0, alike) for v in alike] == [f"catch s0 · {v}" for v in alike]


def test_the_experiment_description_starts_with_one_plain_line():
    spec = {"reference": {"title": "IMPALA", "citation": "Espeholt et al., 2018", "where": "Table 2"}}
    first, *rest = T.experiment_description(spec, "specs/impala/toy.yaml").splitlines()
    assert first == "IMPALA (Espeholt et al., 2018): Table 2"  # the experiments list shows it as it is
    assert "step = environment frames" in "\n".join(rest)


def test_publish_lists_the_seed_runs_beside_the_summary_with_readable_interval_metrics(store, tmp_path):
    runs_root = tmp_path / "runs"
    seed_dirs = [make_run(runs_root, seed=s) for s in (0, 1)]
    for run_dir in seed_dirs:
        T.sync_run_dir(run_dir, uri=store)
    client = client_for(store)
    (nested, _) = [runs_for_key(store, f"toy/catch/base/Catch/seed{s}")[0] for s in (0, 1)]
    client.set_tag(nested.info.run_id, "mlflow.parentRunId", "an-older-summary")  # nested by an older rlrepro
    table = tmp_path / "catch.json"
    table.write_text(json.dumps({"claims": [], "rows": [
        {"variant": "base", "env": "Catch", "frames": 5000, "mean": 1.5, "ci95_low": 1.0, "ci95_high": 2.0},
    ]}))  # fmt: skip
    spec = {"reference": {"title": "T", "citation": "C", "where": "W"}, "variants": [{"name": "base"}]}
    run_id = T.publish_experiment(uri=store, scale="smoke", paper="toy", experiment="catch", spec=spec,
                                  spec_path="s.yaml", table_json=table, files=[])  # fmt: skip
    summary = client.get_run(run_id)
    assert summary.data.metrics == {"Catch - base - mean": 1.5, "Catch - base - ci95_lo": 1.0,
                                    "Catch - base - ci95_hi": 2.0}  # fmt: skip
    for seed in (0, 1):
        (run,) = runs_for_key(store, f"toy/catch/base/Catch/seed{seed}")
        assert run.data.tags["rlrepro.summary_run"] == run_id
        assert "mlflow.parentRunId" not in run.data.tags  # the runs table lists it without expanding the summary
        assert run.info.run_name == f"Catch s{seed} · base"
        frames = client.get_metric_history(run.info.run_id, "frames")  # the chart's x-axis menu offers it by name
        assert [(m.step, m.value) for m in frames] == [(1000 * (i + 1), 1000.0 * (i + 1)) for i in range(5)]
