"""The device check (``scripts/device-check.sh``): one smoke training job per agent family, then the benchmarks.

``python -m rlrepro.bench.device_check run --out DIR [--size paper|small]`` (the script calls it, after putting the
carried wheels on the path):

1. prints the JAX devices;
2. trains one smoke job per agent family (IMPALA toy, IMPALA Atari shallow, FRODO Catch, Synthetic Returns Chain,
   V-RACER + ReF-ER, DQNReg) with MLflow off (``rlrepro train --no-mlflow``), side by side, and checks that each
   job's ``device`` record (``spec.resolved.json``) names the platform JAX sees (gpu on a GPU machine, cpu on CPU);
3. runs the benchmarks one after another (``python -m rlrepro.bench NAME``; each blocks on its results before it
   reads a clock): IMPALA Atari deep and shallow (env only, learner only, end to end with the machine's cores as
   actor threads; on an accelerator end to end again with the actors' policy on the host CPU, and the row takes the
   faster placement), the IMPALA toy with seeds vmapped, FRODO's meta-update, and the loss search's hurdle runs per hour
   with K programs batched. ``--size paper`` uses the paper's batch sizes (the default when JAX sees a GPU);
   ``--size small`` the smallest that still run every code path (the default on CPU: CI's check);
4. writes ``throughput-rows.csv`` (``rlrepro/bench/throughput.csv``'s columns) with a row per measured figure.

Everything it prints also goes to ``DIR/device-check.log``; ``DIR/summary.json`` says what passed. Every step has
its own time limit and the whole check a budget (``--budget-s``): steps past the budget are skipped and said so.

``python -m rlrepro.bench.device_check merge ROWS.csv`` puts a GPU run's rows into ``rlrepro/bench/throughput.csv`` in
place of the accelerator rows for the same experiments, so that ``rlrepro plan --scale paper`` quotes them.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rlrepro.workflow.cost import COLUMNS, THROUGHPUT_CSV, load_throughput

ROOT = Path(__file__).resolve().parents[2]
SIZES = ("paper", "small")


@dataclass(frozen=True)
class SmokeJob:
    """One smoke-scale training job of an agent family (``rlrepro train`` arguments)."""

    family: str
    spec: str
    variant: str
    env: str


SMOKE_JOBS = (
    SmokeJob("IMPALA toy", "specs/impala/offpolicy_correction_toy.yaml", "corr=vtrace__lag=32__replay=0.0__B=32", "catch"),
    SmokeJob("IMPALA Atari shallow", "specs/impala/atari57_shallow.yaml", "default", "pong"),
    SmokeJob("FRODO Catch", "specs/frodo/catch.yaml", "frodo", "catch"),
    SmokeJob("Synthetic Returns Chain", "specs/synthetic_returns/chain.yaml", "sr", "chain"),
    SmokeJob("V-RACER + ReF-ER", "specs/refer/mujoco_vracer.yaml", "refer", "inverted_pendulum"),
    SmokeJob("DQNReg", "specs/evolving_rl/eval_classic_minigrid.yaml", "dqnreg", "cartpole"),
)


@dataclass(frozen=True)
class Bench:
    """One benchmark run: its name for the log and the JSON, ``python -m rlrepro.bench`` arguments per size."""

    name: str
    arguments: dict[str, list[str]]  # size -> arguments (``--json PATH`` is added)
    timeout_s: int  # on an accelerator (the device budget is minutes); on a CPU x CPU_TIMEOUT_FACTOR


#: A bench's time cap on a CPU-only machine (CI's 2 cores, the small size) is this many times its accelerator cap: the
#: check's budget bounds the whole there. The small loss search (two CartPole hurdle loops to compile, 20-60 s each,
#: with nothing in JAX's compile cache yet) ran past 300 s on a loaded 2-core machine.
CPU_TIMEOUT_FACTOR = 3


#: The Atari benchmarks' rows: the benchmark (actors' policy on the learner's device) -> the experiments it measures.
#: On an accelerator each also runs with the actors' policy on the host CPU (``CPU_ACTORS`` suffix, end to end only:
#: the emulators and the learner are the same); the row takes the faster placement and names the other's figure.
ATARI_ROWS = {
    "impala_atari_deep": "impala/atari57_deep",
    "impala_atari_shallow": "impala/atari57_shallow impala/throughput",
}
CPU_ACTORS = "_cpu_actors"


def benches(actors: int, accelerator: bool = True) -> tuple[Bench, ...]:
    """The benchmarks, the most informative first (a budget cut skips the last); ``actors`` actor threads share the
    Atari spec's 32 environments end to end (the machine's cores, a divisor of 32). Paper sizes: IMPALA's B = 32 x
    T = 20 (Table G.1; the specs), the toy's 32 x 20 with 1-256 seeds vmapped, FRODO's M = 5 inner updates on 30 x 30
    Atari batches, the search's CartPole hurdle runs (10k steps) with K = 1 and 32 programs in lockstep.
    ``accelerator``: also IMPALA Atari deep and shallow end to end with the actors' policy on the host CPU
    (``--actor-device cpu``; 2 timed chunks, no parts: about 30 s each), right after the same bench on the learner's
    device (on a CPU-only machine both placements are one device: not run)."""
    deep = ["--spec", "specs/impala/atari57_deep.yaml", "--network", "impala_deep"]
    atari_paper = ["impala-atari", "--num-actors", str(actors), "--chunks", "3", "--updates-per-chunk", "10",
                   "--actor-device", "learner"]
    small_batch = ["--envs", "4", "--unroll-length", "5"]  # on 2 CPU cores deep's B = 32 x T = 20 takes 8 s an update
    atari_small = ["impala-atari", "--chunks", "1", "--updates-per-chunk", "2", "--env-seconds", "1",
                   "--actor-device", "learner", *small_batch]
    on_cpu = ["--actor-device", "cpu", "--end-to-end-only"]
    cpu_paper = ["impala-atari", "--num-actors", str(actors), "--chunks", "2", "--updates-per-chunk", "10", *on_cpu]
    cpu_small = ["impala-atari", "--chunks", "1", "--updates-per-chunk", "2", *small_batch, *on_cpu]
    atari = (
        Bench("impala_atari_deep", {"paper": atari_paper + deep, "small": atari_small + deep}, 300),
        Bench("impala_atari_deep" + CPU_ACTORS, {"paper": cpu_paper + deep, "small": cpu_small + deep}, 150),
        Bench("impala_atari_shallow", {"paper": atari_paper, "small": atari_small}, 240),
        Bench("impala_atari_shallow" + CPU_ACTORS, {"paper": cpu_paper, "small": cpu_small}, 150),
    )
    return tuple(b for b in atari if accelerator or not b.name.endswith(CPU_ACTORS)) + (
        Bench("impala_toy", {
            "paper": ["impala-toy", "--env", "catch", "--repeats", "3", "--seeds", "1", "16", "256"],
            "small": ["impala-toy", "--env", "catch", "--batch-size", "4", "--unroll-length", "5", "--repeats", "1",
                      "--seeds", "1", "2"],
        }, 240),
        Bench("frodo_meta_update", {
            "paper": ["frodo", "--kind", "atari", "--repeats", "3"],
            "small": ["frodo", "--kind", "atari", "--inner-steps", "1", "--batch-size", "2", "--unroll-length", "2",
                      "--repeats", "1"],
        }, 240),
        Bench("loss_search", {
            "paper": ["evolving-rl", "--updates", "2000", "--programs", "1", "--batches", "32", "--no-host"],
            "small": ["evolving-rl", "--updates", "10", "--programs", "1", "--batches", "2", "--no-host"],
        }, 300),
    )


def faster_placement(figures: dict[str, dict], name: str) -> tuple[str, dict, dict | None] | None:
    """The Atari benchmark ``name``'s run with the higher end to end of its two placements (``name`` and
    ``name + CPU_ACTORS``): ``(the run's benchmark name, its figures, the other run's figures or None)``; None when
    neither ran."""
    runs = [(n, figures[n]) for n in (name, name + CPU_ACTORS) if figures.get(n) is not None]
    if not runs:
        return None
    runs.sort(key=lambda run: run[1]["end_to_end"], reverse=True)
    return runs[0][0], runs[0][1], runs[1][1] if len(runs) > 1 else None


def _atari_source(f: dict, other: dict | None, parts: dict | None) -> str:
    """A row's source: the setting, where the actors' policy ran, the other placement's end to end, the parts."""
    placement = lambda run: run.get("actor_device") or "learner"  # noqa: E731  (runs before the setting: learner)
    text = (f"end to end: Pong, {f['network']}, B={f['batch_size']} x T={f['unroll_length']} with {f['num_envs']} "
            f"envs, {f['mode']} actors x{f['num_actors']} with their policy on the {placement(f)} device, mean of "
            f"the timed chunks after a warm-up chunk")
    if other is not None:
        text += (f"; the faster of two placements: policy on the {placement(other)} device "
                 f"{other['end_to_end']:,.0f} frames/s")
    if parts is not None and parts.get("env_only") is not None:
        text += f"; env only {parts['env_only']:,.0f}, learner only {parts['learner_only']:,.0f} frames/s"
    return text + f", policy lag {f['policy_lag']:.2f}"


