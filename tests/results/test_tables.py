"""Tables and the report from fabricated finished run folders (the files rlrepro/jobs/runner.py writes)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlrepro.cli import main
from rlrepro.provenance import git_commit
from rlrepro.results.collect import CellResult, MissingRunsError, OutOfRangeWarning, collect
from rlrepro.results.report import write_report
from rlrepro.results.tables import aggregate_experiment
from rlrepro.specs import ExperimentSpec, load_spec, spec_hash
from rlrepro.workflow import RunUnit, config_hash, plan_experiment, results_root
from tests.factories import toy_spec_data, write_spec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
RUN_COMMIT = "0123abc"
FINALS = {"a": [10.0, 11.0, 12.0, 11.0], "b": [1.0, 2.0, 3.0, 2.0],  # per seed, on every environment
          "a@frozen": [0.5, 1.0, 0.0, 0.5], "b@frozen": [1.0, 0.5, 0.0, 0.5]}  # the frozen arm, about the random level


def _toy() -> dict[str, Any]:
    return toy_spec_data(
        reference={
            "title": "A Toy Paper", "citation": "Someone et al., 2024", "where": "Table 2", "notes": "toy tasks"
        },
        variants=[{"name": "a"}, {"name": "b", "agent": {"loss.correction": "none"}}],
        budget={"frames": 1000, "seeds": 5},
        scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 4}},
        run={"updates_per_chunk": 10, "final_fraction": 0.25},
        claims=[
            {"kind": "ordering", "id": "a_beats_b", "statement": "a scores higher than b.", "better": "a",
             "worse": ["b"], "judged_at": ["cpu"], "paper_evidence": "Table 2"},
            # on [0, 12] Anderson's lower bound of the mean of 10, 11, 12 (3 seeds) is 2.92: above 2
            {"kind": "threshold", "id": "a_reaches_2", "statement": "a reaches 2 on catch.", "variant": "a",
             "environment": "catch", "op": ">=", "value": 2.0, "metric_range": [0.0, 12.0], "judged_at": ["cpu"],
             "rests_on": ["toy tasks (paper: DMLab)"]},
            {"kind": "ordering", "id": "b_beats_a_at_scale", "statement": "b wins with the paper's budget.",
             "better": "b", "worse": ["a"], "judged_at": ["paper"]},
        ],
        paper_table={
            "caption": "Table 2 of the paper.", "columns": ["variant", "catch"], "rows": [["a", 46.8], ["b", 40.3]]
        },
        paper_values={"a": {"catch": 46.8}},
    )


def _row(report: str, key: str, claim: str) -> list[str]:
    """The cells of a claim's row in its paper's results table (REPORT.md): claim, paper, ours, verdict, rests on,
    evidence note."""
    [line] = [line for line in report.splitlines() if line.startswith("| ") and f"(`{key}` `{claim}`)" in line]
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def _dmlab() -> dict[str, Any]:
    data = _toy()
    data.update(paper="lab", experiment="watermaze")
    data["environments"] = [{"kind": "dmlab", "id": "rooms_watermaze", "level": "rooms_watermaze"}]
    data.pop("paper_values")
    data["claims"] = [{"kind": "threshold", "id": "lab_claim", "statement": "s", "variant": "a",
                       "environment": "rooms_watermaze", "op": ">=", "value": 1.0, "judged_at": ["cpu"]}]
    return data


def _curve(final: float) -> list[tuple[int, float, int]]:
    """(frames, episode_return, episodes) per 50-frame chunk; the last quarter of 200 frames averages to ``final``."""
    return [(50, 0.0, 2), (100, final / 2, 2), (150, math.nan, 0), (200, final, 4)]


def fabricate_run(root: Path, spec: ExperimentSpec, unit: RunUnit, final: float, scale: str = "cpu") -> Path:
    """spec.resolved.json, metrics.jsonl and summary.json as the runner writes them."""
    run_dir = unit.run_dir(root)
    run_dir.mkdir(parents=True, exist_ok=True)
    run = {
        "paper": unit.paper, "experiment": unit.experiment, "variant": unit.variant, "env": unit.env, "seed": unit.seed,
        "scale": scale, "frames": unit.frames, "spec_hash": spec_hash(spec),
        "config_hash": config_hash(spec, unit.variant, unit.env, scale), "git_commit": RUN_COMMIT,
        "run_key": f"{scale}/{unit.relpath}",
    }
    resolved = {"run": run, "config": {"frames": unit.frames}, "spec": spec.model_dump(mode="json")}
    (run_dir / "spec.resolved.json").write_text(json.dumps(resolved, indent=2) + "\n", encoding="utf-8")
    records = [
        {
            "frames": f, "updates": 10 * (i + 1), "wall_time": 0.5 * (i + 1),
            "episode_return": r, "episodes": n, "loss": 0.1,
        }
        for i, (f, r, n) in enumerate(_curve(final))
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    summary = {
        "run": run,
        "frames": records[-1]["frames"],
        "frames_budget": unit.frames,
        "frames_unit": "frames",
        "updates": records[-1]["updates"],
        "wall_time": records[-1]["wall_time"],
        "final": {"final_return": final, "final_episodes": 4, "final_fraction": spec.run.final_fraction,
                  "run_return": final, "run_episodes": 8},
        "completed_at": "2024-01-01T00:00:00+00:00",
        "attempts": [{"from_chunk": 0, "git_commit": RUN_COMMIT}],
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return run_dir


def fabricate_all(spec_path: Path, results: Path, scale: str = "cpu") -> list[Path]:
    spec = load_spec(spec_path)
    root = results_root(results, scale)
    units = [u for job in plan_experiment(spec_path, spec, scale).jobs for u in job.units]
    return [fabricate_run(root, spec, u, FINALS[u.variant][u.seed], scale) for u in units]


@pytest.fixture(scope="module")
def aggregated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One aggregation and one report over a toy experiment, a DMLab experiment and an unrun toy experiment."""
    base = tmp_path_factory.mktemp("tables")
    specs = base / "specs"
    toy = write_spec(specs, _toy())
    write_spec(specs, _dmlab())
    unrun = _toy()
    unrun["experiment"] = "unrun"
    write_spec(specs, unrun)
    results = base / "results"
    fabricate_all(toy, results)
    paths = aggregate_experiment(toy, scale="cpu", results=results)
    report = write_report([specs], scale="cpu", results=results)
    return {"toy": toy, "results": results, "paths": paths, "report": report, "specs": specs}


# --- the runner's file format ------------------------------------------------------------------------------


def test_fabricated_summary_matches_what_the_runner_writes(tmp_path: Path) -> None:
    from rlrepro.jobs import runner  # imports jax: kept to this one test

    toy = write_spec(tmp_path / "specs", _toy())
    [run_dir, *_] = fabricate_all(toy, tmp_path / "results")
    fabricated = json.loads((run_dir / "summary.json").read_text())
    runner._write_summary(run_dir, final_fraction=0.25, attempts=fabricated["attempts"])
    written = json.loads((run_dir / "summary.json").read_text())
    assert set(written) == set(fabricated)
    # every fabricated key is written, plus the final-window mean of each other logged metric ('loss' here)
    assert set(written["final"]) == set(fabricated["final"]) | {"loss"}
    assert written["run"] == fabricated["run"]
    assert written["frames"] == fabricated["frames"] == 200
    # the last quarter of 200 frames is the chunk at frame 200: final_return = its episode return
    assert written["final"]["final_return"] == fabricated["final"]["final_return"] == FINALS["a"][0]


def test_tables_csv_and_report_state_the_frames_trained_with_the_budget_beside_it(tmp_path: Path) -> None:
    """A cpu budget of 150 frames trains one whole chunk: unroll 5 x batch 4 x 10 updates = 200 frames (issue 17)."""
    data = _toy()
    data["scales"]["cpu"]["frames"] = 150
    toy = write_spec(tmp_path / "specs", data)
    results = tmp_path / "results"
    fabricate_all(toy, results)  # summaries as the runner writes them: 200 frames trained, budget 150
    paths = aggregate_experiment(toy, scale="cpu", results=results)
    md = paths["md"].read_text(encoding="utf-8")
    assert "- scale: **cpu**, seeds: 4, 200 frames per run (budget 150; training runs whole chunks)\n" in md
    with open(paths["csv"], newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["frames"], r["frames_budget"]) for r in rows} == {("200", "150")}
    report = write_report([tmp_path / "specs"], scale="cpu", results=results).read_text(encoding="utf-8")
    assert "200 frames per run (budget 150; training runs whole chunks)" in report


