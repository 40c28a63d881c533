"""What ``rlrepro plan`` prints, laid out for an 80-column terminal (the project's standard).

Tables list experiments under their paper (named once, its experiments indented); what a cell's figure rests on is a
short marker (``[m]``, ``[1]``, ``~``) explained once under its table; prose wraps at :data:`WIDTH` with a hanging
indent. The figures come from ``rlrepro.workflow`` (its cost model: ``workflow.cost``); the
layout drops none of them. Imports no JAX: planning stays light.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from rlrepro.workflow.cost import (
    GPU_HOST_MB, MEM_FACTOR, MEM_MB, MEM_OVERHEAD_MB, cpu_rate, experiment_hours, frames_of, job_weight, memory_mb,
)

#: The terminal width every line of ``rlrepro plan`` fits (tested on every scale of the real specs).
WIDTH = 80
#: The machine the specs' cpu-scale minutes were measured on (README "Benchmarks"; STACK.md has its figures).
REFERENCE_MACHINE = "2-core x86-64 CPU, 24 GiB, no GPU"

# --- layout -------------------------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, left: Collection[int] = (0,), rule: bool = True,
          indent: str = "") -> list[str]:
    """Columns two spaces apart, each as wide as its widest cell; the columns in ``left`` left-aligned (names), the
    others right-aligned (figures), a trailing marker such as `` [m]`` set apart so the figures stay aligned; a rule
    of dashes under the header unless ``rule`` is False."""
    columns = [_aligned(column, i in left) for i, column in enumerate(zip(header, *rows))]
    lines = [indent + "  ".join(cells).rstrip() for cells in zip(*columns)]
    if rule:
        lines.insert(1, indent + "  ".join("-" * len(column[0]) for column in columns))
    return lines


_MARKED = re.compile(r"(.*?)((?: \[[^\]]+\])?)")  # a figure and its marker, e.g. "1 min" " [m]"
_FIGURE = re.compile(r"[~\d-]")  # a figure ("1,700 MB", "~0 min", "-") rather than words ("cannot run")


def _aligned(column: Sequence[str], left: bool) -> list[str]:
    """A column's cells (header first) padded to one width: left-aligned; or right-aligned, the figures' markers in
    a column of their own so the figures line up, words (a cell that is no figure) flush right."""
    if left:
        width = max(map(len, column))
        return [cell.ljust(width) for cell in column]
    split = [_MARKED.fullmatch(cell).groups() if _FIGURE.match(cell) else None for cell in column[1:]]
    figures = [parts for parts in split if parts is not None]
    fw = max((len(figure) for figure, _ in figures), default=0)
    mw = max((len(mark) for _, mark in figures), default=0)
    cells = [cell if parts is None else parts[0].rjust(fw) + parts[1].ljust(mw)
             for cell, parts in zip(column[1:], split)]
    width = max(len(cell) for cell in [column[0], *cells])
    return [cell.rjust(width) for cell in [column[0], *cells]]


def by_paper(rows: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
    """Rows whose first cell is ``paper/experiment``, each paper's under one heading row naming it: the experiment
    column is then as wide as the longest experiment name (+2), not paper and experiment together."""
    grouped, paper = [], None
    for key, *cells in rows:
        head, _, name = key.partition("/")
        if head != paper:
            paper = head
            grouped.append((head, *[""] * len(cells)))
        grouped.append((f"  {name}", *cells))
    return grouped


def wrap(text: str, indent: str = "", hanging: str = "    ") -> list[str]:
    """``text`` in lines of at most WIDTH characters: the first at ``indent``, the rest at ``indent + hanging``.
    Words are never broken (a command or a path stays whole)."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + hanging,
                         break_long_words=False, break_on_hyphens=False)


# --- figures ------------------------------------------------------------------------------------------------------


def hours_text(hours: float) -> str:
    """Minutes under an hour, tenths of an hour under 1,000 h, whole hours above (a tenth of a thousand-hour
    estimate is noise, and the per-paper table must fit 80 columns at paper scale)."""
    if hours < 1:
        return f"{hours * 60:,.0f} min"
    return f"{hours:,.1f} h" if round(hours, 1) < 1_000 else f"{hours:,.0f} h"  # 999.96 h: "1,000 h"