class Tee:
    """Print to the terminal and to the log file."""

    def __init__(self, log: TextIO):
        self.log = log

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()


def _env(platform: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if platform == "gpu":  # several processes share the GPU: none may take 75% of its memory at start
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return env


def smoke_jobs(out: Tee, results: Path, platform: str, parallel: int, timeout_s: int) -> dict[str, dict]:
    """Train every ``SMOKE_JOBS`` entry (seed 0, smoke scale, MLflow off), ``parallel`` at a time; each job's
    result: passed, seconds, the device record, and the tail of its output when it failed."""
    outcome: dict[str, dict] = {}
    pending = list(SMOKE_JOBS)
    running: list[tuple[SmokeJob, subprocess.Popen, float, Path]] = []
    try:
        _run_smoke(out, results, platform, parallel, timeout_s, pending, running, outcome)
    finally:  # interrupted (Ctrl-C, SIGTERM from a time limit): no job outlives the check
        for _, process, _, _ in running:
            process.kill()
    return outcome


def _run_smoke(out: Tee, results: Path, platform: str, parallel: int, timeout_s: int, pending: list[SmokeJob],
               running: list[tuple[SmokeJob, subprocess.Popen, float, Path]], outcome: dict[str, dict]) -> None:
    while pending or running:
        while pending and len(running) < parallel:
            job = pending.pop(0)
            log = results / f"{job.spec.split('/')[-1].removesuffix('.yaml')}-{job.variant.replace('=', '')}.log"
            command = [sys.executable, "-m", "rlrepro", "train", "--spec", job.spec, "--scale", "smoke",
                       "--variant", job.variant, "--env", job.env, "--seeds", "0", "--results", str(results),
                       "--progress", "lines", "--no-mlflow"]  # fmt: skip
            handle = open(log, "w", encoding="utf-8")
            process = subprocess.Popen(command, cwd=ROOT, env=_env(platform), stdout=handle, stderr=subprocess.STDOUT)
            running.append((job, process, time.perf_counter(), log))
            out(f"  started {job.family}: rlrepro train --spec {job.spec} --variant {job.variant} --env {job.env}")
        time.sleep(0.5)
        for item in list(running):
            job, process, started, log = item
            elapsed = time.perf_counter() - started
            if process.poll() is None and elapsed < timeout_s:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()
            running.remove(item)
            outcome[job.family] = _smoke_result(job, process.returncode, elapsed, log, results, platform, timeout_s)
            state = "ok" if outcome[job.family]["passed"] else "FAILED"
            out(f"  {state:6s} {job.family}: {elapsed:6.1f} s, device {outcome[job.family]['device']}")
            if not outcome[job.family]["passed"]:
                out("    " + outcome[job.family]["reason"])
                out("\n".join("    | " + line for line in outcome[job.family]["tail"]))


def _smoke_result(job: SmokeJob, returncode: int, seconds: float, log: Path, results: Path, platform: str,
                  timeout_s: int) -> dict:
    """Passed when the job exited 0 and every run folder's ``spec.resolved.json`` names ``platform``."""
    records = [json.loads(p.read_text()) for p in (results / "smoke" / "runs").glob(
        f"*/*/{job.variant}/{job.env}/seed0/spec.resolved.json")]
    records = [r for r in records if r["run"]["experiment"] == Path(job.spec).stem]
    device = records[0]["device"] if records else {}
    tail = log.read_text(errors="replace").splitlines()[-15:]
    if returncode != 0:
        reason = f"exit {returncode}" + (f" (killed after {timeout_s} s)" if seconds >= timeout_s else "")
    elif not records:
        reason = "no spec.resolved.json written"
    elif device.get("platform") != platform:
        reason = f"device record says {device.get('platform')!r}, JAX sees {platform!r}"
    else:
        reason = ""
    return {"passed": not reason, "reason": reason, "seconds": round(seconds, 1), "device": device.get("platform"),
            "device_record": device, "tail": [] if not reason else tail}


def run_bench(out: Tee, bench: Bench, size: str, work: Path, platform: str) -> dict | None:
    """One benchmark in its own process, its output teed (a thread reads it, so a silent hang still meets the time
    limit); its figures (``--json``), or None when it failed or ran out of time."""
    figures = work / f"{bench.name}.json"
    command = [sys.executable, "-m", "rlrepro.bench", *bench.arguments[size], "--json", str(figures)]
    out(f"$ python -m rlrepro.bench {' '.join(bench.arguments[size])}")
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=_env(platform), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    reader = threading.Thread(target=lambda: [out("  | " + line.rstrip()) for line in process.stdout], daemon=True)
    reader.start()
    try:
        process.wait(timeout=bench.timeout_s)
    except subprocess.TimeoutExpired:
        out(f"  {bench.name}: killed after {bench.timeout_s} s")
        return None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=5)
    out(f"  {bench.name}: exit {process.returncode} after {time.perf_counter() - started:.1f} s")
    if process.returncode != 0 or not figures.exists():
        return None
    return json.loads(figures.read_text())


