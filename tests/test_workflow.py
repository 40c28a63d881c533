"""Specs x scale -> run units -> jobs: the plan Snakemake builds its DAG from."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlrepro.specs import SpecError, load_spec, validate_spec
from rlrepro.workflow import SelectionError, cannot_run, config_hash, plan, plan_experiment, results_root, select
from tests.factories import toy_spec_data, write_spec

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml"


def spec_data() -> dict[str, Any]:
    return toy_spec_data(
        reference={"title": "T", "citation": "C", "where": "W", "notes": "n"},
        environments=[
            {"kind": "jax", "id": "catch", "name": "catch"},
            {"kind": "jax", "id": "cartpole", "name": "cartpole", "kwargs": {"max_steps": 50}},
        ],
        variants=[
            {"name": "a"},
            {"name": "b", "agent": {"policy_lag": 4}},
            {"name": "c", "agent": {"loss.correction": "none"}},
        ],
        budget={"frames": 1000, "seeds": 5},
        scales={
            "smoke": {
                "frames": 100, "seeds": 1, "variants": ["a"], "environments": ["cartpole"], "agent": {"batch_size": 2}
            },
            "cpu": {"frames": 200, "seeds": 4},
        },
        run={"seeds_per_job": 3},
        claims=[
            {"kind": "ordering", "id": "a_beats_c", "statement": "s", "better": "a", "worse": ["c"],
             "judged_at": ["cpu"]}
        ],
    )


def dmlab_data() -> dict[str, Any]:
    data = spec_data()
    data.update(paper="lab", experiment="watermaze", claims=[])
    data["environments"] = [{"kind": "dmlab", "id": "rooms_watermaze", "level": "rooms_watermaze"}]
    data["scales"]["smoke"] = {"frames": 100, "seeds": 1}
    return data


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    """A spec folder outside the repository with one toy and one DMLab experiment."""
    folder = tmp_path / "myspecs"
    write_spec(folder, spec_data())
    write_spec(folder, dmlab_data())
    return folder


def _only_plan(spec_dir: Path, scale: str):
    [experiment] = plan([spec_dir], scale, only="toy/mini")
    return experiment


def _own(jobs) -> list:
    """The jobs of the spec's own variants (the frozen arm's: ``test_the_plan_adds_the_frozen_arm_...``)."""
    return [job for job in jobs if "@" not in job.variant]


# --- units, seeds, frames and jobs at each scale ---------------------------------------------------------------


def test_smoke_plan_keeps_the_selected_variants_and_environments(spec_dir: Path) -> None:
    experiment = _only_plan(spec_dir, "smoke")
    assert [(j.variant, j.env, j.seeds, j.frames) for j in _own(experiment.jobs)] == [("a", "cartpole", (0,), 100)]
    [unit] = experiment.jobs[0].units
    assert unit.relpath == "toy/mini/a/cartpole/seed0"


def test_cpu_plan_groups_seeds_into_jobs_of_seeds_per_job(spec_dir: Path) -> None:
    experiment = _only_plan(spec_dir, "cpu")
    # 3 variants x 2 envs, 4 seeds in jobs of 3: (0, 1, 2) and (3,)
    jobs = _own(experiment.jobs)
    assert len(jobs) == 12
    assert {j.seeds for j in jobs} == {(0, 1, 2), (3,)}
    units = [u for j in jobs for u in j.units]
    assert len(units) == 3 * 2 * 4
    assert {u.frames for u in units} == {200}
    assert len({u.relpath for u in units}) == len(units)
    assert [(j.variant, j.env) for j in experiment.jobs[:4]] == [("a", "catch")] * 2 + [("a", "cartpole")] * 2


def test_paper_plan_uses_the_budget_on_every_variant_and_environment(spec_dir: Path) -> None:
    experiment = _only_plan(spec_dir, "paper")
    units = [u for j in experiment.jobs for u in j.units]
    assert len(units) == 3 * 2 * 5
    assert {u.frames for u in units} == {1000}
    assert {j.seeds for j in experiment.jobs} == {(0, 1, 2), (3, 4)}
    assert {u.seed for u in units} == set(range(5))


def test_without_seeds_per_job_all_seeds_of_a_cell_are_one_job(tmp_path: Path) -> None:
    data = spec_data()
    del data["run"]
    path = write_spec(tmp_path, data)
    experiment = plan_experiment(path, load_spec(path), "cpu")
    assert len(_own(experiment.jobs)) == 6
    assert all(j.seeds == (0, 1, 2, 3) for j in experiment.jobs)


def test_real_toy_spec_at_smoke_scale() -> None:
    experiment = plan_experiment(TOY, load_spec(TOY), "smoke")
    variants = ("corr=vtrace__lag=32__replay=0.0__B=32", "corr=none__lag=32__replay=0.0__B=32",
                "corr=vtrace__lag=0__replay=0.5__B=32", "corr=none__lag=0__replay=0.5__B=32",
                "corr=vtrace__lag=0__replay=0.0__B=16")
    assert {(j.variant, j.env) for j in _own(experiment.jobs)} == {(v, e) for v in variants for e in ("catch", "cartpole")}
    assert all(j.seeds == (0, 1) and j.frames == 12_800 for j in experiment.jobs)


def test_job_paths_and_names(spec_dir: Path) -> None:
    experiment = _only_plan(spec_dir, "cpu")
    job = experiment.jobs[1]
    assert (job.variant, job.env, job.seeds) == ("a", "catch", (3,))
    root = results_root("out", "cpu")
    assert root == Path("out/cpu")
    assert job.summaries(root) == ["out/cpu/runs/toy/mini/a/catch/seed3/summary.json"]
    assert job.log(root) == "out/cpu/logs/train/toy/mini/a/catch/seeds3-3.log"
    assert job.units[0].checkpoint_dir(root) == Path("out/cpu/checkpoints/toy/mini/a/catch/seed3")
    assert re.fullmatch(r"train_toy_mini_a_catch_s3_3_[0-9a-f]{8}", job.name)
    assert experiment.table_paths(root) == {ext: f"out/cpu/tables/toy/mini.{ext}" for ext in ("md", "csv", "png")}
    assert len({j.name for j in experiment.jobs}) == len(experiment.jobs)


def test_job_names_of_real_specs_are_unique_identifiers() -> None:
    jobs = [j for s in ("smoke", "cpu", "paper") for p in plan([REPO / "specs"], s) for j in p.jobs]
    for scale in ("smoke", "cpu", "paper"):
        names = [j.name for p in plan([REPO / "specs"], scale) for j in p.jobs]
        assert len(set(names)) == len(names)
    assert all(j.name.isidentifier() for j in jobs)


def test_job_names_stay_unique_when_variant_names_differ_only_in_punctuation(tmp_path: Path) -> None:
    data = spec_data()
    data["variants"] = [{"name": "lag=8"}, {"name": "lag-8", "agent": {"policy_lag": 8}}]
    data["claims"] = []
    data["scales"]["smoke"].pop("variants")
    path = write_spec(tmp_path, data)
    jobs = plan_experiment(path, load_spec(path), "smoke").jobs
    assert len({j.name for j in jobs}) == len(jobs)  # each becomes a Snakemake rule name


# --- selection and spec folders ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        (None, {"toy/mini", "lab/watermaze"}),
        ("toy", {"toy/mini"}),
        ("toy/", {"toy/mini"}),
        ("lab/watermaze", {"lab/watermaze"}),
        ("toy/mini, lab", {"toy/mini", "lab/watermaze"}),
    ],
)
def test_only_selects_papers_and_experiments(spec_dir: Path, only: str | None, expected: set[str]) -> None:
    assert {p.key for p in plan([spec_dir], "smoke", only)} == expected


@pytest.mark.parametrize("only", ["toy/other", "to", "toy/mini,lba"])
def test_an_only_item_that_selects_nothing_is_an_error_listing_the_names(spec_dir: Path, only: str) -> None:
    # It used to plan nothing and exit 0 (and rewrite REPORT.md as "0 experiment(s)").
    unknown = only.split(",")[-1]
    with pytest.raises(SelectionError, match=rf"'{unknown}' matches no spec.*papers: lab, toy; experiments: lab/watermaze, toy/mini"):
        plan([spec_dir], "smoke", only)


def test_an_unknown_scale_is_an_error_listing_the_scales(spec_dir: Path) -> None:
    with pytest.raises(SelectionError, match="scale 'huge': unknown; expected one of smoke, cpu, paper"):
        plan([spec_dir], "huge")  # type: ignore[arg-type]


def test_select_on_real_specs() -> None:
    spec = load_spec(TOY)
    assert select(spec, "impala") and select(spec, "impala/offpolicy_correction_toy") and select(spec, "")
    assert not select(spec, "impala/dmlab30") and not select(spec, "frodo")


def test_spec_file_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_spec(tmp_path / "elsewhere", spec_data())
    monkeypatch.chdir(tmp_path)  # neither the repository nor the spec folder
    [experiment] = plan([path], "cpu")
    assert experiment.spec_path == path
    assert all(j.spec_path == path for j in experiment.jobs)


def test_plan_of_a_missing_path_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such file or directory"):
        plan([tmp_path / "nope"], "cpu")


def test_plan_of_an_invalid_spec_is_a_spec_error(tmp_path: Path) -> None:
    data = spec_data()
    data["budget"]["seeds"] = "five"
    write_spec(tmp_path, data)
    with pytest.raises(SpecError, match="budget.seeds: expected a valid integer"):
        plan([tmp_path], "cpu")


# --- missing backends ----------------------------------------------------------------------------------------


def test_dmlab_experiment_reports_a_missing_backend_and_toy_does_not(spec_dir: Path) -> None:
    plans = {p.key: p for p in plan([spec_dir], "cpu")}
    assert cannot_run(plans["toy/mini"]) is None
    reason = cannot_run(plans["lab/watermaze"])
    assert reason is not None
    assert "deepmind_lab" in reason and "Bazel" in reason  # names the package and how to get it


def test_real_specs_that_cannot_run_here_say_why() -> None:
    for experiment in plan([REPO / "specs"], "smoke"):
        reason = cannot_run(experiment)
        if any(e.kind == "dmlab" for e in experiment.spec.environments):
            assert reason is not None and "DeepMind Lab" in reason, experiment.key
        elif any(e.kind == "flow_control" for e in experiment.spec.environments):
            assert reason is not None and "CUDA Navier-Stokes solver" in reason, experiment.key
        else:
            assert reason is None, experiment.key


def test_an_agent_on_an_environment_kind_it_cannot_train_on_is_reported() -> None:
    from rlrepro.agents.registry import not_implemented

    assert not_implemented("impala", "atari") is None and not_implemented("dqn", "atari") is None
    assert "dqn on 'jax' environments is not implemented yet" in not_implemented("dqn", "jax")
    assert "no trainer registered" in not_implemented("sac", "jax")


# --- config hash ---------------------------------------------------------------------------------------------


def _hash(data: dict[str, Any], variant: str = "a", env: str = "catch", scale: str = "cpu") -> str:
    return config_hash(validate_spec(data), variant, env, scale)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["claims"][0].update(statement="reworded", judged_at=["cpu", "paper"]),
        lambda d: d["claims"].clear(),
        lambda d: d["reference"].update(notes="a longer description", where="Fig. 2"),
        lambda d: d.update(paper_table={"caption": "c", "columns": ["x"], "rows": [[1]]}),
        lambda d: d["run"].update(seeds_per_job=1),
        lambda d: d["scales"]["cpu"].update(seeds=8, expected_minutes=3.0),
        lambda d: d["variants"][2]["agent"].update(policy_lag=9),  # another variant
        lambda d: d["scales"]["smoke"]["agent"].update(batch_size=1),  # another scale
    ],
)
def test_config_hash_ignores_what_does_not_change_the_run(edit) -> None:
    data = spec_data()
    edit(data)
    assert _hash(data) == _hash(spec_data())


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["agent"]["optimizer"].update(learning_rate=0.002),
        lambda d: d["agent"]["loss"].update(correction="none"),
        lambda d: d["variants"][0].update(agent={"unroll_length": 6}),
        lambda d: d["scales"]["cpu"].update(frames=300),
        lambda d: d["scales"]["cpu"].update(agent={"batch_size": 8}),
        lambda d: d["environments"][0].update(kwargs={"rows": 5}),
        lambda d: d["run"].update(updates_per_chunk=10),
    ],
)
def test_config_hash_changes_with_what_changes_the_run(edit) -> None:
    data = spec_data()
    edit(data)
    assert _hash(data) != _hash(spec_data())


def test_config_hash_differs_between_cells_and_is_set_on_jobs(spec_dir: Path) -> None:
    experiment = _only_plan(spec_dir, "cpu")
    by_cell = {(j.variant, j.env): j.config_hash for j in experiment.jobs}
    assert len(set(by_cell.values())) == len(by_cell) == 6 + 4  # and the frozen arms of a and b (the claim's)
    spec = experiment.spec
    assert by_cell[("b", "cartpole")] == config_hash(spec, "b", "cartpole", "cpu")
    assert config_hash(spec, "a", "catch", "smoke") != config_hash(spec, "a", "catch", "cpu")
    assert config_hash(spec, "a", "catch", "cpu") == config_hash(load_spec(experiment.spec_path), "a", "catch", "cpu")


# --- DAG building stays light -------------------------------------------------------------------------------

_IMPORT_CHECK = """
import json, sys
import rlrepro.workflow as workflow
import rlrepro.tracking  # the Snakefile imports it too
plans = [p for scale in ("smoke", "cpu", "paper") for p in workflow.plan([sys.argv[1]], scale)]
reasons = [workflow.cannot_run(p) for p in plans]
heavy = sorted(m for m in ("jax", "jaxlib", "mlflow", "matplotlib", "sqlalchemy") if m in sys.modules)
print(json.dumps({"heavy": heavy, "jobs": sum(len(p.jobs) for p in plans)}))
"""


def test_planning_every_spec_imports_no_jax_or_mlflow() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_CHECK, str(REPO / "specs")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=True,
    )
    report = json.loads(result.stdout)
    assert report["heavy"] == []
    assert report["jobs"] > 0


_PLAN_CHECK = """
import contextlib, io, json, sys
from rlrepro.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    for scale in ("smoke", "cpu", "paper"):
        main(["plan", "--scale", scale, "--specs", sys.argv[1], "--detail"])
