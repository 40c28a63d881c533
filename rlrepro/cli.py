"""Command line: validate | plan | train | aggregate | report | schema | mlflow-sync | mlflow-publish.

Heavy imports (jax, mlflow, matplotlib) happen inside the commands that need them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import textwrap
from pathlib import Path

from rlrepro.environments.errors import BackendMissingError, UnsupportedSetupError
from rlrepro.metrics_file import MetricsFileError
from rlrepro.run_lock import RunBusyError
from rlrepro.specs import SCALES, SpecError
from rlrepro.workflow import SelectionError

SCHEMA_PATH = Path("specs") / "spec.schema.json"


def _add_scale(parser: argparse.ArgumentParser, default: str = "cpu") -> None:
    parser.add_argument("--scale", choices=SCALES, default=default, help=f"Run size (default: {default}).")


def _add_results(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results", type=Path, default=Path("results"), help="Results base; a scale writes to <base>/<scale>/ (default: results)."
    )


def _results_root(args: argparse.Namespace) -> Path:
    from rlrepro.workflow import results_root

    return results_root(args.results, args.scale)


def cmd_validate(args: argparse.Namespace) -> int:
    from rlrepro.specs import load_specs

    loaded = load_specs(args.paths or ["specs"])
    for path, spec in loaded:
        print(f"ok  {path}  ({spec.paper}/{spec.experiment}, {len(spec.variant_list())} variants)")
    print(f"{len(loaded)} spec(s) valid")
    return 0


#: The machine the specs' cpu-scale minutes were measured on (README "Benchmarks"; STACK.md has its figures).
REFERENCE_MACHINE = "2-core x86-64 CPU, 24 GiB, no GPU"


def _rate(spec) -> float | None:
    """Frames per second (all of an experiment's jobs, 2 at a time) on the reference machine: the cpu scale's
    frames over its measured expected minutes. None when the spec states no minutes."""
    from rlrepro.workflow import plan_experiment

    minutes = spec.scale("cpu").expected_minutes
    if not minutes:
        return None
    return _frames(plan_experiment(Path("x.yaml"), spec, "cpu")) / (minutes * 60.0)


def _frames(experiment) -> int:
    return sum(job.frames_emulated for job in experiment.jobs)


def _hours(hours: float) -> str:
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:,.0f} min"


def _plan_summary(plans, scale: str) -> list[str]:
    """One line per experiment: runs, jobs, frames, estimated time on the reference machine."""
    from rlrepro.workflow import cannot_run

    header = ("experiment", "runs", "jobs", "frames trained (budget)", "estimated time*")
    rows, total_hours, unknown = [], 0.0, 0
    for experiment in plans:
        frames = _frames(experiment)
        reason = cannot_run(experiment)
        rate = _rate(experiment.spec)
        if reason:
            cost = "cannot run here: " + reason.split(" (")[0].split(":")[0][:50]
        elif experiment.spec.scale(scale).expected_minutes:  # measured at this scale (includes compilation)
            hours = experiment.spec.scale(scale).expected_minutes / 60.0
            total_hours += hours
            cost = _hours(hours) + " (the spec's measured minutes)"
        elif rate is None:
            cost, unknown = "no measured minutes in the spec", unknown + 1
        else:
            hours = frames / rate / 3600.0
            total_hours += hours
            cost = _hours(hours)
        runs = sum(len(job.units) for job in experiment.jobs)
        rows.append((experiment.key, f"{runs:,}", f"{len(experiment.jobs):,}", _frames_cell(experiment, scale), cost))
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    note = f"; {unknown} experiment(s) without an estimate" if unknown else ""
    lines += ["", f"estimated total: {_hours(total_hours)}{note}.",
              f"* on {REFERENCE_MACHINE}, 2 jobs at a time: the spec's minutes measured at this scale, or",
              "  (paper scale) its cpu-scale minutes scaled by frames, at the cpu scale's batch sizes; the",
              "  device-hours below use a benchmark's stored throughput where one exists (the paper's batches)."]
    return lines


def _trained_by_unit(plans: list, scale: str) -> dict:
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
    trained = _trained_by_unit(plans, scale)
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
    """The plan's frames column: what the experiment's runs train, its budget beside it where they differ."""
    jobs = _trained_by_job([experiment], scale)
    total, budget = sum(count for count, _, _ in jobs), _frames(experiment)
    unit = " proposals" if any(kind == "proposals" for _, kind, _ in jobs) else ""  # a search counts programs
    return f"{total:,}{unit}" + (f" ({budget:,})" if total != budget else "")


def _total_text(plans: list, scale: str) -> str:
    """The plan's last line: what is trained in total by unit (frames, proposals), the budget where it differs."""
    jobs, parts = _trained_by_job(plans, scale), []
    for kind in sorted({kind for _, kind, _ in jobs}):  # frames, then proposals
        total = sum(count for count, k, _ in jobs if k == kind)
        budget = sum(b for _, k, b in jobs if k == kind)
        parts.append(f"{total:,} {kind} trained" + (f" (budget {budget:,}: training runs whole chunks)" if total != budget else ""))
    return "total " + ("; ".join(parts) or "0 frames")


def cmd_plan(args: argparse.Namespace) -> int:
    from rlrepro.workflow import plan

    plans = plan(args.specs, args.scale, args.only)
    units = [unit for experiment in plans for job in experiment.jobs for unit in job.units]
    trained = _trained_by_unit(plans, args.scale)
    if args.json:  # "frames" is the budget, "frames_trained" whole chunks of it, counted in "counts"
        print(json.dumps([{**dataclasses.asdict(u), "frames_trained": trained[u][0], "counts": trained[u][1]} for u in units]))
        return 0
    print("\n".join(_plan_summary(plans, args.scale)))
    print("\n".join(["", "device-hours (frames over the stored throughput of one job; a GPU job runs one per GPU):",
                      *_device_hours(plans, args.scale)]))
    print("\n".join(["", *_memory(plans, args.scale)]))
    jobs = sum(len(p.jobs) for p in plans)
    if args.units:
        rows = [(u.paper, u.experiment, u.variant, u.env, str(u.seed), f"{trained[u][0]:,}", f"{u.frames:,}")
                for u in units]
        header = ("paper", "experiment", "variant", "env", "seed", "trained", "budget")
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
        print()
        for row in [header, *rows]:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    else:
        print("(list every run unit with --units)")
    print(f"\n{len(units):,} run unit(s) in {jobs:,} job(s) at scale '{args.scale}'; {_total_text(plans, args.scale)}")
    _print_power(plans, args)
    return 0


def _device_hours(plans: list, scale: str | None = None) -> list[str]:
    """Per experiment: hours on a CPU machine (measured) and on the accelerator the stored figures name (estimates
    until measured there), from rlrepro/bench/throughput.csv (issue 12 item 9, issue 15)."""
    from rlrepro.bench.device_hours import device_hours_lines

    return device_hours_lines(plans, _frames, REFERENCE_MACHINE, scale=scale)


def _memory(plans: list, scale: str) -> list[str]:
    """What each experiment's jobs ask a cluster for (--mem): the spec's measured memory with headroom, or the default
    (named, so a cluster user knows which jobs need --config mem_mb)."""
    from rlrepro.cluster import memory_lines

    return memory_lines(plans, scale)


def _print_power(plans: list, args: argparse.Namespace) -> None:
    """Per ordering claim: the smallest difference the scale's seeds can detect (before a run, from expected_sd)."""
    from rlrepro.results.claims import power_lines
    from rlrepro.workflow import results_root

    root = results_root(args.results, args.scale)
    lines = [line for p in plans for line in power_lines(p.spec, args.scale, Path(p.table_paths(root)["md"]).with_suffix(".json"))]
    if lines:
        print("\npower of the ordering claims judged at this scale (80%, one-sided 0.025):")
        print("\n".join(f"  {line}" for line in lines))


def cmd_schema(args: argparse.Namespace) -> int:
    from rlrepro.specs.schema import schema_text

    text = schema_text()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run `rlrepro schema`", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds 0,1,2``: distinct non-negative integers (argparse reports the error with the usage)."""
    seeds = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit():  # rejects '', 'a', '-1', '1.5'
            raise argparse.ArgumentTypeError(
                f"expected comma-separated non-negative integers such as 0,1,2; found {item!r} in {text!r}"
            )
        seeds.append(int(item))
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"expected distinct seeds; found {text!r}")
    return tuple(seeds)


