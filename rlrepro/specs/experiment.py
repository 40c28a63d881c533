"""The experiment spec: one YAML file under ``specs/<paper>/<experiment>.yaml``."""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal, Union

from pydantic import Field, model_serializer, model_validator

from rlrepro.specs.agents import AgentSpec
from rlrepro.specs.common import Name, PositiveCount, Scale, SpecModel
from rlrepro.specs.control import split_variant
from rlrepro.specs.environments import EnvSpec

#: One deviation from the paper or one scale choice a verdict rests on: a short phrase the report prints in a row.
RestsOnItem = Annotated[str, Field(min_length=3, max_length=90, pattern=r"^\S(.*\S)?$")]
_RESTS_ON = (
    "The deviations from the paper and the scale choices {what}, a short phrase each (at most 90 characters, e.g. "
    "'feed-forward agent (paper: LSTM)', '2 CPU cores (paper: one 48-core machine)'): the report prints them on "
    "the claim's row under 'rests on', beside the seeds and frames the scale runs (derived from the spec)."
)


def _unique(field: str, items: list[str]) -> None:
    if len(set(items)) != len(items):
        raise ValueError(f"{field}: each item once; found {sorted({i for i in items if items.count(i) > 1})} twice")

Overrides = dict[str, Any]


class PaperReference(SpecModel):
    """Where in the paper the experiment comes from."""

    title: str = Field(description="Paper title.")
    citation: str = Field(description="Authors, year, venue.")
    where: str = Field(description="Section, table or figure reproduced, e.g. 'Section 5.2.2, Table 2, Fig. E.1'.")
    notes: str = Field("", description="Deviations from the paper's setting and why.")


class VariantSpec(SpecModel):
    """A named change of the agent, e.g. another correction or policy lag."""

    name: Name = Field(description="Variant name (folder name and table row).")
    agent: Overrides = Field(
        default_factory=dict,
        description="Agent fields to override: nested mappings or dotted keys, e.g. {loss.correction: none}.",
    )


class VariantGridSpec(SpecModel):
    """The Cartesian product of agent-field values; each combination is a variant."""

    grid: dict[str, list[Any]] = Field(
        min_length=1,
        description="Dotted agent field -> values, e.g. {loss.correction: [vtrace, none], policy_lag: [0, 32]}.",
    )
    names: dict[str, str] = Field(
        default_factory=dict,
        description="Short label per dotted field used in variant names (default: the last part of the field).",
    )

    def expand(self) -> list[VariantSpec]:
        keys = list(self.grid)
        variants = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            label = "__".join(f"{self.names.get(k, k.split('.')[-1])}={_label(v)}" for k, v in zip(keys, values))
            variants.append(VariantSpec(name=label, agent=dict(zip(keys, values))))
        return variants


def _label(value: Any) -> str:
    """A folder-safe label: null, true/false, 64x64 for lists, the value otherwise."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "x".join(_label(v) for v in value)
    return str(value)


class ScaleSpec(SpecModel):
    """How the experiment runs at a reduced scale."""

    frames: PositiveCount = Field(description="Frames per run (Python int; write 2e6 or 2_000_000).")
    seeds: PositiveCount = Field(description="Number of seeds (0..seeds-1).")
    environments: list[str] | None = Field(None, min_length=1, description="Environment ids to run (default: all).")
    variants: list[str] | None = Field(None, min_length=1, description="Variant names to run (default: all).")
    agent: Overrides = Field(default_factory=dict, description="Agent overrides at this scale (e.g. smaller batches).")
    variant_agent: dict[str, Overrides] = Field(
        default_factory=dict,
        description="Agent overrides of single variants at this scale, applied after 'agent' (e.g. when variants are "
        "agents of different kinds, each with its own fields).",
    )
    env: Overrides = Field(
        default_factory=dict,
        description="Overrides of every environment at this scale (e.g. {evaluation.episodes: 10}).",
    )
    expected_minutes: float | None = Field(
        None, ge=0, description="Wall time of the whole experiment at this scale on 2 CPU cores (for planning)."
    )
    expected_mem_mb: float | None = Field(
        None,
        gt=0,
        description="Measured peak resident memory of one training job at this scale, in MB (2**20 bytes): the "
        "largest job of the experiment, its process plus its children (a loss search's pool workers), as every job "
        "records it in summary.json 'memory' (kernel high-water marks, VmHWM/ru_maxrss, children polled each "
        "second). A Slurm job asks for it with headroom (rlrepro/cluster.py); without it the job asks for "
        "--config mem_mb or 4000 MB. Say in a comment where and when it was measured.",
    )
    opt_in: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description="Leave the default job at this scale for the named opt-in set (`snakemake --config set=NAME`): "
        "for runs that decide no claim at this scale (curves only) and take more than a path check's minutes. "
        "null: in the default job. The smoke scale runs every spec (it is the path check): cpu scale only.",
    )
    opt_in_reason: str = Field(
        "",
        description="Why claims judged at this scale leave the default job with its opt-in set (their runs' hours, "
        "measured): required when an opt-in experiment decides claims, which `rlrepro plan` counts under its set.",
    )
    rests_on: list[RestsOnItem] = Field(
        default_factory=list, description=_RESTS_ON.format(what="of this scale that every claim judged at it rests on"))

    @model_validator(mode="after")
    def _check_rests_on(self) -> "ScaleSpec":
        _unique("rests_on", self.rests_on)
        return self


class BudgetSpec(SpecModel):
    """The paper's budget: what the ``paper`` scale runs."""

    frames: PositiveCount = Field(description="Frames per run in the paper.")
    seeds: PositiveCount = Field(description="Seeds (or runs) per setting in the paper.")