def trained_by_unit(plans: list, scale: str) -> dict:
    """Each run unit -> (what it trains, what that counts): whole chunks (``workflow.chunk_plan``), in frames or,
    for a loss search, proposals; the budget for a unit that cannot train here."""
    from rlrepro.workflow import chunk_plan

    trained = {}
    for experiment in plans:
        for job in experiment.jobs:
            chunks = chunk_plan(experiment.spec, job.variant, job.env, scale)
            for unit in job.units:
                trained[unit] = (chunks.frames, chunks.unit) if chunks is not None else (unit.frames, "frames")
    return trained


def _trained_by_job(plans: list, scale: str) -> list[tuple[int, str, int]]:
    """(trained, what it counts, budget) per job: every unit's whole chunks, or (multi-task) each member's chunks
    once for all its games, like ``Job.frames_emulated`` counts the budget."""
    rows = []
    trained = trained_by_unit(plans, scale)
    for experiment in plans:
        for job in experiment.jobs:
            counts = [trained[unit] for unit in job.units]
            kind = counts[0][1] if counts else "frames"
            if job.population:
                total = counts[0][0] * job.population * len(job.seeds) if counts else 0
            else:
                total = sum(count for count, _ in counts)
            rows.append((total, kind, job.frames_emulated))
    return rows


def _frames_cell(experiment, scale: str) -> str:
    """The summary's frames column: what the experiment's runs train, its budget beside it where they differ."""
    jobs = _trained_by_job([experiment], scale)
    total, budget = sum(count for count, _, _ in jobs), frames_of(experiment)
    unit = " proposals" if any(kind == "proposals" for _, kind, _ in jobs) else ""  # a search counts programs
    return f"{total:,}{unit}" + (f" ({budget:,})" if total != budget else "")


def _total_text(plans: list, scale: str) -> str:
    """What is trained in total by unit (frames, proposals), the budget where it differs."""
    jobs, parts = _trained_by_job(plans, scale), []
    for kind in sorted({kind for _, kind, _ in jobs}):  # frames, then proposals
        total = sum(count for count, k, _ in jobs if k == kind)
        budget = sum(b for _, k, b in jobs if k == kind)
        budget_note = f" (budget {budget:,}: training runs whole chunks)" if total != budget else ""
        parts.append(f"{total:,} {kind} trained{budget_note}")
    return "total " + ("; ".join(parts) or "0 frames")


# --- sections -----------------------------------------------------------------------------------------------------


def summary_lines(plans: list, scale: str) -> list[str]:
    """One row per experiment: runs, jobs, frames trained (the budget beside it where whole chunks train more)."""
    rows = [(e.key, f"{sum(len(job.units) for job in e.jobs):,}", f"{len(e.jobs):,}", _frames_cell(e, scale))
            for e in plans]
    return table(("experiment", "runs", "jobs", "frames trained (budget)"), by_paper(rows))


def _time_cell(experiment, scale: str) -> tuple[str, float | None]:
    """The estimated wall time on the reference machine and its hours: the spec's minutes measured at this scale
    ([m]; they include compilation), else the cpu-scale rate scaled by frames; no hours when it cannot run here or
    the spec states no minutes."""
    from rlrepro.workflow import cannot_run

    if cannot_run(experiment):
        return "cannot run", None
    hours, measured = experiment_hours(experiment, scale)
    if hours is None:
        return "unknown", None
    return hours_text(hours) + (" [m]" if measured else ""), hours


class _Cost(NamedTuple):
    """One experiment's costs: the wall time here (text, hours) and the CPU and accelerator figures (or None)."""

    key: str
    time: str
    hours: float | None
    cpu: Any
    accelerator: Any


