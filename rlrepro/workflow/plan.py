"""Specs x scale -> run units -> jobs (with their config hashes) -> target paths. Imports no JAX: the DAG builds in
well under 2 s.

Layout of a results root (one per scale, ``results/<scale>/`` by default, so runs of different
sizes never overwrite each other):

    runs/<paper>/<experiment>/<variant>/<env>/seed<k>/{spec.resolved.json, metrics.jsonl, summary.json}
    checkpoints/<paper>/<experiment>/<variant>/<env>/seed<k>/   (outside the declared outputs)
    tables/<paper>/<experiment>.{md,csv,png}
    logs/...
    REPORT.md
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rlrepro.jobs.run_folder import SUMMARY
from rlrepro.specs import SCALES, ExperimentSpec, Scale, load_specs, resolve_agent, resolve_env
from rlrepro.specs.control import control_name, control_seeds, controlled_variants, split_variant
from rlrepro.specs.experiment import VariantSpec
from rlrepro.specs.agents import NULL_ADDITIONS  # blocks added after runs had finished: out of the hash while null


class SelectionError(ValueError):
    """A scale or an ``only=`` selector that names nothing known."""


@dataclass(frozen=True)
class RunUnit:
    """One training run: a (paper, experiment, variant, env, seed) at a scale."""

    paper: str
    experiment: str
    variant: str
    env: str
    seed: int
    frames: int

    @property
    def relpath(self) -> str:
        return f"{self.paper}/{self.experiment}/{self.variant}/{self.env}/seed{self.seed}"

    def run_dir(self, root: Path | str) -> Path:
        return Path(root) / "runs" / self.relpath

    def checkpoint_dir(self, root: Path | str) -> Path:
        return Path(root) / "checkpoints" / self.relpath


@dataclass(frozen=True)
class Job:
    """Seeds of one (variant, env) trained together in one process (vmapped for JAX environments)."""

    spec_path: Path
    paper: str
    experiment: str
    variant: str
    env: str
    seeds: tuple[int, ...]
    frames: int
    config_hash: str
    units: tuple[RunUnit, ...] = field(repr=False)
    whole_machine: bool = False  # run alone on every core (speed measurements)
    population: int = 0  # multi-task job: members trained (each ``frames``, shared by its games); 0: not multi-task

    @property
    def frames_emulated(self) -> int:
        """Frames the job steps: every unit's, or (multi-task) each member's budget once for all its games."""
        if self.population:
            return self.frames * self.population * len(self.seeds)
        return sum(unit.frames for unit in self.units)

    @property
    def name(self) -> str:
        raw = f"train_{self.paper}_{self.experiment}_{self.variant}_{self.env}_s{self.seeds[0]}_{self.seeds[-1]}"
        # Snakemake rule names must be identifiers; the hash keeps 'lag=8' and 'lag-8' apart.
        key = f"{self.paper}/{self.experiment}/{self.variant}/{self.env}/{self.seeds}"
        return re.sub(r"\W", "_", raw) + "_" + hashlib.sha1(key.encode()).hexdigest()[:8]

    def summaries(self, root: Path | str) -> list[str]:
        return [str(unit.run_dir(root) / SUMMARY) for unit in self.units]

    def log(self, root: Path | str) -> str:
        seeds = f"seeds{self.seeds[0]}-{self.seeds[-1]}"
        return str(Path(root) / "logs" / "train" / self.paper / self.experiment / self.variant / self.env / f"{seeds}.log")


@dataclass(frozen=True)
class ExperimentPlan:
    """All jobs of one experiment at one scale."""

    spec_path: Path
    spec: ExperimentSpec
    jobs: tuple[Job, ...]
    scale: Scale

    @property
    def key(self) -> str:
        return f"{self.spec.paper}/{self.spec.experiment}"

    @property
    def job_set(self) -> str:
        """The set it runs in at its scale (``DEFAULT_SET`` or the scale's ``opt_in`` set)."""
        return job_set(self.spec, self.scale)

    @property
    def claims_judged(self) -> list[str]:
        """The ids of the claims judged at its scale (their ``judged_at``)."""
        return [claim.id for claim in self.spec.claims if self.scale in claim.judged_at]

    @cached_property  # read several times per experiment by the plan's text
    def claims_out_of_reach(self) -> dict[str, str]:
        """Claims judged at its scale that no data its seeds could produce would show reproduced: id -> why
        (``rlrepro.results.claims.cannot_show_at``)."""
        from rlrepro.results.claims import cannot_show_at, untestable_here  # noqa: PLC0415 -- results import the workflow's specs

        reasons = {c.id: cannot_show_at(self.spec, c, self.scale) or untestable_here(c)
                   for c in self.spec.claims if self.scale in c.judged_at}
        return {key: why for key, why in reasons.items() if why}

    @property
    def claims_decided(self) -> list[str]:
        """The claims judged at its scale that its runs can show reproduced (or refute): what running it decides."""
        out_of_reach = self.claims_out_of_reach
        return [key for key in self.claims_judged if key not in out_of_reach]

    def table_paths(self, root: Path | str) -> dict[str, str]:
        base = Path(root) / "tables" / self.spec.paper / self.spec.experiment
        return {ext: f"{base}.{ext}" for ext in ("md", "csv", "png")}


@dataclass(frozen=True)
class JobGroup:
    """The jobs of one experiment that train the same seeds: one Snakemake rule with ``{variant}`` and ``{env}``
    wildcards, so a cluster executor can submit the whole variant x environment grid as one array job (the Slurm
    plugin batches jobs of one rule only)."""

    paper: str
    experiment: str
    seeds: tuple[int, ...]
    jobs: tuple[Job, ...]

    @property
    def name(self) -> str:
        raw = f"train_{self.paper}_{self.experiment}_s{self.seeds[0]}_{self.seeds[-1]}"
        key = f"{self.paper}/{self.experiment}/{self.seeds}" + ("/multitask" if self.multitask else "")
        return re.sub(r"\W", "_", raw) + "_" + hashlib.sha1(key.encode()).hexdigest()[:8]

    @property
    def whole_machine(self) -> bool:
        return self.jobs[0].whole_machine

    @property
    def multitask(self) -> bool:
        """A group of multi-task jobs: one job per variant trains every game, so the rule has no ``{env}``."""
        return self.jobs[0].env == MULTITASK_ENV

    def summaries(self, root: Path | str) -> list[str]:
        """Output patterns: one summary per seed (multi-task: per seed and game); each job's are these with its
        variant and env filled in."""
        base = Path(root) / "runs" / self.paper / self.experiment
        if self.multitask:
            games = list(dict.fromkeys(unit.env for unit in self.jobs[0].units))
            return [str(base / "{variant}" / game / f"seed{seed}" / SUMMARY) for seed in self.seeds for game in games]
        return [str(base / "{variant}" / "{env}" / f"seed{seed}" / SUMMARY) for seed in self.seeds]

    def log(self, root: Path | str) -> str:
        base = Path(root) / "logs" / "train" / self.paper / self.experiment
        env = MULTITASK_ENV if self.multitask else "{env}"
        return str(base / "{variant}" / env / f"seeds{self.seeds[0]}-{self.seeds[-1]}.log")

    def message(self, resources: Sequence[str] = ()) -> str:
        """What Snakemake prints for a job of the group in place of its input, output and log lists (a job of several
        seeds listed every summary.json: lines of 160 columns and more): experiment, variant, environment, seeds,
        the log to follow and the job's ``resources`` (what a cluster is asked for). A Snakemake format string: the
        job's wildcards, log and resource values (a profile's overrides included) fill it in."""
        env = "every game" if self.multitask else "{wildcards.env}"
        first, last = self.seeds[0], self.seeds[-1]
        seeds = f"seed {first}" if first == last else f"seeds {first}-{last}"
        asked = ", ".join(f"{name}={{resources.{name}}}" for name in resources)
        return (f"train {self.paper}/{self.experiment} {{wildcards.variant}} on {env}, {seeds}\n    log: {{log}}"
                + (f"\n    resources: {asked}" if asked else ""))

    def constraint(self, field_name: str) -> str:
        """A regex matching exactly this group's variants (``variant``) or environments (``env``)."""
        return "|".join(sorted({re.escape(getattr(job, field_name)) for job in self.jobs}, key=len, reverse=True))

    def job(self, wildcards) -> Job:
        """The job a rule instance runs (its ``variant`` and ``env`` wildcards)."""
        env = MULTITASK_ENV if self.multitask else wildcards.env
        for job in self.jobs:
            if job.variant == wildcards.variant and job.env == env:
                return job
        raise KeyError(f"{self.name}: no job for variant={wildcards.variant!r} env={env!r}")

    def config_hash(self, wildcards) -> str:
        return self.job(wildcards).config_hash

    def env(self, wildcards) -> str:
        """The ``--env`` of a rule instance: its ``env`` wildcard, or the multi-task job's ``MULTITASK_ENV``."""
        return self.job(wildcards).env


def job_groups(experiment: ExperimentPlan) -> list[JobGroup]:
    """An experiment's jobs grouped by the seeds they train (each group a grid of variants x environments)."""
    by_seeds: dict[tuple[tuple[int, ...], bool], list[Job]] = {}
    for job in experiment.jobs:  # multi-task jobs (no env wildcard) apart from per-environment ones
        by_seeds.setdefault((job.seeds, job.env == MULTITASK_ENV), []).append(job)
    return [JobGroup(experiment.spec.paper, experiment.spec.experiment, seeds, tuple(jobs)) for (seeds, _), jobs in by_seeds.items()]


def select(spec: ExperimentSpec, only: str | None) -> bool:
    """Whether ``only`` (comma-separated ``paper`` or ``paper/experiment`` items) selects a spec."""
    if not only:
        return True
    for item in only.split(","):
        item = item.strip().strip("/")
        paper, _, experiment = item.partition("/")
        if paper == spec.paper and experiment in ("", spec.experiment):
            return True
    return False


def named_explicitly(experiment: ExperimentPlan, only: str | None) -> bool:
    """Whether ``only`` names this experiment as ``paper/experiment`` (not just its paper)."""
    return bool(only) and experiment.key in {item.strip().strip("/") for item in only.split(",")}


#: The set of experiments a job runs when ``--config set=`` is not given: every experiment whose scale names no
#: ``opt_in`` set. ``set=all`` runs every set.
DEFAULT_SET = "default"
ALL_SETS = "all"
#: An experiment that decides no claim at a scale stays in the default job only as a path check of at most this
#: many minutes (issue 32: every hour of the main job decides something); a longer one names an opt-in set.
PATH_CHECK_MINUTES = 10.0


def job_set(spec: ExperimentSpec, scale: Scale) -> str:
    """The set an experiment runs in at ``scale``: its scale's ``opt_in`` set, else the default job."""
    return (spec.scales[scale].opt_in if scale in spec.scales else None) or DEFAULT_SET


def in_job(experiment: ExperimentPlan, sets: str | None, only: str | None = None) -> bool:
    """Whether a job of ``sets`` (comma-separated set names; None: the default job; ``all``) runs an experiment.
    An experiment ``only=`` names as ``paper/experiment`` runs whatever its set."""
    wanted = {name.strip() for name in (sets or DEFAULT_SET).split(",") if name.strip()}
    return (ALL_SETS in wanted or experiment.job_set in wanted) or named_explicitly(experiment, only)


def check_sets(experiments: Sequence[ExperimentPlan], sets: str | None) -> None:
    """Every name in ``sets`` is a set some experiment runs in (or ``all``); otherwise a SelectionError lists them."""
    known = {DEFAULT_SET, ALL_SETS, *(experiment.job_set for experiment in experiments)}
    unknown = [name.strip() for name in (sets or "").split(",") if name.strip() and name.strip() not in known]
    if unknown:
        raise SelectionError(f"set={sets}: {', '.join(map(repr, unknown))} is no set of these specs; expected one of "
                             f"{', '.join(sorted(known))} (comma-separated)")


# The ``env`` of a multi-task job: one agent trained on every environment of the scale at once (IMPALA
# §5.3.2). Its run units are still one per (environment, seed), so tables and claims read them per game.
MULTITASK_ENV = "all_environments"


def is_multitask(spec: ExperimentSpec, variant: object, scale: Scale) -> bool:
    """Whether the variant's agent trains one agent on all environments at once (``agent.multitask``)."""
    return getattr(resolve_agent(spec, variant, scale), "multitask", None) is not None


def plan_experiment(spec_path: Path, spec: ExperimentSpec, scale: Scale) -> ExperimentPlan:
    """Expand one spec at one scale into jobs (a multi-task variant: one job per seed over all environments), and the
    frozen control arm of every variant a claim judged there reads (``rlrepro.specs.control``)."""
    size = spec.scale(scale)
    variants = [v for v in spec.variant_list() if size.variants is None or v.name in size.variants]
    controlled = set(controlled_variants(spec, scale))
    arms = [(v, v.name) for v in variants] + [(v, control_name(v.name)) for v in variants if v.name in controlled]
    jobs = [job for variant, name in arms for job in _variant_jobs(spec_path, spec, scale, variant, name)]
    return ExperimentPlan(spec_path, spec, tuple(jobs), scale)


def _variant_jobs(spec_path: Path, spec: ExperimentSpec, scale: Scale, variant: VariantSpec, name: str) -> list[Job]:
    """The jobs of one variant (or of its control arm, ``name``) at a scale."""
    size = spec.scale(scale)
    env_ids = size.environments or [env.id for env in spec.environments]
    seeds = list(range(control_seeds(size.seeds) if split_variant(name)[1] else size.seeds))
    per_job = min(spec.run.seeds_per_job or len(seeds), len(seeds))
    agent = resolve_agent(spec, variant, scale, control=split_variant(name)[1])  # once per arm: the DAG builds often
    if getattr(agent, "multitask", None) is not None:
        digest = config_hash(spec, name, MULTITASK_ENV, scale, agent=agent)
        pbt = agent.multitask.pbt
        population = pbt.population_size if pbt.enabled else 1
        return [
            Job(spec_path, spec.paper, spec.experiment, name, MULTITASK_ENV, (seed,), size.frames, digest,
                tuple(RunUnit(spec.paper, spec.experiment, name, env_id, seed, size.frames) for env_id in env_ids),
                whole_machine=spec.run.whole_machine, population=population)
            for seed in seeds
        ]
    jobs = []
    for env_id in env_ids:
        digest = config_hash(spec, name, env_id, scale, agent=agent)
        for start in range(0, len(seeds), per_job):
            chunk = tuple(seeds[start : start + per_job])
            units = tuple(RunUnit(spec.paper, spec.experiment, name, env_id, seed, size.frames) for seed in chunk)
            jobs.append(Job(spec_path, spec.paper, spec.experiment, name, env_id, chunk, size.frames, digest, units,
                            whole_machine=spec.run.whole_machine))
    return jobs


def config_hash(spec: ExperimentSpec, variant_name: str, env_id: str, scale: Scale, *, agent: object = None) -> str:
    """Hash of everything that determines a run's numbers: resolved agent, environment, frames, run settings.

    Editing a claim or a description leaves it unchanged, so finished runs are not retrained. ``agent``: the
    variant's agent at ``scale`` when the caller has resolved it already.
    """
    variant, control = spec.variant_named(variant_name)
    if env_id == MULTITASK_ENV:
        env = [resolve_env(spec, e, scale).model_dump(mode="json") for e in multitask_env_ids(spec, scale)]
    else:
        env = resolve_env(spec, env_id, scale).model_dump(mode="json")
    return _hash(
        {
            "agent": _without_absent_additions(_without_placement(
                (agent if agent is not None else resolve_agent(spec, variant, scale, control=control)).model_dump(mode="json")
            )),
            "env": _without_reference_scores(env),
            "frames": spec.scale(scale).frames,
            # how jobs are laid out, checkpointed and drawn, not what they compute
            "run": spec.run.model_dump(
                mode="json", exclude={"seeds_per_job", "whole_machine", "diagnostic_curves", "checkpoint_every"}
            ),
        }
    )


def multitask_env_ids(spec: ExperimentSpec, scale: Scale) -> list[str]:
    """The environments a multi-task job trains on at ``scale``."""
    return spec.scale(scale).environments or [env.id for env in spec.environments]


def plan(spec_paths: list[str | Path], scale: Scale, only: str | None = None) -> list[ExperimentPlan]:
    """Load every spec under ``spec_paths`` and expand the selected ones at ``scale``.

    Raises:
        SelectionError: ``scale`` is not a scale, or an item of ``only`` selects no spec (the known names listed).
    """
    if scale not in SCALES:
        raise SelectionError(f"scale {scale!r}: unknown; expected one of {', '.join(SCALES)}")
    loaded = load_specs(spec_paths)
    check_only([spec for _, spec in loaded], only)
    return [plan_experiment(path, spec, scale) for path, spec in loaded if select(spec, only)]


def check_only(specs: list[ExperimentSpec], only: str | None) -> None:
    """Every comma-separated item of ``only`` selects at least one spec; otherwise a SelectionError lists the names."""
    if not only:
        return
    items = [item.strip() for item in only.split(",") if item.strip()]
    unknown = [item for item in items if not any(select(spec, item) for spec in specs)]
    if unknown:
        papers = sorted({spec.paper for spec in specs})
        experiments = sorted(f"{spec.paper}/{spec.experiment}" for spec in specs)
        raise SelectionError(
            f"only={only}: {', '.join(map(repr, unknown))} matches no spec. Expected PAPER or PAPER/EXPERIMENT "
            f"(comma-separated); papers: {', '.join(papers)}; experiments: {', '.join(experiments)}"
        )


def results_root(base: Path | str, scale: Scale) -> Path:
    """Outputs of one scale live in ``<base>/<scale>/`` (default ``results/cpu``)."""
    return Path(base) / scale


def cannot_run(experiment: ExperimentPlan) -> str | None:
    """Why the experiment cannot run here (a backend is not installed, or the agent/environment pair is not
    implemented yet), or None."""
    from rlrepro.environments.availability import missing_backend as env_missing

    from rlrepro.agents.registry import not_implemented

    needed = {unit.env for job in experiment.jobs for unit in job.units}
    for env in experiment.spec.environments:
        if env.id in needed and (reason := env_missing(env) or not_implemented(experiment.spec.agent.kind, env.kind)):
            return reason
    return None


def _without_placement(agent: dict) -> dict:
    """A loss search's dump with its executor hashed as a local pool: where programs are scored (local pool, Dask,
    inline; the scheduler's address) never changes their scores, and the machine may override it
    (rlrepro.search.executor.placement). ``workers`` stays: with ``proposals_per_round: null`` it decides how many
    children are proposed per round. Local specs keep the hash they had."""
    executor = agent.get("executor")
    if agent.get("kind") != "loss_search" or not isinstance(executor, dict):
        return agent
    return {**agent, "executor": {**executor, "kind": "local", "address": None}}




def _without_absent_additions(agent: dict) -> dict:
    """An agent's dump without the blocks added after runs had finished, when they are off (NULL_ADDITIONS,
    IMPALA's ``replay`` at fraction 0, ``learning`` while true)."""
    kind = agent.get("kind")
    off = {key for key in NULL_ADDITIONS.get(kind, ()) if key in agent and agent[key] is None}
    if agent.get("learning") is True:  # added with the control arm: the runs trained before it keep their hash
        off.add("learning")
    if isinstance(agent.get("inner"), dict):  # a loss search's inner agent
        agent = {**agent, "inner": _without_absent_additions(agent["inner"])}
    if kind == "impala" and (agent.get("replay") or {}).get("fraction") == 0:
        off.add("replay")
    return {key: value for key, value in agent.items() if key not in off}


#: Snakemake ``--config`` keys that say where things run (never what they compute) -> the environment variables the
#: jobs read. Set in the Snakefile's process, so every job it starts inherits them (local or cluster).
CLUSTER_CONFIG_ENV = {
    "project": "RLREPRO_PROJECT",  # the MLflow run keys' namespace (rlrepro.tracking.project_namespace)
    "search_executor": "RLREPRO_SEARCH_EXECUTOR",  # local | dask | dask-slurm | inline (rlrepro.search.executor)
    "dask_address": "RLREPRO_DASK_ADDRESS",  # tcp://scheduler:8786
    "actor_device": "RLREPRO_ACTOR_DEVICE",  # learner | cpu: where host actors run their policy (training.placement)
}


def cluster_environment(config: dict) -> dict[str, str]:
    """The environment variables for the Snakemake config's placement keys (those it gives; none is in a hash).

    Raises:
        ValueError: ``search_executor`` names no executor kind, or ``actor_device`` no actor device.
    """
    from rlrepro.search.executor import KINDS
    from rlrepro.training.placement import ACTOR_DEVICES  # imports no JAX

    env = {var: str(config[key]).strip() for key, var in CLUSTER_CONFIG_ENV.items() if str(config.get(key) or "").strip()}
    kind = env.get("RLREPRO_SEARCH_EXECUTOR")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"--config search_executor={kind}: expected one of {', '.join(KINDS)}")
    actors = env.get("RLREPRO_ACTOR_DEVICE")
    if actors is not None and actors not in ACTOR_DEVICES:
        raise ValueError(f"--config actor_device={actors}: expected one of {', '.join(ACTOR_DEVICES)}")
    return env


def _without_reference_scores(env: object) -> object:
    """An environment's dump without the fields only the verdicts read (random_score, and return_range where
    training does not use it: every kind but gym), so adding them does not retrain finished runs."""
    if isinstance(env, list):
        return [_without_reference_scores(item) for item in env]
    if not isinstance(env, dict):
        return env
    drop = {"random_score"} | ({"return_range"} if env.get("kind") != "gym" or env.get("return_range") is None else set())
    return {k: _without_reference_scores(v) for k, v in env.items() if k not in drop}


def _hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