class RunSpec(SpecModel):
    """How a run reports progress and checkpoints."""

    updates_per_chunk: PositiveCount = Field(
        50, description="Learner updates per compiled chunk: metrics are written and a checkpoint taken after each."
    )
    checkpoint_every: PositiveCount = Field(
        1,
        description="Chunks between checkpoints (and one after the last chunk); a killed job resumes from the last "
        "checkpoint, its metrics cut back to it. Raise it when the training state is large (e.g. a replay buffer).",
    )
    final_fraction: float = Field(
        0.1, gt=0, le=1, description="Final return = mean episode return over this last fraction of the frames."
    )
    report_metric: str = Field(
        "final_return", description="The per-run value shown in the experiment's table (a key of summary.json 'final')."
    )
    curve_metric: str = Field("episode_return", description="The metrics.jsonl key plotted as learning curves.")
    diagnostic_curves: list[str] = Field(
        default_factory=list,
        description="Further metrics.jsonl keys drawn over frames beside the learning curves, one figure each "
        "(e.g. ReF-ER's far_fraction, kl and beta: the paper's Figs. 2 and 5). Plotting only: not in the config hash.",
    )
    seeds_per_job: PositiveCount | None = Field(
        None, description="Seeds trained together (vmapped) in one job; default: all seeds of a variant in one job."
    )
    whole_machine: bool = Field(
        False,
        description="Each training job runs alone with every core Snakemake was given (for speed measurements, "
        "e.g. frames/s); otherwise jobs run side by side, one core each.",
    )


RETURN_METRICS = ("final_return", "eval_return", "best_eval_return", "run_return", "episode_return")
"""Per-run metrics in units of episode return: random scores, return ranges and normalisation apply to them."""


_RANGE_TEXT = (
    "[low, high] that every run's value of the metric lies in (e.g. [0, 1] for a success rate); default: the "
    "environment's return_range for a return metric. With a range the verdict uses bounds valid for any distribution "
    "on it (Anderson's bound); "
)


class MachineRequirement(SpecModel):
    """What a machine must have for a claim to be testable on it (e.g. a core per actor thread and one for the learner,
    as the organisations Table 1 compares need): on a smaller machine the claim is not judged, never refuted."""

    cpu_cores: PositiveCount = Field(
        description="CPU cores every compared run must have had (spec.resolved.json's device record, cpu_cores)."
    )
    why: str = Field(min_length=1, description="Why the claim needs them, e.g. '32 actor threads + the learner'.")


