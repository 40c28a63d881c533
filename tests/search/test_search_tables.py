"""A search's best programs (as equations, with scores) and its duplicate and hurdle counts reach the table and report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rlrepro.results.report import write_report
from rlrepro.results.tables import aggregate_experiment, search_counts_text
from rlrepro.search import evolution
from rlrepro.search.trainer import write_search_report
from tests.factories import write_spec
from tests.results.test_tables import _toy, fabricate_all
from tests.search.test_evolution import _run


def test_search_counts_text_gives_counts_and_fractions_beside_the_papers():
    stats = {"trials": 100.0, "programs_evaluated": 30.0, "duplicates": 70.0, "hurdle_rejections": 12.0,
             "duplicate_fraction": 0.7, "hurdle_reject_fraction": 0.4}
    assert search_counts_text(stats) == (
        "100 proposals: 70 functional duplicates (70%; paper ~70%); 30 programs trained, 12 rejected by the hurdle "
        "(40%; paper ~40%)."
    )
    older = {k: v for k, v in stats.items() if k not in ("duplicates", "hurdle_rejections")}  # search.json before counts
    assert search_counts_text(older) == search_counts_text(stats)


def test_the_best_programs_and_counts_of_a_search_appear_in_the_table_and_the_report(tmp_path: Path):
    specs = tmp_path / "specs"
    spec_path = write_spec(specs, _toy())
    results = tmp_path / "results"
    run_dirs = fabricate_all(spec_path, results)
    state = _run(evolution.SearchState(rng=np.random.default_rng(0)), 30)
    write_search_report([state], run_dirs[:1])
    best_equation = json.loads((run_dirs[0] / "search.json").read_text())["best"][0]["equation"]

    paths = aggregate_experiment(spec_path, scale="cpu", results=results)
    table = paths["md"].read_text()
    assert "## Search: best programs" in table and f"`{best_equation}`" in table
    assert f"30 proposals: {state.duplicates} functional duplicates" in table
    assert f"{len(state.cache)} programs trained, {state.hurdle_failures} rejected by the hurdle" in table
    [search] = json.loads(paths["json"].read_text())["search"]
    assert search["seed"] == 0 and len(search["best"]) == 5
    assert search["statistics"]["duplicates"] == state.duplicates

    report = write_report([specs], scale="cpu", results=results).read_text()
    assert f"best program `{best_equation}`" in report and "functional duplicates" in report


def test_experiments_without_a_search_have_no_search_section(tmp_path: Path):
    spec_path = write_spec(tmp_path / "specs", _toy())
    fabricate_all(spec_path, tmp_path / "results")
    paths = aggregate_experiment(spec_path, scale="cpu", results=tmp_path / "results")
    assert "Search" not in paths["md"].read_text() and "search" not in json.loads(paths["json"].read_text())
