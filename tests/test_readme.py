"""The README's first look and its spec example: the commands, step counts and minutes it states are the specs'."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from rlrepro.cli import main
from rlrepro.specs import load_spec
from rlrepro.workflow import DEFAULT_SET, cannot_run, plan
from rlrepro.workflow.cost import experiment_hours

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _first_look() -> str:
    return README.partition("## First look")[2].partition("## The main job")[0]


def test_the_first_look_runs_named_experiments_in_the_steps_and_minutes_it_states() -> None:
    text = _first_look()
    commands = re.findall(r"snakemake -c2 --config scale=(\w+) only=([\w/,]+)", text)
    assert [scale for scale, _ in commands] == ["smoke", "cpu"]
    only = commands[0][1]
    assert commands[1][1] == only
    smoke = plan([REPO / "specs"], "smoke", only)  # every only= item selects a spec (else SelectionError)
    # Snakemake's steps: a job per training group's (variant, env, seed range), an aggregate per experiment, the
    # MLflow store, the report and `all`
    steps = sum(len(p.jobs) for p in smoke) + len(smoke) + 3
    assert f"({steps} steps" in text
    cpu = plan([REPO / "specs"], "cpu", only)
    minutes = sum(experiment_hours(p, "cpu")[0] * 60 for p in cpu)  # the measured minutes and the frozen arm's
    stated = int(re.search(r"about (\d+) minutes of training", text).group(1))
    assert minutes <= stated, (minutes, stated)
    heading = int(re.search(r"a verdict in about (\d+) minutes", README).group(1))
    assert stated <= heading
    # the cpu scale judges claims (the first look promises a verdict)
    assert any("cpu" in claim.judged_at for p in cpu for claim in p.spec.claims)


def test_the_readmes_spec_example_is_valid_on_the_spec_it_says_to_copy(tmp_path: Path) -> None:
    block = README.partition("## Writing a spec")[2].partition("```yaml")[2].partition("```")[0]
    copied = re.search(r"Start from\s+`(specs/[\w/]+\.yaml)`", README).group(1)
    data = yaml.safe_load((REPO / copied).read_text(encoding="utf-8"))
    data.update(yaml.safe_load(block))  # the example's variants, scales and claims replace the copied spec's
    path = tmp_path / data["paper"] / f"{data['experiment']}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    spec = load_spec(path)
    assert "corr=vtrace__lag=32" in {v.name for v in spec.variant_list()}


def test_schema_for_a_spec_folder_outside_the_repository(tmp_path: Path) -> None:
    # the README: `rlrepro schema --output my/specs/spec.schema.json`; a spec's `$schema=../spec.schema.json` finds it
    assert "rlrepro schema --output my/specs/spec.schema.json" in README
    own = tmp_path / "my" / "specs"
    spec = own / "impala" / "mine.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text((REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml").read_text(encoding="utf-8"))
    assert main(["schema", "--output", str(own / "spec.schema.json")]) == 0
    ref = re.match(r"# yaml-language-server: \$schema=(\S+)", spec.read_text(encoding="utf-8")).group(1)
    assert (spec.parent / ref).resolve().read_text() == (REPO / "specs" / "spec.schema.json").read_text()


def test_the_readme_links_the_published_report_with_its_summary_line() -> None:
    """Issue 32: the top of the README links the published cpu report beside its one-line summary, which is the
    published verdicts' (``rlrepro publish`` prints it), and the report's first line says where its numbers came from."""
    from rlrepro.results.publish import MANIFEST, PROVENANCE_MARK, summary_line

    published = REPO / "docs" / "results" / "cpu"
    top = README.partition("\n## ")[0]
    assert f"the [published cpu report](docs/results/cpu/REPORT.md): {summary_line(published, 'cpu', [REPO / 'specs'])}." in top
    first = (published / "REPORT.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(PROVENANCE_MARK) and "runs at commit" in first and "wall time" in first
    # a job that changed since the publication is never called complete: the line says today's is not published yet
    job = [p.key for p in plan([REPO / "specs"], "cpu") if p.job_set == DEFAULT_SET and not cannot_run(p)]
    published_job = json.loads((published / MANIFEST).read_text(encoding="utf-8"))["job"]
    assert (published_job == job) != ("today's main job" in summary_line(published, "cpu", [REPO / "specs"]))


def test_the_snakemake_report_command_names_the_run_it_reports_on() -> None:
    """Issue 49: `snakemake --report` plans the DAG of its own --config and needs every figure that DAG marks for the
    report. Written with scale=smoke alone, after the first look's run (two experiments) it planned every spec and
    failed at once ("eval_atari.png marked for report but does not exist"): the command carries the run's only=."""
    [(scale, only)] = re.findall(r"snakemake --report \S+ -c1 --config scale=(\w+) only=([\w/,]+)", README)
    first_look = re.findall(r"snakemake -c2 --config scale=(\w+) only=([\w/,]+)", _first_look())
    assert (scale, only) == first_look[0]
    assert README.count("snakemake --report") == 1  # the one command checked above
