"""Finished runs that a run would train again with another configuration: moved aside and kept, or a stop.

A run folder's path names its experiment, variant, environment and seed, not the configuration that trained it, so
an edited spec (or a copy of a spec, edited, run with ``--config specs=FOLDER``) plans its jobs into the folders of
the runs already there. Snakemake deletes a job's outputs before running it, so what protects a finished run must
act while the DAG is planned, before any job starts: :func:`settle_finished_runs`, called by the Snakefile.

- A finished run of another configuration made from the **same spec file** (it was edited in place: the everyday
  flow) is **retired**: moved to ``<scale root>/retired/<time>/runs/...`` with the experiment's tables of that time
  and a ``retired.json`` saying what, why and which spec and config hashes, and its MLflow mirror re-keyed and tagged
  ``rlrepro.retired`` (kept, not replaced). The new runs then train in the usual place.
- A finished run of another configuration made from **another spec file** (a copy) **stops the run before anything is
  written** (:class:`OtherSpecError`): the message names both specs, what differs between them, and the two ways on,
  a results folder of its own (``--config results=FOLDER``) or retiring the finished runs (``--config retire=yes``).

"Another configuration" is another config hash (``workflow.config_hash``) or another seed group (seeds trained
together are one vmapped program, ``jobs.runner``). Runs written before the spec's source was recorded
(``run.spec_source``) take it from the experiment's table; with neither, they count as the same spec's.

Standard library only, with the planning modules: the Snakefile imports it; the MLflow mirror is re-keyed through
``rlrepro.tracking``, which imports mlflow only when there is something to retire.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rlrepro.jobs.run_folder import LOCK, RESOLVED, SUMMARY, read_json, write_json_atomic
from rlrepro.workflow.plan import ExperimentPlan, Job, RunUnit

RETIRED = "retired"
MANIFEST = "retired.json"
#: what --config retire= accepts as "yes"
YES = ("1", "true", "yes", "y", "on")


class OtherSpecError(ValueError):
    """Finished runs of this experiment were trained from another spec with another configuration."""


@dataclass(frozen=True)
class Replaced:
    """A finished run that a planned job would train again with another configuration."""

    plan: ExperimentPlan
    job: Job
    unit: RunUnit
    run_dir: Path
    run: dict  # summary.json's "run": what trained it

    @property
    def source(self) -> str | None:
        """The spec file that trained the finished run (None: unknown)."""
        return self.run.get("spec_source")

    @property
    def other_spec(self) -> bool:
        return self.source is not None and self.source != spec_source(self.plan.spec_path)


def spec_source(path: Path | str) -> str:
    """A spec file as runs record it: relative to the working directory when under it (a checkout moved elsewhere
    keeps its runs' sources), else its absolute path."""
    resolved = Path(path).resolve()
    cwd = Path.cwd().resolve()
    return resolved.relative_to(cwd).as_posix() if resolved.is_relative_to(cwd) else resolved.as_posix()


def replaced_runs(plans: Iterable[ExperimentPlan], root: Path) -> list[Replaced]:
    """The finished runs under the scale root ``root`` whose planned job has another config hash or seed group."""
    found = []
    for plan in plans:
        table_source = _table_source(plan, root)
        for job in plan.jobs:
            for unit in job.units:
                run_dir = unit.run_dir(root)
                try:
                    run = dict(read_json(run_dir / SUMMARY)["run"])
                except (FileNotFoundError, NotADirectoryError, ValueError, KeyError, TypeError):
                    continue  # not finished: trained or resumed as usual
                group = run.get("seed_group")
                if run.get("config_hash") in (None, job.config_hash) and group in (None, list(job.seeds)):
                    continue
                if run.get("spec_source") is None and table_source is not None:
                    run["spec_source"] = table_source
                found.append(Replaced(plan, job, unit, run_dir, run))
    return found


def settle_finished_runs(
    plans: Sequence[ExperimentPlan],
    root: Path,
    *,
    base: Path,
    retire: bool = False,
    dry_run: bool = False,
    say: Callable[[str], None] = print,
) -> Path | None:
    """Before any job runs: retire the finished runs the plan would train again with another configuration, or stop.

    Returns the folder the runs were retired to (None: nothing to retire, or ``dry_run``, which only says what a run
    would do).

    Raises:
        OtherSpecError: finished runs were trained from another spec file with another configuration and ``retire``
            is false; nothing was written.
    """
    replaced = replaced_runs(plans, root)
    if not replaced:
        return None
    others = [r for r in replaced if r.other_spec]
    if others and not retire:
        raise OtherSpecError(other_spec_text(others, root, base))
    if dry_run:
        say(retire_text(replaced, root / RETIRED / "<time of the run>", would=True))
        return None
    dest = _retire(replaced, root, base)
    say(retire_text(replaced, dest))
    return dest


def retire_run_dirs(replaced: Sequence[Replaced], root: Path, base: Path) -> Path:
    """Move ``replaced`` runs aside now (the runner's own check, for a ``rlrepro train`` by hand); returns where."""
    return _retire(replaced, root, base)


def _retire(replaced: Sequence[Replaced], root: Path, base: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    (root / RETIRED).mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):  # a folder of its own, also for two retirements in one second
        dest = root / RETIRED / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            dest.mkdir()
            break
        except FileExistsError:
            continue
    experiments: dict[str, dict[str, Any]] = {}
    for r in replaced:
        entry = experiments.setdefault(r.plan.key, {
            "why": ("trained from another spec" if r.other_spec else "the spec was edited")
            + ": the runs below would have been trained again with another configuration",
            "spec_source": r.source,
            "replaced_by": {"spec_source": spec_source(r.plan.spec_path), "config_hashes": {}},
            "runs": {},
        })
        entry["runs"][r.unit.relpath] = {"config_hash": r.run.get("config_hash"), "seed_group": r.run.get("seed_group"),
                                         "spec_hash": r.run.get("spec_hash")}
        entry["replaced_by"]["config_hashes"][f"{r.unit.variant}/{r.unit.env}"] = r.job.config_hash
    manifest = {"retired_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "folder": _shown(dest),
                "mlflow": "not yet re-keyed", "experiments": experiments}
    write_json_atomic(dest / MANIFEST, manifest)  # first: what is moved here, and why, even if the move is cut short
    for r in replaced:
        _move_run(r.run_dir, dest / "runs" / r.unit.relpath)
    for r in {r.plan.key: r for r in replaced}.values():  # the experiment's tables as they were, beside its runs
        md = Path(r.plan.table_paths(root)["md"])
        for path in sorted(md.parent.glob(f"{md.stem}.*")):
            (dest / "tables" / md.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / "tables" / md.parent.name / path.name)
    manifest["mlflow"] = _retire_mirrors(replaced, dest, root, base)
    write_json_atomic(dest / MANIFEST, manifest)
    return dest


def retired_runs_of(root: Path, key: str) -> list[dict[str, Any]]:
    """The retirements of experiment ``key`` (``paper/experiment``) under the scale root ``root``, oldest first:
    the folder (relative to ``root``), its runs, their config hashes and spec file (the tables name them)."""
    found = []
    for manifest in sorted(Path(root).glob(f"{RETIRED}/*/{MANIFEST}")):
        try:
            entry = json.loads(manifest.read_text())["experiments"][key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        runs = entry.get("runs") or {}
        found.append({
            "folder": manifest.parent.relative_to(root).as_posix(),
            "runs": len(runs),
            "config_hashes": sorted({str(r.get("config_hash")) for r in runs.values()}),
            "spec_source": entry.get("spec_source") or "?",
        })
    return found


def _move_run(run_dir: Path, to: Path) -> None:
    """Every file of the run folder but its lock (a trainer may hold it while it retires the run) moves to ``to``."""
    to.mkdir(parents=True, exist_ok=True)
    for entry in sorted(run_dir.iterdir()):
        if entry.name != LOCK:
            os.replace(entry, to / entry.name)


def _retire_mirrors(replaced: Sequence[Replaced], dest: Path, root: Path, base: Path) -> str:
    """Re-key and tag the retired runs' MLflow mirrors (best effort: the run folders are the source of truth)."""
    from rlrepro.tracking import default_tracking_uri, project_namespace, retire_mirrors, sqlite_db_path

    uri = default_tracking_uri(base)
    if (db := sqlite_db_path(uri)) is not None and not db.exists():
        return "no MLflow store: nothing to re-key"
    keys = []
    for r in replaced:
        try:
            keys.append(read_json(dest / "runs" / r.unit.relpath / RESOLVED)["run"]["run_key"])
        except (FileNotFoundError, ValueError, KeyError):
            keys.append(f"{r.plan.scale}/{r.unit.relpath}")
    summaries = sorted({(r.plan.key, r.plan.scale) for r in replaced})
    try:
        return retire_mirrors(keys, summaries, uri=uri, project=project_namespace(base),
                              label=dest.name, folder=_shown(dest))
    except Exception as exc:  # noqa: BLE001 - a store that is down must not stop the run: the folders are kept
        return f"not re-keyed ({type(exc).__name__}: {str(exc)[:300]}); the next mirror of these runs replaces them"


def _table_source(plan: ExperimentPlan, root: Path) -> str | None:
    """The spec file the experiment's table was made from (runs that predate ``run.spec_source``)."""
    table = Path(plan.table_paths(root)["md"]).with_suffix(".json")
    try:
        spec = json.loads(table.read_text())["provenance"]["spec"]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    return spec_source(spec)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        return {k: v for key, value in data.items() for k, v in _flatten(value, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): data}


def spec_differences(before: dict, after: dict, limit: int = 8) -> list[str]:
    """What differs between two specs (``model_dump(mode="json")``), one ``field: old -> new`` per leaf."""
    old, new = _flatten(before), _flatten(after)
    changed = [f"{key}: {json.dumps(old.get(key))} -> {json.dumps(new.get(key))}"
               for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)]
    return changed[:limit] + ([f"... and {len(changed) - limit} more"] if len(changed) > limit else [])


def other_spec_text(others: Sequence[Replaced], root: Path, base: Path, command: bool = True) -> str:
    """The stop's message; ``command``: the ways on as Snakemake's ``--config`` keys, else as ``rlrepro train``'s."""
    results = f"--config results={_shown(base)}/mine" if command else f"--results {_shown(base)}/mine"
    flag = "--config retire=yes" if command else "--retire"
    lines = []
    for key in dict.fromkeys(r.plan.key for r in others):
        mine = [r for r in others if r.plan.key == key]
        first = mine[0]
        try:
            before = read_json(first.run_dir / RESOLVED)["spec"]
        except (FileNotFoundError, ValueError, KeyError):
            before = {}
        differs = spec_differences(before, first.plan.spec.model_dump(mode="json")) if before else ["(unknown)"]
        lines += [
            f"{key} at scale {first.plan.scale}: {len(mine)} finished run(s) in "
            f"{_shown(root / 'runs' / first.plan.spec.paper / first.plan.spec.experiment)} were trained from another "
            "spec, and this one would train them again with another configuration:",
            f"  finished runs:  {first.source} (config hash {first.run.get('config_hash')}, seeds "
            f"{','.join(map(str, first.run.get('seed_group') or [])) or '?'})",
            f"  this spec:      {spec_source(first.plan.spec_path)} (config hash {first.job.config_hash}, seeds "
            f"{','.join(map(str, first.job.seeds))})",
            "  what differs:   " + "\n                  ".join(differs),
        ]
    return "\n".join([
        "rlrepro: stopped before writing anything: this run would replace finished runs of another spec.",
        *lines,
        "Two ways on:",
        f"  - keep both: give this spec a results folder of its own, e.g. {results}",
        f"  - retire the finished runs: {flag} moves them (with their tables) to "
        f"{_shown(root / RETIRED)}/<time>/ and tags their MLflow runs rlrepro.retired; nothing is deleted",
    ])


def retire_text(replaced: Sequence[Replaced], dest: Path, would: bool = False) -> str:
    by_key: dict[str, list[Replaced]] = {}
    for r in replaced:
        by_key.setdefault(r.plan.key, []).append(r)
    lines = []
    for key, mine in by_key.items():
        old = sorted({str(r.run.get("config_hash")) for r in mine})
        new = sorted({r.job.config_hash for r in mine})
        lines.append(f"  {key}: {len(mine)} finished run(s) of config hash {', '.join(old)} (from "
                     f"{mine[0].source or 'this spec'}); the spec now gives {', '.join(new)}")
    verb = "would be retired (kept, moved aside) to" if would else "retired (kept, moved aside) to"
    return "\n".join([f"rlrepro: finished runs of an earlier configuration {verb} {_shown(dest)}:", *lines,
                      f"  (what and why: {_shown(dest / MANIFEST)}; their MLflow runs are tagged rlrepro.retired)"])


def _shown(path: Path) -> str:
    path = Path(path).absolute()
    cwd = Path.cwd()
    return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else path.as_posix()