# --- collect -----------------------------------------------------------------------------------------------


def test_collect_reads_every_run(aggregated: dict[str, Any]) -> None:
    toy = aggregated["toy"]
    experiment = plan_experiment(toy, load_spec(toy), "cpu")
    cells = collect(experiment, results_root(aggregated["results"], "cpu"))
    # the spec's variants and the frozen arm of each a claim judged at cpu reads (a_beats_b, a_reaches_2)
    assert set(cells) == {(v, e) for v in ("a", "b", "a@frozen", "b@frozen") for e in ("catch", "cartpole")}
    cell = cells[("a", "cartpole")]
    assert (cell.seeds, cell.final, cell.frames) == ([0, 1, 2, 3], [10.0, 11.0, 12.0, 11.0], [200] * 4)
    assert cell.commits == {RUN_COMMIT} and cell.spec_hashes == {spec_hash(load_spec(toy))}
    assert cell.curves[0] == [(50, 0.0), (100, 5.0), (200, 10.0)]  # the NaN chunk (no episode ended) is left out


def test_a_return_outside_the_declared_range_is_flagged_where_it_is_read(tmp_path: Path) -> None:
    # Catch's returns lie in [-1, 1]; an episode_return of 9.81 was plotted without a word (issue 33). The
    # fabricated runs of seed 0 end at 10 (chunks 100 and 200 read 5 and 10; chunk 150 is NaN, no episode).
    data = _toy()
    data["environments"][0]["return_range"] = [-1.0, 1.0]  # catch
    data["claims"][1].pop("metric_range")  # the claim's range would be the metric's
    toy = write_spec(tmp_path / "specs", data)
    fabricate_all(toy, tmp_path / "results")
    with pytest.warns(OutOfRangeWarning) as caught:
        cells = collect(plan_experiment(toy, load_spec(toy), "cpu"), results_root(tmp_path / "results", "cpu"))
    seed0 = results_root(tmp_path / "results", "cpu") / "runs" / "toy" / "mini" / "a" / "catch" / "seed0"
    assert cells[("a", "catch")].out_of_range[:4] == [
        f"{seed0 / 'metrics.jsonl'}:2: episode_return 5", f"{seed0 / 'metrics.jsonl'}:4: episode_return 10",
        f"{seed0 / 'summary.json'}: final.final_return 10", f"{seed0 / 'summary.json'}: final.run_return 10",
    ]  # fmt: skip
    assert cells[("a", "cartpole")].out_of_range == []  # no declared range: nothing to check
    messages = [str(w.message) for w in caught]
    # once per run of catch outside it: a's four (10, 11, 12, 11) and b's seeds 1-3 (2, 3, 2; b's seed 0 ends at 1)
    assert len(messages) == 7
    assert messages[0].startswith("4 return(s) outside catch's declared return_range [-1, 1]: ")


def test_missing_runs_raise_naming_them(tmp_path: Path) -> None:
    toy = write_spec(tmp_path / "specs", _toy())
    results = tmp_path / "results"
    run_dirs = fabricate_all(toy, results)
    gone = [d for d in run_dirs if d.match("b/cartpole/seed2") or d.match("a/catch/seed0")]
    assert len(gone) == 2
    for run_dir in gone:
        (run_dir / "summary.json").unlink()
    with pytest.raises(MissingRunsError) as caught:
        aggregate_experiment(toy, scale="cpu", results=results)
    message = str(caught.value)
    assert message.startswith("toy/mini: 2 run(s) not finished (no summary.json)")
    for run_dir in gone:
        assert str(run_dir) in message
    assert not (results / "cpu" / "tables").exists()


def test_runs_of_another_scale_do_not_count(tmp_path: Path) -> None:
    toy = write_spec(tmp_path / "specs", _toy())
    fabricate_all(toy, tmp_path / "results", scale="cpu")
    # smoke: 2 variants x 2 envs x 1 seed, and the frozen arm of each (the path check runs it too)
    with pytest.raises(MissingRunsError, match=r"8 run\(s\) not finished"):
        aggregate_experiment(toy, scale="smoke", results=tmp_path / "results")


# --- the experiment table --------------------------------------------------------------------------------------


def test_aggregate_writes_md_csv_png_json_under_the_scale_root(aggregated: dict[str, Any]) -> None:
    base = aggregated["results"] / "cpu" / "tables" / "toy"
    assert aggregated["paths"] == {ext: base / f"mini.{ext}" for ext in ("md", "csv", "png", "json")}
    assert all(p.is_file() for p in aggregated["paths"].values())


def test_png_is_a_png(aggregated: dict[str, Any]) -> None:
    data = aggregated["paths"]["png"].read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 1000


def test_markdown_has_provenance(aggregated: dict[str, Any]) -> None:
    md = aggregated["paths"]["md"].read_text(encoding="utf-8")
    toy = aggregated["toy"]
    assert md.startswith("# toy/mini\n")
    assert "A Toy Paper (Someone et al., 2024), Table 2." in md
    assert "- scale: **cpu**, seeds: 4, 200 frames per run\n" in md  # budget 200 = one whole chunk: no budget note
    assert f"(hash `{spec_hash(load_spec(toy))}`" in md
    assert f"- code: runs at commit(s) `{RUN_COMMIT}`; table at `{git_commit()}`" in md
    assert "over the last 25% of frames" in md
    assert "- the paper's setting, as the spec's author wrote it (what each run trained with: Hyper-parameters below): toy tasks" in md


def test_markdown_puts_our_numbers_beside_the_paper_table(aggregated: dict[str, Any]) -> None:
    md = aggregated["paths"]["md"].read_text(encoding="utf-8")
    ours, _, rest = md.partition("## The paper's numbers")
    assert "| variant | catch | cartpole |" in ours
    # cells: mean over seeds [95% CI]; a: mean(10, 11, 12) = 11, b: mean(1, 2, 3) = 2
    [row_a] = [line for line in ours.splitlines() if line.startswith("| a |")]
    [row_b] = [line for line in ours.splitlines() if line.startswith("| b |")]
    assert row_a.count("| 11 [") == 2 and row_b.count("| 2 [") == 2
    assert "Table 2 of the paper." in rest
    assert "| variant | catch |" in rest and "| a | 46.8 |" in rest and "| b | 40.3 |" in rest
    assert "![learning curves](mini.png)" in md


def test_markdown_has_a_verdict_per_claim(aggregated: dict[str, Any]) -> None:
    claims = aggregated["paths"]["md"].read_text(encoding="utf-8").partition("## Claims")[2]
    lines = [line for line in claims.splitlines() if line.startswith("- **")]
    assert [line.split(":")[0] for line in lines] == [
        "- **a_beats_b**", "- **a_reaches_2**", "- **b_beats_a_at_scale**"
    ]
    # 4 v 4, every a above every b: the permutation test's p = 1 / C(8, 4) = 1/70 = 0.0143
    assert lines[0].startswith("- **a_beats_b**: reproduced. a scores higher than b.")
    # Welch (shown for the gap): 11 - 2 = 9, s^2 = 2/3 on both sides, se = sqrt(2 * (2/3) / 4) = 0.5774, df = 6,
    # t_{0.975,6} = 2.4469 -> 9 +- 1.413 = [7.59, 10.4]
    assert "catch: a - b = +9 [Welch 95% CI +7.59, +10.4], permutation p = 0.0143 supports" in lines[0]
    # beside it the frozen arm (about the random level, no order between a and b): shown beyond it
    assert "Control: the frozen arm reads inconclusive" in lines[0] and "the runs beyond the frozen arm: p = " in lines[0]
    assert "(test: two-sample permutation test" in lines[0] and "exact: all 70 splits of 4 v 4 runs" in lines[0]
    assert lines[1].startswith("- **a_reaches_2**: reproduced.")
    # Anderson's bound on [0, 12] over 4 seeds (worked by hand in the stats tests)
    assert "mean 11 [95% distribution-free interval 3.887, 11.87]" in lines[1]
    assert lines[2].startswith("- **b_beats_a_at_scale**: not judged.")
    assert "judged at scale(s) paper" in lines[2]