def hardware(platform: str, device_kind: str, cores: int) -> str:
    """throughput.csv's hardware column: the accelerator and the cores beside it."""
    if platform == "cpu":
        return f"{cores}-core x86-64 CPU, no GPU"
    return f"1x {device_kind} + {cores} CPU cores"


def rows_from(figures: dict[str, dict], platform: str, hw: str, size: str, date: str) -> list[dict[str, str]]:
    """throughput.csv rows from the benchmarks' figures (frames/s of one training job of the experiments)."""
    script = "scripts/device-check.sh" + (" (DEVICE_CHECK_SIZE=small: not the paper's sizes)" if size == "small" else "")
    rows = []

    def add(experiments: str, fps: float, command: str, source: str, status: str = "measured") -> None:
        rows.append({"experiments": experiments, "device": platform, "hardware": hw, "frames_per_s": f"{fps:.0f}",
                     "status": status, "date": date, "command": f"{command} (in {script})", "source": source})

    for name, experiments in ATARI_ROWS.items():
        if (picked := faster_placement(figures, name)) is not None:
            run_name, f, other = picked
            arguments = _bench(run_name, f["num_actors"]).arguments[size][1:]
            command = "python -m rlrepro.bench impala-atari " + " ".join(arguments)
            add(experiments, f["end_to_end"], command, _atari_source(f, other, figures.get(name)))
    if (f := figures.get("impala_toy")) is not None:
        seeds, fps = max(((int(k), v) for k, v in f["end_to_end"].items()))
        add("impala/offpolicy_correction_toy", fps, "python -m rlrepro.bench " + " ".join(_bench("impala_toy").arguments[size]),
            f"end to end, {seeds} seeds vmapped in one job (frames/s summed over the seeds): {f['env']}, "
            f"B={f['batch_size']} x T={f['unroll_length']}; one seed "
            f"{f['end_to_end'].get('1', float('nan')):,.0f}, env only {f['env_only']:,.0f}, learner only "
            f"{f['learner_only']:,.0f} frames/s")
    if (f := figures.get("frodo_meta_update")) is not None:
        # FRODO's Atari job feeds its learner from the same host actor threads as IMPALA's (HostActorLearner), so its
        # end to end is at most the lower of its learner's rate and those actors' rate: the plan's hours must not
        # rest on the learner alone (an upper bound on frames/s is a lower bound on hours).
        learner = (f"FRODO's meta-update alone (learner only), M={f['inner_steps']}, B={f['batch_size']} x "
                   f"T={f['unroll_length']} Atari batches, frames counted x4: {f['frodo']:,.0f} frames/s; the plain "
                   f"IMPALA update on the same batches {f['impala']:,.0f} frames/s")
        command = "python -m rlrepro.bench " + " ".join(_bench("frodo_meta_update").arguments[size])
        shallow = faster_placement(figures, "impala_atari_shallow")  # the host actors at their faster placement
        actors = shallow[1] if shallow is not None else None
        if actors is not None and actors["end_to_end"] < f["frodo"]:
            add("frodo/atari57 frodo/atari8_ablations", actors["end_to_end"], command,
                f"derived, not measured end to end: the host actors' end to end rate (IMPALA shallow, same actor "
                f"threads, x{actors['num_actors']}) {actors['end_to_end']:,.0f} frames/s bounds it; {learner}",
                status="estimate")
        else:
            add("frodo/atari57 frodo/atari8_ablations", f["frodo"], command,
                f"learner only (no actors measured: an upper bound on end to end): {learner}")
    if (f := figures.get("loss_search")) is not None:
        batched = {int(k.split("_k")[1].split("_")[0]): v for k, v in f.items()
                   if k.startswith("compiled_k") and k.endswith("_programs_per_h_failing")}
        k, per_hour = max(batched.items(), key=lambda item: item[1])
        add("evolving_rl/search_*", per_hour * f["hurdle_steps"] / 3600.0,
            "python -m rlrepro.bench " + " ".join(_bench("loss_search").arguments[size]),
            f"the search's hurdle runs (CartPole, {f['hurdle_steps']:,} steps each) with K={k} programs in lockstep: "
            f"{per_hour:,.0f} programs per hour (frames/s counts every program's steps); K=1 "
            f"{batched.get(1, float('nan')):,.0f} programs per hour")
    return rows


