"""Command line: validate | plan | train | aggregate | report | schema | mlflow-sync | mlflow-publish.

Heavy imports (jax, mlflow, matplotlib) happen inside the commands that need them.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

from rlrepro.environments.errors import BackendMissingError, UnsupportedSetupError
from rlrepro.jobs.run_folder import SUMMARY, MetricsFileError, read_json
from rlrepro.jobs.run_lock import FinishedRunError, RunBusyError
from rlrepro.results.collect import MissingRunsError
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
        count = len(spec.variant_list())
        print(f"ok  {path}  {count} variant{'' if count == 1 else 's'}")
    print(f"{len(loaded)} spec(s) valid")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from rlrepro.plan_text import plan_lines, trained_by_unit
    from rlrepro.workflow import cannot_run, check_sets, in_job, plan

    planned = plan(args.specs, args.scale, args.only)
    check_sets(planned, args.set)
    chosen = {e.key: in_job(e, args.set, args.only) for e in planned}
    published = []
    if args.unpublished is not None:  # what a job published a session at a time still lacks
        from rlrepro.results.publish import experiments_with_tables

        published = [key for key in experiments_with_tables(args.unpublished) if chosen.get(key)]
        chosen |= dict.fromkeys(published, False)
    plans = [e for e in planned if chosen[e.key]]
    left_out = [e for e in planned if not chosen[e.key] and e.key not in published]
    if args.json:  # "frames" is the budget, "frames_trained" whole chunks of it, counted in "counts"
        trained = trained_by_unit(plans, args.scale)
        units = [unit for experiment in plans for job in experiment.jobs for unit in job.units]
        print(json.dumps([{**dataclasses.asdict(u), "frames_trained": trained[u][0], "counts": trained[u][1]} for u in units]))
        return 0
    lines = plan_lines(plans, args.scale, units=args.units, detail=args.detail, results_root=_results_root(args),
                       left_out=left_out)
    if args.unpublished is not None:
        from rlrepro.plan_text import wrap

        runnable = [e for e in plans if not cannot_run(e)]
        lines += ["", *wrap(f"still to run here: {len(runnable)} experiment(s) (the {len(published)} published in "
                            f"{args.unpublished} are left out above)" + (":" if runnable else "."), hanging="  ")]
        if runnable:  # a paper whose experiments are all still to run is named whole: the command stays short
            whole = {e.spec.paper for e in runnable} - {key.split("/")[0] for key in published}
            keys = dict.fromkeys(e.spec.paper if e.spec.paper in whole else e.key for e in runnable)
            lines.append(f"  snakemake -c2 --config scale={args.scale} only={','.join(keys)}")
    print("\n".join(lines))
    return 0


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
    from rlrepro.jobs.runner import train_job

    _interrupt_on_sigterm()
    run_dirs = train_job(
        spec_path=args.spec,
        scale=args.scale,
        variant=args.variant,
        env=args.env,
        seeds=args.seeds,
        results=args.results,
        progress=args.progress,
        track=not args.no_mlflow,
        retire=args.retire,
    )
    print(job_summary_line(run_dirs), flush=True)
    return 0


def job_summary_line(run_dirs: list[Path]) -> str:
    """The job's last lines: each run's final return, the frames and the wall time; then where the run folders are
    (relative to the working directory when under it), on a line of its own so that the first fits 80 columns. A
    multi-task job (a run folder per task and seed) names each run beside its return, on a line of its own."""
    summaries = [read_json(d / SUMMARY) for d in run_dirs]
    finals = ["no episode finished" if v != v else f"{v:.4g}"
              for v in (s["final"].get("final_return", float("nan")) for s in summaries)]
    tasks = list(dict.fromkeys(d.parent.name for d in run_dirs))  # run folders are <task>/seed<N>
    seeds = len(run_dirs) // len(tasks)
    wall = max(s["wall_time"] for s in summaries)
    folder = Path(os.path.commonpath([d.absolute() for d in run_dirs]))
    if folder.is_relative_to(Path.cwd()):
        folder = folder.relative_to(Path.cwd())
    took = (f"{summaries[0]['frames']:,} {summaries[0].get('frames_unit', 'frames')} per seed in "
            f"{wall / 60:.1f} min")
    if len(tasks) == 1:
        return f"done: final return {', '.join(finals)} ({seeds} seed{'s' if seeds > 1 else ''}); {took}\nruns in {folder}"
    runs = ", ".join(f"{d.parent.name}{' ' + d.name if seeds > 1 else ''} {v}" for d, v in zip(run_dirs, finals))
    return (f"done: {len(tasks)} tasks x {seeds} seed{'s' if seeds > 1 else ''}; {took}\n"
            f"final return {runs}\nruns in {folder}")


def cmd_aggregate(args: argparse.Namespace) -> int:
    from rlrepro.results.tables import aggregate_experiment

    aggregate_experiment(args.spec, scale=args.scale, results=args.results)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from rlrepro.results.report import write_report

    if args.compare is not None:
        return _compare(args.compare, _results_root(args))
    write_report(args.specs, scale=args.scale, results=args.results, only=args.only)
    return 0


def _compare(before: Path, now: Path) -> int:
    """Exit 0 when every verdict judged on both sides is the same, 1 when one differs, 2 when nothing compares."""
    from rlrepro.results.publish import compare_lines

    try:
        lines, differ = compare_lines(before, now)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 1 if differ else 0


def cmd_publish(args: argparse.Namespace) -> int:
    from rlrepro.results.publish import publish, summary_line

    root = None if args.refresh else _results_root(args)
    try:
        written, dropped = publish(root, args.to, args.specs, scale=args.scale)
    except (FileNotFoundError, ValueError, SpecError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    size = sum(path.stat().st_size for path in written)
    done = f"re-judged the tables in {args.to}" if root is None else f"published {root} to {args.to}"
    print("\n".join([f"{done}: {len(written)} file(s), {size / 2**20:.1f} MB", *dropped,
                     summary_line(args.to, args.scale)]))
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
    uri = args.uri or default_tracking_uri(args.results)
    try:
        run_id = publish_experiment(
            uri=uri, scale=args.scale, paper=spec.paper,
            experiment=spec.experiment, spec=spec.model_dump(mode="json"), spec_path=str(args.spec),
            table_json=md.with_suffix(".json"), files=files, project=project_namespace(args.results),
        )
    except Exception as error:  # a tracking failure: the tables on disk stand (the pipeline's rule must not fail)
        if not args.best_effort:
            raise
        print(f"rlrepro mlflow-publish: not published to {uri} ({type(error).__name__}: {str(error)[:300]}). "
              f"The tables under {md.parent} are written; run this command again when the tracking server is up.",
              file=sys.stderr)
        return 0
    print(f"summary run {run_id}: {len(files)} file(s) and the verdicts of {spec.paper}/{spec.experiment} ({args.scale})")
    return 0


def cmd_init_store(args: argparse.Namespace) -> int:
    from rlrepro.tracking import ensure_store

    ensure_store(args.uri)
    if args.marker:
        args.marker.parent.mkdir(parents=True, exist_ok=True)
        args.marker.write_text(json.dumps({"uri": args.uri}) + "\n")
    return 0


def _version() -> str:
    """The installed package's version and the commit of the code (a run's provenance names both)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    from rlrepro.provenance import git_commit  # noqa: PLC0415

    try:
        number = version("rlrepro")
    except PackageNotFoundError:
        number = "unknown"
    return f"{number} (commit {git_commit()})"