def _costs(plans: list, scale: str, stored: list) -> list[_Cost]:
    from rlrepro.workflow.cost import accelerator_hours, cpu_hours

    costs = []
    for experiment in plans:
        time, hours = _time_cell(experiment, scale)
        frames = round(sum(job_weight(job, experiment) for job in experiment.jobs))  # the frozen arm at its cost
        costs.append(_Cost(experiment.key, time, hours,
                           cpu_hours(experiment.key, frames, stored, experiment.spec, REFERENCE_MACHINE, scale),
                           accelerator_hours(experiment.key, frames, stored)))
    return costs


def _same_as_time(costs: list[_Cost]) -> bool:
    """Every CPU machine-hours figure equals its time here (cpu or smoke scale: both are the spec's measured
    minutes): the plan then shows one column, not two identical ones."""
    def same(cost: _Cost) -> bool:
        if cost.cpu is None or cost.hours is None:
            return cost.cpu is None and cost.hours is None
        return hours_text(cost.cpu.hours) == hours_text(cost.hours)

    return all(same(cost) for cost in costs)


def _figure_cell(figure: Any, sources: dict | None) -> str:
    """``~`` an estimate, ``[n]`` its source (numbered in ``sources``; none when None), ``-`` no figure."""
    if figure is None:
        return "-"
    estimate = "~" if figure.status == "estimate" else ""
    if sources is None:
        return f"{estimate}{hours_text(figure.hours)}"
    mark = sources.setdefault((figure.device, figure.hardware, figure.status, figure.source), len(sources) + 1)
    return f"{estimate}{hours_text(figure.hours)} [{mark}]"


def _summed_cell(figures: list) -> str:
    """A paper's figures summed, ``~`` when any is an estimate; ``-`` when it has none."""
    found = [f for f in figures if f is not None]
    if not found:
        return "-"
    return ("~" if any(f.status == "estimate" for f in found) else "") + hours_text(sum(f.hours for f in found))


def _paper_rows(plans: list, costs: list[_Cost], one_column: bool) -> list[tuple[str, ...]]:
    """Per paper: experiments, runs, the time here summed (what cannot run here left out), CPU machine-hours
    (unless the same as the time) and accelerator-hours."""
    rows = []
    for paper in dict.fromkeys(experiment.spec.paper for experiment in plans):
        mine = [(e, c) for e, c in zip(plans, costs) if e.spec.paper == paper]
        runs = sum(len(job.units) for e, _ in mine for job in e.jobs)
        hours = [c.hours for _, c in mine if c.hours is not None]
        time = hours_text(sum(hours)) if hours else "-"
        cpu = () if one_column else (_summed_cell([c.cpu for _, c in mine]),)
        rows.append((paper, f"{len(mine):,}", f"{runs:,}", time, *cpu, _summed_cell([c.accelerator for _, c in mine])))
    return rows


