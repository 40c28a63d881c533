"""Fingerprints of fixed-seed smoke runs, to show that a change of layout leaves every number where it was.

    python scripts/smoke_fingerprint.py plan OUT.json
    python scripts/smoke_fingerprint.py run OUT.json [--per kind|experiment] [--only PAPER/EXPERIMENT]
    python scripts/smoke_fingerprint.py compare BEFORE.json AFTER.json

`plan` writes every job's config hash, frames, seeds and chunk plan of every spec at every scale (seconds, no JAX).

`run` trains, through `python -m rlrepro train` from this checkout (MLflow off, a temporary results folder), one
smoke-scale job per agent kind and environment kind (`--per kind`, the default: about 10 minutes on 2 cores) or per
experiment (`--per experiment`), and writes for each job the sha256 of every seed's `metrics.jsonl` with the
clock-dependent fields left out (wall time, frames per second, memory, minutes spent), the config hash and the
first row. A job whose actor threads runs with IMPALA's synchronous actor instead: threads make the policy lag, and
so the numbers, depend on timing. `compare` (of two `plan` or two `run` files) lists the jobs whose fingerprints
differ and exits 1 if any does. The same seed, scale and code give the same metrics bit for bit on one machine: the
runner's resume tests rest on it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCK_FIELDS = ("wall_time", "fps", "memory", "rss", "seconds", "minutes", "time_per")


def _clockless(row: dict) -> dict:
    return {k: v for k, v in row.items() if not any(part in k for part in CLOCK_FIELDS)}


def _deterministic_spec(job, tmp: str) -> Path:
    """The job's spec, or a copy whose actor is IMPALA's synchronous one where the spec's actor threads (threaded
    actors make the policy lag, and so the numbers, depend on timing: no two runs of them match bit for bit)."""
    from rlrepro.specs import load_spec, resolve_agent
    from rlrepro.specs.loading import apply_overrides
    from rlrepro.specs.yaml_io import load_yaml

    spec = load_spec(job.spec_path)
    variant = next(v for v in spec.variant_list() if v.name == job.variant)
    actor = getattr(resolve_agent(spec, variant, "smoke"), "actor", None)
    if actor is None or getattr(actor, "mode", "sync") == "sync":
        return job.spec_path
    import yaml

    data = apply_overrides(load_yaml(job.spec_path), {"agent.actor.mode": "sync"})
    path = Path(tmp) / "specs" / job.paper / Path(job.spec_path).name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _jobs(per: str, only: str | None):
    sys.path.insert(0, str(ROOT))
    from rlrepro import workflow
    from rlrepro.specs import resolve_agent, resolve_env

    seen = set()
    for experiment in workflow.plan([ROOT / "specs"], "smoke", only):
        if workflow.cannot_run(experiment):
            continue
        spec = experiment.spec
        variants = {v.name: v for v in spec.variant_list()}
        for job in experiment.jobs:
            agent = resolve_agent(spec, variants[job.variant], "smoke")
            env_kind = "multitask" if job.population else resolve_env(spec, job.env, "smoke").kind
            key = (agent.kind, env_kind) if per == "kind" else experiment.key
            if key not in seen:
                seen.add(key)
                yield job


def plan(out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from rlrepro import workflow
    from rlrepro.specs import SCALES

    jobs = {}
    for scale in SCALES:
        for experiment in workflow.plan([ROOT / "specs"], scale):
            for job in experiment.jobs:
                chunks = None if job.population else workflow.chunk_plan(experiment.spec, job.variant, job.env, scale)
                jobs[f"{scale}/{job.name}"] = [job.config_hash, job.frames, list(job.seeds), repr(chunks)]
    out.write_text(json.dumps(jobs, indent=1, sort_keys=True))
    print(f"{len(jobs)} jobs")


def run(out: Path, per: str, only: str | None) -> None:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="fingerprint-") as tmp:
        for job in _jobs(per, only):
            name = f"{job.paper}/{job.experiment}/{job.variant}/{job.env}"
            spec_path = _deterministic_spec(job, tmp)
            command = [sys.executable, "-m", "rlrepro", "train", "--spec", str(spec_path), "--scale", "smoke",
                       "--variant", job.variant, "--env", job.env, "--seeds", ",".join(map(str, job.seeds)),
                       "--results", tmp, "--no-mlflow", "--progress", "lines"]
            start = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            took = time.perf_counter() - start
            if done.returncode != 0:
                results[name] = {"error": done.stderr[-2000:]}
                print(f"FAILED {name} ({took:.0f} s)", file=sys.stderr)
                continue
            runs = {}
            for unit in job.units:
                lines = (unit.run_dir(Path(tmp) / "smoke") / "metrics.jsonl").read_text().splitlines()
                rows = [_clockless(json.loads(line)) for line in lines]
                runs[f"seed{unit.seed}"] = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
            results[name] = {"config_hash": job.config_hash, "runs": runs, "first_row": rows[0] if rows else None}
            print(f"{took:5.0f} s  {name}  {' '.join(runs.values())}", flush=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True))


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differ = sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))
    for name in differ:
        print(f"differs: {name}\n  before {a.get(name)}\n  after  {b.get(name)}")
    print(f"{len(a.keys() | b.keys()) - len(differ)} of {len(a.keys() | b.keys())} jobs identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("plan").add_argument("out", type=Path)
    p = sub.add_parser("run")
    p.add_argument("out", type=Path)
    p.add_argument("--per", choices=("kind", "experiment"), default="kind")
    p.add_argument("--only")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "plan":
        plan(args.out)
        return 0
    if args.command == "run":
        run(args.out, args.per, args.only)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