def _bench(name: str, actors: int = 1) -> Bench:
    return next(b for b in benches(actors) if b.name == name)


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def merge(rows_path: Path, into: Path = THROUGHPUT_CSV) -> list[str]:
    """Put the accelerator rows of ``rows_path`` into ``into`` in place of its accelerator rows whose experiments
    overlap theirs (where the first of those stood; else at the end). Refuses CPU rows (the stored CPU figures come
    from the quiet reference machine) and rows from a small-size run. Returns what it did, one line per row."""
    new = load_throughput(rows_path)  # validates the columns and values
    for row in new:
        if row.device == "cpu":
            raise ValueError(f"{rows_path}: a cpu row ({' '.join(row.experiments)}): only accelerator rows are merged")
        if "DEVICE_CHECK_SIZE=small" in row.command:
            raise ValueError(f"{rows_path}: {' '.join(row.experiments)} was measured at the small sizes")
    with open(into, newline="", encoding="utf-8") as handle:
        old = list(csv.DictReader(handle))
    with open(rows_path, newline="", encoding="utf-8") as handle:
        incoming = list(csv.DictReader(handle))
    said, kept, placed = [], [], False
    for row in old:
        overlap = [n for n in incoming if set(n["experiments"].split()) & set(row["experiments"].split())]
        if row["device"] != "cpu" and overlap:
            said.append(f"replaced: {row['experiments']} ({row['hardware']}, {row['frames_per_s']} frames/s, {row['status']})")
            if not placed:
                kept.extend(incoming)
                placed = True
            continue
        kept.append(row)
    if not placed:
        kept.extend(incoming)
    said += [f"added: {n['experiments']} ({n['hardware']}, {n['frames_per_s']} frames/s)" for n in incoming]
    write_rows(into, kept)
    load_throughput(into)
    return said