def cost_lines(plans: list, scale: str, throughput: Path | None = None, *, detail: bool = True) -> list[str]:
    """Per experiment (``detail``) or per paper: the estimated wall time here, and device-hours on a CPU machine
    (measured; one column with the time where they are equal) and on the accelerator the stored figures name
    (estimates until measured there), from rlrepro/bench/throughput.csv (issue 12 item 9, issue 15); then the total
    time, what the markers mean, why some cannot run here, the device-hour totals and (``detail``) every figure's
    source. ``throughput``: the stored figures (default: throughput.csv)."""
    from rlrepro.workflow.cost import THROUGHPUT_CSV, load_throughput
    from rlrepro.workflow import cannot_run

    throughput = throughput or THROUGHPUT_CSV
    costs = _costs(plans, scale, load_throughput(throughput))
    one_column = _same_as_time(costs)
    sources: dict = {}
    if detail:
        rows = [(c.key, c.time, *(() if one_column else (_figure_cell(c.cpu, sources),)),
                 _figure_cell(c.accelerator, sources)) for c in costs]
        header = ("experiment", "time here", *(() if one_column else ("CPU machine-hours",)), "accelerator-hours")
        lines = ["time and device-hours:", *table(header, by_paper(rows)), ""]
    else:
        header = ("paper", "experiments", "runs", "time here", *(() if one_column else ("CPU-hours",)),
                  "GPU/TPU-hours")
        lines = ["time and device-hours per paper (per experiment: --detail):",
                 *table(header, _paper_rows(plans, costs, one_column)), ""]
    unknown = sum(c.time == "unknown" for c in costs)
    note = f"; {unknown} experiment(s) without an estimate" if unknown else ""
    lines.append(f"estimated total time: {hours_text(sum(c.hours or 0.0 for c in costs))}{note}.")
    lines += wrap(f"time here: on {REFERENCE_MACHINE}, 2 jobs at a time (one where two do not fit in its memory): "
                  + ("[m] " if detail else "") + "the spec's minutes measured at this "
                  "scale; else (paper scale) its cpu-scale minutes scaled by frames, at the cpu scale's batch sizes; "
                  "the frozen arm (each variant a claim reads, learning off) added at its kind's measured cost"
                  + ("; unknown: the spec states no measured minutes." if unknown else ".")
                  + (" It is the CPU machine-hours too: the jobs take the whole machine." if one_column else ""),
                  hanging="  ")
    lines += wrap("device-hours: frames over the stored throughput of one job (a GPU job runs one per GPU), a "
                  "benchmark's where one exists (the paper's batches); " + ("[n] its source below; " if detail else "")
                  + "~ an estimate, not measured; - no figure (a CPU job has no accelerator figure).", hanging="  ")
    reasons: dict[str, list[str]] = {}
    for experiment in plans:
        if reason := cannot_run(experiment):
            reasons.setdefault(reason, []).append(experiment.key)
    if reasons:
        lines.append("cannot run here" + ("" if detail else " (left out of the times above)") + ":")
        for reason, keys in reasons.items():
            lines += wrap(f"{', '.join(keys)}: {reason}", indent="  ")
    totals: dict[tuple[str, str, str], float] = {}
    for figure in [f for c in costs for f in (c.cpu, c.accelerator) if f is not None]:
        key = (figure.device, figure.hardware, "~" if figure.status == "estimate" else "")
        totals[key] = totals.get(key, 0.0) + figure.hours
    lines += ["", *_totals_lines(totals)]
    if detail:
        lines += ["", f"sources (stored figures: {throughput.name}, rlrepro/bench/):"]
        for (device, hardware, status, source), mark in sources.items():
            lines += wrap(f"[{mark}] {device.upper()} {status} on {hardware}: {source}", indent="  ")
    return lines


def _totals_lines(totals: dict[tuple[str, str, str], float]) -> list[str]:
    """Device-hours summed per (device, hardware, estimate mark), CPU first; then all GPU- and all TPU-hours."""
    lines = ["device-hour totals:"]
    for (device, hardware, estimate), hours in sorted(totals.items(), key=lambda item: _device_order(item[0])):
        lines += wrap(f"{estimate}{hours_text(hours)} {device.upper()}-hours on {hardware}", indent="  ")
    for device in ("gpu", "tpu"):
        parts = [(estimate, hours) for (d, _, estimate), hours in totals.items() if d == device]
        if summed := sum(hours for _, hours in parts):
            kinds = {"estimated" if estimate else "measured" for estimate, _ in parts}
            said = " and ".join(sorted(kinds, reverse=True))  # "measured and estimated", or one of them
            mark = "~" if "estimated" in kinds else ""
            lines.append(f"  all {device.upper()}-hours ({said}, the hardware above): {mark}{hours_text(summed)}")
    return lines


def _device_order(total: tuple[str, str, str]) -> tuple[int, str, str]:
    device, hardware, estimate = total
    return ("cpu", "gpu", "tpu").index(device), hardware, estimate