def _interrupt_on_sigterm() -> None:
    """SIGTERM (a scheduler cancelling the job) ends training like Ctrl-C: mirrors marked KILLED, locks released."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def cmd_train(args: argparse.Namespace) -> int:
    from rlrepro.training.runner import train_job

    _interrupt_on_sigterm()
    train_job(
        spec_path=args.spec,
        scale=args.scale,
        variant=args.variant,
        env=args.env,
        seeds=args.seeds,
        results=args.results,
        progress=args.progress,
        track=not args.no_mlflow,
    )
    return 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    from rlrepro.results.tables import aggregate_experiment

    aggregate_experiment(args.spec, scale=args.scale, results=args.results)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from rlrepro.results.report import write_report

    write_report(args.specs, scale=args.scale, results=args.results, only=args.only)
    return 0


def cmd_mlflow_sync(args: argparse.Namespace) -> int:
    from rlrepro.tracking import StoreUnreachableError, default_tracking_uri, project_namespace, sync_all

    root = _results_root(args)
    uri = args.uri or default_tracking_uri(args.results)
    only = f"{args.scale}/{args.only.strip('/')}" if args.only else None  # run keys start with the scale
    try:
        counts = sync_all(root / "runs", uri=uri, only=only, wait_s=args.wait, project=project_namespace(args.results))
    except ValueError as error:  # --only matches nothing
        print(f"error: {error}", file=sys.stderr)
        return 2
    except StoreUnreachableError as error:
        print(f"rlrepro mlflow-sync: gave up: {error}. Nothing is lost: the run folders under {root / 'runs'} are "
              "the source of truth; run this command again when the tracking server is up.", file=sys.stderr)
        return 0 if args.best_effort else 6
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "nothing to sync")
    return 0


def cmd_mlflow_publish(args: argparse.Namespace) -> int:
    from rlrepro.specs import load_spec
    from rlrepro.tracking import default_tracking_uri, project_namespace, publish_experiment
    from rlrepro.workflow import plan_experiment

    spec = load_spec(args.spec)
    md = Path(plan_experiment(args.spec, spec, args.scale).table_paths(_results_root(args))["md"])
    if not md.with_suffix(".json").exists():
        print(f"error: {md.with_suffix('.json')} does not exist: run `rlrepro aggregate` first", file=sys.stderr)
        return 2
    files = sorted(p for p in md.parent.iterdir() if p.name.startswith(f"{spec.experiment}.") and p.is_file())
    run_id = publish_experiment(
        uri=args.uri or default_tracking_uri(args.results), scale=args.scale, paper=spec.paper,
        experiment=spec.experiment, spec=spec.model_dump(mode="json"), spec_path=str(args.spec),
        table_json=md.with_suffix(".json"), files=files, project=project_namespace(args.results),
    )
    print(f"summary run {run_id}: {len(files)} file(s) and the verdicts of {spec.paper}/{spec.experiment} ({args.scale})")
    return 0


def cmd_init_store(args: argparse.Namespace) -> int:
    from rlrepro.tracking import ensure_store

    ensure_store(args.uri)
    if args.marker:
        args.marker.parent.mkdir(parents=True, exist_ok=True)
        args.marker.write_text(json.dumps({"uri": args.uri}) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlrepro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="Validate spec files (default: all of specs/).")
    p.add_argument("paths", nargs="*", type=Path)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plan", help="List run units, their frames and the total.")
    _add_scale(p)
    p.add_argument("--specs", nargs="+", default=["specs"], help="Spec files or directories.")
    p.add_argument("--only", default=None, help="PAPER or PAPER/EXPERIMENT (comma-separated).")
    p.add_argument("--json", action="store_true", help="Print every run unit as JSON.")
    p.add_argument("--units", action="store_true", help="After the per-experiment summary, list every run unit.")
    _add_results(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("schema", help="Write (or --check) the JSON schema of the spec models.")
    p.add_argument("--output", type=Path, default=SCHEMA_PATH)
    p.add_argument("--check", action="store_true", help="Fail if the file differs from the models.")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser(
        "train",
        help="Train the seeds of one (variant, env) of a spec.",
        description=textwrap.fill(
            "Train the seeds of one (variant, environment) of a spec at a scale: one Snakemake training job. "
            "Writes results/<scale>/runs/<paper>/<experiment>/<variant>/<env>/seed<k>/ (spec.resolved.json, "
            "metrics.jsonl, summary.json last) and mirrors each run to MLflow. Run it again after an interruption: "
            "it resumes from the last checkpoint.",
            78,
        ),
        epilog=(
            "example:\n"
            "  rlrepro train --spec specs/impala/offpolicy_correction_toy.yaml --scale smoke \\\n"
            "      --variant corr=vtrace__lag=32__replay=0.0 --env catch --seeds 0,1\n"
            "variants and environments of a spec: `rlrepro plan --scale smoke --only PAPER/EXPERIMENT --units`"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--spec", type=Path, required=True, help="The experiment's YAML spec file.")
    _add_scale(p)
    p.add_argument("--variant", required=True, help="Variant name, as `rlrepro plan --units` lists it (e.g. corr=vtrace__lag=32__replay=0.0).")
    p.add_argument("--env", required=True, help="Environment id of the spec (its `environments[].id`, e.g. catch).")
    p.add_argument(
        "--seeds", type=parse_seeds, default=None,
        help="Comma-separated seeds trained together, e.g. 0,1 (default: all of the scale).",
    )
    _add_results(p)
    p.add_argument(
        "--progress", choices=("auto", "bar", "lines"), default="auto",
        help="bar: one redrawn line that fits the terminal; lines: a line every 10 s (logs); "
        "auto (default): bar on a terminal, lines otherwise.",
    )
    p.add_argument("--no-mlflow", action="store_true", help="Write run folders only; `rlrepro mlflow-sync` mirrors them later.")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("aggregate", help="Write the table and plot of one experiment.")
    p.add_argument("--spec", type=Path, required=True)
    _add_scale(p)
    _add_results(p)
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("report", help="Write REPORT.md: every experiment, every claim.")
    _add_scale(p)
    p.add_argument("--specs", nargs="+", default=["specs"])
    p.add_argument("--only", default=None)
    _add_results(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("mlflow-sync", help="Re-ingest run folders into MLflow (idempotent).")
    _add_scale(p)
    _add_results(p)
    p.add_argument("--uri", default=None, help="Tracking URI (default: MLFLOW_TRACKING_URI or results/mlflow.db).")
    p.add_argument("--only", default=None)
    p.add_argument("--wait", type=float, default=20.0, help="Seconds to wait for a tracking server (default: 20).")
    p.add_argument(
        "--best-effort", action="store_true", help="Exit 0 when the tracking server is down (the pipeline goes on)."
    )
    p.set_defaults(func=cmd_mlflow_sync)

    p = sub.add_parser(
        "mlflow-publish",
        help="Attach an experiment's table, figures and verdicts to its MLflow summary run (parent of its seeds' runs).",
    )
    p.add_argument("--spec", type=Path, required=True)
    _add_scale(p)
    _add_results(p)
    p.add_argument("--uri", default=None, help="Tracking URI (default: MLFLOW_TRACKING_URI or results/mlflow.db).")
    p.set_defaults(func=cmd_mlflow_publish)

    p = sub.add_parser("init-store", help="Create the MLflow store once, before jobs fan out.")
    p.add_argument("--uri", required=True)
    p.add_argument("--marker", type=Path, default=None)
    p.set_defaults(func=cmd_init_store)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"rlrepro {args.command}: interrupted (a training job resumes from its last checkpoint when run again)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`rlrepro plan | head`): stop quietly. Python would print a traceback while flushing
        # stdout at exit, so point stdout at /dev/null first.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (SpecError, SelectionError, UnsupportedSetupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except BackendMissingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    except RunBusyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 4
    except MetricsFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except PermissionError as error:  # e.g. a read-only results folder
        where = f": {error.filename}" if error.filename else ""
        print(f"error: permission denied{where} (a read-only results folder? make it writable, or pass "
              "another folder with --results)", file=sys.stderr)
        return 5