class ClaimBase(SpecModel):
    """What every claim kind shares: what its verdict rests on, and its control arm (``rlrepro.specs.control``): a
    claim is judged a second time on the same variants trained with their learning switched off, and one that this
    frozen arm also passes reads uninformative. A claim about the system rather than learning (frames per second) says
    ``control: none`` and why."""

    rests_on: list[RestsOnItem] = Field(
        default_factory=list, description=_RESTS_ON.format(what="this claim's verdict rests on"))

    control: Literal["frozen", "none"] = Field(
        "frozen",
        description="'frozen': judged beside the frozen arm (each variant it reads, trained again with learning: "
        "false); a claim the frozen arm also passes, or (matches) whose variants are not shown above it, reads "
        "uninformative. 'none': a claim about the system, not what was learned (control_reason says why).",
    )
    control_reason: str = Field("", description="With control: none, why no frozen arm can test the claim.")
    not_judged_because: str = Field(
        "",
        description="With judged_at: [] (the paper's claim kept for the record, judged at no scale): why no scale of "
        "this spec can decide it, with what was measured and what would decide it; the report's row says it. Needed "
        "where the verdicts' rules cannot tell (the budget, not the seeds, decides it; the rules' reason, where they "
        "have one, follows it): the test suite holds every spec to one. Only with judged_at: [].",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        """The canonical form (``spec_hash``) of a claim without ``not_judged_because`` is what it was before the
        field existed: a spec that leaves it empty keeps its hash, and its published table stays publishable."""
        data = handler(self)
        if isinstance(data, dict) and not self.not_judged_because:
            data.pop("not_judged_because", None)
        return data

    @model_validator(mode="after")
    def _check_reasons(self) -> "ClaimBase":
        if self.judged_at and self.not_judged_because.strip():
            raise ValueError(f"claim {self.id}: not_judged_because is only for a claim judged at no scale "
                             f"(judged_at: []); this one is judged at {', '.join(self.judged_at)}")
        if self.control == "none" and not self.control_reason.strip():
            raise ValueError(f"claim {self.id}: control: none needs a control_reason (why a frozen agent cannot pass "
                             "it: e.g. a claim about frames per second, not about what was learned)")
        if self.control == "frozen" and self.control_reason.strip():
            raise ValueError(f"claim {self.id}: control_reason is only for control: none")
        return self


class OrderingClaim(ClaimBase):
    """A variant beats, matches, or matches or beats others on a metric: on each environment, on at least k of
    them, or on an aggregate over them (e.g. "V-trace is best on 3 of 5 tasks")."""

    kind: Literal["ordering"] = Field(description="Claim kind.")
    id: Name = Field(description="Claim id.")
    statement: str = Field(description="The claim in words, as the paper makes it.")
    metric: str = Field(
        "final_return",
        description="Per-run value compared: a key of summary.json 'final' (final_return, or any logged metric's final-window mean).",
    )
    higher_is_better: bool = Field(True, description="Whether larger values of the metric are better (false for errors).")
    better: str = Field(description="Variant that should score highest.")
    worse: list[str] = Field(min_length=1, description="Variants it should beat.")
    relation: Literal["beats", "matches", "matches_or_beats"] = Field(
        "beats",
        description="'beats': the difference of means is significant by the exact permutation test (one-sided "
        "0.025). 'matches': equivalence within +-margin (two one-sided tests: the 95% distribution-free interval "
        "inside (-margin, +margin)). 'matches_or_beats' (claims worded 'matches or outperforms'): non-inferiority, "
        "the interval's worse end above -margin. Both need a range (metric_range, or the environment's return_range "
        "for a return): without one they are never decided.",
    )
    margin: float | None = Field(
        None,
        gt=0,
        description="Equivalence / non-inferiority margin in metric units (normalised-score units with holds_on: "
        "aggregate); required for matches and matches_or_beats, not allowed for beats.",
    )
    holds_on: Literal["each", "at_least", "aggregate"] = Field(
        "each",
        description="'each': on every environment, against every worse variant (intersection-union test). "
        "'at_least': on at least `at_least` of the environments (Holm-corrected count). 'aggregate': on the "
        "`aggregate` over environments of normalised scores (stratified bootstrap).",
    )
    at_least: PositiveCount | None = Field(None, description="With holds_on: at_least, the k of 'at least k of n environments'.")
    aggregate: Literal["median", "iqm", "mean"] | None = Field(
        None,
        description="With holds_on: aggregate: median, IQM or mean (rliable's definitions) over environments of "
        "normalised scores (Atari: human-normalised, dqn_zoo_57 table; others: (x - random_score) / "
        "(return_range[1] - random_score)).",
    )
    by_factor: float | None = Field(
        None,
        gt=1,
        description="With relation beats: better must beat each worse variant by at least this factor (a claim of "
        "'orders of magnitude': 10), judged on log10 of the metric (every value > 0): the permutation test of "
        "better's log10 values, moved by log10(by_factor) against it, versus worse's. Exact when the two variants' "
        "log10 values differ by a shift; null: a plain 'beats'.",
    )
    expected_sd: float | None = Field(
        None,
        gt=0,
        description="Spread (SD over seeds) of the metric expected before any run, in metric units: `rlrepro plan` "
        "states from it the smallest difference the scale's seeds can detect.",
    )
    metric_range: tuple[float, float] | None = Field(
        None,
        description=_RANGE_TEXT + "without one a matches / matches_or_beats claim is never decided ('beats' needs "
        "none: its permutation test holds for any distribution).",
    )
    environments: list[str] | None = Field(None, description="Environment ids where it must hold (default: all run).")
    judged_at: list[Scale] = Field(description="Scales at which the claim can be judged.")
    paper_evidence: str = Field("", description="Where the paper shows it.")
    machine: MachineRequirement | None = Field(
        None,
        description="What the runs' machine must have for the claim to be testable; runs on less leave it not judged "
        "('not testable on this machine: ...'). Default: any machine.",
    )

    @model_validator(mode="after")
    def _check_form(self) -> "OrderingClaim":
        if self.relation == "beats" and self.margin is not None:
            raise ValueError(f"claim {self.id}: margin is only for matches / matches_or_beats, not for relation beats")
        if self.by_factor is not None and (self.relation != "beats" or self.holds_on == "aggregate"):
            raise ValueError(f"claim {self.id}: by_factor (a ratio judged on the log scale) needs relation beats on each "
                             "environment or on at least k of them, not an aggregate")
        if self.relation != "beats" and self.margin is None:
            raise ValueError(
                f"claim {self.id}: relation {self.relation} needs a margin (> 0, metric units): the largest "
                "difference that still counts as a match"
            )
        if (self.holds_on == "at_least") != (self.at_least is not None):
            raise ValueError(f"claim {self.id}: at_least (k) is required with holds_on: at_least and only with it")
        if self.holds_on == "at_least" and self.relation != "beats":
            raise ValueError(
                f"claim {self.id}: holds_on: at_least counts Holm's rejections of per-environment permutation tests, "
                f"which only 'beats' has; relation {self.relation} needs holds_on: each or aggregate"
            )
        if (self.holds_on == "aggregate") != (self.aggregate is not None):
            raise ValueError(f"claim {self.id}: aggregate (median | iqm | mean) is required with holds_on: aggregate and only with it")
        _check_range(self.id, self.metric_range)
        return self


def _check_range(claim_id: str, metric_range: tuple[float, float] | None) -> None:
    if metric_range is not None and not metric_range[0] < metric_range[1]:
        raise ValueError(f"claim {claim_id}: metric_range must be [low, high] with low < high; got {list(metric_range)}")


class ThresholdClaim(ClaimBase):
    """A variant's metric on an environment is at least (or at most) a value, within a tolerance; or, judged per
    seed, within a band around it (``op: within``: value +- tolerance, e.g. a quantity a mechanism holds near a
    target, which a policy that never moves must miss on one side)."""

    kind: Literal["threshold"] = Field(description="Claim kind.")
    id: Name = Field(description="Claim id.")
    statement: str = Field(description="The claim in words.")
    metric: str = Field(
        "final_return", description="Per-run value compared (mean over seeds): a key of summary.json 'final'."
    )
    variant: str = Field(description="Variant name.")
    environment: str = Field(description="Environment id.")
    op: Literal[">=", "<=", "within"] = Field(
        description="Comparison: >= or <= (value, less or more by the tolerance), or within (value +- tolerance, "
        "judged per seed: needs seeds_share and a tolerance above 0)."
    )
    value: float = Field(description="Threshold (within: the band's centre).")
    tolerance: float = Field(0.0, ge=0, description="Allowed shortfall (within: the band's half-width).")
    metric_range: tuple[float, float] | None = Field(
        None,
        description=_RANGE_TEXT + "without one a mean over seeds is never decided (a per-seed claim, seeds_share, "
        "needs none).",
    )
    informative: bool = Field(
        True,
        description="false if a trivial policy (uniform random, always action 0, zero action: "
        "rlrepro/data/trivial_policy_scores.csv) already satisfies the claim (then informative_reason is "
        "required, and the verdict is reported apart as uninformative, never as reproduced).",
    )
    informative_reason: str = Field("", description="Why the claim is kept although a trivial policy passes it.")
    best_of: PositiveCount | None = Field(
        None,
        description="A count of runs: the claim reads 'the best k of the n runs reach the value', i.e. at least k "
        "runs pass on their own. For the paper's seed selection, when it reports only its best k runs (e.g. "
        "Synthetic Returns' Skiing: 'the best 4 of 40 seeds'), or a mechanism seen in a run (k = 1: 'PBT copied a "
        "member', 'the search found a TD loss'). Reproduced when at least k of our runs pass, not reproduced when "
        "the finished runs cannot reach k; never a statement about the mean. Every scale in judged_at must run at "
        "least k seeds. Default: the mean over all seeds (decided only on a declared range).",
    )
    seeds_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Judge the claim per seed: it holds when more than this share of seeds pass on their own "
        "(a property of each run, such as where a discrete metric peaks, rather than of the mean). Reproduced when "
        "the 95% Clopper-Pearson interval of the share of passing seeds lies above it, not reproduced when it lies "
        "below; exact for any distribution, and a sample with no spread is judged like any other. null: the mean "
        "over seeds.",
    )
    judged_at: list[Scale] = Field(description="Scales at which the claim can be judged.")
    paper_evidence: str = Field("", description="Where the paper shows it.")

    @model_validator(mode="after")
    def _check_reason(self) -> "ThresholdClaim":
        if not self.informative and not self.informative_reason.strip():
            raise ValueError(f"claim {self.id}: informative: false needs an informative_reason")
        if self.seeds_share is not None and self.best_of is not None:
            raise ValueError(f"claim {self.id}: seeds_share (a share of seeds) and best_of (a count of the best runs) "
                             "are two readings of one claim: give one")
        if self.op == "within" and (self.seeds_share is None or self.tolerance <= 0):
            raise ValueError(f"claim {self.id}: op 'within' (value +- tolerance) is judged per seed: give seeds_share "
                             f"and a tolerance above 0 (got seeds_share {self.seeds_share}, tolerance {self.tolerance:g})")
        _check_range(self.id, self.metric_range)
        return self

    def passes(self, value: float) -> bool:
        """One run's value is on the claimed side of the bound (within: inside the band)."""
        if self.op == "within":
            return abs(value - self.value) <= self.tolerance
        return value >= self.bound if self.op == ">=" else value <= self.bound

    @property
    def requirement(self) -> str:
        """What one run's value must be, in words: '>= 7.8 (tolerance 0)', 'within 0.1 +- 0.03'."""
        if self.op == "within":
            return f"within {self.value:g} +- {self.tolerance:g}"
        return f"{self.op} {self.value:g} (tolerance {self.tolerance:g})"

    @property
    def bound(self) -> float:
        """The value the mean must reach: value - tolerance for >=, value + tolerance for <=."""
        return self.value - self.tolerance if self.op == ">=" else self.value + self.tolerance