def memory_lines(plans: list, scale: str, *, detail: bool = True) -> list[str]:
    """What each experiment's training jobs ask a cluster for (profiles/slurm, ``--mem``): the spec's measured peak
    with headroom, or the default, marked (so a cluster user knows which jobs need ``--config mem_mb``). Without
    ``detail``: one sentence, how many experiments fall back to the default and the largest request."""

    rows = []
    for experiment in plans:
        mb, measured = memory_mb(experiment, scale)
        peak = experiment.spec.scale(scale).expected_mem_mb
        rows.append((experiment.key, f"{len(experiment.jobs):,}", f"{mb:,} MB" + ("" if measured else " [d]"),
                     f"{peak:,.0f} MB" if measured else "-"))
    if not detail:
        defaults = sum(row[3] == "-" for row in rows)
        largest = max(memory_mb(experiment, scale)[0] for experiment in plans) if plans else 0
        return wrap(f"cluster memory per training job (profiles/slurm): at most {largest:,} MB; {len(rows) - defaults} "
                    f"experiment(s) from a measured peak, {defaults} at the default {MEM_MB:,} MB (the spec states no "
                    f"measured memory at scale '{scale}'; or set --config mem_mb=N). Per experiment: --detail.",
                    hanging="  ")
    lines = ["cluster memory per training job (profiles/slurm):",
             *table(("experiment", "jobs", "--mem", "measured peak"), by_paper(rows))]
    lines += wrap(f"--mem: the measured peak x {MEM_FACTOR:g} + {MEM_OVERHEAD_MB} MB (rounded up to 100 MB; jobs with "
                  f"GPUs add {GPU_HOST_MB:,} MB).", hanging="  ")
    if any(row[3] == "-" for row in rows):
        lines += wrap(f"[d] the default {MEM_MB:,} MB: the spec states no measured memory at scale '{scale}' (or "
                      "set --config mem_mb=N).", hanging="  ")
    return lines


def unit_lines(plans: list, trained: dict) -> list[str]:
    """Every run unit, under its experiment: variant, env, seed, frames (or proposals) trained and the budget.
    An experiment whose rows would not fit WIDTH lists its units under one heading per variant."""
    lines = ["run units (trained: whole chunks of the budget):"]
    for experiment in plans:
        units = [unit for job in experiment.jobs for unit in job.units]
        rows = [(u.variant, u.env, str(u.seed), f"{trained[u][0]:,}", f"{u.frames:,}") for u in units]
        flat = table(("variant", "env", "seed", "trained", "budget"), rows, left=(0, 1), rule=False, indent="  ")
        lines.append(experiment.key)
        if max(map(len, flat)) <= WIDTH:
            lines += flat
            continue
        for variant in dict.fromkeys(row[0] for row in rows):  # the spec's order
            lines.append(f"  {variant}")
            lines += table(("env", "seed", "trained", "budget"), [row[1:] for row in rows if row[0] == variant],
                           left=(0,), rule=False, indent="    ")
    return lines


def power_lines(plans: list, scale: str, results_root: Path, *, detail: bool = True) -> list[str]:
    """Per ordering claim judged at ``scale``: the smallest difference the scale's seeds can detect (before a run,
    from the claim's expected_sd; else from the experiment's last table), under its experiment. Without ``detail``
    the claims whose power is unknown are counted in one line rather than listed."""
    from rlrepro.results.claims import POWER_UNKNOWN, POWER_UNKNOWN_MEANING, claim_power

    lines, unknown, folded = [], False, {}
    for experiment in plans:
        table_json = Path(experiment.table_paths(results_root)["md"]).with_suffix(".json")
        claims = claim_power(experiment.spec, scale, table_json)
        unknown = unknown or any(text == POWER_UNKNOWN for _, text in claims)
        if not detail:
            folded[experiment.key] = sum(text == POWER_UNKNOWN for _, text in claims)
            claims = [(claim, text) for claim, text in claims if text != POWER_UNKNOWN]
        if claims:
            seeds = experiment.spec.scale(scale).seeds
            lines.append(f"  {experiment.key} ({seeds} seed{'s' if seeds != 1 else ''} per side):")
            for claim, text in claims:
                lines += wrap(f"{claim}: {text}", indent="    ")
    if count := sum(folded.values()):
        lines += wrap(f"{POWER_UNKNOWN}: {count} claim(s) of {sum(n > 0 for n in folded.values())} experiment(s) "
                      "(listed with --detail)", indent="  ")
    if not lines:
        return []
    meaning = f"; {POWER_UNKNOWN}: {POWER_UNKNOWN_MEANING}" if unknown else ""
    return wrap("power of the ordering claims judged at this scale: the smallest difference the seeds detect with "
                f"80% power (permutation test, one-sided 0.025, normal seeds){meaning}.", hanging="  ") + lines