def run(out_dir: Path, size: str | None, budget_s: float | None, parallel: int | None) -> int:
    """The whole check; exit status 0 when every smoke job and every benchmark passed."""
    import jax

    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(out_dir / "device-check.log", "a", encoding="utf-8") as log, \
            tempfile.TemporaryDirectory(prefix="device-check-") as tmp:
        out = Tee(log)
        devices = jax.devices()
        platform, kind = devices[0].platform, devices[0].device_kind
        size = size or ("small" if platform == "cpu" else "paper")
        budget_s = budget_s or (1800.0 if platform == "cpu" else 480.0)
        cores = os.cpu_count() or 1
        out(f"device check: jax {jax.__version__}, {len(devices)} x {platform} ({kind}), {cores} CPU cores, "
            f"size {size}, budget {budget_s:.0f} s")
        for device in devices:
            out(f"  {device!r}")
        summary: dict = {"jax": jax.__version__, "platform": platform, "device_kind": kind, "device_count": len(devices),
                         "cores": cores, "size": size, "smoke": {}, "benchmarks": {}}
        out("smoke jobs (smoke scale, seed 0, MLflow off):")
        work = Path(tmp)
        summary["smoke"] = smoke_jobs(out, work, platform, parallel or (len(SMOKE_JOBS) if platform != "cpu" else 1),
                                      timeout_s=int(min(300 if platform != "cpu" else 900, budget_s)))
        actors = max(a for a in (1, 2, 4, 8, 16, 32) if a <= cores)  # a divisor of the spec's 32 environments
        figures: dict[str, dict] = {}
        for bench in benches(actors, accelerator=platform != "cpu"):
            left = budget_s - (time.perf_counter() - started)
            if left < 30:
                out(f"{bench.name}: skipped, {left:.0f} s of the budget left")
                summary["benchmarks"][bench.name] = "skipped"
                continue
            cap = bench.timeout_s * (CPU_TIMEOUT_FACTOR if platform == "cpu" else 1)
            result = run_bench(out, Bench(bench.name, bench.arguments, int(min(cap, left))), size, work, platform)
            summary["benchmarks"][bench.name] = "ok" if result is not None else "failed"
            if result is not None:
                figures[bench.name] = result
        summary["figures"] = figures
        date = dt.datetime.now(dt.timezone.utc).date().isoformat()
        rows = rows_from(figures, platform, hardware(platform, kind, cores), size, date)
        write_rows(out_dir / "throughput-rows.csv", rows)
        out(f"throughput rows ({len(rows)}) in {out_dir / 'throughput-rows.csv'}:")
        for row in rows:
            out(f"  {row['experiments']}: {float(row['frames_per_s']):,.0f} frames/s on {row['hardware']}")
        passed = all(r["passed"] for r in summary["smoke"].values()) and all(
            v == "ok" for v in summary["benchmarks"].values())
        summary["passed"] = passed
        summary["seconds"] = round(time.perf_counter() - started, 1)
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        out(f"device check {'passed' if passed else 'FAILED'} in {summary['seconds']:.0f} s (output in {out_dir})")
    return 0 if passed else 1