#: Agents whose Atari runs keep each evaluation game's score (summary.json ``eval_scores``): the host trainers on
#: ``rlrepro.training.actor_learner`` (IMPALA, IMPALA + synthetic returns, FRODO) and IMPALA's multi-task trainer.
EVAL_SCORE_AGENTS = ("impala", "impala_sr", "frodo")


class AboveTrivialClaim(ClaimBase):
    """Each run's trained policy plays an Atari game better than every trivial policy does.

    Not a bar typed by hand: the run's last evaluation games (summary.json ``eval_scores``, the scale's
    ``evaluation.episodes``) against the games of each trivial policy measured under the same protocol (uniform random
    and always NOOP, ``rlrepro trivial-scores`` with per-episode scores), one-sided two-sample permutation test per run
    and policy. It asks whether this run's policy learned something, not whether the paper's training reproduces on
    average: a reduced run with one seed can decide it.
    """

    kind: Literal["above_trivial"] = Field(description="Claim kind.")
    id: Name = Field(description="Claim id.")
    statement: str = Field(description="The claim in words.")
    variant: str = Field(description="Variant name.")
    environment: str = Field(description="Environment id (an Atari game).")
    judged_at: list[Scale] = Field(description="Scales at which the claim can be judged.")
    paper_evidence: str = Field("", description="Where the paper shows it.")