import rlrepro.agents.impala_sr.profile  # the tables'
import importlib, pathlib, rlrepro.agents
for folder in sorted(pathlib.Path(rlrepro.agents.__file__).parent.glob("*/config.py")):  # every kind's config.py
    importlib.import_module(f"rlrepro.agents.{folder.parent.name}.config")
heavy = sorted(m for m in ("jax", "jaxlib", "mlflow", "flax", "optax") if m in sys.modules)
print(json.dumps({"heavy": heavy, "lines": len(out.getvalue().splitlines())}))
"""


def test_rlrepro_plan_and_the_agents_config_modules_import_no_jax() -> None:
    # Before: `rlrepro plan` loaded JAX (IMPALA's chunk plan imports agents/impala/config.py, whose package __init__
    # imported the learner and networks).
    result = subprocess.run([sys.executable, "-c", _PLAN_CHECK, str(REPO / "specs")], capture_output=True, text=True,
                            cwd=REPO, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["heavy"] == [] and report["lines"] > 50


def test_whole_machine_marks_the_jobs_and_leaves_the_config_hash_alone(tmp_path: Path) -> None:
    data = spec_data()
    shared = write_spec(tmp_path / "shared", data)
    data["run"] = {**data.get("run", {}), "whole_machine": True}
    alone = write_spec(tmp_path / "alone", data)
    [shared_plan] = plan([shared], "cpu")
    [alone_plan] = plan([alone], "cpu")
    assert not any(job.whole_machine for job in shared_plan.jobs)
    assert all(job.whole_machine for job in alone_plan.jobs)
    # how jobs share the machine is not what they compute: finished runs stay valid
    assert [j.config_hash for j in alone_plan.jobs] == [j.config_hash for j in shared_plan.jobs]


def test_the_throughput_experiment_runs_each_job_alone() -> None:
    [throughput] = plan([REPO / "specs" / "impala" / "throughput.yaml"], "cpu")
    assert throughput.jobs and all(job.whole_machine for job in throughput.jobs)


def test_frame_count_states_what_runs_train_and_what_a_search_counts() -> None:
    """Issue 17: the text tables, claims and the report use. The IMPALA toy at smoke: chunks of unroll 20 x batch 8 x
    25 updates = 4,000 frames, so its 12,800-frame budget trains 4 whole chunks. A loss search counts proposals
    (smoke: 4, in chunks of 2, so no rounding) and says what one trains (the smoke env_steps, 600 on CartPole)."""
    from rlrepro.workflow import frame_count

    toy = frame_count(load_spec(REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml"), "smoke")
    # with replay (fraction 0.5) an update charges only its 4 new rows: chunks of 2,000 frames, 7 of them
    assert (toy.low, toy.high, toy.budget, toy.unit) == (14_000, 16_000, 12_800, "frames")
    assert toy.text() == "14,000-16,000 frames per run (budget 12,800; training runs whole chunks)"
    search = frame_count(load_spec(REPO / "specs" / "evolving_rl" / "search_scratch_cartpole.yaml"), "smoke")
    assert search.text() == "4 proposals per run (each trains DQN for up to 600 environment steps on cartpole)"
    # issue 31: the smoke scale's env_steps {cartpole: 600, empty_5x5: 300} merged over the base's five entries
    # (up to 600,000 on LunarLander): the run trains only its suite's two members, 600 + 300 steps
    two = frame_count(load_spec(REPO / "specs" / "evolving_rl" / "search_from_scratch.yaml"), "smoke")
    assert two.text() == ("4 proposals per run (each trains DQN for up to 900 environment steps: cartpole 600, "
                          "empty_5x5 300)")


def test_job_groups_cover_every_job_once_and_their_patterns_give_each_job_s_own_paths() -> None:
    # One Snakemake rule per group (an experiment's seed range): its {variant}/{env} wildcards must rebuild each
    # job's summaries and log exactly, and its constraints must match its own variants and envs only.
    from types import SimpleNamespace

    from rlrepro.workflow import job_groups

    experiments = plan([REPO / "specs"], "paper")
    groups = [group for experiment in experiments for group in job_groups(experiment)]
    jobs = [job for experiment in experiments for job in experiment.jobs]
    assert sorted(id(j) for g in groups for j in g.jobs) == sorted(id(j) for j in jobs)
    assert len({g.name for g in groups}) == len(groups) and all(g.name.isidentifier() for g in groups)
    assert len(groups) < len(jobs) / 10  # the point: a grid per rule (38 rules for 755+ jobs at paper scale)
    for group in groups:
        for job in group.jobs:
            fill = dict(variant=job.variant, env=job.env)
            assert [p.format(**fill) for p in group.summaries("R")] == job.summaries("R")
            assert group.log("R").format(**fill) == job.log("R")
            assert group.job(SimpleNamespace(**fill)) is job and group.config_hash(SimpleNamespace(**fill)) == job.config_hash
            assert re.fullmatch(group.constraint("variant"), job.variant)
            assert re.fullmatch(group.constraint("env"), job.env)
        assert len({(j.frames, j.seeds, j.whole_machine) for j in group.jobs}) == 1  # one set of resources per rule


def test_impala_without_replay_hashes_as_before_the_replay_field_existed() -> None:
    """Adding ``agent.replay`` (fraction 0: no replay, what every earlier run did) must not retrain finished runs:
    the hash is the one main computed before the field existed (7709321); replay itself changes it."""
    spec = load_spec(REPO / "specs" / "impala" / "atari57_shallow.yaml")
    assert spec.agent.replay.fraction == 0
    assert config_hash(spec, "default", "pong", "cpu") == "0ce9a4e6b472"
    replay = spec.agent.replay.model_copy(update={"fraction": 0.5})
    replayed = spec.model_copy(update={"agent": spec.agent.model_copy(update={"replay": replay})})
    assert config_hash(replayed, "default", "pong", "cpu") != "0ce9a4e6b472"


def test_a_multitask_variant_is_one_job_per_seed_with_a_run_unit_per_game() -> None:
    # IMPALA §5.3.2: one agent on every game of the scale; tables and claims still read one run per game.
    from rlrepro.workflow import MULTITASK_ENV

    (experiment,) = plan(["specs/impala/atari57_multitask.yaml"], "smoke")
    assert [(job.variant, job.env, job.seeds) for job in _own(experiment.jobs)] == [
        ("pbt", MULTITASK_ENV, (0,)),
        ("no_pbt", MULTITASK_ENV, (0,)),
    ]
    for job in experiment.jobs:
        assert [unit.env for unit in job.units] == ["pong", "breakout"]
        assert [Path(s).parts[-3] for s in job.summaries("results/smoke")] == ["pong", "breakout"]
    pbt, no_pbt = _own(experiment.jobs)
    assert pbt.config_hash != no_pbt.config_hash  # the PBT switch changes the run
    (paper,) = plan(["specs/impala/atari57_multitask.yaml"], "paper")
    assert {len(job.units) for job in paper.jobs} == {57}


def test_a_multitask_jobs_runs_are_collected_as_one_cell_per_game(tmp_path: Path) -> None:
    # The tables and claims read per-game cells, although one job trained every game.
    from rlrepro.results.collect import collect

    (experiment,) = plan(["specs/impala/atari57_multitask.yaml"], "smoke")
    for job in experiment.jobs:
        for k, unit in enumerate(job.units):
            run_dir = unit.run_dir(tmp_path)
            run_dir.mkdir(parents=True)
            summary = {"final": {"eval_return": float(k)}, "frames": 4000, "run": {"git_commit": "x", "spec_hash": "y"}}
            (run_dir / "summary.json").write_text(json.dumps(summary))
            (run_dir / "metrics.jsonl").write_text("")
    cells = collect(experiment, tmp_path)
    own = sorted(key for key in cells if "@" not in key[0])
    assert own == [("no_pbt", "breakout"), ("no_pbt", "pong"), ("pbt", "breakout"), ("pbt", "pong")]
    assert cells[("pbt", "pong")].final == [0.0] and cells[("pbt", "breakout")].final == [1.0]


def test_impala_sr_on_a_pure_jax_task_hashes_as_before_the_actor_field_existed() -> None:
    """``agent.actor`` (Atari's host actors, issue 13) is null on the Chain: the hash is the one computed before the
    field existed (branch start dfd5a5f; re-frozen when issue 26 added the head layer); setting it changes the hash."""
    spec = load_spec(REPO / "specs" / "synthetic_returns" / "chain.yaml")
    assert spec.agent.actor is None
    # 7173bf216841 since issue 26 gave the heads their 256-unit layer (network.head_hidden_sizes); ec38477950e5 before
    assert config_hash(spec, "sr", "chain", "cpu") == "7173bf216841"
    actor = {"mode": "threaded"}
    with_actor = spec.model_copy(update={"agent": spec.agent.model_validate({**spec.agent.model_dump(), "actor": actor})})
    assert config_hash(with_actor, "sr", "chain", "cpu") != "7173bf216841"


def test_the_plan_adds_the_frozen_arm_of_every_variant_a_claim_judged_there_reads(spec_dir: Path) -> None:
    """rlrepro.specs.control: each variant a claim judged at the scale reads (smoke: any claim) trains again as
    '<variant>@frozen' with learning false, on every environment, with at most CONTROL_SEEDS seeds; its own hash."""
    from rlrepro.specs import resolve_agent
    from rlrepro.specs.control import CONTROL_SEEDS

    experiment = _only_plan(spec_dir, "cpu")
    claimed = {name for claim in experiment.spec.claims if "cpu" in claim.judged_at
               for name in [getattr(claim, "better", None), *getattr(claim, "worse", []), getattr(claim, "variant", None)]
               if name}
    frozen = [job for job in experiment.jobs if "@" not in job.variant] != experiment.jobs
    arms = {(job.variant, job.env) for job in experiment.jobs if job.variant.endswith("@frozen")}
    assert frozen and arms == {(f"{v}@frozen", env) for v in claimed for env in ("catch", "cartpole")}
    seeds = {job.seeds for job in experiment.jobs if job.variant.endswith("@frozen")}
    assert {seed for group in seeds for seed in group} == set(range(min(4, CONTROL_SEEDS)))
    spec = experiment.spec
    variant, control = spec.variant_named("a@frozen")
    assert control == "frozen" and resolve_agent(spec, variant, "cpu", control=control).learning is False
    assert config_hash(spec, "a@frozen", "catch", "cpu") != config_hash(spec, "a", "catch", "cpu")
    with pytest.raises(ValueError, match="'chilled' is no control arm"):
        spec.variant_named("a@chilled")