def _interrupt_on_sigterm() -> None:
    """SIGTERM (``timeout``, a job scheduler's time limit) ends the check like Ctrl-C: its jobs are killed."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench.device_check", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="the check: smoke jobs, benchmarks, throughput rows")
    p.add_argument("--out", type=Path, required=True, help="folder for device-check.log, summary.json, the rows")
    p.add_argument("--size", choices=SIZES, default=os.environ.get("DEVICE_CHECK_SIZE") or None,
                   help="paper (the paper's batch sizes; default on a GPU) or small (default on CPU); "
                        "or DEVICE_CHECK_SIZE")
    budget = os.environ.get("DEVICE_CHECK_BUDGET_S")
    p.add_argument("--budget-s", type=float, default=float(budget) if budget else None,
                   help="seconds for the whole check; benchmarks past it are skipped (default: 480 on an accelerator, "
                        "1800 on CPU; or DEVICE_CHECK_BUDGET_S)")
    p.add_argument("--parallel", type=int, default=None, help="smoke jobs at a time (default: all on a GPU, 1 on CPU)")
    p = sub.add_parser("merge", help="put a GPU run's throughput-rows.csv into rlrepro/bench/throughput.csv")
    p.add_argument("rows", type=Path)
    p.add_argument("--into", type=Path, default=THROUGHPUT_CSV)
    args = parser.parse_args(argv)
    if args.command == "merge":
        for line in merge(args.rows, args.into):
            print(line)
        return 0
    _interrupt_on_sigterm()
    return run(args.out, args.size, args.budget_s, args.parallel)


if __name__ == "__main__":
    raise SystemExit(main())