def decided_lines(plans: list, scale: str, left_out: list, *, detail: bool = True) -> list[str]:
    """What the job decides (issue 32): per experiment the claims judged at ``scale`` (their ids with ``detail``)
    and the total with its time; the path checks (no claim decided here, at most PATH_CHECK_MINUTES each); an
    experiment that decides nothing and takes longer, flagged; then the opt-in sets ``left_out`` of this job."""
    from rlrepro.workflow import DEFAULT_SET, PATH_CHECK_MINUTES, cannot_run

    runnable = [(e, *_time_cell(e, scale)) for e in plans if not cannot_run(e)]
    deciding = [row for row in runnable if row[0].claims_decided]
    idle = [row for row in runnable if not row[0].claims_decided]
    checks = [row for row in idle if row[2] is not None and row[2] * 60 <= PATH_CHECK_MINUTES]
    long_idle = [row for row in idle if row not in checks and row[0].job_set == DEFAULT_SET]
    claims = sum(len(e.claims_decided) for e, _, _ in deciding)
    lines = wrap(f"claims decided at scale '{scale}': {claims} by {len(deciding)} experiment(s) of {len(runnable)}, in "
                 f"{hours_text(sum(h or 0.0 for _, _, h in runnable))}"
                 + (" (claim, the fewest seeds that can show it: its test's floor; the experiment's seeds after its "
                    "time)" if detail else "" if not claims else " (their ids: --detail)") + ":", hanging="  ")
    if detail:
        for e, time, hours in deciding:
            seeds = e.spec.scale(scale).seeds
            lines += wrap(f"{e.key} ({len(e.claims_decided)}, {hours_text(hours) if hours is not None else time}, "
                          f"{seeds} seed{'s' if seeds != 1 else ''}): " + ", ".join(_floors(e, e.claims_decided)),
                          indent="  ")
    else:
        for paper in dict.fromkeys(e.spec.paper for e, _, _ in deciding):
            mine = [f"{e.spec.experiment} {len(e.claims_decided)}" for e, _, _ in deciding if e.spec.paper == paper]
            lines += wrap(f"{paper}: {', '.join(mine)}", indent="  ")
    from rlrepro.results.claims import NOT_TESTABLE

    untestable = [(e, key, why) for e, _, _ in runnable for key, why in e.claims_out_of_reach.items()
                  if why.startswith(NOT_TESTABLE)]
    if untestable:  # a limit of this machine, not of the claim's design: a bigger machine (or a cluster) decides them
        lines += wrap(f"not testable on this machine ({len(untestable)}: not judged here, never refuted): " + ", ".join(
            f"{e.key} {key}" + (f" ({why[len(NOT_TESTABLE):].strip()})" if detail else "") for e, key, why in untestable),
            indent="  ")
    out_of_reach = [(e, reasons) for e, _, _ in runnable
                    if (reasons := {k: w for k, w in e.claims_out_of_reach.items() if not w.startswith(NOT_TESTABLE)})]
    if out_of_reach:
        count = sum(len(reasons) for _, reasons in out_of_reach)
        lines += wrap(f"judged here, but its seeds cannot show them reproduced ({count}: inconclusive, at most refuted, "
                      "whatever the runs show" + ("):" if detail else "; why: --detail): " + ", ".join(
                          f"{e.key} {len(r)}" for e, r in out_of_reach)), indent="  ")
        if detail:
            from rlrepro.results.claims import MOST_SEEDS

            for e, reasons in out_of_reach:
                for key, floor in zip(reasons, _fewest_seeds(e, list(reasons))):
                    fix = f"{floor} seeds would" if floor is not None else f"no count up to {MOST_SEEDS} seeds would"
                    lines += wrap(f"{e.key} {key}: {reasons[key]}; {fix}", indent="    ")
    if checks and len(checks) == len(runnable):
        lines += wrap("every experiment is a path check: none decides a claim at this scale", indent="  ")
    elif checks:
        lines += wrap(f"path checks (no claim decided here, at most {PATH_CHECK_MINUTES:g} min each): "
                      + _listed(checks), indent="  ")
    if long_idle:
        lines += wrap("deciding no claim here, longer than a path check (give it a claim judged at this scale, or "
                      "an opt-in set: scales.<scale>.opt_in): " + _listed(long_idle), indent="  ")
    sets: dict[str, list] = {}
    for e in left_out:
        if not cannot_run(e):
            sets.setdefault(e.job_set, []).append((e, *_time_cell(e, scale)))
    for name, rows in sets.items():
        decided = sum(len(e.claims_decided) for e, _, _ in rows)
        what = "the default job" if name == DEFAULT_SET else f"the opt-in set '{name}'"
        lines += wrap(f"left out of this job: {what} ({len(rows)} experiment(s), "
                      f"{hours_text(sum(h or 0.0 for _, _, h in rows))}, "
                      f"{f'{decided} claim(s)' if decided else 'no claim'} decided at this scale; run it with "
                      f"--config set={name})" + ("" if name == DEFAULT_SET else ": " + _listed(rows)), hanging="  ")
    return [line.replace(_KEEP, " ") for line in lines]


