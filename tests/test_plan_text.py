"""`rlrepro plan` reads in an 80-column terminal (the project's standard): every line of the real specs' plan fits,
through the real command line, and the layout keeps every figure (a marker per cell, its meaning once below)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rlrepro.results.claims import cannot_show_at, untestable_here
from rlrepro.workflow.cost import COLUMNS, control_share
from rlrepro.cli import main
from rlrepro.plan_text import WIDTH, by_paper, cost_lines, hours_text, table, unit_lines, wrap
from rlrepro.specs import load_specs
from rlrepro.workflow import plan, plan_experiment
from tests.factories import toy_spec_data, write_spec

REPO = Path(__file__).resolve().parents[1]


# --units prints the whole plan and then every run unit: one run per scale covers both. The cpu and paper plans
# take a few seconds each (loading and planning every spec), so they run with the slow tests.
@pytest.mark.parametrize("scale", ["smoke", pytest.param("cpu", marks=pytest.mark.slow),
                                   pytest.param("paper", marks=pytest.mark.slow)])
def test_every_line_of_the_plan_of_the_real_specs_fits_80_columns(monkeypatch, capsys, scale):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["plan", "--scale", scale, "--units"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "time and device-hours per paper (per experiment: --detail):" in lines
    assert "run units (trained: whole chunks of the budget):" in lines
    too_wide = [line for line in lines if len(line) > WIDTH]
    assert not too_wide, f"{len(too_wide)} line(s) wider than {WIDTH}:\n" + "\n".join(too_wide[:5])


def test_hours_read_in_minutes_tenths_or_whole_hours_by_size():
    assert [hours_text(h) for h in (0.25, 1.0, 914.44, 999.94, 1_440_058.4)] == [
        "15 min", "1.0 h", "914.4 h", "999.9 h", "1,440,058 h"]


def test_a_table_aligns_figures_apart_from_their_markers_and_words_flush_right():
    lines = table(("name", "time"), [("a", "1 min [m]"), ("bb", "12.5 h"), ("c", "cannot run"), ("d", "-")])
    assert lines == [
        "name        time",
        "----  ----------",
        "a      1 min [m]",  # the figures end in one column, the markers in the next
        "bb    12.5 h",
        "c     cannot run",  # words are no figure: flush right
        "d          -",
    ]


def test_experiments_are_listed_under_their_paper_named_once():
    rows = [("impala/throughput", "6"), ("impala/dmlab30", "1"), ("refer/mujoco_ddpg", "3")]
    assert by_paper(rows) == [("impala", ""), ("  throughput", "6"), ("  dmlab30", "1"), ("refer", ""),
                              ("  mujoco_ddpg", "3")]


def test_prose_wraps_at_80_columns_with_a_hanging_indent_and_never_breaks_a_word():
    command = "python -m rlrepro.bench impala-atari --spec specs/impala/atari57_deep.yaml --network impala_deep"
    lines = wrap(f"[4] CPU measured on 2-core x86-64 CPU, 24 GiB, no GPU: {command} (2026-11-24)", indent="  ")
    assert lines == [
        "  [4] CPU measured on 2-core x86-64 CPU, 24 GiB, no GPU: python -m rlrepro.bench",
        "      impala-atari --spec specs/impala/atari57_deep.yaml --network impala_deep",
        "      (2026-11-24)",
    ]


def test_units_too_wide_for_80_columns_are_listed_under_one_heading_per_variant(tmp_path):
    """A 60-character variant name with the 8-character env: 2 + 60 + 2 + 8 + 2 + 4 + 2 + 7 + 2 + 6 = 95 columns in
    one row, so the variant becomes a heading and its rows list env, seed, trained and budget."""
    long = "corr=vtrace__lag=32__replay=0.0__a_long_variant_name_for_this"
    data = toy_spec_data(variants=[{"name": long}, {"name": "b"}],
                         scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 100, "seeds": 1}})
    plans = plan([write_spec(tmp_path, data)], "smoke")
    units = {unit: (1_000, "frames") for experiment in plans for job in experiment.jobs for unit in job.units}
    lines = unit_lines(plans, units)
    assert lines[1] == "toy/mini" and lines[2] == f"  {long}"
    assert lines[3].split() == ["env", "seed", "trained", "budget"]
    assert [line.split() for line in lines[4:6]] == [["catch", "0", "1,000", "100"], ["cartpole", "0", "1,000", "100"]]
    assert "  b" in lines and max(map(len, lines)) <= WIDTH


def test_the_cost_table_marks_estimates_and_numbers_their_sources(tmp_path):
    """impala/atari57_deep at paper scale: 57 games x 1 seed x 200M frames = 11.4e9 frames, and as many in its frozen
    arm (its per-game claims read the one variant) at IMPALA's measured cost 1.46 (workflow.cost.FROZEN_COST): 11.4e9 x
    2.46 = 28.04e9; on a stored 24,000 frames/s: 28.04e9 / 24,000 / 3,600 = 324.6 GPU-hours, an estimate (~) with its
    source [1]; its CPU figure, with no stored CPU row, is the spec's cpu minutes scaled the same way: the time here,
    so one column shows both."""
    path = tmp_path / "throughput.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerow({"experiments": "impala/atari57_deep", "device": "gpu", "hardware": "1x Test GPU",
                         "frames_per_s": "24000", "status": "estimate", "date": "2026-11-24",
                         "command": "python -m rlrepro.bench impala-atari", "source": "a published figure"})
    lines = cost_lines(plan([REPO / "specs/impala/atari57_deep.yaml"], "paper"), "paper", path)
    assert lines[3] == "impala"
    assert lines[1].split() == ["experiment", "time", "here", "accelerator-hours"]
    assert lines[4].split()[-3:] == ["~324.6", "h", "[1]"]
    assert "  ~324.6 h GPU-hours on 1x Test GPU" in lines
    assert "  [1] GPU estimate on 1x Test GPU: a published figure" in lines
    assert "sources (stored figures: throughput.csv, rlrepro/bench/):" in lines


def test_the_plan_says_in_full_why_an_experiment_cannot_run_here(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["plan", "--scale", "smoke", "--specs", "specs/impala/dmlab30.yaml"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("  dmlab30 ") and "cannot run" in line)
    assert row.split()[1:3] == ["cannot", "run"]
    notes = " ".join(out.partition("cannot run here:")[2].split())
    assert notes.startswith("impala/dmlab30: DeepMind Lab is not installed (python module 'deepmind_lab').")
    assert "and run this spec again." in notes  # the whole reason, with what to do about it


def test_the_power_of_each_ordering_claim_is_listed_under_its_experiment(tmp_path, capsys):
    """cpu scale: 4 seeds per side; the permutation test there needs a 2.85 SD gap for 80% power: 2.85 * SD 2 = 5.7.
    The second claim states no spread and has no table: 'unknown', whose meaning the heading gives once."""
    claim = {"kind": "ordering", "statement": "a beats b", "better": "a", "worse": ["b"], "judged_at": ["cpu"],
             "paper_evidence": "Table 2"}
    data = toy_spec_data(variants=[{"name": "a"}, {"name": "b"}], scales={"smoke": {"frames": 100, "seeds": 1},
                                                                         "cpu": {"frames": 200, "seeds": 4}},
                         claims=[{**claim, "id": "order", "expected_sd": 2.0}, {**claim, "id": "spread_unknown"}])
    write_spec(tmp_path / "specs", data)
    assert main(["plan", "--scale", "cpu", "--specs", str(tmp_path / "specs"), "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    power = out.partition("\npower of the ordering claims")[2].splitlines()
    assert " ".join(" ".join(power[:3]).split()) == (
        "judged at this scale: the smallest difference the seeds detect with 80% power (permutation test, one-sided "
        "0.025, normal seeds); "
        "unknown: no expected_sd in the spec and no table yet.")
    assert power[3] == "  toy/mini (4 seeds per side):"
    assert " ".join(" ".join(power[4:]).split()) == (
        "order: 5.7 in final_return if the expected SD 2 were the truth (normal seeds, permutation test) "
        "spread_unknown: unknown")


def test_detail_gives_each_claim_the_fewest_seeds_that_can_show_it_beside_the_seeds_it_has(tmp_path, capsys):
    """Issue 45: at 4 seeds, 'a beats b' (floor 4: 1 / C(8, 4) = 0.014) is decided; 'more than half of the seeds
    pass' (all of 4 passing bound the share from 0.025^(1/4) = 0.398, of 6 from 0.541) needs 6; a mean of a metric
    with no declared range is shown by no count. Each with what would fix it."""
    base = {"judged_at": ["cpu"], "paper_evidence": "Table 2"}
    share = {**base, "kind": "threshold", "id": "most_pass", "statement": "most runs pass", "variant": "a",
             "environment": "catch", "op": ">=", "value": 0.0}
    data = toy_spec_data(variants=[{"name": "a"}, {"name": "b"}], scales={"smoke": {"frames": 100, "seeds": 1},
                                                                         "cpu": {"frames": 200, "seeds": 4}},
                         claims=[{**base, "kind": "ordering", "id": "order", "statement": "a beats b", "better": "a",
                                  "worse": ["b"]}, {**share, "seeds_share": 0.5},
                                 {**share, "id": "low_loss", "statement": "a low loss", "metric": "loss"}])
    write_spec(tmp_path / "specs", data)
    assert main(["plan", "--scale", "cpu", "--detail", "--specs", str(tmp_path / "specs"), "--results",
                 str(tmp_path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("claims decided at scale 'cpu': 1 by 1 experiment(s) of 1, in 0 min (claim, the fewest seeds that can "
            "show it: its test's floor; the experiment's seeds after its time): toy/mini (1, unknown, 4 seeds): order 4 "
            "judged here, but its seeds cannot show them reproduced (2: inconclusive, at most refuted, whatever the "
            "runs show): toy/mini most_pass: 4 seed(s) cannot show a share above 0.5 (all passing: Clopper-Pearson "
            "lower end 0.40); 6 seeds would toy/mini low_loss: a mean over seeds of a metric with no declared range "
            "(metric_range); no count up to 256 seeds would") in text


def test_the_plan_of_every_spec_reads_on_one_screen_and_detail_gives_each_experiment(monkeypatch, capsys, tmp_path):
    """Issue 31 item 11: the cpu plan of every spec was 224 lines, with two identical columns (time here and CPU
    machine-hours: both the specs' measured minutes). By default it is summed per paper (well under 100 lines, one
    time column); --detail lists each experiment, its figures' sources and the memory table, within 80 columns."""
    monkeypatch.chdir(REPO)
    # an empty results folder: a checkout's own tables (a first look run here) add their power lines
    assert main(["plan", "--scale", "cpu", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < 80 and max(map(len, lines)) <= WIDTH
    header = lines[lines.index("time and device-hours per paper (per experiment: --detail):") + 1]
    assert header.split() == ["paper", "experiments", "runs", "time", "here", "GPU/TPU-hours"]  # one time column
    assert "It is the CPU machine-hours too" in " ".join(out.split())
    papers = {line.split()[0]: line.split()[1:] for line in lines[lines.index(header) + 2:] if line and line[0] != " "}
    # a paper's row: its experiments, their runs and the sum of their specs' measured cpu minutes, each with its
    # frozen arm added at its kind's measured cost (workflow.cost.control_share)
    specs = [spec for _, spec in load_specs([REPO / "specs"]) if spec.paper == "synthetic_returns"]
    plans = [plan_experiment(Path("x.yaml"), spec, "cpu") for spec in specs]
    runs = sum(len(job.units) for e in plans for job in e.jobs)
    minutes = sum(e.spec.scale("cpu").expected_minutes * (1 + control_share(e)) for e in plans)
    assert papers["synthetic_returns"] == [str(len(specs)), str(runs), *hours_text(minutes / 60).split(), "-"]
    assert "unknown: " in out and "(listed with --detail)" in out  # the unknown powers counted, not listed
    # Issue 32: what the default job decides, per experiment, and the opt-in set it leaves out. Every experiment of
    # the default job decides a claim at the cpu scale or is a path check of at most PATH_CHECK_MINUTES.
    text = " ".join(out.split())
    every = load_specs([REPO / "specs"])
    default = [spec for _, spec in every if spec.scales["cpu"].opt_in is None]
    judged = [[claim for claim in spec.claims if "cpu" in claim.judged_at] for spec in default]
    reach = lambda spec, c: cannot_show_at(spec, c, "cpu") or untestable_here(c)  # noqa: E731 -- or this machine
    out_of_reach = sum(bool(reach(spec, c)) for spec, claims in zip(default, judged) for c in claims)
    claims = sum(map(len, judged)) - out_of_reach
    deciding = sum(any(not reach(spec, c) for c in claims) for spec, claims in zip(default, judged))
    assert f"claims decided at scale 'cpu': {claims} by {deciding} experiment(s) of " in text
    per_frodo = {spec.experiment: sum(not reach(spec, c) for c in claims)
                 for spec, claims in zip(default, judged) if spec.paper == "frodo"}
    assert f"frodo: catch {per_frodo['catch']}, random_walk {per_frodo['random_walk']}" in text
    assert "path checks (no claim decided here, at most 10 min each):" in text
    assert "longer than a path check" not in text
    # judged there, but no runs at the cpu scale's seeds could decide them: counted apart, reasons with --detail
    # (none once every claim is decidable where it is judged: tests/specs/test_claims_decidable.py)
    machine = sum(bool(untestable_here(c)) for claims in judged for c in claims)  # listed apart: a bigger machine decides
    heading = (f"judged here, but its seeds cannot show them reproduced ({out_of_reach - machine}: inconclusive, at "
               "most refuted, whatever the runs show; why: --detail): ")
    assert (heading in text) == bool(out_of_reach - machine)
    assert (f"not testable on this machine ({machine}: not judged here, never refuted)" in text) == bool(machine)
    # the multi-task agent judges nothing at the cpu scale (its agents play at the random level after its budget):
    # an experiment that draws curves, not one whose claims its seeds cannot show
    assert "impala/atari57_multitask" not in text.partition("cannot show them reproduced")[2].partition("path checks")[0]
    opt_in = sorted(f"{spec.paper}/{spec.experiment}" for _, spec in every if spec.scales["cpu"].opt_in == "curves")
    assert len(opt_in) == 6 and "impala/atari57_multitask" in opt_in
    assert f"left out of this job: the opt-in set 'curves' ({len(opt_in)} experiment(s)," in text
    assert all(key in text.partition("the opt-in set 'curves'")[2] for key in opt_in)
    # the four small loss searches decide none of their claims at 200 or 2,000 proposals: their own opt-in set
    searches = sorted(f"{spec.paper}/{spec.experiment}" for _, spec in every if spec.scales["cpu"].opt_in == "search")
    assert searches == ["evolving_rl/search_dqnclipped", "evolving_rl/search_dqnreg", "evolving_rl/search_from_scratch",
                        "evolving_rl/search_scratch_cartpole"]
    assert "left out of this job: the opt-in set 'search' (4 experiment(s), 1.3 h, no claim decided at this scale; " \
        "run it with --config set=search): " in text
    assert all(key in text.partition("the opt-in set 'search'")[2] for key in searches)
    assert main(["plan", "--scale", "cpu", "--detail", "--results", str(tmp_path)]) == 0
    detail = capsys.readouterr().out.splitlines()
    assert max(map(len, detail)) <= WIDTH
    table = detail[detail.index("time and device-hours:") + 1]
    assert table.split() == ["experiment", "time", "here", "accelerator-hours"]
    assert "cluster memory per training job (profiles/slurm):" in detail
    assert any(line.startswith("sources") for line in detail)
    # --detail: the claims' ids, each with the fewest seeds that can show it, the experiment's seeds beside them
    assert "  frodo/random_walk (3, 13 min, 10 seeds): frodo_below_every_td_lambda 4," in detail  # 10 min measured, its frozen arm added
    out_of_reach = detail[next((i for i, line in enumerate(detail) if "cannot show them reproduced" in line), len(detail)):]
    assert not any(line.startswith("    refer/") for line in out_of_reach)  # each listed with why not; no ReF-ER
    assert main(["plan", "--scale", "cpu", "--set", "curves", "--results", str(tmp_path)]) == 0
    curves = " ".join(capsys.readouterr().out.split())
    assert f"claims decided at scale 'cpu': 0 by 0 experiment(s) of {len(opt_in)}" in curves
    assert f"left out of this job: the default job ({len(default) - 4} experiment(s)," in curves  # 4 cannot run


def test_the_plan_of_what_a_published_report_still_lacks_names_the_experiments_left_to_run(tmp_path, capsys):
    """Issue 32: a job published a session at a time: `plan --unpublished FOLDER` leaves out what FOLDER has tables
    of and ends with the command that runs the rest (a paper with nothing published is named whole)."""
    from rlrepro.workflow import DEFAULT_SET, cannot_run

    default = [e for e in plan(["specs"], "cpu") if e.job_set == DEFAULT_SET and not cannot_run(e)]
    published = [e for e in default if e.spec.paper == "synthetic_returns"] + [
        e for e in default if e.key == "frodo/random_walk"]
    for e in published:
        path = tmp_path / "tables" / f"{e.key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", encoding="utf-8")
    assert main(["plan", "--scale", "cpu", "--unpublished", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    left = [e for e in default if e not in published]
    assert " ".join(out.split()).endswith(
        f"still to run here: {len(left)} experiment(s) (the {len(published)} published in {tmp_path} are left out "
        "above): snakemake -c2 --config scale=cpu only=evolving_rl,frodo/catch,impala,refer")
    assert "synthetic_returns" not in out.partition("estimated total time")[0]  # not in the time table


@pytest.mark.parametrize("scale", ["cpu", "paper"])
def test_every_refer_claim_is_decidable_where_it_is_judged(scale):
    """Issue 45: no ReF-ER claim is one its scale's seeds could never show reproduced (a mean or an equivalence on
    a metric with no range, too few seeds for a share or a permutation test)."""
    specs = [spec for _, spec in load_specs([REPO / "specs"]) if spec.paper == "refer"]
    out = [(spec.experiment, c.id, cannot_show_at(spec, c, scale)) for spec in specs for c in spec.claims
           if scale in c.judged_at and cannot_show_at(spec, c, scale)]
    assert out == []
