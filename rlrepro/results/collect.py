"""Read finished run folders of an experiment into per-(variant, env) results."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from rlrepro.workflow import ExperimentPlan


@dataclass
class CellResult:
    """All seeds of one (variant, env): final returns and learning curves."""

    variant: str
    env: str
    seeds: list[int] = field(default_factory=list)
    final: list[float] = field(default_factory=list)
    frames: list[int] = field(default_factory=list)
    curves: list[list[tuple[int, float]]] = field(default_factory=list)
    commits: set[str] = field(default_factory=set)
    spec_hashes: set[str] = field(default_factory=set)


class MissingRunsError(RuntimeError):
    """Some run units of the experiment have no summary.json yet."""


def collect(plan: ExperimentPlan, root: Path) -> dict[tuple[str, str], CellResult]:
    """Summaries and curves of every run unit of ``plan`` under the scale root ``root``."""
    cells: dict[tuple[str, str], CellResult] = {}
    missing = []
    for job in plan.jobs:
        cell = cells.setdefault((job.variant, job.env), CellResult(job.variant, job.env))
        for unit in job.units:
            run_dir = unit.run_dir(root)
            summary_path = run_dir / "summary.json"
            if not summary_path.exists():
                missing.append(str(run_dir))
                continue
            summary = json.loads(summary_path.read_text())
            cell.seeds.append(unit.seed)
            cell.final.append(summary["final"]["final_return"])
            cell.frames.append(summary["frames"])
            cell.commits.add(summary["run"]["git_commit"])
            cell.spec_hashes.add(summary["run"]["spec_hash"])
            cell.curves.append(_curve(run_dir / "metrics.jsonl"))
    if missing:
        listed = "\n  ".join(missing[:10]) + (f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise MissingRunsError(f"{plan.key}: {len(missing)} run(s) not finished (no summary.json):\n  {listed}")
    return cells


def _curve(path: Path) -> list[tuple[int, float]]:
    points = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        value = record.get("episode_return", math.nan)
        if math.isfinite(value):
            points.append((record["frames"], value))
    return points