class _VersionAction(argparse.Action):
    """--version, worked out only when asked (it runs git: no other command should pay for it at start-up)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        print(f"rlrepro {_version()}")  # on standard output, as argparse's own version action does
        parser.exit()


def cmd_trivial_scores(args: argparse.Namespace) -> int:
    from rlrepro.environments.trivial import run_trivial_scores

    index, _, count = args.shard.partition("/")
    command = " ".join(["rlrepro", *sys.argv[1:]]) if sys.argv[1:2] == ["trivial-scores"] else "rlrepro trivial-scores"
    return run_trivial_scores(args.spec or [Path("specs")], filters=args.env, episodes=args.episodes, csv_path=args.csv,
                              command=command, shard=(int(index) - 1, int(count)), dry_run=args.dry_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlrepro", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_VersionAction, help="Show the version and the code's commit, then exit.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="Validate spec files (default: all of specs/).")
    p.add_argument("paths", nargs="*", type=Path)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plan", help="List run units, their frames and the total.")
    _add_scale(p)
    p.add_argument("--specs", nargs="+", default=["specs"], help="Spec files or directories.")
    p.add_argument("--only", default=None, help="PAPER or PAPER/EXPERIMENT (comma-separated).")
    p.add_argument("--set", default=None,
                   help="The job's sets as Snakemake's --config set= takes them: default (when left out), an opt-in "
                   "set's name (e.g. curves), or all; comma-separated.")
    p.add_argument("--json", action="store_true", help="Print every run unit as JSON.")
    p.add_argument("--unpublished", type=Path, default=None, metavar="FOLDER",
                   help="Leave out the experiments FOLDER (a published report, e.g. docs/results/cpu) has tables of: "
                   "what a job published a session at a time still has to run, and its only= list.")
    p.add_argument("--units", action="store_true", help="After the per-experiment summary, list every run unit.")
    p.add_argument("--detail", action="store_true",
                   help="One row per experiment, every figure's source and each experiment's memory and claims' "
                   "power (the default for a plan of at most 12 experiments; more are summed per paper).")
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
            "      --variant corr=vtrace__lag=32__replay=0.0__B=32 --env catch --seeds 0,1\n"
            "variants and environments of a spec: `rlrepro plan --scale smoke --only PAPER/EXPERIMENT --units`"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--spec", type=Path, required=True, help="The experiment's YAML spec file.")
    _add_scale(p)
    p.add_argument("--variant", required=True, help="Variant name, as `rlrepro plan --units` lists it (e.g. corr=vtrace__lag=32__replay=0.0__B=32).")
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
    p.add_argument(
        "--retire", action="store_true",
        help="Finished runs of another spec file that this job would train again are moved aside to "
        "<scale>/retired/ (kept) rather than stopping the job (those of this spec file, edited, always are).",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("aggregate", help="Write the table and plot of one experiment.")
    p.add_argument("--spec", type=Path, required=True)
    _add_scale(p)
    _add_results(p)
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("report", help="Write REPORT.md: every experiment, every claim.")
    _add_scale(p)
    p.add_argument("--specs", nargs="+", default=["specs"])
    p.add_argument("--only", default=None, help="A run's only= (PAPER or PAPER/EXPERIMENT, comma-separated): the "
                   "report still covers every experiment, and leads with these and their tally.")
    p.add_argument("--compare", type=Path, default=None, metavar="FOLDER",
                   help="Write nothing: list every claim whose verdict here differs from FOLDER's (a published report "
                   "such as docs/results/cpu, or another results root); exit 1 when one differs.")
    _add_results(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("publish", help="Copy a finished job's report, tables and figures into the repository.")
    _add_scale(p)
    p.add_argument("--to", type=Path, required=True,
                   help="The folder (e.g. docs/results/cpu): its tables of experiments this job did not run are kept.")
    p.add_argument("--specs", nargs="+", default=["specs"],
                   help="The specs whose claims judge the runs anew (default: this checkout's specs).")
    p.add_argument("--refresh", action="store_true",
                   help="Add no run: judge the tables --to holds and write its report anew with this checkout's "
                        "specs and code (after a change to claims or rules; tables whose spec changed are left out).")
    _add_results(p)
    p.set_defaults(func=cmd_publish)

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
    p.add_argument(
        "--best-effort", action="store_true", help="Exit 0 when publishing fails (the tables stand; the pipeline goes on)."
    )
    p.set_defaults(func=cmd_mlflow_publish)

    from rlrepro.results.trivial import CSV_PATH

    p = sub.add_parser("trivial-scores", help="Measure missing or stale trivial-policy scores (random, NOOP, zero action).")
    p.add_argument("--spec", type=Path, action="append", help="Spec file or folder (repeatable; default: specs/).")
    p.add_argument("--env", action="append", default=[], help="Only this env id, name, game or kind (repeatable).")
    p.add_argument("--episodes", type=int, default=None, help="Episodes per policy (default: per backend).")
    p.add_argument("--csv", type=Path, default=CSV_PATH, help="The scores file (default: the shipped one).")
    p.add_argument("--shard", default="1/1", help="K/N: measure every N-th missing row from the K-th (parallel runs).")
    p.add_argument("--dry-run", action="store_true", help="List what would be measured.")
    p.set_defaults(func=cmd_trivial_scores)

    p = sub.add_parser("init-store", help="Create the MLflow store once, before jobs fan out.")
    p.add_argument("--uri", required=True)
    p.add_argument("--marker", type=Path, default=None)
    p.set_defaults(func=cmd_init_store)
    return parser


def _quiet_libraries() -> None:
    """A job's output is ours: MLflow's INFO lines (and its database migrations') go; its warnings stay. MLflow reads
    MLFLOW_LOGGING_LEVEL when first imported, so this runs before any command imports it; a value set by the user
    is kept."""
    import logging  # noqa: PLC0415
    import os  # noqa: PLC0415

    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    for name in ("alembic", "mlflow"):
        logging.getLogger(name).setLevel(os.environ["MLFLOW_LOGGING_LEVEL"].upper())


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
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
    except (RunBusyError, FinishedRunError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 4
    except MetricsFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except MissingRunsError as error:  # e.g. `aggregate` while the experiment still trains
        print(f"error: {error}\n(wait for the training jobs to finish, or run them: `snakemake` makes the tables "
              "when they are done)", file=sys.stderr)
        return 2
    except NotADirectoryError as error:  # e.g. --results naming a file
        print(f"error: {error.filename} is not a folder (a file is in the way: check --results)", file=sys.stderr)
        return 2
    except UnicodeDecodeError as error:  # a spec saved in another encoding
        print(f"error: a file is not UTF-8 text ({error.reason} at byte {error.start}); save the spec as UTF-8",
              file=sys.stderr)
        return 2
    except PermissionError as error:  # e.g. a read-only results folder
        where = f": {error.filename}" if error.filename else ""
        print(f"error: permission denied{where} (a read-only results folder? make it writable, or pass "
              "another folder with --results)", file=sys.stderr)
        return 5
    except OSError as error:
        if error.errno == errno.EROFS:
            print(f"error: {error.filename or 'the results folder'} is on a read-only file system: pass a writable "
                  "folder with --results", file=sys.stderr)
            return 5
        if error.errno != errno.ENOSPC:
            raise
        where = f" writing {error.filename}" if error.filename else ""
        print(f"error: no space left on the device{where}. Nothing finished is lost: free some space (or pass "
              "another folder with --results) and run the same command again; it resumes from the last checkpoints.",
              file=sys.stderr)
        return 6

