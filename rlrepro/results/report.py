"""REPORT.md and report.html: every experiment and every claim of the selected specs, on one page."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from rlrepro.provenance import git_commit
from rlrepro.results.claim_rows import ClaimRow, claim_rows, short
from rlrepro.results.claims import NOT_JUDGED, OUTCOMES, UNINFORMATIVE, VERDICT_MEANING, detail_with_method
from rlrepro.results.html import NO_TABLE_YET, not_judged_groups, write_html_report
from rlrepro.results.plots import x_axis_label
from rlrepro.results.tables import FITNESS_DECIMALS, number_text, search_counts_text
from rlrepro.specs import Scale, SpecError
from rlrepro.workflow import DEFAULT_SET, ExperimentPlan, SelectionError, cannot_run, plan, results_root


def changed_lines(before: Path, now: Path) -> list[str]:
    """The Markdown of the verdicts changed since ``before`` (``rlrepro.results.publish.changed_verdicts``)."""
    from rlrepro.results.publish import changed_verdicts  # noqa: PLC0415 -- publish imports this module

    changed, same, only_before, only_now = changed_verdicts(before, now)
    lines = [f"Against the report published before this one: {same} claim(s) the same, {len(changed)} changed"
             + (f", {only_now} judged only now" if only_now else "") + (f", {only_before} only before" if only_before else "")
             + " (`rlrepro report --compare`)."]
    if changed:
        lines += ["", "| experiment | claim | before | now | reason (from the tables) |", "|---|---|---|---|---|"]
        lines += [f"| {c['experiment']} | `{c['claim']}` | {c['before']} | **{c['now']}** | {_cell(c['reason'])} |"
                  for c in changed]
    return lines


def write_report(
    specs: list[str | Path], *, scale: Scale, results: Path, only: str | None = None, compare_to: Path | None = None
) -> Path:
    """Write ``<results>/<scale>/REPORT.md`` and ``report.html`` from the experiments' table JSON files.

    The report covers every experiment of the scale; ``only`` (a run's ``only=`` selection) puts the experiments it
    selects first and their tally at the top. ``compare_to`` (the last published report's folder) adds a section of
    the verdicts that changed since, each with the reason the tables give.
    """
    root = results_root(results, scale)
    plans, skipped = plans_of_every_spec_set(specs, scale, None, root)
    lead = [p.key for p in plan(specs, scale, only)] if only else []
    plans = sorted(plans, key=lambda p: p.key not in lead)  # the run's experiments first, each list in its order
    summary_rows, sections, raw_rows, html_sections, rows = [], [], [], [], []
    for experiment in plans:
        table_json = Path(experiment.table_paths(root)["md"]).with_suffix(".json")
        why = not_run_text(experiment, table_json)
        html_sections.append((experiment.key, why))
        if why:
            raw_rows += [(experiment.key, c.id, NOT_JUDGED, why) for c in experiment.spec.claims]
            summary_rows += [_row(experiment, c.id, NOT_JUDGED, why) for c in experiment.spec.claims]
            sections.append(f"### {experiment.key}\n\n{why}\n")
            continue
        data = json.loads(table_json.read_text())
        rows += [row for row in claim_rows(experiment, data["claims"]) if row.verdict != NOT_JUDGED]
        # a verdict's method (test and assumption) gets a column of the page's table and ends REPORT.md's detail
        raw_rows += [(experiment.key, c["claim"], c["verdict"], c["detail"], c.get("method") or "") for c in data["claims"]]
        summary_rows += [_row(experiment, c["claim"], c["verdict"], detail_with_method(c)) for c in data["claims"]]
        prov = data["provenance"]
        sections.append(
            f"### {experiment.key}\n\n{experiment.spec.reference.where}. Scale {prov['scale']}, {prov['seeds']} seeds, "
            f"{_frames_text(prov, experiment.spec)}, "
            f"spec hash `{prov['spec_hash']}`. "
            + _configuration_text(prov)
            + (f"{len(prov['resumed_runs'])} of {prov['runs']} runs resumed after an interruption (the table says "
               "which). " if prov.get("resumed_runs") else "")
            + f"Table: [tables/{experiment.key}.md](tables/{experiment.key}.md)\n\n"
            + "".join(_search_summary(run) for run in data.get("search", []))
            + f"![curves](tables/{experiment.key}.png)\n"
        )
    counts: dict[str, int] = {}
    for row in summary_rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    order = {verdict: i for i, verdict in enumerate((*OUTCOMES, UNINFORMATIVE))}
    run_counts = _tally([row for row in summary_rows if row[0] in lead], order)
    changes = changed_lines(compare_to, root) if compare_to is not None else None
    lines = [
        f"# rlrepro report — scale '{scale}'",
        "",
        f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')} at commit `{git_commit()}`.",
        *_spec_set_lines(root, skipped),
        *([lead_text(only, lead, run_counts), ""] if lead else []),
        f"{len(plans)} experiment(s), {len(summary_rows)} claim(s): "
        + (", ".join(f"{counts[v]} {v}" for v in sorted(counts, key=lambda v: order.get(v, len(order)))) or "none"),
        "",
        "Verdicts: " + "; ".join(f"**{v}**: {VERDICT_MEANING[v]}" for v in (*OUTCOMES, UNINFORMATIVE)) + ".",
        "",
        INTERVALS_TEXT,
        "",
        *(["## Verdicts changed since the last published report", "", *changes, ""] if changes is not None else []),
        "## Results per paper",
        "",
        *_paper_tables(plans, rows),
        "## Claims not judged at this scale",
        "",
        *_not_judged_lines(summary_rows),
        "",
        "## Evidence",
        "",
        "Each judged claim's test, p-values and full evidence (the row's note).",
        "",
        *_evidence_lines(rows),
        "## Experiments",
        "",
        *sections,
    ]
    path = root / "REPORT.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    write_html_report(html_sections, raw_rows, scale=scale, root=root, claim_rows=rows,
                      lead=lead_text(only, lead, run_counts) if lead else "", changes=changes,
                      papers=_paper_titles(plans))
    tally = {"experiments": len(plans), "claims": _tally(summary_rows, order)}
    if lead:
        tally["run"] = {"only": only, "experiments": len(lead), "claims": run_counts}
    (root / TALLY_FILE).write_text(json.dumps(tally, indent=2) + "\n")
    return path


TALLY_FILE = "verdicts.json"
#: What the report says of its intervals, once, above the tables: each names its own method where it appears.
INTERVALS_TEXT = (
    "Intervals: each is named by its method where it appears: Welch's t (shown beside a permutation test, which "
    "decides), distribution-free on the metric's declared range (Anderson's bound), Clopper-Pearson for a share of "
    "seeds, stratified bootstrap for an aggregate over games and for the experiments' own tables' cells.")


def _tally(rows: list[tuple[str, ...]], order: dict[str, int]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    return {v: counts[v] for v in sorted(counts, key=lambda v: order.get(v, len(order)))}


def lead_text(only: str | None, lead: list[str], counts: dict[str, int]) -> str:
    """The report's line for a run with ``only=``: what it selected (first below) and their verdicts."""
    tally = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no claim"
    return (f"This run (only={only}): {len(lead)} experiment(s), {sum(counts.values())} claim(s): {tally}. "
            f"They come first below: {', '.join(lead)}.")


def _paper_titles(plans: list[ExperimentPlan]) -> dict[str, str]:
    """paper -> 'Title (citation)', in report order."""
    titles: dict[str, str] = {}
    for p in plans:
        titles.setdefault(p.spec.paper, f"{p.spec.reference.title} ({p.spec.reference.citation})")
    return titles


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _paper_tables(plans: list[ExperimentPlan], rows: list[ClaimRow]) -> list[str]:
    """One table per paper of its judged claims: claim (the paper's words, short), the paper's value, ours, verdict,
    what it rests on, and a link to its evidence."""
    lines: list[str] = []
    notes = {row.anchor: i for i, row in enumerate(rows, 1)}
    for paper, title in _paper_titles(plans).items():
        mine = [row for row in rows if row.experiment.split("/")[0] == paper]
        if not mine:
            continue
        lines += [f"### {title}", "", "| claim | the paper | ours | verdict | rests on | evidence |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {_cell(short(row.statement))} (`{row.experiment}` `{row.claim}`) | {_cell(row.paper)} | "
                  f"{_cell(row.ours)} | **{row.verdict}** | {_cell(row.rests_on)} | "
                  f"[note {notes[row.anchor]}](#{row.anchor}) |" for row in mine]
        lines.append("")
    return lines or ["No claim is judged at this scale.", ""]


def _evidence_lines(rows: list[ClaimRow]) -> list[str]:
    """The footnotes of the paper tables: per judged claim its test, p-values, the full evidence and where the
    paper shows it."""
    lines = []
    for i, row in enumerate(rows, 1):
        lines += [f"<a id=\"{row.anchor}\"></a>{i}. **{row.experiment}** `{row.claim}`: **{row.verdict}**. "
                  f"{row.statement}" + (f" Test: {row.method}." if row.method else "")
                  + (f" p: {row.p_values}." if row.p_values else "") + f" Evidence: {row.detail}."
                  + (f" The paper: {row.paper_evidence}." if row.paper_evidence else ""), ""]
    return lines


def _configuration_text(prov: dict) -> str:
    """Which spec file's runs the numbers come from, and where an earlier configuration's runs are kept."""
    text = (f"Runs trained from {', '.join(f'`{s}`' for s in prov['run_spec_sources'])}. "
            if prov.get("run_spec_sources") else "")
    for retired in prov.get("retired") or []:
        text += (f"An earlier configuration's {retired['runs']} run(s) (config hash(es) "
                 f"{', '.join(f'`{h}`' for h in retired['config_hashes'])}) are kept in `{retired['folder']}`. ")
    return text


def not_run_text(experiment: ExperimentPlan, table_json: Path) -> str | None:
    """Why an experiment has no verdicts here (None: it has its table): its backend is missing, it is in an opt-in
    set the default job leaves out, or it has not run yet."""
    if reason := cannot_run(experiment):
        return f"not run on this machine: {reason}"
    if table_json.exists():
        return None
    if (name := experiment.job_set) != DEFAULT_SET:
        why = (f"it decides {len(experiment.claims_judged)} claim(s) here, which the main job's hours cannot hold: "
               f"{experiment.spec.scale(experiment.scale).opt_in_reason}" if experiment.claims_judged
               else "it decides no claim here; it draws curves")
        return (f"not run: in the opt-in set '{name}' of this scale ({why}), "
                f"which the default job leaves out: `snakemake -c2 --config scale={experiment.scale} set={name}`")
    return NO_TABLE_YET


def run_end_text(root: Path, experiments: list[str] | None = None) -> str:
    """What a run prints last: the page to open and the verdict tally (from the report step's verdicts.json); a run
    of some experiments (``only=``: their keys) first says what it judged, from their tables."""
    tally = root / TALLY_FILE
    if not tally.exists():
        return f"No report yet under {root}."
    data = json.loads(tally.read_text(encoding="utf-8"))
    claims = data["claims"]
    counts = ", ".join(f"{n} {verdict}" for verdict, n in claims.items()) or "none"
    whole = f"{data['experiments']} experiment(s), {sum(claims.values())} claim(s): {counts}"
    if experiments is None:
        return f"Report: {root / 'report.html'}\n{whole}"
    mine: dict[str, int] = {}
    for key in experiments:
        table = root / "tables" / f"{key}.json"
        for claim in json.loads(table.read_text(encoding="utf-8"))["claims"] if table.exists() else []:
            mine[claim["verdict"]] = mine.get(claim["verdict"], 0) + 1
    order = {verdict: i for i, verdict in enumerate((*OUTCOMES, UNINFORMATIVE))}
    shown = ", ".join(f"{mine[v]} {v}" for v in sorted(mine, key=lambda v: order.get(v, len(order)))) or "no table yet"
    return (f"This run: {len(experiments)} experiment(s) ({', '.join(experiments)}), {sum(mine.values())} claim(s): "
            f"{shown}\nReport: {root / 'report.html'} (they come first)\nWhole report: {whole}")


SPEC_SETS_FILE = "spec_sets.json"


def plans_of_every_spec_set(
    specs: list[str | Path], scale: Scale, only: str | None, root: Path
) -> tuple[list[ExperimentPlan], list[str]]:
    """The experiments of every spec set run at this scale: ``specs`` and those recorded in ``<root>/spec_sets.json``
    by earlier reports, so a run of one's own spec folder (``specs=``) adds its experiments to the scale's report
    rather than replacing it. An experiment in two sets is shown once (the current set's). Returns the plans and
    the recorded sets that could not be read (moved, deleted or now invalid), which the report names.
    """
    current = [str(Path(s).resolve()) for s in specs]
    record = root / SPEC_SETS_FILE
    earlier = json.loads(record.read_text(encoding="utf-8")) if record.exists() else []
    sets = [current] + [s for s in earlier if s != current]
    plans = plan(specs, scale, only)
    seen = {p.key for p in plans}
    skipped, kept = [], [current]
    for spec_set in sets[1:]:
        try:
            more = plan(spec_set, scale)
        except (SpecError, SelectionError, FileNotFoundError) as error:
            skipped.append(f"{', '.join(spec_set)}: {str(error).splitlines()[0]}")
            continue
        kept.append(spec_set)
        plans += [p for p in more if p.key not in seen]
        seen |= {p.key for p in more}
    root.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
    return plans, skipped


def _spec_set_lines(root: Path, skipped: list[str]) -> list[str]:
    """Which spec sets the report covers (spec_sets.json) and which recorded ones it could not read."""
    sets = json.loads((root / SPEC_SETS_FILE).read_text(encoding="utf-8"))
    lines = []
    if len(sets) > 1:
        lines.append(f"Spec sets run at this scale (every one is in this report; {SPEC_SETS_FILE}): "
                     + "; ".join(", ".join(f"`{p}`" for p in s) for s in sets) + ".")
    lines += [f"A spec set recorded earlier could not be read and is left out: {why}." for why in skipped]
    return lines + ([""] if lines else [])


def _search_summary(run: dict) -> str:
    """A loss search's best program (simplified equation, fitness) and its proposal counts, in one paragraph."""
    best = run["best"][0] if run["best"] else None
    fitness = number_text(best["fitness"], decimals=FITNESS_DECIMALS) if best else ""
    found = f"best program `{best['equation']}` (fitness {fitness})" if best else "no program trained"
    return f"Search {run['env']} seed {run['seed']}: {found}. {search_counts_text(run['statistics'])}\n\n"


def _not_judged_lines(rows: list[tuple[str, str, str, str]]) -> list[str]:
    """One line per (experiment, reason), listing the claims it covers; the experiments with no table yet (two or
    more) in one line."""
    groups, unrun = not_judged_groups([row for row in rows if row[2] == NOT_JUDGED])
    lines = []
    for (experiment, detail), claims in groups.items():
        shown = ", ".join(claims[:6]) + (f" and {len(claims) - 6} more" if len(claims) > 6 else "")
        lines.append(f"- {experiment}: {len(claims)} claim(s) ({shown}): {detail}")
    if unrun:
        lines.append(f"- {len(unrun)} experiments, {sum(unrun.values())} claims: {NO_TABLE_YET}: "
                     + ", ".join(f"{e} ({n})" for e, n in unrun.items()))
    return lines or ["- none"]


def _row(experiment: ExperimentPlan, claim: str, verdict: str, detail: str) -> tuple[str, str, str, str]:
    return experiment.key, claim, verdict, detail.replace("|", "\\|").replace("\n", " ")


def _frames_text(prov: dict, spec) -> str:
    """What the runs trained, with the budget beside it (``frames_text``; tables of older runs have only the count)."""
    return prov.get("frames_text") or f"{prov['frames_per_run']:,} {x_axis_label(spec).split()[-1]} per run"