def test_csv_is_tidy_one_row_per_run(aggregated: dict[str, Any]) -> None:
    import pandas as pd

    table = pd.read_csv(aggregated["paths"]["csv"])
    assert list(table.columns) == ["experiment", "scale", "variant", "env", "seed", "metric", "unit", "value", "paper",
                                   "frames", "frames_budget", "spec_hash", "config_hash", "run_commits"]
    # 2 variants and their frozen arms x 2 environments x 4 seeds, typed: ints and floats, not strings packed with ';'
    assert len(table) == 32 and table["seed"].dtype.kind == "i" and table["value"].dtype.kind == "f"
    assert set(table["metric"]) == {"final_return"} and set(table["unit"]) == {"episode return"}
    expected_hash = spec_hash(load_spec(aggregated["toy"]))
    assert set(zip(table["experiment"], table["scale"], table["spec_hash"], table["run_commits"])) == {
        ("toy/mini", "cpu", expected_hash, RUN_COMMIT)}
    a_catch = table[(table["variant"] == "a") & (table["env"] == "catch")]
    assert a_catch["value"].tolist() == FINALS["a"] and a_catch["seed"].tolist() == [0, 1, 2, 3]
    assert (a_catch["frames"] == 200).all()
    # the paper's value of the cell (paper_values: a on catch 46.8) on each of its runs; NaN where it gives none
    assert (a_catch["paper"] == 46.8).all() and table[table["variant"] == "b"]["paper"].isna().all()


def test_csv_values_carry_no_float32_noise_and_name_their_metric(tmp_path: Path) -> None:
    import pandas as pd

    from rlrepro.results.tables import _rows, _write_csv

    noisy = float(np.float32(-0.82))  # -0.8199999928474426: a float32 metric read back as float64
    cells = {("td", "rw"): CellResult("td", "rw", seeds=[0, 1], final=[noisy, float(np.float32(0.1))],
                                      frames=[100, 100], report_metric="value_error")}
    rows = _rows(cells, {}, 100, "value_error")
    assert rows[0]["mean"] == pytest.approx(-0.36) and rows[0]["metric"] == "value_error"
    _write_csv(tmp_path / "t.csv", rows, {"experiment": "frodo/random_walk", "scale": "smoke", "spec_hash": "h",
                                          "run_commits": ["c"]})
    text = (tmp_path / "t.csv").read_text()
    assert "-0.82," in text and "0.1," in text and "0.8199999" not in text and "0.1000000" not in text
    table = pd.read_csv(tmp_path / "t.csv")
    assert table["unit"].tolist() == ["mean squared error of the values over states"] * 2


def test_json_has_provenance_rows_and_claims(aggregated: dict[str, Any]) -> None:
    data = json.loads(aggregated["paths"]["json"].read_text(encoding="utf-8"))
    assert data["provenance"]["scale"] == "cpu" and data["provenance"]["seeds"] == 4
    assert data["provenance"]["run_commits"] == [RUN_COMMIT]
    assert len(data["rows"]) == 8  # 2 variants and their frozen arms x 2 environments
    assert [(c["claim"], c["verdict"]) for c in data["claims"]] == [
        ("a_beats_b", "reproduced"), ("a_reaches_2", "reproduced"), ("b_beats_a_at_scale", "not judged")
    ]


def test_a_run_resumed_by_another_commit_is_named_in_the_table_and_the_report(tmp_path: Path) -> None:
    # seed 1 of variant a on catch was killed and finished by a later commit: the table lists both commits and the
    # resumed run, the report counts it; an Atari game restarts at a resume, so a reader must be able to see it
    toy = write_spec(tmp_path / "specs", _toy())
    results = tmp_path / "results"
    run_dirs = fabricate_all(toy, results)
    resumed = next(d for d in run_dirs if d.parts[-3:] == ("a", "catch", "seed1"))
    summary = json.loads((resumed / "summary.json").read_text())
    summary["attempts"].append({"from_chunk": 2, "git_commit": "fedcba9"})
    (resumed / "summary.json").write_text(json.dumps(summary))
    paths = aggregate_experiment(toy, scale="cpu", results=results)
    data = json.loads(paths["json"].read_text())
    assert data["provenance"]["run_commits"] == sorted([RUN_COMMIT, "fedcba9"])
    assert data["provenance"]["resumed_runs"] == ["a catch seed 1 (resumed at chunk 2)"]
    assert "- resumed: 1 of 32 runs after an interruption (a catch seed 1 (resumed at chunk 2))" in Path(paths["md"]).read_text()
    report = write_report([tmp_path / "specs"], scale="cpu", results=results).read_text()
    assert "1 of 32 runs resumed after an interruption" in report


def test_reversed_results_are_not_reproduced_in_the_table(tmp_path: Path) -> None:
    data = _toy()
    data["claims"][0].update(better="b", worse=["a"])
    toy = write_spec(tmp_path / "specs", data)
    fabricate_all(toy, tmp_path / "results")
    paths = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")
    verdicts = {c["claim"]: c["verdict"] for c in json.loads(paths["json"].read_text())["claims"]}
    # the reverse permutation test's p is 1/70 at 4 v 4: contradicted
    assert verdicts["a_beats_b"] == "not reproduced"


def test_cli_aggregate_and_report(tmp_path: Path) -> None:
    toy = write_spec(tmp_path / "specs", _toy())
    results = tmp_path / "results"
    fabricate_all(toy, results)
    assert main(["aggregate", "--spec", str(toy), "--scale", "cpu", "--results", str(results)]) == 0
    assert (results / "cpu" / "tables" / "toy" / "mini.md").is_file()
    assert main(["report", "--specs", str(tmp_path / "specs"), "--scale", "cpu", "--results", str(results)]) == 0
    assert _row((results / "cpu" / "REPORT.md").read_text(), "toy/mini", "a_beats_b")[3] == "**reproduced**"


# --- the report --------------------------------------------------------------------------------------------


def test_report_is_written_under_the_scale_root(aggregated: dict[str, Any]) -> None:
    assert aggregated["report"] == aggregated["results"] / "cpu" / "REPORT.md"
    text = aggregated["report"].read_text(encoding="utf-8")
    assert text.startswith("# rlrepro report — scale 'cpu'")
    assert f"at commit `{git_commit()}`" in text
    # toy/mini: 2 reproduced (4 v 4) + 1 not judged; lab/watermaze and toy/unrun: not judged
    assert "3 experiment(s), 7 claim(s): 2 reproduced, 5 not judged" in text
    assert "**inconclusive**: this scale cannot decide" in text  # the verdicts are explained once, at the top
    # each interval names its method where it appears: no global "bootstrap" line that most rows contradict
    assert "Intervals: each is named by its method where it appears" in text
    assert "stratified-bootstrap confidence intervals over seeds" not in text