_KEEP = "\0"  # a space ``wrap`` must not break at (replaced by a space once wrapped)


def _fewest_seeds(experiment, ids: list[str]) -> list[int | None]:
    """Per claim id: the fewest seeds per variant whose data could show it reproduced at the experiment's scale
    (``fewest_seeds_to_show``), None where no count could. For ``--detail`` only (about ten looks at
    ``cannot_show_at`` per claim), never on the DAG's path."""
    from rlrepro.results.claims import fewest_seeds_to_show

    claims = {claim.id: claim for claim in experiment.spec.claims}
    return [fewest_seeds_to_show(experiment.spec, claims[key], experiment.scale) for key in ids]


def _floors(experiment, ids: list[str]) -> list[str]:
    """"claim N" per claim id (N: ``_fewest_seeds``, "none" where no count could), kept whole on one line by ``wrap``."""
    return [f"{key}{_KEEP}{floor if floor is not None else 'none'}"
            for key, floor in zip(ids, _fewest_seeds(experiment, ids))]


def _listed(rows: list) -> str:
    """"paper/experiment 40 min, ...": each item kept whole on one line by ``wrap`` (until ``_KEEP`` is replaced)."""
    return ", ".join(f"{e.key} {hours_text(h) if h is not None else t}".replace(" ", _KEEP) for e, t, h in rows)


#: A plan of at most this many experiments lists them one per row; a longer one (every spec) is summed per paper
#: unless ``--detail``, so that it reads on one screen.
DETAIL_MAX = 12


def plan_lines(plans: list, scale: str, *, units: bool, results_root: Path, detail: bool = False,
               left_out: Sequence = ()) -> list[str]:
    """The whole text of ``rlrepro plan`` (without ``--json``): per experiment with ``detail`` or for a plan of at
    most DETAIL_MAX experiments, else per paper with the per-experiment sections folded. ``left_out``: the
    experiments of opt-in sets this job does not run (named at the end of what it decides)."""
    trained = trained_by_unit(plans, scale)
    detail = detail or len(plans) <= DETAIL_MAX
    lines = [*summary_lines(plans, scale), ""] if detail else []
    lines += [*cost_lines(plans, scale, detail=detail), "", *decided_lines(plans, scale, list(left_out), detail=detail),
              "", *memory_lines(plans, scale, detail=detail), ""]
    lines += unit_lines(plans, trained) if units else ["(list every run unit with --units)"]
    count = sum(len(job.units) for experiment in plans for job in experiment.jobs)
    jobs = sum(len(experiment.jobs) for experiment in plans)
    lines += ["", *wrap(f"{count:,} run unit(s) in {jobs:,} job(s) at scale '{scale}'; {_total_text(plans, scale)}",
                        hanging="  ")]
    if power := power_lines(plans, scale, results_root, detail=detail):
        lines += ["", *power]
    return lines