class AggregateClaim(ClaimBase):
    """An aggregate over environments (e.g. the median human-normalised score over Atari games) against a value."""

    kind: Literal["aggregate"] = Field(description="Claim kind.")
    id: Name = Field(description="Claim id.")
    statement: str = Field(description="The claim in words.")
    metric: str = Field("eval_return", description="Per-run raw score (a key of summary.json 'final').")
    aggregate: Literal["median_hns", "mean_hns", "iqm_hns"] = Field(
        description="Aggregate over environments of the human-normalised scores (per-environment mean over seeds)."
    )
    hns_table: Literal["dqn_zoo_57", "video_pinball_random_zero"] = Field(
        "dqn_zoo_57", description="Human/random reference table (see rlrepro/data/README.md)."
    )
    variant: str = Field(description="Variant name.")
    op: Literal[">=", "<="] = Field(description="Comparison.")
    value: float = Field(description="Threshold, in percent of human (e.g. 191.8).")
    tolerance: float = Field(0.0, ge=0, description="Allowed shortfall, in percentage points.")
    min_environments: PositiveCount = Field(
        1, description="Judge only when at least this many environments ran (e.g. all 57 games)."
    )
    best_of: PositiveCount | None = Field(
        None,
        description="A count of runs: the claim reads 'the aggregate of the best k of the n runs reaches the value', "
        "each run's aggregate taken over its games (run i: seed i of every game), i.e. at least k runs pass on "
        "their own. For a paper that reports one run per game (IMPALA's Table C.1 and its median): k = 1. Every "
        "scale in judged_at must run at least k seeds. Default: the aggregate of the per-game means over seeds, "
        "with a bootstrap interval over runs (at least 2 runs per game).",
    )
    judged_at: list[Scale] = Field(description="Scales at which the claim can be judged.")
    paper_evidence: str = Field("", description="Where the paper shows it.")