def test_report_has_a_verdict_per_claim(aggregated: dict[str, Any]) -> None:
    text = aggregated["report"].read_text(encoding="utf-8")
    # a results table per paper: the claim in the paper's words, the paper's value, ours with its interval (named by
    # its method), the verdict, what it rests on (the spec's rests_on and the scale's seeds and frames against the
    # paper's), and a note with the test, p-values and the full evidence
    assert "### A Toy Paper (Someone et al., 2024)" in text
    beats, reaches = _row(text, "toy/mini", "a_beats_b"), _row(text, "toy/mini", "a_reaches_2")
    assert beats[:4] == ["a scores higher than b (`toy/mini` `a_beats_b`)", "a on catch: 46.8",
                         "cartpole: a - b = +9 [Welch 95% CI +7.59, +10.4] (and 3 more in the evidence)",  # the frozen arm's two
                         "**reproduced**"]
    assert beats[4] == "cpu scale: 4 seeds (paper 5), 200 frames per run (paper 1k)"
    assert reaches[1:5] == ["bar >= 2 · a: 46.8", "final_return of a on catch: mean 11 "
                            "[95% distribution-free interval 3.887, 11.87] (and 1 more in the evidence)", "**reproduced**",
                            "toy tasks (paper: DMLab); cpu scale: 4 seeds (paper 5), 200 frames per run (paper 1k)"]
    note = text.partition(f"<a id=\"{beats[5].partition('(#')[2].rstrip(')')}\"></a>")[2].partition("\n")[0]
    assert note.startswith("1. **toy/mini** `a_beats_b`: **reproduced**.")
    assert "Test: two-sample permutation test" in note and "p: 0.0143, 0.0143" in note  # not the rule's "smallest p"
    assert "Evidence: final_return (higher is better)" in note
    # claims not judged are grouped per experiment and reason, below the judged ones
    not_judged = text.partition("## Claims not judged at this scale")[2].partition("## Experiments")[0]
    assert "- toy/mini: 1 claim(s) (b_beats_a_at_scale): the claim is judged at scale(s) paper" in not_judged
    section = text.partition("### toy/mini")[2].partition("###")[0]
    assert "Table 2. Scale cpu, 4 seeds, 200 frames per run" in section
    assert f"spec hash `{spec_hash(load_spec(aggregated['toy']))}`" in section
    assert "[tables/toy/mini.md](tables/toy/mini.md)" in section and "tables/toy/mini.png" in section


def test_report_lists_dmlab_experiments_as_not_run_with_the_reason(aggregated: dict[str, Any]) -> None:
    text = aggregated["report"].read_text(encoding="utf-8")
    [row] = [line for line in text.splitlines() if line.startswith("- lab/watermaze:")]
    assert "1 claim(s) (lab_claim): not run on this machine: DeepMind Lab is not installed" in row
    assert "deepmind_lab" in row
    section = text.partition("### lab/watermaze")[2].partition("###")[0]
    assert section.strip().startswith("not run on this machine: DeepMind Lab is not installed")


def test_report_lists_an_experiment_without_a_table_as_not_run(aggregated: dict[str, Any]) -> None:
    text = aggregated["report"].read_text(encoding="utf-8")
    [row] = [line for line in text.splitlines() if line.startswith("- toy/unrun:")]
    assert row.startswith("- toy/unrun: 3 claim(s)") and row.endswith(": not run at this scale (no table yet)")


def test_report_says_an_opt_in_experiment_is_left_out_of_the_default_job(tmp_path: Path) -> None:
    """Issue 32: an experiment of a cpu opt-in set has no table after the default job; the report says which set
    and the command that runs it, in REPORT.md and report.html."""
    curves = _toy()
    curves["experiment"] = "curves"
    curves["scales"]["cpu"]["opt_in"] = "curves"
    for claim in curves["claims"]:
        claim["judged_at"] = ["paper"]  # an opt-in set decides no claim at its scale
    write_spec(tmp_path / "specs", curves)
    path = write_report([tmp_path / "specs"], scale="cpu", results=tmp_path / "results")
    [row] = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("- toy/curves:")]
    assert "not run: in the opt-in set 'curves' of this scale" in row
    assert row.endswith("`snakemake -c2 --config scale=cpu set=curves`")
    page = (path.parent / "report.html").read_text(encoding="utf-8")
    assert "<code>snakemake -c2 --config scale=cpu set=curves</code>" in page and "`" not in page  # a command, as code


