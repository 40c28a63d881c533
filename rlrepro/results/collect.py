"""Read finished run folders of an experiment into per-(variant, env) results."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from rlrepro.jobs.run_folder import EVAL_SCORES, METRICS, RESOLVED, SUMMARY, read_json, read_metrics
from rlrepro.workflow import ExperimentPlan


@dataclass
class CellResult:
    """All seeds of one (variant, env): final returns and learning curves."""

    variant: str
    env: str
    seeds: list[int] = field(default_factory=list)
    final: list[float] = field(default_factory=list)  # values of report_metric, one per seed
    finals: list[dict[str, float]] = field(default_factory=list)  # summary.json 'final', one per seed
    eval_scores: list[list[float]] = field(default_factory=list)  # summary.json 'eval_scores' (each game's), per seed
    frames: list[int] = field(default_factory=list)
    curves: list[list[tuple[int, float]]] = field(default_factory=list)
    diagnostics: dict[str, list[list[tuple[int, float]]]] = field(default_factory=dict)  # run.diagnostic_curves
    logged_keys: set[str] = field(default_factory=set)  # every metrics.jsonl key of the cell's runs
    commits: set[str] = field(default_factory=set)  # of every start that trained a run (summary.json attempts)
    resumed: list[str] = field(default_factory=list)  # runs trained by more than one start: "seed 0 (resumed at chunk 9)"
    spec_hashes: set[str] = field(default_factory=set)
    config_hashes: set[str] = field(default_factory=set)  # what trained the cell's runs (workflow.config_hash)
    spec_sources: set[str] = field(default_factory=set)  # the spec files that trained them (runs that record it)
    report_metric: str = "final_return"
    #: values outside the environment's declared ``return_range``, each "file:line: key value" (flagged on reading)
    out_of_range: list[str] = field(default_factory=list)
    cpu_cores: list[int | None] = field(default_factory=list)  # per seed: spec.resolved.json's device record (None: not recorded)

    def values(self, metric: str) -> list[float]:
        """One value of ``metric`` per seed (NaN where a run did not produce it)."""
        if metric == self.report_metric:
            return list(self.final)
        return [float(final.get(metric, math.nan)) for final in self.finals]


class MissingRunsError(RuntimeError):
    """Some run units of the experiment have no summary.json yet."""


class OutOfRangeWarning(UserWarning):
    """A run's return lies outside its environment's declared ``return_range``: a bug, or a wrong range."""


#: Keys that are episode returns of the environment (metrics.jsonl; summary.json's "final"), checked against its
#: ``return_range``. Other metrics (losses, value errors) have no declared range.
RETURN_KEYS = {"metrics.jsonl": ("episode_return",), "summary.json": ("final_return", "run_return")}


def collect(plan: ExperimentPlan, root: Path) -> dict[tuple[str, str], CellResult]:
    """Summaries and curves of every run unit of ``plan`` under the scale root ``root``."""
    report, curve, diagnostics = plan.spec.run.report_metric, plan.spec.run.curve_metric, plan.spec.run.diagnostic_curves
    cells: dict[tuple[str, str], CellResult] = {}
    ranges = {env.id: getattr(env, "return_range", None) for env in plan.spec.environments}
    missing = []
    for job in plan.jobs:
        for unit in job.units:  # a cell per (variant, environment): a multi-task job's units span environments
            cell = cells.setdefault((unit.variant, unit.env), CellResult(unit.variant, unit.env, report_metric=report))
            run_dir = unit.run_dir(root)
            summary_path = run_dir / SUMMARY
            if not summary_path.exists():
                missing.append(str(run_dir))
                continue
            summary = read_json(summary_path)
            cell.seeds.append(unit.seed)
            cell.finals.append(summary["final"])
            cell.eval_scores.append([float(x) for x in summary.get(EVAL_SCORES, [])])
            cell.final.append(float(summary["final"].get(report, math.nan)))
            cell.frames.append(summary["frames"])
            cell.commits.add(summary["run"]["git_commit"])
            attempts = summary.get("attempts", [])
            cell.commits.update(a["git_commit"] for a in attempts if a.get("git_commit"))
            if len(attempts) > 1:
                chunks = ", ".join(str(a["from_chunk"]) for a in attempts[1:])
                cell.resumed.append(f"seed {unit.seed} (resumed at chunk {chunks})")
            cell.spec_hashes.add(summary["run"]["spec_hash"])
            cell.cpu_cores.append(_cpu_cores(run_dir))
            cell.config_hashes.update(h for h in [summary["run"].get("config_hash")] if h)
            cell.spec_sources.update(s for s in [summary["run"].get("spec_source")] if s)
            records = read_metrics(run_dir / METRICS)
            if (bounds := ranges.get(unit.env)) is not None:
                cell.out_of_range += _flag_out_of_range(run_dir, summary, records, bounds, unit.env)
            cell.logged_keys.update(key for record in records for key in record)
            cell.curves.append(_curve(records, curve))
            for metric in diagnostics:
                cell.diagnostics.setdefault(metric, []).append(_curve(records, metric))
    if missing:
        listed = "\n  ".join(missing[:10]) + (f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise MissingRunsError(f"{plan.key}: {len(missing)} run(s) not finished (no summary.json):\n  {listed}")
    return cells


def _cpu_cores(run_dir: Path) -> int | None:
    """The CPU cores the run's last start had (spec.resolved.json's device record), None where not recorded."""
    resolved = run_dir / RESOLVED
    cores = read_json(resolved).get("device", {}).get("cpu_cores") if resolved.exists() else None
    return int(cores) if cores else None


def _flag_out_of_range(
    run_dir: Path, summary: dict, records: list[dict], bounds: tuple[float, float], env: str
) -> list[str]:
    """The returns of one run outside ``bounds`` (the environment's ``return_range``), warned about once per run."""
    low, high = bounds
    slack = 1e-6 * max(1.0, abs(low), abs(high))  # float32 rounding of a mean at the bound
    found = []
    for line, record in enumerate(records, start=1):
        for key in RETURN_KEYS["metrics.jsonl"]:
            value = record.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value) and not low - slack <= value <= high + slack:
                found.append(f"{run_dir / 'metrics.jsonl'}:{line}: {key} {value:.6g}")
    for key in RETURN_KEYS["summary.json"]:
        value = summary.get("final", {}).get(key)
        if isinstance(value, (int, float)) and math.isfinite(value) and not low - slack <= value <= high + slack:
            found.append(f"{run_dir / 'summary.json'}: final.{key} {value:.6g}")
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        warnings.warn(
            f"{len(found)} return(s) outside {env}'s declared return_range [{low:g}, {high:g}]: "
            f"{'; '.join(found[:3])}{more}. A bug in the run, or a wrong return_range in the spec.",
            OutOfRangeWarning, stacklevel=3,
        )
    return found


def _curve(records: list[dict], metric: str) -> list[tuple[int, float]]:
    points = []
    for record in records:
        value = record.get(metric, math.nan)
        if math.isfinite(value):
            points.append((record["frames"], value))
    return points