ClaimSpec = Annotated[Union[OrderingClaim, ThresholdClaim, AboveTrivialClaim, AggregateClaim], Field(discriminator="kind")]


class PaperTableSpec(SpecModel):
    """Numbers the paper reports for this experiment, shown verbatim beside ours."""

    caption: str = Field(description="What the numbers are and where they come from.")
    columns: list[str] = Field(min_length=1, description="Column headers.")
    rows: list[list[Any]] = Field(description="Rows, as printed in the paper (one value per column).")

    @model_validator(mode="after")
    def _check_widths(self) -> "PaperTableSpec":
        # A YAML flow list splits an unquoted cell at its commas ("[Agent57 (steps, best seed), ...]"): the row
        # then has more cells than columns and every cell after it lands under the wrong heading.
        bad = [f"rows[{i}] has {len(row)} cells: {row}" for i, row in enumerate(self.rows) if len(row) != len(self.columns)]
        if bad:
            raise ValueError(
                f"one cell per column in every row ({len(self.columns)}: {self.columns}); " + "; ".join(bad)
                + " (quote a cell that contains a comma)"
            )
        return self


class ExperimentSpec(SpecModel):
    """One experiment of one paper: agent, environments, variants, budgets, claims."""

    paper: Name = Field(description="Paper id (folder under specs/).")
    experiment: Name = Field(description="Experiment id (file name under specs/<paper>/).")
    reference: PaperReference = Field(description="Where the experiment comes from in the paper.")
    agent: AgentSpec = Field(description="The agent and its paper hyper-parameters.")
    environments: list[EnvSpec] = Field(min_length=1, description="Environments the experiment runs on.")
    variants: list[VariantSpec] | VariantGridSpec = Field(
        default_factory=lambda: [VariantSpec(name="default")],
        description="Variants of the agent: a list of named overrides, or a grid.",
    )
    budget: BudgetSpec = Field(description="The paper's budget (the 'paper' scale).")
    scales: dict[Literal["smoke", "cpu"], ScaleSpec] = Field(description="Reduced scales: smoke and cpu.")
    run: RunSpec = Field(default_factory=RunSpec, description="Progress and checkpoint settings.")
    claims: list[ClaimSpec] = Field(default_factory=list, description="Claims of the paper checked by this experiment.")
    paper_table: PaperTableSpec | None = Field(None, description="The paper's numbers, shown beside ours.")
    paper_values: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="The paper's value of the reported metric per variant and environment id, put beside ours in the table.",
    )
    paper_values_source: str = Field(
        "",
        description="Where paper_values come from and what the paper measured them on (table, task, hardware), e.g. "
        "'Table 1, task 1 (DMLab seekavoid_arena_01), CPU-only single-machine rows: 48 CPUs'. The caption of the "
        "figure that draws them beside ours (default: the reference's `where`).",
    )

    @model_validator(mode="after")
    def _check_references(self) -> "ExperimentSpec":
        env_ids = [env.id for env in self.environments]
        if len(set(env_ids)) != len(env_ids):
            raise ValueError(f"environment ids must be unique, got {env_ids}")
        names = [v.name for v in self.variant_list()]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must be unique, got {names}")
        for scale_name in ("smoke", "cpu"):
            if scale_name not in self.scales:
                raise ValueError(f"scales.{scale_name} is required (every spec runs at smoke and cpu scale)")
            scale = self.scales[scale_name]
            _check_subset(f"scales.{scale_name}.environments", scale.environments, env_ids)
            _check_subset(f"scales.{scale_name}.variants", scale.variants, names)
            _check_subset(f"scales.{scale_name}.variant_agent", list(scale.variant_agent), names)
        if self.scales["smoke"].opt_in is not None:
            raise ValueError("scales.smoke.opt_in: the smoke scale runs every spec (it is the path check); "
                             "an opt-in set belongs to scales.cpu")
        cpu = self.scales["cpu"]
        judged = [c.id for c in self.claims if "cpu" in c.judged_at]
        if cpu.opt_in and judged and not cpu.opt_in_reason.strip():
            raise ValueError(f"scales.cpu.opt_in: '{cpu.opt_in}' would leave the default job without the claims judged "
                             f"at cpu ({', '.join(judged)}); an opt-in set is for runs that decide no claim there, or "
                             "for claims the main job's hours cannot hold: say why in scales.cpu.opt_in_reason")
        if cpu.opt_in_reason.strip() and not (cpu.opt_in and judged):
            raise ValueError("scales.cpu.opt_in_reason: only for an opt-in set that decides claims judged at cpu")
        uninformative: list[str] = []
        for i, claim in enumerate(self.claims):
            _unique(f"claims[{i}] ({claim.id}).rests_on", claim.rests_on)
            if isinstance(claim, OrderingClaim):
                _check_subset(f"claims[{i}].better", [claim.better], names)
                _check_subset(f"claims[{i}].worse", claim.worse, names)
                _check_subset(f"claims[{i}].environments", claim.environments, env_ids)
                self._check_ordering_form(i, claim)
                continue
            _check_subset(f"claims[{i}].variant", [claim.variant], names)  # threshold, above_trivial, aggregate
            if isinstance(claim, (ThresholdClaim, AboveTrivialClaim)):
                _check_subset(f"claims[{i}].environment", [claim.environment], env_ids)
            if isinstance(claim, ThresholdClaim):
                uninformative += self._uninformative(i, claim)
            if isinstance(claim, (ThresholdClaim, AggregateClaim)):
                self._check_best_of(i, claim)
            if isinstance(claim, AboveTrivialClaim):
                env = next(e for e in self.environments if e.id == claim.environment)
                if env.kind != "atari" or self.agent.kind not in EVAL_SCORE_AGENTS:
                    raise ValueError(
                        f"claims[{i}] ({claim.id}): kind above_trivial tests a run's evaluation games, which only "
                        f"{', '.join(EVAL_SCORE_AGENTS)} keep on Atari; here agent {self.agent.kind} on {env.kind} "
                        f"environment {env.id}"
                    )
        if uninformative:
            raise ValueError(
                "a trivial policy (uniform random, always action 0, zero action) already satisfies these threshold "
                "claims: make each discriminate (e.g. a margin above the trivial score) or mark it informative: false "
                "with an informative_reason:\n  "
                + "\n  ".join(uninformative)
            )
        _check_subset("paper_values", list(self.paper_values), names)
        for variant, values in self.paper_values.items():
            _check_subset(f"paper_values.{variant}", list(values), env_ids)
        return self

    def random_score(self, env_id: str) -> float | None:
        """Mean return of a uniform-random policy: Atari from the human/random table, else the env's random_score."""
        env = next(e for e in self.environments if e.id == env_id)
        if env.kind == "atari":
            from rlrepro.results.normalization import canonical_game_name, reference_scores  # noqa: PLC0415

            known = reference_scores("dqn_zoo_57").get(canonical_game_name(env.game))
            return known[0] if known else env.random_score
        return getattr(env, "random_score", None)

    def _uninformative(self, i: int, claim: ThresholdClaim) -> list[str]:
        """A threshold on a return that a trivial policy already meets, unless marked informative: false.

        Trivial policies: uniform random (the env's random_score, Atari's reference table) and every policy of the
        measured trivial-policy scores (``rlrepro.results.trivial``: always action 0 / NOOP, zero action), where
        they exist for the environment's protocol.
        """
        if claim.metric not in RETURN_METRICS or not claim.informative:
            return []
        scores = self.trivial_scores(claim.environment)
        return [
            f"claims[{i}] ({claim.id}): {policy} policy {score:g} on {claim.environment} satisfies {claim.requirement}"
            for policy, score in scores.items() if claim.passes(score)
        ][:1]

    def trivial_scores(self, env_id: str) -> dict[str, float]:
        """Mean return of each trivial policy known for an environment: 'random' (random_score) and the measured ones."""
        scores = {}
        random = self.random_score(env_id)
        if random is not None:
            scores["uniform-random"] = random
        env = next(e for e in self.environments if e.id == env_id)
        from rlrepro.results import trivial  # noqa: PLC0415 -- reads the measured scores only when a claim needs them

        try:
            measured = trivial.trivial_scores(env)
        except trivial.TrivialScoresError:
            return scores
        scores.update({name: float(score.mean) for name, score in measured.items()})
        return scores

    def _check_best_of(self, i: int, claim: ThresholdClaim | AggregateClaim) -> None:
        """'The best k of n runs' needs at least k runs at every scale the claim is judged at."""
        if claim.best_of is None:
            return
        short = [f"{s} runs {self.scale(s).seeds}" for s in claim.judged_at if self.scale(s).seeds < claim.best_of]
        if short:
            raise ValueError(
                f"claims[{i}] ({claim.id}): best_of {claim.best_of} needs at least {claim.best_of} seeds at every "
                f"scale in judged_at; {', '.join(short)} (raise the scale's seeds or drop it from judged_at)"
            )

    def _check_ordering_form(self, i: int, claim: OrderingClaim) -> None:
        """at_least fits the environments; an aggregate can normalise every environment's scores."""
        envs = claim.environments or [env.id for env in self.environments]
        if claim.holds_on == "at_least" and claim.at_least > len(envs):
            raise ValueError(f"claims[{i}] ({claim.id}): at_least {claim.at_least} exceeds the {len(envs)} environment(s) {envs}")
        if claim.holds_on == "aggregate":
            by_id = {env.id: env for env in self.environments}
            unscored = [e for e in envs if by_id[e].kind != "atari" and (
                getattr(by_id[e], "random_score", None) is None or getattr(by_id[e], "return_range", None) is None)]
            if unscored:
                raise ValueError(
                    f"claims[{i}] ({claim.id}): holds_on: aggregate normalises scores per environment; environments "
                    f"{unscored} need random_score and return_range (Atari games use the human/random table)"
                )

    def variant_list(self) -> list[VariantSpec]:
        """The variants, with a grid expanded."""
        return self.variants.expand() if isinstance(self.variants, VariantGridSpec) else list(self.variants)

    def variant_named(self, name: str) -> tuple[VariantSpec, str | None]:
        """The variant a run's name stands for, and its control arm (``vtrace@frozen`` -> vtrace, 'frozen'; a
        variant of the spec's own -> it, None: ``rlrepro.specs.control``).

        Raises:
            KeyError: no variant of the spec has that name (the known names listed).
        """
        base, control = split_variant(name)
        for variant in self.variant_list():
            if variant.name == base:
                return variant, control
        known = [v.name for v in self.variant_list()]
        raise KeyError(f"variant {name!r}: no such variant; expected one of {known} (or '<variant>@frozen')")

    def scale(self, scale: Scale) -> ScaleSpec:
        """The run size at a scale; ``paper`` is the paper's budget on every environment and variant."""
        if scale == "paper":
            return ScaleSpec(frames=self.budget.frames, seeds=self.budget.seeds)
        return self.scales[scale]


def _check_subset(field: str, chosen: list[str] | None, known: list[str]) -> None:
    unknown = sorted(set(chosen or []) - set(known))
    if unknown:
        raise ValueError(f"{field}: unknown {unknown}; expected some of {known}")