def test_a_published_report_compares_equal_to_its_source_and_shows_a_changed_verdict(
    aggregated: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: `rlrepro publish` copies the report, tables and (downscaled) figures with a provenance line on top;
    `rlrepro report --compare` prints no difference against the source and flags a verdict that changed."""
    from PIL import Image

    from rlrepro.cli import main
    from rlrepro.results.publish import FIGURE_WIDTH

    published = tmp_path / "docs" / "cpu"
    args = ["--scale", "cpu", "--results", str(aggregated["results"])]
    assert main(["publish", *args, "--to", str(published), "--specs", str(aggregated["specs"])]) == 0
    first = (published / "REPORT.md").read_text(encoding="utf-8").splitlines()[0]
    # the fixture's specs: toy/mini, toy/unrun and a DMLab experiment that cannot run here
    assert first.startswith(f"Published: 1 of the main job's 2 experiments published so far; runs at commit "
                            f"`{RUN_COMMIT}`, finished 2024-01-01, on an unrecorded machine; wall time 0.0 h while "
                            "training")  # fabricated runs: no device, no wall time
    assert {p.name for p in (published / "tables" / "toy").iterdir()} >= {"mini.md", "mini.csv", "mini.json", "mini.png"}
    assert not (published / "report.standalone.html").exists()
    page = (published / "report.html").read_text(encoding="utf-8")
    assert "href='tables/'" in page and "href='runs/'" not in page  # no link to run folders it does not have
    widths = {}
    for source in (aggregated["results"] / "cpu" / "tables" / "toy").glob("mini*.png"):
        with Image.open(source) as wide, Image.open(published / "tables" / "toy" / source.name) as figure:
            widths[source.name] = (wide.width, figure.width)
    assert widths and all(small == min(wide, FIGURE_WIDTH) for wide, small in widths.values())
    assert any(wide > FIGURE_WIDTH for wide, _ in widths.values()), widths  # one was scaled down
    capsys.readouterr()
    assert main(["report", *args, "--compare", str(published)]) == 0
    assert "3 claim(s) the same, 0 differ" in " ".join(capsys.readouterr().out.split())  # the not-judged claim too
    table = published / "tables" / "toy" / "mini.json"
    data = json.loads(table.read_text(encoding="utf-8"))
    [claim] = [c for c in data["claims"] if c["claim"] == "a_reaches_2"]
    claim["verdict"] = "not reproduced"
    table.write_text(json.dumps(data), encoding="utf-8")
    assert main(["report", *args, "--compare", str(published)]) == 1
    out = capsys.readouterr().out
    assert "2 claim(s) the same, 1 differ" in " ".join(out.split())  # wrapped at 80 columns; a path is never split
    assert "\n  toy/mini a_reaches_2: not reproduced -> reproduced\n" in out
    assert main(["report", *args, "--compare", str(tmp_path / "nothing")]) == 2
    assert main(["publish", *args, "--to", str(aggregated["results"] / "cpu")]) == 2  # would replace its own tables
    assert "publish to a folder outside it" in capsys.readouterr().err


def test_a_publication_gives_the_main_jobs_wall_time_and_the_opt_in_experiments_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: the published report's first line gives the main job's wall time; the runs of opt-in experiments
    published beside it (the small loss searches after they left the job) are counted apart, not in it."""
    from datetime import datetime, timedelta

    curves = _toy()
    curves["experiment"] = "curves"
    curves["scales"]["cpu"]["opt_in"] = "curves"
    for claim in curves["claims"]:
        claim["judged_at"] = ["paper"]
    specs = tmp_path / "specs"
    for data, hours in ((_toy(), 1.0), (curves, 2.0)):
        spec = write_spec(specs, data)
        fabricate_all(spec, tmp_path / "results")
        for path in (tmp_path / "results" / "cpu" / "runs" / "toy" / data["experiment"]).rglob("summary.json"):
            summary = json.loads(path.read_text(encoding="utf-8"))  # every run of an experiment over the same hours
            end = datetime(2024, 1, 1, 12) + timedelta(hours=3 * (data["experiment"] == "curves"))
            summary.update(completed_at=end.isoformat(), wall_time=hours * 3600)
            path.write_text(json.dumps(summary), encoding="utf-8")
        aggregate_experiment(spec, scale="cpu", results=tmp_path / "results")
    dest = tmp_path / "docs" / "cpu"
    assert main(["publish", "--scale", "cpu", "--results", str(tmp_path / "results"), "--to", str(dest),
                 "--specs", str(specs)]) == 0
    first = (dest / "REPORT.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("Published: all 1 experiments of the main job; ")
    assert first.endswith("wall time 1.0 h while training (1.0 h from the first start to the last end, pauses "
                          "included); published beside it: 1 experiment(s) of opt-in sets (2.0 h while training).")
    page = (dest / "report.html").read_text(encoding="utf-8")  # the same line under the page's title
    assert "</h1><p class='meta'>Published: all 1 experiments of the main job; runs at commit <code>" in page
    assert "published beside it: 1 experiment(s) of opt-in sets (2.0 h while training).</p>" in page


def test_a_job_published_a_session_at_a_time_keeps_what_earlier_sessions_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: a job longer than a session on a fresh machine is published a session at a time; each publication
    keeps the experiments earlier ones published, REPORT.md covers them all, the manifest records each session,
    a re-run replaces its experiment's entry, and a table whose spec changed since is left out and named."""
    from rlrepro.cli import main
    from rlrepro.results.publish import MANIFEST, experiments_with_tables
    from rlrepro.results.publish import publish as publish_folder

    specs = tmp_path / "specs"
    toy = write_spec(specs, _toy())
    other = _toy()
    other["experiment"] = "other"
    roots = {}
    for name, spec in (("first", toy), ("second", write_spec(specs, other))):
        roots[name] = tmp_path / name
        fabricate_all(spec, roots[name])
        aggregate_experiment(spec, scale="cpu", results=roots[name])
        write_report([specs], scale="cpu", results=roots[name])
        assert not (roots[name] / "cpu" / "tables" / "toy" / ("other.json" if name == "first" else "mini.json")).exists()
    dest = tmp_path / "docs" / "cpu"

    def publish(name: str) -> str:
        capsys.readouterr()
        assert main(["publish", "--scale", "cpu", "--results", str(roots[name]), "--to", str(dest), "--specs", str(specs)]) == 0
        return capsys.readouterr().out

    out = publish("first")
    assert out.splitlines()[-1] == ("2 claims judged at the cpu scale: 2 reproduced, 0 inconclusive, 0 not reproduced, "
                                    "0 uninformative (1 of the main job's 2 experiments published so far)")
    out = publish("second")
    assert experiments_with_tables(dest) == ["toy/mini", "toy/other"]
    assert out.splitlines()[-1] == ("4 claims judged at the cpu scale: 4 reproduced, 0 inconclusive, 0 not reproduced, "
                                    "0 uninformative (all 2 experiments of the main job)")
    report = (dest / "REPORT.md").read_text(encoding="utf-8")
    assert "in 2 sessions" in report.splitlines()[0]
    for key in ("toy/mini", "toy/other"):
        assert _row(report, key, "a_reaches_2")[3] == "**reproduced**"
        assert f"tables/{key}.png" in (dest / "report.html").read_text(encoding="utf-8")
    sessions = lambda: [s["experiments"] for s in json.loads((dest / MANIFEST).read_text())["sessions"]]  # noqa: E731
    assert sessions() == [["toy/mini"], ["toy/other"]]
    publish("first")  # mini again: its new publication replaces the first one's entry
    assert sessions() == [["toy/other"], ["toy/mini"]]
    edited = (specs / "toy" / "mini.yaml").read_text(encoding="utf-8").replace("a reaches 2 on catch.", "a reaches 2.")
    (specs / "toy" / "mini.yaml").write_text(edited, encoding="utf-8")
    out = publish("second")  # its spec set's mini is no longer the published one's
    assert "toy/mini: left out, its spec changed since it was published" in out
    assert experiments_with_tables(dest) == ["toy/other"] and sessions() == [["toy/other"]]
    assert "- toy/mini: 3 claim(s)" in (dest / "REPORT.md").read_text(encoding="utf-8")
    # a publication judges the runs anew with today's specs: a bar above the runs' mean is no longer reproduced
    edited = (specs / "toy" / "mini.yaml").read_text(encoding="utf-8").replace("value: 2.0", "value: 11.5")
    (specs / "toy" / "mini.yaml").write_text(edited, encoding="utf-8")
    publish("first")
    verdict = {c["claim"]: c["verdict"] for c in json.loads((dest / "tables" / "toy" / "mini.json").read_text())["claims"]}
    source = {c["claim"]: c["verdict"] for c in json.loads(
        (roots["first"] / "cpu" / "tables" / "toy" / "mini.json").read_text())["claims"]}
    assert verdict["a_reaches_2"] == source["a_reaches_2"] == "inconclusive"  # the source's table is judged anew too
    # a session that ended mid-experiment: its unfinished runs are not published; the earlier table stays
    roots["both"] = tmp_path / "both"
    for spec in sorted(specs.rglob("*.yaml")):
        fabricate_all(spec, roots["both"])
        aggregate_experiment(spec, scale="cpu", results=roots["both"])
    published = (dest / "tables" / "toy" / "mini.json").read_bytes()
    summary = next((roots["both"] / "cpu" / "runs" / "toy" / "mini").rglob("summary.json"))
    summary.unlink()
    out = publish("both")
    assert "toy/mini: 1 run(s) not finished (no summary.json): not published from" in out
    assert (dest / "tables" / "toy" / "mini.json").read_bytes() == published
    assert experiments_with_tables(dest) == ["toy/mini", "toy/other"] and sessions() == [["toy/mini"], ["toy/other"]]
    (roots["both"] / "cpu" / "tables" / "toy" / "other.json").unlink()
    with pytest.raises(MissingRunsError, match="nothing to publish: toy/mini: 1 run"):  # a root with nothing finished
        publish_folder(roots["both"] / "cpu", dest, [specs])
    # a publication that fails half way leaves the published folder as it was, and nothing beside it
    before = {path: path.read_bytes() for path in dest.rglob("*") if path.is_file()}

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("rlrepro.results.report.write_report", crash)
    with pytest.raises(KeyboardInterrupt):
        publish_folder(roots["first"] / "cpu", dest, [specs])
    assert {path: path.read_bytes() for path in dest.rglob("*") if path.is_file()} == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["cpu"]


def test_a_run_with_only_leads_its_report_and_ends_with_its_own_tally(aggregated: dict[str, Any]) -> None:
    """Issue 49: a run of some experiments (only=) reads first what it judged, then the whole scale's report."""
    from rlrepro.results.report import TALLY_FILE, run_end_text

    results = aggregated["results"]
    path = write_report([aggregated["specs"]], scale="cpu", results=results, only="toy/mini")
    text = path.read_text(encoding="utf-8")
    assert ("This run (only=toy/mini): 1 experiment(s), 3 claim(s): 2 reproduced, 1 not judged. "
            "They come first below: toy/mini.") in text
    assert "3 experiment(s), 7 claim(s)" in text  # the report still covers every experiment
    sections = [line for line in text.splitlines() if line.startswith("### ") and "/" in line]
    assert sections[0] == "### toy/mini"
    page = (path.parent / "report.html").read_text(encoding="utf-8")
    assert "class='lead'>This run (only=toy/mini)" in page
    assert page.index("id='exp-toy-mini'") < page.index("id='exp-lab-watermaze'")
    assert json.loads((path.parent / TALLY_FILE).read_text())["run"]["claims"] == {
        "reproduced": 2, "not judged": 1}
    assert run_end_text(path.parent, ["toy/mini"]).splitlines() == [
        "This run: 1 experiment(s) (toy/mini), 3 claim(s): 2 reproduced, 1 not judged",
        f"Report: {path.parent / 'report.html'} (they come first)",
        "Whole report: 3 experiment(s), 7 claim(s): 2 reproduced, 5 not judged"]


def test_the_standalone_page_carries_every_figure_inside_it(aggregated: dict[str, Any]) -> None:
    # issue 31: `snakemake --report` embeds a page as a data: iframe, where report.html's relative image paths load
    # none of its figures; report.standalone.html (the page it is given) has each figure's bytes in the page
    import base64
    import re

    root = aggregated["results"] / "cpu"
    linked = re.findall(r"""<img src=['"]([^'"]+)['"]""", (root / "report.html").read_text(encoding="utf-8"))
    embedded = re.findall(r"""<img src=['"]([^'"]+)['"]""", (root / "report.standalone.html").read_text(encoding="utf-8"))
    kinds = {Path(src).name.split(".")[1] for src in linked if Path(src).name.count(".") > 1}
    assert {"intervals", "profiles", "improvement"} <= kinds  # every figure kind, not only the learning curves
    assert len(embedded) == len(linked) >= 4
    for src, data in zip(linked, embedded):
        assert data.startswith("data:image/png;base64,")
        assert base64.b64decode(data.partition(",")[2]) == (root / src).read_bytes()


def test_the_page_shows_each_claim_once_and_groups_the_not_judged_per_experiment(aggregated: dict[str, Any]) -> None:
    # issue 31: each claim was listed three times (Every claim, Claim verdicts, Claims); ids broke mid-word
    import re

    page = (aggregated["results"] / "cpu" / "report.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)
    # toy/unrun is a copy of toy/mini with the same claim ids: twice each (once per experiment); lab_claim once
    for claim, times in (("a_beats_b", 2), ("a_reaches_2", 2), ("b_beats_a_at_scale", 2), ("lab_claim", 1)):
        assert text.count(claim) == times, (claim, text.count(claim))
    assert "word-break: break-all" not in page and "a_<wbr>beats_<wbr>b" in page
    judged = page.partition("Results per paper")[2].partition("Claims not judged")[0]
    assert "exp-toy-mini" in judged and "a_<wbr>reaches_<wbr>2" in judged and "lab_<wbr>claim" not in judged
    # the test, the p-value and the full evidence one click away, under each row
    assert judged.count("<details>") == 2 and "<summary>test and evidence: p = 0.0143, 0.0143" in judged
    not_judged = page.partition("Claims not judged at this scale")[2].partition("</ul>")[0]
    assert re.search(r"toy/unrun</a>: 3 claims \(.*\): not run at this scale|toy/unrun</a>: 3 claims", not_judged)
    assert not_judged.count("<li>") == 3  # toy/mini (1 at scale paper), lab/watermaze, toy/unrun


def test_a_second_spec_set_adds_to_the_scales_report_rather_than_replacing_it(tmp_path: Path) -> None:
    # issue 31: `snakemake --config specs=my/specs` rewrote results/<scale>/REPORT.md as a one-experiment report
    results = tmp_path / "results"
    repo_specs, own_specs = tmp_path / "repo_specs", tmp_path / "own_specs"
    toy = write_spec(repo_specs, _toy())
    mine = _toy()
    mine.update(paper="mine", experiment="own")
    own = write_spec(own_specs, mine)
    for spec in (toy, own):
        fabricate_all(spec, results)
        aggregate_experiment(spec, scale="cpu", results=results)
    write_report([repo_specs], scale="cpu", results=results)
    path = write_report([own_specs], scale="cpu", results=results)
    text = path.read_text(encoding="utf-8")
    assert "### toy/mini" in text and "### mine/own" in text  # both spec sets, one report
    assert "2 experiment(s), 6 claim(s)" in text and str(repo_specs.resolve()) in text
    page = (results / "cpu" / "report.html").read_text(encoding="utf-8")
    assert "exp-toy-mini" in page and "exp-mine-own" in page
    # a recorded set that is gone is named, not a crash and not silently dropped
    (repo_specs / "toy" / "mini.yaml").unlink()
    (repo_specs / "toy").rmdir()
    repo_specs.rmdir()
    text = write_report([own_specs], scale="cpu", results=results).read_text(encoding="utf-8")
    assert "### mine/own" in text and "### toy/mini" not in text
    assert f"could not be read and is left out: {repo_specs.resolve()}" in text


# --- damaged metrics files (one reader: rlrepro.jobs.run_folder) ------------------------------------------------


def test_aggregate_drops_a_torn_last_metrics_line_with_a_warning_naming_the_file(tmp_path: Path) -> None:
    toy = write_spec(tmp_path / "specs", _toy())
    run_dirs = fabricate_all(toy, tmp_path / "results")
    metrics = run_dirs[0] / "metrics.jsonl"
    metrics.write_text(metrics.read_text()[:-9])  # the last line cut short, as kill -9 during a write leaves it
    with pytest.warns(UserWarning, match=rf"{metrics}:4: dropped a torn last line"):
        paths = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")
    assert paths["json"].is_file()


def test_aggregate_of_a_corrupted_metrics_line_exits_2_naming_file_and_line(tmp_path: Path, capsys) -> None:
    toy = write_spec(tmp_path / "specs", _toy())
    run_dirs = fabricate_all(toy, tmp_path / "results")
    metrics = run_dirs[0] / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    metrics.write_text(lines[0] + "{corrupted\n" + "".join(lines[2:]))
    code = main(["aggregate", "--spec", str(toy), "--scale", "cpu", "--results", str(tmp_path / "results")])
    assert code == 2
    assert f"error: {metrics}:2: not JSON" in capsys.readouterr().err


def test_eval_atari_gets_a_human_normalised_table_of_its_report_metric():
    """Issue 11 item 12: eval_atari reports best_eval_return (the best evaluation, as the paper's best snapshot),
    which the human-normalised table skipped. Boxing (random 0.1, human 12.1): a best evaluation of 6.1 is
    (6.1 - 0.1) / (12.1 - 0.1) = 50%; Bowling (23.1, 160.7): 91.9 is (91.9 - 23.1) / 137.6 = 50% too, so the
    median over the two games is 50.0."""
    from rlrepro.results.collect import CellResult
    from rlrepro.results.tables import _hns_lines

    spec = load_spec(Path(__file__).resolve().parents[2] / "specs" / "evolving_rl" / "eval_atari.yaml")
    assert spec.run.report_metric == "best_eval_return"
    cells = {("dqnreg", env): CellResult("dqnreg", env, seeds=[0], final=[value], finals=[{"best_eval_return": value}],
                                         report_metric="best_eval_return")
             for env, value in (("boxing", 6.1), ("bowling", 91.9))}
    lines = _hns_lines(spec, cells)
    assert "## Human-normalised scores" in lines
    row = next(line for line in lines if line.startswith("| dqnreg |"))
    # one run per game: a bootstrap over it has zero width ("50.0 [50.0, 50.0]" read as certainty): no interval
    assert row.startswith("| dqnreg | 2 | 50.0 (1 run: no interval) | 50.0 (1 run: no interval)")


def test_a_cell_of_one_run_has_no_interval_and_two_runs_have_one():
    from rlrepro.results.collect import CellResult
    from rlrepro.results.tables import _rows

    cells = {("a", "catch"): CellResult("a", "catch", seeds=[0], final=[5.0], frames=[200]),
             ("b", "catch"): CellResult("b", "catch", seeds=[0, 1], final=[5.0, 7.0], frames=[200, 200])}
    one, two = _rows(cells, {}, 200)
    assert one["mean"] == 5.0 and math.isnan(one["ci95_low"]) and math.isnan(one["ci95_high"])
    assert two["mean"] == 6.0 and 5.0 <= two["ci95_low"] < two["ci95_high"] <= 7.0


# --- diagnostic curves (run.diagnostic_curves) ------------------------------------------------------------


def test_diagnostic_curves_are_drawn_beside_the_learning_curves(tmp_path: Path) -> None:
    data = _toy()
    data["run"]["diagnostic_curves"] = ["loss"]
    toy = write_spec(tmp_path / "specs", data)
    fabricate_all(toy, tmp_path / "results")
    paths = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")
    figure = paths["png"].with_name("mini.loss.png")
    assert figure.read_bytes().startswith(PNG_MAGIC)
    assert "(mini.loss.png)" in paths["md"].read_text(encoding="utf-8")
    cells = collect(plan_experiment(toy, load_spec(toy), "cpu"), results_root(tmp_path / "results", "cpu"))
    # every fabricated chunk logs loss 0.1: one point per chunk per seed
    assert all(curve == [(50, 0.1), (100, 0.1), (150, 0.1), (200, 0.1)]
               for cell in cells.values() for curve in cell.diagnostics["loss"])


def test_a_diagnostic_key_no_run_logged_is_an_error_naming_spec_field_and_keys(tmp_path: Path, capsys) -> None:
    data = _toy()
    data["run"]["diagnostic_curves"] = ["far_fraction"]
    toy = write_spec(tmp_path / "specs", data)
    fabricate_all(toy, tmp_path / "results")
    assert main(["aggregate", "--spec", str(toy), "--scale", "cpu", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert str(toy) in err and "run.diagnostic_curves" in err and "'far_fraction'" in err
    assert "episode_return, episodes, frames, loss, updates, wall_time" in err


def test_diagnostic_curves_do_not_change_the_config_hash(tmp_path: Path) -> None:
    """Drawing another figure must not retrain finished runs."""
    plain = load_spec(write_spec(tmp_path / "a", _toy()))
    data = _toy()
    data["run"]["diagnostic_curves"] = ["loss"]
    drawn = load_spec(write_spec(tmp_path / "b", data))
    assert config_hash(plain, "a", "catch", "cpu") == config_hash(drawn, "a", "catch", "cpu")


def test_runs_that_wrote_an_sr_profile_get_its_figure_in_the_table(tmp_path: Path) -> None:
    """Synthetic Returns' Chain runs write ``sr_profile.json`` (c(s) per position); the table shows Fig. 3c from them."""
    toy = write_spec(tmp_path / "specs", _toy())
    runs = [run for run in fabricate_all(toy, tmp_path / "results") if run.parts[-3] == "a"]
    envs = sorted({run.parts[-2] for run in runs})
    for seed, run in enumerate(runs):
        contribution = [0.0, 0.1 * seed, 0.5, 0.1]
        (run / "sr_profile.json").write_text(json.dumps({"positions": [0, 1, 2, 3], "contribution": contribution,
                                                         "start": 1, "trigger": 2, "sr_enabled": True}))
    paths = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")
    markdown = paths["md"].read_text()
    for env in envs:  # one figure per variant and environment that has profiles; b wrote none
        figure = paths["md"].with_name(f"{paths['md'].stem}.sr_profile.a.{env}.png")
        assert figure.read_bytes()[:8] == PNG_MAGIC
        assert f"![SR profile over the chain: a on {env} (4 runs; Fig. 3c)]({figure.name})" in markdown
    assert "profile over the chain: b" not in markdown


def test_hyperparameters_are_derived_from_the_resolved_spec_per_variant(tmp_path: Path) -> None:
    # issue 31: the prose "setting" said entropy 0.01 for a run trained at 0.02; the table derives what ran
    from rlrepro.results.tables import hyperparameter_lines

    data = _toy()
    data["scales"]["cpu"].update(agent={"loss.entropy_cost": 0.02}, variant_agent={"b": {"batch_size": 2}},
                                 env={"kwargs": {"rows": 5}})
    spec = load_spec(write_spec(tmp_path, data))
    text = "\n".join(hyperparameter_lines(spec, "cpu", ["a", "b"], ["catch"]))
    assert "- every variant at this scale: loss.entropy_cost 0.01 → 0.02" in text
    assert "| a | — (the spec agent) | — |" in text
    assert "| b | loss.correction vtrace → none | batch_size 4 → 2 |" in text
    assert "- environment catch: kwargs.rows — → 5" in text


def test_the_claims_table_has_a_method_column_only_where_a_verdict_records_one() -> None:
    from rlrepro.results.html import _verdict_table

    rows = [("a/b", "c_d", "reproduced", "x", ""), ("a/b", "e", "inconclusive", "y", {"test": "Welch", "assumption": "normal"})]
    table = _verdict_table(rows)
    assert "<th>method</th>" in table and "test: Welch; assumption: normal" in table
    assert table.count("class='group'") == 1  # the experiment once, not a column repeated per row
    assert "method" not in _verdict_table([("a/b", "c_d", "reproduced", "x", "")])


# --- one number format, and values outside the declared range (issue 31 item 6) ---------------------------------


@pytest.mark.parametrize(("value", "decimals", "text"), [
    (0.10134, None, "0.101"), (-0.8199999928474426, None, "-0.82"), (5.0, None, "5"), (123.456, None, "123"),
    (999.7, None, "1,000"),  # 3 significant figures round it to 1,000: the separator rule follows the rounded figure
    (17_000.0, None, "17,000"), (17_234.5, None, "17,200"), (350_112_000.0, None, "350,000,000"),
    (-2_345.0, None, "-2,340"), (0.000123, None, "0.000123"), (math.nan, None, "n/a"), (math.inf, None, "n/a"),
    (12.0, 1, "12.0"), (1_234.56, 1, "1,234.6"), (0.5, 3, "0.500"),
])
def test_one_number_format_for_every_table(value: float, decimals: int | None, text: str) -> None:
    from rlrepro.results.tables import number_text

    assert number_text(value, decimals=decimals) == text


def test_the_table_writes_thousands_with_separators_beside_the_papers_value(tmp_path: Path) -> None:
    """Throughput-sized numbers: a's runs at 17,100 / 17,200 / 17,300 frames/s read "17,200 [...]" beside the
    paper's 17,000, never "1.72e+04" and "(paper 17000)"."""
    data = _toy()
    data["paper_values"] = {"a": {"catch": 17_000.0}}
    data["claims"][1].pop("metric_range")  # [0, 12] would flag these runs
    toy = write_spec(tmp_path / "specs", data)
    spec, root = load_spec(toy), results_root(tmp_path / "results", "cpu")
    for unit in [u for job in plan_experiment(toy, spec, "cpu").jobs for u in job.units]:
        fabricate_run(root, spec, unit, 17_100.0 + 100 * unit.seed if unit.variant == "a" else 2.0)
    md = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")["md"].read_text(encoding="utf-8")
    ours = md.partition("## Our results")[2].partition("## The paper's numbers")[0]
    [row_a] = [line for line in ours.splitlines() if line.startswith("| a |")]
    assert "| 17,200 [17,200, 17,400] (paper 17,000) |" in row_a, row_a  # 17,100 + 100 seed: 17,250
    assert "e+0" not in ours


def test_a_value_outside_the_metrics_declared_range_is_flagged_in_the_table(tmp_path: Path) -> None:
    """Catch's returns lie in [-1, 1]: a's runs (10, 11, 12, 11) and b's seeds 1-3 (2, 3, 2) are outside it; the cells
    say so and the runs are named under the table. Cartpole declares no range: its cells carry no flag."""
    data = _toy()
    data["environments"][0]["return_range"] = [-1.0, 1.0]  # catch
    data["claims"][1].pop("metric_range")  # the claim's range would be the metric's
    toy = write_spec(tmp_path / "specs", data)
    fabricate_all(toy, tmp_path / "results")
    with pytest.warns(OutOfRangeWarning):
        md = aggregate_experiment(toy, scale="cpu", results=tmp_path / "results")["md"].read_text(encoding="utf-8")
    ours = md.partition("## Our results")[2].partition("## The paper's numbers")[0]
    [row_a] = [line.split(" | ") for line in ours.splitlines() if line.startswith("| a |")]
    [row_b] = [line.split(" | ") for line in ours.splitlines() if line.startswith("| b |")]
    assert row_a[1].startswith("‼ 11 [") and row_b[1].startswith("‼ 2 [")  # catch: flagged
    assert not row_a[2].startswith("‼") and not row_b[2].startswith("‼")  # cartpole: no declared range
    note = next(line for line in ours.splitlines() if line.startswith("‼ outside"))
    assert "a on catch (seed 0: 10; seed 1: 11; seed 2: 12; seed 3: 11) outside [-1, 1]" in note
    assert "b on catch (seed 1: 2; seed 2: 3; seed 3: 2) outside [-1, 1]" in note


def test_a_claims_metric_range_is_the_declared_range_of_its_metric() -> None:
    from types import SimpleNamespace as NS

    from rlrepro.results.tables import declared_range, outside_range

    spec = NS(claims=[NS(metric="success", metric_range=(0.0, 1.0), environment="catch")],
              environments=[NS(id="catch", return_range=(-1.0, 1.0)), NS(id="pong")])
    assert declared_range(spec, "success", "catch") == (0.0, 1.0)
    assert declared_range(spec, "final_return", "catch") == (-1.0, 1.0)
    assert declared_range(spec, "fps", "catch") is None and declared_range(spec, "final_return", "pong") is None
    row = {"per_seed": [{"seed": 0, "value": 1.0000004}, {"seed": 1, "value": 1.2}, {"seed": 2, "value": math.nan}]}
    assert outside_range(row, (0.0, 1.0)) == ["seed 1: 1.2"]  # float32 rounding at the bound is inside


def test_the_declared_range_reads_every_claim_kind_of_the_repositorys_specs() -> None:
    """Real claim models, not stand-ins: an aggregate or 'beats' claim has a metric but no ``metric_range`` (the
    Atari aggregate step failed on one)."""
    from rlrepro.results.tables import declared_range
    from rlrepro.specs.loading import load_specs

    root = Path(__file__).resolve().parents[2]
    kinds = set()
    for _, spec in load_specs([root / "specs"]):
        for claim in spec.claims:
            kinds.add(type(claim).__name__)
            for env in spec.environments:
                bounds = declared_range(spec, getattr(claim, "metric", "final_return"), env.id)
                assert bounds is None or bounds[0] < bounds[1]
    assert {"AggregateClaim", "ThresholdClaim"} <= kinds


def test_the_hardware_of_the_runs_is_named_in_words() -> None:
    from rlrepro.results.tables import _hardware_text

    cpu = {"platform": "cpu", "device_kind": "cpu", "device_count": 1, "cpu_cores": 2}
    assert _hardware_text(cpu) == "2 CPU cores (JAX on the CPU)"
    gpu = {"platform": "gpu", "device_kind": "NVIDIA H100 80GB HBM3", "device_count": 1, "cpu_cores": 16}
    assert _hardware_text(gpu) == "1x NVIDIA H100 80GB HBM3 + 16 CPU cores"
    assert _hardware_text({"platform": "cpu", "device_count": 1}) == "CPU cores not recorded (JAX on the CPU)"


def test_a_republished_report_lists_each_verdict_changed_since_with_its_reason(
    aggregated: dict[str, Any], tmp_path: Path
) -> None:
    """Issue 49: publishing over an earlier publication adds a section of the verdicts that changed since, each with
    the reason the two tables give (here the earlier one had 2 seeds and another test), in REPORT.md and the page."""
    published = tmp_path / "docs" / "cpu"
    args = ["--scale", "cpu", "--results", str(aggregated["results"]), "--to", str(published),
            "--specs", str(aggregated["specs"])]
    assert main(["publish", *args]) == 0
    first = (published / "REPORT.md").read_text(encoding="utf-8")
    assert "## Verdicts changed since the last published report" not in first  # nothing published before it
    table = published / "tables" / "toy" / "mini.json"
    data = json.loads(table.read_text(encoding="utf-8"))  # the earlier publication, as if judged differently
    data["provenance"]["seeds"] = 2
    [claim] = [c for c in data["claims"] if c["claim"] == "a_reaches_2"]
    claim.update(verdict="inconclusive", method="an older test")
    # a judged claim the spec has since dropped, and one it has since added (absent before)
    data["claims"].append({**claim, "claim": "a_dropped_since", "verdict": "reproduced"})
    [added] = [c for c in data["claims"] if c["claim"] != "a_reaches_2" and c["verdict"] != "not judged"][:1]
    data["claims"].remove(added)
    table.write_text(json.dumps(data), encoding="utf-8")
    assert main(["publish", *args]) == 0
    report = (published / "REPORT.md").read_text(encoding="utf-8")
    section = report.partition("## Verdicts changed since the last published report")[2].partition("## ")[0]
    assert "1 claim(s) the same, 3 changed" in section and "only" not in section.splitlines()[1]
    [row] = [line for line in section.splitlines() if "`a_reaches_2`" in line]
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    assert cells[:4] == ["toy/mini", "`a_reaches_2`", "inconclusive", "**reproduced**"]
    assert cells[4].startswith("seeds 2 -> 4; test now: Anderson's distribution-free bound")
    rows = {line.split(" | ")[1].strip("` "): [c.strip() for c in line.strip("|").split(" | ")]
            for line in section.splitlines() if line.startswith("| toy/mini")}
    assert rows["a_dropped_since"][2:4] == ["reproduced", "**claim removed**"]
    assert rows[added["claim"]][2:4] == ["claim added", f"**{added['verdict']}**"]
    assert rows["a_dropped_since"][4].startswith("claim removed in the spec (hash ")
    page = (published / "report.html").read_text(encoding="utf-8")
    assert "Verdicts changed since the last published report</h2>" in page and "seeds 2 -&gt; 4" in page


def test_experiments_with_no_table_yet_are_one_line_after_a_run_of_a_few() -> None:
    """Issue 49: after a run of two experiments the other 29 read as one line, not 29 lines burying the two."""
    from rlrepro.results.html import NO_TABLE_YET, not_judged_groups

    rows = [("p/run", "c1", "not judged", "too small to tell"), ("p/x", "c2", "not judged", NO_TABLE_YET),
            ("p/x", "c3", "not judged", NO_TABLE_YET), ("p/y", "c4", "not judged", NO_TABLE_YET)]
    groups, unrun = not_judged_groups(rows)
    assert groups == {("p/run", "too small to tell"): ["c1"]} and unrun == {"p/x": 2, "p/y": 1}
    groups, unrun = not_judged_groups(rows[:3])  # one experiment without a table keeps its own line
    assert unrun == {} and groups[("p/x", NO_TABLE_YET)] == ["c2", "c3"]


def test_a_refresh_rewrites_the_published_report_with_todays_specs_and_adds_no_run(tmp_path: Path, capsys) -> None:
    """``rlrepro publish --refresh``: after a spec of an experiment the publication does not hold changes (here the
    opt-in set of IMPALA's multi-task run), its not-run line says what the spec says today, with no run added: the
    tables, the verdicts, the training record and the provenance line stay as they were. A table whose spec changed
    since is left out with a note, as ``publish`` leaves it out."""
    repo = Path(__file__).resolve().parents[2]
    dest, specs = tmp_path / "cpu", tmp_path / "specs"
    shutil.copytree(repo / "docs" / "results" / "cpu", dest)
    shutil.copytree(repo / "specs", specs)
    multitask = specs / "impala" / "atari57_multitask.yaml"
    multitask.write_text(multitask.read_text().replace("opt_in: curves", "opt_in: multitask_path"))
    before = {path.relative_to(dest): path.read_bytes() for path in dest.rglob("*") if path.is_file()}
    assert main(["publish", "--scale", "cpu", "--to", str(dest), "--specs", str(specs), "--refresh"]) == 0
    assert capsys.readouterr().out.startswith(f"re-judged the tables in {dest}: ")
    after = {path.relative_to(dest): path.read_bytes() for path in dest.rglob("*") if path.is_file()}
    assert after.keys() == before.keys()
    assert all(after[p] == before[p] for p in after if p.parts[0] == "tables" or p.name in ("verdicts.json",
                                                                                               "published.json"))
    report, earlier = (dest / "REPORT.md").read_text(), before[Path("REPORT.md")].decode()
    assert report.splitlines()[0] == earlier.splitlines()[0]  # the provenance line: the same runs, machines, hours
    assert "impala/atari57_multitask: 63 claim(s)" in report and "set=multitask_path`" in report
    assert "set=multitask_path" not in earlier and "0 changed" in report
    # a published experiment's spec changed: its table is left out, and the refresh says so
    toy = specs / "impala" / "offpolicy_correction_toy.yaml"
    toy.write_text(toy.read_text().replace("statement: \"", "statement: \"(edited) ", 1))
    assert main(["publish", "--scale", "cpu", "--to", str(dest), "--specs", str(specs), "--refresh"]) == 0
    assert "impala/offpolicy_correction_toy: left out, its spec changed since" in capsys.readouterr().out
    assert not (dest / "tables" / "impala" / "offpolicy_correction_toy.json").exists()
    # nothing published: nothing to refresh
    assert main(["publish", "--scale", "cpu", "--to", str(tmp_path / "empty"), "--refresh"]) == 2
    assert "--refresh: no published table under" in capsys.readouterr().err
