"""Run one training job: the seeds of one (variant, env) of a spec, with files, checkpoints and MLflow.

Files per run unit (``<results>/<scale>/runs/<paper>/<experiment>/<variant>/<env>/seed<k>/``):
``spec.resolved.json`` first, ``metrics.jsonl`` appended and flushed after every chunk, and
``summary.json`` last (atomically; it marks completion). After every chunk the job's state is
checkpointed outside the declared outputs; a killed job started again resumes from the last
checkpoint, and its metrics are cut back to that checkpoint first, so they have no gaps and no
duplicates (training is deterministic, so the re-run chunk writes the same numbers).

``summary.json`` lists the job's ``attempts``: the chunk each start trained from and the commit it ran, so a run
finished by a later commit, or resumed where a resume is not exact (Atari games restart, a DQN replay refills),
says so.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jax
import numpy as np

from rlrepro.agents.registry import build_multitask_trainer, build_trainer, chunk_plan
from rlrepro.environments.availability import require_backend
from rlrepro.jobs import checkpoint
from rlrepro.jobs.memory import PeakMemory, memory_line
from rlrepro.jobs.progress import Progress
from rlrepro.jobs.run_folder import (
    EVAL_SCORES, METRICS, RESOLVED, SUMMARY, append_metrics, cut_metrics, read_json, read_metrics, write_json_atomic,
)
from rlrepro.jobs.run_lock import FinishedRunError, own_run_dir
from rlrepro.provenance import git_commit
from rlrepro.specs import ExperimentSpec, Scale, SpecError, load_spec, resolve_agent, resolve_env, spec_hash
from rlrepro.specs.control import split_variant
from rlrepro.training.placement import actor_device_setting
from rlrepro.training.program import ChunkPlan, TrainerProgram, seed_keys
from rlrepro.workflow import (
    MULTITASK_ENV, ExperimentPlan, Job, RunUnit, config_hash, multitask_env_ids, results_root,
)
from rlrepro.workflow.retire import (
    OtherSpecError, other_spec_text, replaced_runs, retire_run_dirs, retire_text, spec_source,
)


def train_job(
    *,
    spec_path: Path,
    scale: Scale,
    variant: str,
    env: str,
    seeds: tuple[int, ...] | None,
    results: Path,
    progress: str = "auto",
    track: bool = True,
    retire: bool = False,
) -> list[Path]:
    """Train (or resume) the seeds of one (variant, env); returns the run folders.

    ``env`` ``MULTITASK_ENV`` trains the variant's multi-task agent (one seed) on every environment of the
    scale at once, with one run folder per environment.

    A finished run of another configuration is moved aside first (``workflow.retire``: kept under
    ``<scale>/retired/``), when it was trained from this spec file or ``retire`` is true.

    Raises:
        RunBusyError: another process is training one of these run folders.
        OtherSpecError: a finished run was trained from another spec file with another configuration (and not
            ``retire``); nothing was written.
    """
    spec = load_spec(spec_path)
    base, control = split_variant(variant)  # '<variant>@frozen': its control arm (rlrepro.specs.control)
    variant_spec = _pick([v.name for v in spec.variant_list()], base, "variant", spec_path)
    size = spec.scale(scale)
    seeds = seeds if seeds is not None else tuple(range(size.seeds))
    agent = resolve_agent(spec, spec.variant_list()[variant_spec], scale, source=str(spec_path), control=control)
    root = results_root(results, scale)
    if env == MULTITASK_ENV:  # one agent on every environment of the scale; one run folder per environment
        if getattr(agent, "multitask", None) is None:
            raise SpecError(str(spec_path), [f"--env {MULTITASK_ENV}: variant '{variant}' has no agent.multitask"])
        env_specs = [resolve_env(spec, e, scale, source=str(spec_path)) for e in multitask_env_ids(spec, scale)]
        program = build_multitask_trainer(agent, env_specs, frames=size.frames, run=spec.run)
        units = [RunUnit(spec.paper, spec.experiment, variant, e.id, seed, size.frames) for seed in seeds for e in env_specs]
        ckpt_dir = root / "checkpoints" / spec.paper / spec.experiment / variant / MULTITASK_ENV
    else:
        _pick([e.id for e in spec.environments], env, "env", spec_path)
        env_specs = [resolve_env(spec, env, scale, source=str(spec_path))]
        require_backend(env_specs[0])
        program = build_trainer(agent, env_specs[0], frames=size.frames, run=spec.run)
        units = [RunUnit(spec.paper, spec.experiment, variant, env, seed, size.frames) for seed in seeds]
        ckpt_dir = units[0].checkpoint_dir(root).parent
    env_of = {e.id: e for e in env_specs}
    digest = config_hash(spec, variant, env, scale)
    run_dirs = [unit.run_dir(root) for unit in units]
    ckpt = ckpt_dir / f"seeds{'-'.join(map(str, seeds))}.ckpt"
    with contextlib.ExitStack() as owned:
        for run_dir in run_dirs:  # before anything in them is written or cut
            owned.enter_context(own_run_dir(run_dir))
        _check_finished_runs(run_dirs, seeds, digest)
        _retire_other_configs(spec_path, spec, scale, env, units, run_dirs, seeds, digest, results, retire)
        memory = owned.enter_context(PeakMemory())  # the job's peak resident memory: summary.json, log, MLflow
        device = device_placement()
        print(f"devices: {device['device_count']} x {device['platform']} ({device['device_kind']})", flush=True)
        for unit, run_dir in zip(units, run_dirs):
            _write_resolved(
                run_dir, unit, spec, scale, digest, agent.model_dump(mode="json"), env_of[unit.env].model_dump(mode="json"),
                chunk_plan(agent, env_of[unit.env], frames=size.frames, run=spec.run), device, seeds, spec_path,
            )
        state = program.init_batch(seed_keys(seeds))
        state, start_chunk, wall_offset, attempts = _resume(ckpt, state, digest, seeds, run_dirs, program)
        label = f"{spec.paper}/{spec.experiment} {variant} {env} seeds {','.join(map(str, seeds))}"
        trackers = _trackers(run_dirs, results) if track else []
        _train_chunks(program, state, start_chunk, wall_offset, run_dirs, ckpt, digest, seeds, label, progress,
                      trackers, spec.run.final_fraction, spec.run.checkpoint_every, memory, attempts)  # fmt: skip
    return run_dirs


def _check_finished_runs(run_dirs: list[Path], seeds: tuple[int, ...], digest: str) -> None:
    """Never replace a finished run: one trained in another seed group is an error; one of another configuration
    is retired afterwards (``_retire_other_configs``).

    Seeds trained together are one vmapped program, and XLA rounds a batch of one seed differently from a batch of
    two, so the same seed's curve drifts apart after enough chunks: the seed group is part of what identifies a
    run (``run.seed_group`` in spec.resolved.json and summary.json).

    Raises:
        FinishedRunError: a finished run of these seeds was trained in another seed group.
    """
    for run_dir in run_dirs:
        try:
            run = read_json(run_dir / SUMMARY)["run"]
        except (FileNotFoundError, ValueError, KeyError):
            continue  # not finished (or a summary being rewritten): resumed or trained as usual
        group = run.get("seed_group")
        if group is not None and group != list(seeds):
            raise FinishedRunError(
                f"{run_dir} is finished, trained with seeds {','.join(map(str, group))} in one job; this job "
                f"(--seeds {','.join(map(str, seeds))}) would train it again in another seed group and replace its "
                "results with different numbers (seeds trained together are vmapped, and the batch changes float "
                "rounding). Train the same seed group, or delete the folder's summary.json to retrain it in this one."
            )


def _retire_other_configs(
    spec_path: Path, spec: ExperimentSpec, scale: Scale, env: str, units: list[RunUnit], run_dirs: list[Path],
    seeds: tuple[int, ...], digest: str, results: Path, retire: bool,
) -> None:
    """Finished runs of this job of another configuration, moved aside and kept (``workflow.retire``), or an error
    when another spec file trained them (Snakemake's runs meet this before planning: ``settle_finished_runs``)."""
    job = Job(spec_path, spec.paper, spec.experiment, units[0].variant, env, seeds, units[0].frames, digest,
              tuple(units))
    plan = ExperimentPlan(spec_path, spec, (job,), scale)
    root = results_root(results, scale)
    replaced = [r for r in replaced_runs([plan], root) if r.run_dir in run_dirs]
    if not replaced:
        return
    if any(r.other_spec for r in replaced) and not retire:
        raise OtherSpecError(other_spec_text([r for r in replaced if r.other_spec], root, results, command=False))
    dest = retire_run_dirs(replaced, root, results)
    print(retire_text(replaced, dest), file=sys.stderr, flush=True)


def _resume(
    ckpt: Path, state: Any, digest: str, seeds: tuple[int, ...], run_dirs: list[Path], program: TrainerProgram
) -> tuple[Any, int, float, list[dict]]:
    """The state, chunk and wall time to start from, and the job's attempts: the checkpoint's (one whose commit is
    unknown from a checkpoint older than them), then this start when it trains (a forced re-run of a finished job
    trains nothing); the metrics are cut back to that chunk."""
    start_chunk, wall_offset, attempts = 0, 0.0, []
    for found in checkpoint.load_good(ckpt):  # the newest usable one; each one left is said, with why
        if (why := _why_not_resumable(found.meta, digest, seeds, run_dirs, program)) is not None:
            print(f"rlrepro: checkpoint {found.path} (chunk {found.meta.get('chunk', '?')}) not used: {why}",
                  file=sys.stderr, flush=True)  # fmt: skip
            continue
        state = checkpoint.restore_leaves(found.path, found.leaves, state)
        start_chunk, wall_offset = found.meta["chunk"], found.meta["wall_time"]
        attempts = found.meta.get("attempts", [{"from_chunk": 0, "git_commit": None}])
        print(f"resuming from {found.path} at chunk {start_chunk}/{program.num_chunks}", flush=True)
        break
    else:
        if ckpt.exists() or checkpoint.previous_path(ckpt).exists():
            print("rlrepro: no usable checkpoint: training starts at chunk 0", file=sys.stderr, flush=True)
    if start_chunk < program.num_chunks:
        attempts = [*attempts, {"from_chunk": start_chunk, "git_commit": git_commit()}]
    for run_dir in run_dirs:
        cut_metrics(run_dir, start_chunk * program.updates_per_chunk)
        (run_dir / SUMMARY).unlink(missing_ok=True)
    return state, start_chunk, wall_offset, attempts


def _train_chunks(
    program: TrainerProgram,
    state: Any,
    start_chunk: int,
    wall_offset: float,
    run_dirs: list[Path],
    ckpt: Path,
    digest: str,
    seeds: tuple[int, ...],
    label: str,
    progress: str,
    trackers: list[Any],
    final_fraction: float,
    checkpoint_every: int = 1,
    memory: PeakMemory | None = None,
    attempts: tuple[dict, ...] | list[dict] = (),
) -> None:
    """Run the remaining chunks (metrics appended and mirrored to MLflow after each, a checkpoint after every
    ``checkpoint_every``-th and the last), then the summaries (with the job's peak memory when ``memory`` is given,
    and its ``attempts`` (``_resume``'s), kept in every checkpoint)."""
    attempts = list(attempts)
    bar = Progress(
        program.num_chunks * program.frames_per_chunk,
        label=label,
        start_frames=start_chunk * program.frames_per_chunk,
        mode=progress,
        seeds=len(seeds),
    )
    with contextlib.ExitStack() as stack:  # trackers end FINISHED, or FAILED/KILLED on an exception
        trackers = [stack.enter_context(tracker) for tracker in trackers]
        started = time.monotonic()
        for chunk in range(start_chunk, program.num_chunks):
            state, metrics = program.run_chunk_batch(state)
            # JAX dispatches asynchronously: the chunk is done only once its metrics (and state) are, so the
            # clock is read after waiting for them (before, the last dispatched work of a chunk was timed later).
            metrics = jax.device_get(jax.block_until_ready(metrics))
            jax.block_until_ready(state)
            wall_time = wall_offset + time.monotonic() - started
            # One record per run folder: a row per seed, or (multi-task) a row per environment.
            records = _records(metrics, chunk + 1, program, wall_time, len(run_dirs))
            for run_dir, record in zip(run_dirs, records):
                append_metrics(run_dir, record)
            meta = {"config_hash": digest, "seeds": list(seeds), "chunk": chunk + 1, "wall_time": wall_time,
                    "attempts": attempts}
            if (chunk + 1) % checkpoint_every == 0 or chunk + 1 == program.num_chunks:
                checkpoint.save(ckpt, state, meta)
            for tracker, record in zip(trackers, records):
                tracker.log([record])
            bar.update(records[0]["frames"], _nanmean([r["episode_return"] for r in records]))
        if program.write_artifacts is not None:
            program.write_artifacts(state, run_dirs)
        peak = memory.peak() if memory is not None else None
        if peak is not None:
            print(memory_line(peak), flush=True)
        for run_dir in run_dirs:  # summary.json last: it marks the run complete (and is mirrored on finish)
            _write_summary(run_dir, final_fraction=final_fraction, memory=peak, attempts=attempts)
        checkpoint.drop_previous(ckpt)  # complete: the final checkpoint stays (a forced re-run resumes at the end)


def _why_not_resumable(
    meta: dict | None, digest: str, seeds: tuple[int, ...], run_dirs: list[Path], program: TrainerProgram
) -> str | None:
    """None for a checkpoint of this config and these seeds whose metrics are all still on disk (no gap after
    resuming); otherwise why it cannot be resumed, in words."""
    if not meta or "chunk" not in meta:
        return "it has no metadata (not written by this trainer)"
    if meta.get("config_hash") != digest:
        return (f"it was trained with another configuration (config hash {meta.get('config_hash')}, the spec's is "
                f"{digest} now): a run is trained by one configuration, so this one starts again")
    if meta.get("seeds") != list(seeds):
        return f"it holds seeds {meta.get('seeds')}, this job trains {list(seeds)}"
    needed = meta["chunk"] * program.updates_per_chunk
    for run_dir in run_dirs:
        kept = sum(1 for r in read_metrics(run_dir / METRICS) if r["updates"] <= needed)
        if kept != meta["chunk"]:
            return (f"{run_dir / METRICS} holds {kept} of the {meta['chunk']} chunks it covers (cut or "
                    "lost): resuming from it would leave a gap in the curve")
    return None


def _pick(names: list[str], name: str, what: str, spec_path: Path) -> int:
    if name not in names:
        raise SpecError(str(spec_path), [f"--{what} '{name}': unknown; expected one of {names}"])
    return names.index(name)


def device_placement() -> dict[str, Any]:
    """Where this job's JAX programs run: platform (cpu/gpu/tpu), device kind (e.g. "NVIDIA A100-SXM4-40GB"), how many
    devices this process sees, the CPU cores it may use, the jax/jaxlib versions, and ``actor_device``: where a host
    actor-learner's actors run their policy (``learner`` or ``cpu``, ``$RLREPRO_ACTOR_DEVICE``; placement, in no config
    hash). Recorded in spec.resolved.json ("device") and as MLflow params ``device.*``: a GPU job that silently fell
    back to the CPU shows here (and in its frames/s).

    Raises:
        ValueError: ``$RLREPRO_ACTOR_DEVICE`` is neither ``learner`` nor ``cpu``.
    """
    import jaxlib

    devices = jax.devices()
    return {
        "platform": devices[0].platform,
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "process_count": jax.process_count(),
        # the cores this process may use (a CPU job's frames/s rests on them; the report's figures name them)
        "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "actor_device": actor_device_setting(),
    }


def _write_resolved(
    run_dir: Path, unit: RunUnit, spec: ExperimentSpec, scale: str, digest: str, agent: dict, env: dict,
    chunks: ChunkPlan, device: dict[str, Any] | None = None, seed_group: tuple[int, ...] = (),
    spec_path: Path | None = None,
) -> None:
    """spec.resolved.json: the run's identity and configuration (MLflow's params are its ``config``). ``frames`` is
    what the run trains (whole chunks, the builder's ``ChunkPlan``), ``frames_budget`` the scale's budget."""
    run_dir.mkdir(parents=True, exist_ok=True)
    frames = {"frames": chunks.frames, "frames_budget": unit.frames, "frames_unit": chunks.unit}
    info = {
        "run": {
            "paper": unit.paper,
            "experiment": unit.experiment,
            "variant": unit.variant,
            "env": unit.env,
            "seed": unit.seed,
            "scale": scale,
            **frames,
            "spec_hash": spec_hash(spec),
            "config_hash": digest,
            "git_commit": git_commit(),
            "run_key": f"{scale}/{unit.relpath}",
            # the spec file that trained it: another file's runs are never replaced (workflow.retire)
            "spec_source": spec_source(spec_path) if spec_path is not None else None,
            "seed_group": list(seed_group),  # the seeds trained with it in one vmapped program (_check_finished_runs)
        },
        "config": {"agent": agent, "env": env, **frames, "run": spec.run.model_dump(mode="json")},
        "spec": spec.model_dump(mode="json"),
        # Where it ran (written again on every start: a resumed run records the machine that finished it).
        "device": device or {},
    }
    write_json_atomic(run_dir / RESOLVED, info)


def _records(metrics: Any, chunk: int, program: TrainerProgram, wall_time: float, num_seeds: int) -> list[dict]:
    values = {name: np.asarray(value) for name, value in metrics._asdict().items()}
    records = []
    for i in range(num_seeds):
        record: dict[str, Any] = {
            "frames": chunk * program.frames_per_chunk,
            "updates": chunk * program.updates_per_chunk,
            "wall_time": round(wall_time, 3),
            "episode_return": float(values["mean_return"][i]),
            "episodes": int(values["episodes"][i]),
        }
        for name, value in values.items():
            if name in ("mean_return", "episodes", "frames"):
                continue
            if value.ndim == 2:  # one list per run: the evaluation games' scores (EVAL_SCORES), none before the last chunk
                if value.shape[1]:
                    record[name] = [float(v) for v in value[i]]
            else:
                record[name] = float(value[i])
        records.append(record)
    return records


def final_return(records: list[dict], total_frames: int, fraction: float) -> tuple[float, int]:
    """Mean episode return over the last ``fraction`` of the frames, weighted by episodes per chunk."""
    start = total_frames * (1.0 - fraction)
    window = [r for r in records if r["frames"] > start and r["episodes"] > 0 and math.isfinite(r["episode_return"])]
    episodes = sum(r["episodes"] for r in window)
    if episodes == 0:
        return math.nan, 0
    return sum(r["episode_return"] * r["episodes"] for r in window) / episodes, episodes


def final_values(records: list[dict], fraction: float) -> dict[str, float]:
    """Every metric's mean over the last ``fraction`` of the frames (NaN and non-numbers skipped)."""
    start = records[-1]["frames"] * (1.0 - fraction)
    window = [r for r in records if r["frames"] > start]
    values: dict[str, float] = {}
    for name in window[0]:
        if name in ("frames", "updates", "wall_time", "episode_return", "episodes") or isinstance(window[0][name], list):
            continue
        finite = [r[name] for r in window if isinstance(r.get(name), (int, float)) and math.isfinite(r[name])]
        values[name] = sum(finite) / len(finite) if finite else math.nan
    return values


def _write_summary(
    run_dir: Path, *, final_fraction: float, memory: dict[str, Any] | None = None, attempts: list[dict] | None = None
) -> None:
    """summary.json; ``memory`` is the whole job's peak resident memory (all its seeds or environments, the last
    attempt when it was resumed: rlrepro.jobs.memory), what a cluster job must ask for; ``attempts`` the starts
    that trained the run (the chunk each trained from, its commit; one when it was never interrupted)."""
    records = read_metrics(run_dir / METRICS)
    last = records[-1]
    value, episodes = final_return(records, last["frames"], final_fraction)
    run = read_json(run_dir / RESOLVED)["run"]
    final = {"final_return": value, "final_episodes": episodes, "final_fraction": final_fraction}
    # The mean return over the whole run (the area under the learning curve): sample efficiency.
    final["run_return"], final["run_episodes"] = final_return(records, last["frames"], 1.0)
    summary = {
        "run": run,
        "frames": last["frames"],  # trained: whole chunks
        "frames_budget": run.get("frames_budget", run.get("frames")),
        "frames_unit": run.get("frames_unit", "frames"),
        "updates": last["updates"],
        "wall_time": last["wall_time"],
        "final": {**final, **final_values(records, final_fraction)},
        "completed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    # The scores of the games the last evaluation played (agents that keep them), each game's own: a claim can test
    # the run's policy against a trivial policy's games (rlrepro.results.claims, kind above_trivial).
    if (scores := next((r[EVAL_SCORES] for r in reversed(records) if isinstance(r.get(EVAL_SCORES), list)), None)):
        summary[EVAL_SCORES] = scores
    if memory is not None:
        summary["memory"] = memory
    if attempts is not None:
        summary["attempts"] = attempts
    write_json_atomic(run_dir / SUMMARY, summary)


def _trackers(run_dirs: list[Path], results: Path) -> list[Any]:
    from rlrepro.tracking import default_tracking_uri, project_namespace, trackers_for

    return trackers_for(run_dirs, uri=default_tracking_uri(results), project=project_namespace(results))


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan
