"""Claim verdicts with calibrated statistics: reproduced, not reproduced, inconclusive, or not judged.

- *reproduced*: the data support the claim at one-sided level 0.025 (a 95% interval on the claimed side);
- *not reproduced*: the data contradict it (the interval lies wholly on the other side);
- *inconclusive*: this scale cannot decide (the detail says about how many seeds would: a new experiment at that
  count, not seeds added to these after seeing them, which would raise the chance of a false "reproduced");
- *not judged*: not run, scale below the claim's ``judged_at``, or missing runs.

A threshold claim that a uniform-random policy already passes (``informative: false``) is *uninformative*:
reported apart, never counted as reproduced. So is a matches / matches_or_beats claim (per environment or on an
aggregate) whose variants are not shown above the trivial-policy level (``rlrepro.results.trivial``: the best of
uniform random, always action 0 and zero action) by the claim's margin: two agents that learned nothing "match".
And every claim is judged a second time on its frozen arm, the same variants trained with learning switched off
(``rlrepro.specs.control``, ``rlrepro.results.control``): one that a frozen agent also passes is uninformative, and
a reproduced one must show the runs beyond the frozen arm.
Every verdict names its test and what it assumes (``Verdict.method``). The statistics are in ``rlrepro.results.stats`` and their error
rates are measured by ``rlrepro.results.calibration``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from rlrepro.results import control, stats, trivial
from rlrepro.results.aggregation import batched_aggregate, corrected_bootstrap_ci, stratified_bootstrap_difference
from rlrepro.results.collect import CellResult
from rlrepro.results.normalization import human_normalized_scores
from rlrepro.specs import AboveTrivialClaim, AggregateClaim, ExperimentSpec, OrderingClaim, ThresholdClaim, resolve_env
from rlrepro.specs.control import FROZEN, claim_variants, control_name, control_seeds, split_variant
from rlrepro.specs.experiment import RETURN_METRICS
from rlrepro.workflow import frame_count

# The verdict strings: every renderer (tables, REPORT.md, JSON, plots, HTML) takes them from here.
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_JUDGED = "not judged"
OUTCOMES: tuple[str, ...] = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_JUDGED)
UNINFORMATIVE = "uninformative"  # a random policy passes the claim: reported apart from the four outcomes
VERDICT_MEANING = {
    REPRODUCED: "the data support the claim (one-sided test at 0.025 per comparison)",
    NOT_REPRODUCED: "the data contradict the claim (its 95% interval lies wholly on the other side)",
    INCONCLUSIVE: "this scale cannot decide (the detail says about how many seeds would: an experiment run anew at "
    "that count, since seeds added to these after seeing them raise the chance of a false 'reproduced')",
    NOT_JUDGED: "not run, below the claim's scale, or missing runs",
    UNINFORMATIVE: "a trivial policy (uniform random, always action 0, zero action) or the same agent with its "
    "learning switched off (the frozen arm) already passes the claim, or the variants that match are not shown above "
    "them: never counted as reproduced",
}

_OUTCOME = {stats.SUPPORTED: REPRODUCED, stats.CONTRADICTED: NOT_REPRODUCED, stats.UNDECIDED: INCONCLUSIVE}
_LINE = {stats.SUPPORTED: "supports", stats.CONTRADICTED: "CONTRADICTS", stats.UNDECIDED: "undecided"}


@dataclass(frozen=True)
class Verdict:
    claim: str
    statement: str
    verdict: str
    detail: str
    paper_evidence: str
    power: str = ""  # the smallest difference the seeds can detect (ordering claims), for tables and plan
    method: str = ""  # the test behind the verdict and what it assumes (table, REPORT.md, report.html, MLflow tag)

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def detail_with_method(claim: dict[str, str]) -> str:
    """A verdict's detail followed by its test and assumption, from its JSON form (REPORT.md, report.html)."""
    method = claim.get("method", "")
    return f"{claim['detail']}. Test: {method}" if method else claim["detail"]


def cannot_show_at(spec: ExperimentSpec, claim: object, scale: str, seeds: int | None = None) -> str:
    """Why no data the scale's seeds (or ``seeds`` runs per variant) could produce would show ``claim`` reproduced
    there ('' when some data could), by the rules the verdicts apply: a mean or an equivalence on a metric with no
    declared range; one seed for a mean, or one run per game for an aggregate's bootstrap; fewer seeds than the
    permutation test needs to reach 0.025, or (at least k of m environments) Holm's first step 0.025 / m; fewer runs
    than a best-of-k count; a share of seeds the scale's count cannot bound; a range too wide for the seeds'
    distribution-free bounds to clear the bar or the margin even with every seed at its best (such a claim can at
    most be refuted: the reason says so), or to show a "matches or beats" claim's match with both variants alike
    (only a clear win could pass: a claim decided by the seed count, not by the paper's outcome). `rlrepro plan`
    lists these apart from the claims a run decides. Seeds "at an end" of a return's range stand for seeds just
    inside it: a verdict leaves undecided a comparison whose seeds all sit at the floor or ceiling (``_at_bound``)."""
    n = spec.scale(scale).seeds if seeds is None else seeds
    refutable = " (at most refuted)"
    if _frozen_rule_applies(claim) and control.smallest_beyond_p(n, control_seeds(n)) > stats.ALPHA:
        return (f"{n} seed(s), {control_seeds(n)} in the frozen arm: the runs cannot be shown beyond it (smallest p "
                f"{control.smallest_beyond_p(n, control_seeds(n)):.3g}; rlrepro.results.control)")
    if isinstance(claim, ThresholdClaim):
        if claim.best_of is not None:  # a count of runs (validation asks every judging scale for at least k)
            return "" if n >= claim.best_of else f"{n} run(s) cannot make up the best {claim.best_of}"
        if claim.seeds_share is not None:
            if stats.decide_share(n, n, claim.seeds_share) == stats.SUPPORTED:
                return ""
            can_refute = stats.decide_share(0, n, claim.seeds_share) == stats.CONTRADICTED
            return (f"{n} seed(s) cannot show a share above {claim.seeds_share:g} (all passing: Clopper-Pearson lower "
                    f"end {stats.binomial_interval(n, n)[0]:.2f})" + (refutable if can_refute else ""))
        bounds = metric_bounds(spec, claim, claim.environment)
        if bounds is None:
            return "a mean over seeds of a metric with no declared range (metric_range)"
        if n < 2:
            return "a mean over one seed has no interval"
        best, worst = (bounds[1], bounds[0]) if claim.op == ">=" else (bounds[0], bounds[1])
        reach = [int(stats.decide_threshold_values(np.full(n, v), claim.op, claim.bound, bounds)[0]) for v in (best, worst)]
        if reach[0] == stats.SUPPORTED:
            return ""
        return (f"{n} seeds' distribution-free bound on [{bounds[0]:g}, {bounds[1]:g}] cannot reach {claim.op} "
                f"{claim.bound:g} even with every seed at the range's end"
                + (refutable if reach[1] == stats.CONTRADICTED else ""))
    if isinstance(claim, AggregateClaim):  # a bootstrap over runs: one run per game has no interval
        if claim.best_of is not None:
            return "" if n >= claim.best_of else f"{n} run(s) cannot make up the best {claim.best_of}"
        return "" if n >= 2 else ("one run per game: the aggregate's bootstrap over runs has no interval (state it "
                                  "per run: best_of)")
    if isinstance(claim, AboveTrivialClaim):
        games = resolve_env(spec, claim.environment, scale).evaluation.episodes
        return "" if games >= 2 else ("one evaluation game per run: the permutation test against 30 games of a "
                                      "trivial policy cannot reach 0.025 (1/31)")
    if not isinstance(claim, OrderingClaim):
        return ""
    if claim.relation == "beats":
        seeds = f"{n} seed{'s' if n != 1 else ''}"
        if stats.smallest_permutation_p(n, n) > stats.ALPHA:
            return f"{seeds} per side: the permutation test's smallest p is {stats.smallest_permutation_p(n, n):.3g}"
        if claim.holds_on == "at_least":  # Holm's first step over the m environments asks p <= 0.025 / m
            run = spec.scale(scale).environments or [e.id for e in spec.environments]
            m = max(1, len([env for env in run if claim.environments is None or env in claim.environments]))
            if stats.smallest_permutation_p(n, n) > stats.ALPHA / m:
                return (f"{seeds} per side: the permutation test's smallest p {stats.smallest_permutation_p(n, n):.3g} "
                        f"is above Holm's first step over {m} environments ({stats.ALPHA:g} / {m})")
        return ""
    if claim.holds_on == "aggregate":  # matches / matches_or_beats: a bootstrap over runs
        return "" if n >= 2 else "one run per side: the aggregate's bootstrap over runs has no interval"
    for env in claim.environments or [e.id for e in spec.environments]:
        bounds = metric_bounds(spec, claim, env)
        if bounds is None:
            return f"an equivalence of means over seeds on a metric with no declared range (metric_range; {env})"
        ends = [np.full(n, v) for v in bounds]
        codes = {int(stats.decide_ordering(claim.relation, a, b, claim.margin, bounds)) for a in ends for b in ends}
        if stats.SUPPORTED not in codes:
            return (f"{n} seeds' distribution-free interval on [{bounds[0]:g}, {bounds[1]:g}] cannot show the margin "
                    f"{claim.margin:g} even with every seed at an end of the range ({env})"
                    + (refutable if stats.CONTRADICTED in codes else ""))
        alike = [int(stats.decide_ordering(claim.relation, e, e, claim.margin, bounds)) for e in ends]
        if stats.SUPPORTED not in alike:  # matches_or_beats: a clear win could still pass, the match it names cannot
            return (f"{n} seeds' distribution-free interval on [{bounds[0]:g}, {bounds[1]:g}] cannot show a match "
                    f"within the margin {claim.margin:g} even with both variants' seeds all alike ({env}): only a "
                    "clear win could show it reproduced")
    return ""


def _frozen_rule_applies(claim: object) -> bool:
    """Whether a reproduced verdict needs the runs shown beyond the frozen arm (rule 2 of ``results.control``)."""
    if getattr(claim, "control", None) != FROZEN or isinstance(claim, AboveTrivialClaim):
        return False
    return getattr(claim, "best_of", None) is None  # the paper's best k runs: rule 1 alone


def untestable_here(claim: object) -> str:
    """'not testable on this machine: ...' when the claim needs more CPU cores (``machine``) than this machine has,
    else '': a limit of the machine planning runs on, not of the claim's design (``cannot_show_at``)."""
    machine = getattr(claim, "machine", None)
    if machine is not None and (cores := os.cpu_count() or 1) < machine.cpu_cores:
        return f"{NOT_TESTABLE} it needs {machine.cpu_cores} CPU cores ({machine.why}); this one has {cores}"
    return ""


#: The most seeds ``fewest_seeds_to_show`` looks at, as the verdicts' "what would decide it" notes do: a design that
#: needs more (a mean a hair below the top of its range, by Anderson's bound) is reported as out of reach.
MOST_SEEDS = 256


def fewest_seeds_to_show(spec: ExperimentSpec, claim: object, scale: str) -> int | None:
    """The fewest runs per variant at which some data would show ``claim`` reproduced at ``scale`` (its design's
    floor, by ``cannot_show_at``: the permutation test's 4, a share's Clopper-Pearson count, Anderson's bound on the
    range), or None when no count up to MOST_SEEDS can (a mean with no declared range). More seeds only tighten
    these bounds, so a bisection finds the floor in about 10 looks. Not on the DAG's path: `rlrepro plan` only."""
    if cannot_show_at(spec, claim, scale, MOST_SEEDS):
        return None
    low, high = 0, MOST_SEEDS  # cannot_show_at holds at low (0: none), not at high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if cannot_show_at(spec, claim, scale, middle) else (low, middle)
    return high


def judge_claims(
    spec: ExperimentSpec, scale: str, cells: dict[tuple[str, str], CellResult], *, reps: int = 2000
) -> list[Verdict]:
    """A verdict for every claim of the spec, from the finished runs in ``cells``: each judged on the runs, then
    (``control: frozen``) on the frozen arm in their place (``rlrepro.results.control``)."""
    runs = {key: cell for key, cell in cells.items() if split_variant(key[0])[1] is None}
    frozen = {(split_variant(name)[0], env): cell for (name, env), cell in cells.items()
              if split_variant(name)[1] == FROZEN}
    verdicts = []
    for claim in spec.claims:
        verdict = _judge(claim, spec, scale, runs, reps)
        if claim.control == FROZEN and verdict.verdict in OUTCOMES[:3]:
            verdict = _beside_frozen(claim, spec, scale, verdict, runs, frozen, reps)
        elif verdict.verdict in OUTCOMES[:3]:  # control: none, a claim about the system: the reason is its control
            verdict = replace(verdict, detail=f"{verdict.detail}. Control: none, {claim.control_reason}")
        verdicts.append(verdict)
    return verdicts


def _judge(claim: object, spec: ExperimentSpec, scale: str, cells: dict[tuple[str, str], CellResult], reps: int,
           *, advise: bool = True) -> Verdict:
    """One claim's verdict on ``cells`` alone; ``advise``: an undecided verdict says what would decide it (the runs'
    verdict does; the frozen arm's, read as the control's evidence, does not: more frozen seeds decide nothing)."""
    if not claim.judged_at:  # the spec states it for the record; no scale of it can decide it
        why = cannot_show_at(spec, claim, scale)
        if fewest := fewest_seeds_to_show(spec, claim, scale) if why else None:
            why += f"; the fewest seeds per variant that could: {fewest}"
        reason = claim.not_judged_because.strip().rstrip(".")  # the spec's (a budget), then the rules' (the seeds)
        if why:
            reason = f"{reason} (by the verdicts' rules at '{scale}': {why})" if reason else why
        detail = "judged at no scale" + (f": {reason}" if reason else "")
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence)
    if scale not in claim.judged_at:
        seeds = spec.scale(scale).seeds
        detail = (
            f"the claim is judged at scale(s) {', '.join(claim.judged_at)}; at '{scale}' {seeds} "
            f"seed{'s' if seeds != 1 else ''} of {frame_count(spec, scale).text()} are too small to tell"
        )
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence)
    if isinstance(claim, OrderingClaim) and (short := machine_shortfall(claim, cells)):
        return Verdict(claim.id, claim.statement, NOT_JUDGED, short, claim.paper_evidence)
    if isinstance(claim, OrderingClaim) and claim.holds_on == "aggregate":
        return _judge_ordering_aggregate(claim, spec, cells, reps, advise=advise)
    if isinstance(claim, OrderingClaim):
        return _judge_ordering(claim, spec, cells, advise=advise)
    if isinstance(claim, ThresholdClaim) and claim.best_of is not None:
        return _judge_best_of(claim, cells, runs=spec.scale(scale).seeds)
    if isinstance(claim, ThresholdClaim) and claim.seeds_share is not None:
        return _judge_share(claim, cells, advise=advise)
    if isinstance(claim, ThresholdClaim):
        return _judge_threshold(claim, spec, cells, advise=advise)
    if isinstance(claim, AboveTrivialClaim):
        return _judge_above_trivial(claim, spec, scale, cells, advise=advise)
    return _judge_aggregate(claim, spec, cells, reps, runs=spec.scale(scale).seeds)


# --- the frozen arm beside every claim (rlrepro.results.control) -------------------------------------------------

_CODE = {REPRODUCED: stats.SUPPORTED, NOT_REPRODUCED: stats.CONTRADICTED, INCONCLUSIVE: stats.UNDECIDED}
#: How a detail begins when a control, not the runs alone, set the verdict (its first clause, up to ';', says which):
#: read by ``rlrepro.results.publish.changed_verdicts`` as the reason a verdict changed.
RUNS_ALONE = f"the runs alone would read {REPRODUCED}, but "
CONTROL_LEADS = (f"{UNINFORMATIVE}: ", RUNS_ALONE)


def _beside_frozen(claim: object, spec: ExperimentSpec, scale: str, verdict: Verdict,
                   runs: dict[tuple[str, str], CellResult], frozen: dict[tuple[str, str], CellResult], reps: int) -> Verdict:
    """The runs' verdict read beside the frozen arm's: rule 1 (the frozen arm passes it: uninformative) and rule 2
    (reproduced only when the runs are shown beyond the frozen arm), as ``rlrepro.results.control`` says."""
    needed = [(v, env) for (v, env) in runs if v in claim_variants(claim)]
    if not needed or any(key not in frozen for key in needed):
        missing = sorted({control_name(v) for v, env in needed if (v, env) not in frozen})
        note = (f"the frozen arm ({', '.join(missing)}) was not run, so whether a frozen agent passes it too is "
                "not known: run the experiment again (the plan makes the arm) to decide")
        if verdict.verdict != REPRODUCED:
            return _with(verdict, verdict.verdict, f"{verdict.detail}. Control: {note}")
        return _with(verdict, INCONCLUSIVE, f"{RUNS_ALONE}{note}. {verdict.detail}")
    frozen_verdict = _judge(claim, spec, scale, frozen, reps, advise=False)
    matches = isinstance(claim, OrderingClaim) and claim.relation != "beats"
    beyond, test = _beyond_frozen(claim, spec, runs, frozen) if verdict.verdict == REPRODUCED else (None, "")
    outcome = control.combine(_CODE[verdict.verdict], _CODE.get(frozen_verdict.verdict, stats.UNDECIDED), beyond,
                              matches=matches)
    frozen_text = f"the frozen arm reads {frozen_verdict.verdict}: {frozen_verdict.detail}"
    beyond_text = f"; the runs beyond the frozen arm: p = {beyond:.3g} ({test})" if beyond is not None else ""
    # the runs' evidence first, the frozen arm's after "Control:" (a report's "ours" is the runs' first estimate)
    if outcome == "uninformative" and not matches:
        return _with(verdict, UNINFORMATIVE, f"uninformative: a frozen agent also passes it; the runs alone would read "
                     f"{verdict.verdict}. {verdict.detail}. Control: {frozen_text}")
    if outcome == "uninformative":
        return _with(verdict, UNINFORMATIVE, f"uninformative: the variants that match are not shown beyond their frozen "
                     f"arms{beyond_text}: agents that learned nothing match; the runs alone would read "
                     f"{REPRODUCED}. {verdict.detail}. Control: {frozen_text}")
    if outcome == "inconclusive":
        return _with(verdict, INCONCLUSIVE, f"{RUNS_ALONE}they are not shown beyond "
                     f"the frozen arm{beyond_text}: more seeds (of both arms) would decide whether learning, not the "
                     f"design, passes it. {verdict.detail}. Control: {frozen_text}")
    return _with(verdict, verdict.verdict, f"{verdict.detail}. Control: {frozen_text}{beyond_text}")


def _with(verdict: Verdict, outcome: str, detail: str) -> Verdict:
    return Verdict(verdict.claim, verdict.statement, outcome, detail, verdict.paper_evidence, verdict.power,
                   verdict.method + ("; beside the frozen arm (rlrepro.results.control)" if verdict.method else ""))


def _beyond_frozen(claim: object, spec: ExperimentSpec, runs: dict, frozen: dict) -> tuple[float | None, str]:
    """Rule 2's p-value for a claim the runs support, and its test; (None, '') where rule 1 alone applies."""
    if isinstance(claim, OrderingClaim):
        return _ordering_beyond(claim, spec, runs, frozen)
    if not _frozen_rule_applies(claim):
        return None, ""
    if isinstance(claim, AggregateClaim):
        sign = 1.0 if claim.op == ">=" else -1.0
        _, real = hns_matrix(spec, runs, claim.variant, claim.metric, claim.hns_table)
        _, still = hns_matrix(spec, frozen, claim.variant, claim.metric, claim.hns_table)
        if real.shape[1] != still.shape[1]:
            return None, ""
        p = float(stats.aggregate_permutation_p(sign * real, sign * still, AGGREGATES[claim.aggregate]))
        return p, "whole runs permuted between the runs and the frozen arm, one-sided 0.025"
    values = _finite(runs[(claim.variant, claim.environment)].values(claim.metric))
    still = _finite(frozen[(claim.variant, claim.environment)].values(claim.metric))
    if not values or not still:
        return None, ""
    if claim.seeds_share is not None:
        passing, frozen_passing = sum(map(claim.passes, values)), sum(map(claim.passes, still))
        return (control.share_beyond_p(passing, len(values), frozen_passing, len(still)),
                f"{passing} of {len(values)} runs pass, {frozen_passing} of {len(still)} frozen runs; "
                + control.SHARE_BEYOND_METHOD)
    sign = 1.0 if claim.op == ">=" else -1.0
    return (control.beyond_p(sign * np.asarray(values), sign * np.asarray(still)),
            f"mean {np.mean(values):.4g} over {len(values)} runs, {np.mean(still):.4g} over {len(still)} frozen runs; "
            + control.BEYOND_METHOD)


def _ordering_beyond(claim: OrderingClaim, spec: ExperimentSpec, runs: dict, frozen: dict) -> tuple[float | None, str]:
    """'beats': the difference-in-differences against the frozen arm per comparison; 'matches': each variant's runs
    against its frozen runs. Combined as the claim combines its comparisons (each: all; at least k: the k-th)."""
    sign = 1.0 if claim.higher_is_better else -1.0
    envs = claim.environments or sorted({env for (_, env) in runs})
    if claim.holds_on == "aggregate":
        mats = {name: (_variant_matrix(spec, runs, name, envs, claim.metric),
                       _variant_matrix(spec, frozen, name, envs, claim.metric)) for name in claim_variants(claim)}
        if any(a is None or b is None for a, b in mats.values()):
            return None, ""
        if claim.relation == "beats":  # each run's mean normalised score over the environments
            (a, fa), worst = mats[claim.better], 0.0
            for name in claim.worse:
                b, fb = mats[name]
                worst = max(worst, control.did_p(sign * a.mean(1), sign * b.mean(1), sign * fa.mean(1), sign * fb.mean(1)))
            return worst, "on each run's mean normalised score, " + control.DID_METHOD
        p = max(float(stats.aggregate_permutation_p(sign * a, sign * b, claim.aggregate)) for a, b in mats.values())
        return p, f"each variant's {claim.aggregate} against its frozen arm's, whole runs permuted, one-sided 0.025"
    by_env: dict[str, float] = {}
    same: list[str] = []  # comparisons whose frozen arms are one agent: the runs' own permutation test
    for env in envs:
        get = lambda cells, name: sign * np.asarray(_finite(cells[(name, env)].values(claim.metric)))  # noqa: E731
        if claim.relation == "beats":
            ps, still = [], frozen[(claim.better, env)]
            for w in claim.worse:
                if control.same_agent(still.values(claim.metric), frozen[(w, env)].values(claim.metric), still.seeds,
                                      frozen[(w, env)].seeds):
                    same.append(f"{claim.better} v {w} on {env}")
                    ps.append(control.beyond_p(get(runs, claim.better), get(runs, w)))
                else:
                    ps.append(control.did_p(get(runs, claim.better), get(runs, w), get(frozen, claim.better),
                                            get(frozen, w)))
            p = max(ps)
        else:
            p = max(control.beyond_p(get(runs, name), get(frozen, name)) for name in claim_variants(claim))
        by_env[env] = p
    ranked = sorted(by_env.values())
    p = ranked[claim.at_least - 1] if claim.holds_on == "at_least" else ranked[-1]
    test = control.DID_METHOD if claim.relation == "beats" else ("each variant's runs against its frozen runs, "
                                                                 + control.BEYOND_METHOD)
    if same:  # every comparison, or some: the difference-in-differences named only where it ran
        whole = len(same) == len(envs) * len(claim.worse)
        test = (f"{control.SAME_AGENT_TEXT}: {', '.join(same)}" if whole
                else f"{test}; {control.SAME_AGENT_TEXT}: {', '.join(same)}")
    return p, test + (f", on at least {claim.at_least} of {len(by_env)} environments" if claim.holds_on == "at_least"
                      else "")


NOT_TESTABLE = "not testable on this machine:"


def machine_shortfall(claim: OrderingClaim, cells: dict[tuple[str, str], CellResult]) -> str:
    """'not testable on this machine: ...' when the compared runs had fewer CPU cores than the claim's ``machine``
    needs (or did not record them), else '' (also when no compared run exists: the usual 'not run' applies)."""
    if claim.machine is None:
        return ""
    variants = {claim.better, *claim.worse}
    envs = set(claim.environments) if claim.environments else None
    cores = [c for (variant, env), cell in cells.items() if variant in variants and (envs is None or env in envs)
             for c in cell.cpu_cores]  # fmt: skip
    if not cores:
        return ""
    need = claim.machine.cpu_cores
    if any(c is None for c in cores):
        return f"{NOT_TESTABLE} it needs {need} CPU cores ({claim.machine.why}); the runs did not record theirs"
    if min(cores) >= need:
        return ""
    return (f"{NOT_TESTABLE} it needs {need} CPU cores ({claim.machine.why}); the runs had {min(cores)}, so they "
            "neither show nor refute it")


# --- ordering claims per environment ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Comparison:
    env: str
    worse: str
    a: list[float]
    b: list[float]
    interval: stats.Interval  # of the signed difference: positive = better is better
    outcome: int
    p_value: float  # of the test that supports the claim (for Holm's count)
    at_bound: str  # "floor" / "ceiling" when every seed of both sides sits there, else ""
    bounds: tuple[float, float] | None  # the signed metric's range, None when it has none


def metric_bounds(spec: ExperimentSpec, claim: OrderingClaim | ThresholdClaim, env_id: str) -> tuple[float, float] | None:
    """The range every run's value lies in: the claim's ``metric_range``, else the environment's ``return_range``
    for a return metric, else None (no distribution-free bound: the verdict rests on normality)."""
    if claim.metric_range is not None:
        return tuple(claim.metric_range)
    env = next((e for e in spec.environments if e.id == env_id), None)
    bounds = getattr(env, "return_range", None)
    return tuple(bounds) if bounds is not None and claim.metric in RETURN_METRICS else None


def _signed_bounds(bounds: tuple[float, float] | None, sign: float) -> tuple[float, float] | None:
    return None if bounds is None else (bounds if sign > 0 else (-bounds[1], -bounds[0]))


def _inside(values: list[float], bounds: tuple[float, float] | None) -> bool:
    return bounds is None or all(bounds[0] <= v <= bounds[1] for v in values)


def _judge_ordering(claim: OrderingClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], *,
                    advise: bool = True) -> Verdict:
    envs = claim.environments or sorted({env for (_, env) in cells})
    comparisons, missing, few = [], [], []
    for env in envs:
        better = cells.get((claim.better, env))
        for worse_name in claim.worse:
            worse = cells.get((worse_name, env))
            if better is None or worse is None:
                missing.append(f"{claim.better if better is None else worse_name} on {env}")
                continue
            a, b = _finite(better.values(claim.metric)), _finite(worse.values(claim.metric))
            if claim.by_factor is not None:  # a ratio is judged on the log scale: values <= 0 have none
                a, b = [v for v in a if v > 0], [v for v in b if v > 0]
            if not a or not b:
                kind = "finite positive" if claim.by_factor is not None else "finite"
                missing.append(f"{kind} {claim.metric} for {claim.better} vs {worse_name} on {env}")
            elif len(a) < 2 or len(b) < 2:
                few.append(f"{claim.better} vs {worse_name} on {env} has {len(a)} and {len(b)} run(s)")
            else:
                comparisons.append(_compare(claim, spec, env, worse_name, a, b))
    method = _ordering_method(claim, comparisons)
    if missing or not (comparisons or few):
        why = "not run at this scale: " + "; ".join(dict.fromkeys(missing)) if missing else "no runs to compare"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, why, claim.paper_evidence, method=method)
    if few:
        why = "one run per side gives no interval; at least 2 seeds per variant are needed: " + "; ".join(few)
        return Verdict(claim.id, claim.statement, INCONCLUSIVE, why, claim.paper_evidence, method=method)
    if claim.holds_on == "at_least":
        by_env: dict[str, list[_Comparison]] = {}
        for c in comparisons:
            by_env.setdefault(c.env, []).append(c)
        # an environment counts when every worse variant is beaten there (its p-value: the largest of them)
        p_env = [max(c.p_value for c in group) for group in by_env.values()]
        contradicted = [any(c.outcome == stats.CONTRADICTED for c in group) for group in by_env.values()]
        code = int(stats.decide_at_least(p_env, contradicted, claim.at_least))
        holm = int(stats.holm_rejections(p_env))
        rule = (
            f"{_rule(claim)}, on at least {claim.at_least} of {len(by_env)} environments: {holm} significant after "
            f"Holm's correction over the {len(by_env)}, {sum(contradicted)} contradicted"
        )
    else:
        code = int(stats.combine_each([c.outcome for c in comparisons]))
        rule = f"{_rule(claim)}, on every environment and against every worse variant (intersection-union test)"
    lines = [_comparison_line(claim, c) for c in comparisons]
    detail = f"{rule}. " + "; ".join(lines) + _replay_gap_note(claim, cells, envs)
    if code == stats.UNDECIDED and advise:
        detail += ". " + _what_would_decide(claim, comparisons)
    power = _power_text(comparisons) if claim.relation == "beats" and claim.by_factor is None else ""
    if claim.by_factor is not None and comparisons:  # the spread and the detectable gap on the log scale
        logs = [replace(c, a=list(np.log10(c.a)), b=list(np.log10(c.b))) for c in comparisons]
        power = _power_text(logs).replace("difference of", "difference in log10 units of")
    if claim.relation != "beats" and code == stats.SUPPORTED:
        trivial = _trivial_check(claim, spec, comparisons)
        if trivial:
            return Verdict(claim.id, claim.statement, UNINFORMATIVE, f"{trivial}; the data alone would read "
                           f"{REPRODUCED}. {detail}", claim.paper_evidence, power, method)
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, power, method)


def _replay_gap_note(claim: OrderingClaim, cells: dict[tuple[str, str], CellResult], envs: list[str]) -> str:
    """The off-policy gap a replay comparison was decided at: each compared variant's replayed rows' mean age (updates)
    and KL(mu || pi) (nats), means over seeds of the runs' final values (IMPALA's replay logs replay_age, replay_kl);
    '' when no compared run replays."""
    parts = []
    for env in envs:
        for variant in (claim.better, *claim.worse):
            cell = cells.get((variant, env))
            age, kl = (_finite(cell.values("replay_age")), _finite(cell.values("replay_kl"))) if cell else ([], [])
            if age and kl:
                parts.append(f"{variant} on {env} {np.mean(age):.4g} updates, KL {np.mean(kl):.3g}")
    return f". Replayed rows' mean age and KL(mu || pi) in nats, final values: {'; '.join(parts)}" if parts else ""


def _compare(claim: OrderingClaim, spec: ExperimentSpec, env: str, worse: str, a: list[float], b: list[float]) -> _Comparison:
    """The claim's test on one environment against one worse variant, on signed values (positive = better)."""
    sign = 1.0 if claim.higher_is_better else -1.0
    if claim.by_factor is not None:  # log10 values; interval: of better's advantage in log10 units
        sa, sb = sign * np.log10(a), sign * np.log10(b)
        interval = stats.welch_interval(sa, sb)
        outcome, p = stats.decide_beats_by_factor(sa, sb, claim.by_factor)
        return _Comparison(env, worse, a, b, interval, int(outcome), float(p), "", None)
    bounds = metric_bounds(spec, claim, env)
    if not _inside([*a, *b], bounds):
        bounds = None  # values outside the declared range: no distribution-free bound; the line says so
    sa, sb = sign * np.asarray(a), sign * np.asarray(b)
    signed = _signed_bounds(bounds, sign)
    if claim.relation == "beats":
        interval = stats.welch_interval(sa, sb)  # shown for the size of the gap; the decision is the permutation test
        outcome, p = stats.decide_beats_permutation(sa, sb)
    else:
        interval = stats.ordering_interval(sa, sb, signed)
        outcome = stats.decide_ordering(claim.relation, sa, sb, claim.margin, signed)
        p = 1.0  # Holm's count applies to 'beats' (holds_on: at_least)
    at_bound = _at_bound(spec, env, claim.metric, a, b)
    if at_bound:  # every seed of both at the floor (or ceiling): this scale cannot tell them apart
        outcome, p = stats.UNDECIDED, 1.0
    return _Comparison(env, worse, a, b, interval, int(outcome), float(p), at_bound, signed)


def _at_bound(spec: ExperimentSpec, env_id: str, metric: str, a: list[float], b: list[float]) -> str:
    env = next((e for e in spec.environments if e.id == env_id), None)
    bounds = getattr(env, "return_range", None)
    if bounds is None or metric not in RETURN_METRICS:
        return ""
    for name, bound in zip(("floor", "ceiling"), bounds):
        if all(v == bound for v in [*a, *b]):
            return f"{name} {bound:g}"
    return ""


def _ordering_method(claim: OrderingClaim, comparisons: list[_Comparison]) -> str:
    """The test and its assumption, in one phrase (Verdict.method)."""
    if claim.by_factor is not None:
        return "two-sample permutation test of the difference of mean log10 values against log10 of the factor, " \
            "one-sided 0.025 (exact when the variants' log10 values differ by a shift; with spreads 3x apart measured " \
            "0.02-0.04 on symmetric shapes, up to 0.15 on skewed ones; assumes runs independent)" + (
                "; Holm over environments" if claim.holds_on == "at_least" else "")
    if claim.relation == "beats":
        splits = "; ".join(dict.fromkeys(stats.permutation_text(len(c.a), len(c.b)) for c in comparisons))
        return "two-sample permutation test of the difference of means, one-sided 0.025 (any distribution; " \
            "assumes runs independent and exchangeable under no effect)" + (f"; {splits}" if splits else "") + (
                "; Holm over environments" if claim.holds_on == "at_least" else "")
    if comparisons and all(c.bounds is not None for c in comparisons):
        return "distribution-free interval on the metric's range (Anderson's bounds, Bonferroni over the two " \
            "variants), two one-sided tests at 0.025 (any distribution on the range)"
    return ("none: the metric has no declared range, so a difference of means over seeds is not decided (Welch's t "
            "interval is shown for reference; it rests on normality, which seeds that partly collapse break)")


def _rule(claim: OrderingClaim) -> str:
    side = "higher" if claim.higher_is_better else "lower"
    if claim.by_factor is not None:
        return (f"{claim.metric} ({side} is better) by a factor of at least {claim.by_factor:g}: each difference of "
                f"mean log10 values must exceed log10 {claim.by_factor:g} by the permutation test (p <= 0.025)")
    if claim.relation == "beats":
        return f"{claim.metric} ({side} is better): each difference must be significant by the permutation test (p <= 0.025)"
    if claim.relation == "matches":
        return f"{claim.metric}: each difference's 95% interval must lie inside +-{claim.margin:g} (two one-sided tests)"
    return (
        f"{claim.metric} ({side} is better): each difference's 95% interval must lie above -{claim.margin:g} "
        "on the better side (non-inferiority)"
    )


def _spread_note(c: _Comparison) -> str:
    """A by-factor comparison whose log10 spreads differ by ``stats.SPREAD_WARNING`` or more: the test is exact only
    for a shift, so the line says how far apart they are ('' otherwise, or with too few seeds for a spread)."""
    if min(len(c.a), len(c.b)) < 2:
        return ""
    spreads = sorted(float(np.std(np.log10(values), ddof=1)) for values in (c.a, c.b))
    if spreads[1] == 0 or (spreads[0] > 0 and spreads[1] / spreads[0] < stats.SPREAD_WARNING):
        return ""
    apart = f"log10 spreads {spreads[1] / spreads[0]:.2g}x apart" if spreads[0] > 0 else "one log10 spread is 0"
    return f" ({apart}: the test is exact only for a shift; see the method)"


def _comparison_line(claim: OrderingClaim, c: _Comparison) -> str:
    """'env: better - worse = d [95% CI low, high] supports' in the metric's own units and direction."""
    iv = c.interval
    point, low, high = (iv.point, iv.low, iv.high) if claim.higher_is_better else (-iv.point, -iv.high, -iv.low)
    if claim.by_factor is not None:  # iv: better's advantage in log10 units, shown as a factor
        text = (f"{c.env}: {claim.better} better than {c.worse} by a factor {10 ** float(iv.point):.3g} [Welch 95% CI "
                f"on log10: {10 ** float(iv.low):.3g}, {10 ** float(iv.high):.3g}], needed {claim.by_factor:g}, "
                f"permutation p = {c.p_value:.3g}{_spread_note(c)} ")
        return text + _LINE[c.outcome]
    if claim.relation == "beats":
        floor = stats.smallest_permutation_p(len(c.a), len(c.b))
        text = (f"{c.env}: {claim.better} - {c.worse} = {float(point):+.3g} [Welch 95% CI {float(low):+.3g}, "
                f"{float(high):+.3g}], permutation p = {c.p_value:.3g}")
        if floor > stats.ALPHA:
            text += f" (the smallest possible at {len(c.a)} v {len(c.b)} is {floor:.3g})"
        text += " "
    else:
        kind = "distribution-free" if c.bounds is not None else "Welch, for reference"
        text = f"{c.env}: {claim.better} - {c.worse} = {float(point):+.3g} [{kind} 95% CI {float(low):+.3g}, {float(high):+.3g}] "
        if c.bounds is None:
            return text + "undecided (no declared range)"
    if c.at_bound:
        return text + f"undecided (every seed of both at the {c.at_bound})"
    return text + _LINE[c.outcome]


def _what_would_decide(claim: OrderingClaim, comparisons: list[_Comparison]) -> str:
    """How many seeds per side would decide the undecided comparisons, if the observed gap and spread were the truth."""
    fewest = stats.fewest_seeds_for_permutation()
    needs, refuses = [], []
    for c in comparisons:  # beats only: a matches claim is decided by an interval's width (below), not a power
        if claim.relation != "beats" or c.outcome != stats.UNDECIDED or c.at_bound:
            continue
        if stats.smallest_permutation_p(len(c.a), len(c.b)) > stats.ALPHA:
            refuses.append(c)
        sd, observed = stats.pooled_sd([c.a, c.b]), float(c.interval.point)
        what = f"the observed gap {abs(observed):.3g}"
        if claim.by_factor is not None:  # on the log scale, beyond the factor
            sd, observed = stats.pooled_sd([np.log10(c.a), np.log10(c.b)]), observed - math.log10(claim.by_factor)
            what = f"the observed factor {10 ** float(c.interval.point):.3g} above {claim.by_factor:g}"
        if sd > 0 and observed > 0:
            needs.append((max(stats.seeds_to_detect(sd, observed), fewest), c, what, sd))
    texts = []
    if refuses:
        c = refuses[0]
        texts.append(
            f"The permutation test cannot reach 0.025 at {len(c.a)} v {len(c.b)} seeds (smallest p "
            f"{stats.smallest_permutation_p(len(c.a), len(c.b)):.3g}): at least {fewest} seeds per side are needed to decide"
        )
    if any(c.at_bound for c in comparisons):
        texts.append("Runs that leave the floor/ceiling (more frames) would decide the comparisons stuck there")
    if claim.relation != "beats" and (bounded := [c for c in comparisons if c.bounds is not None
                                                  and c.outcome == stats.UNDECIDED and not c.at_bound]):
        texts.append(_bounded_seeds_note(claim, bounded))
    if any(c.bounds is None for c in comparisons) and claim.relation != "beats":
        texts.append(
            "The metric has no declared range, and a difference of means over seeds has no bound without one: seeds "
            "that partly collapse break Welch's normality (shown for reference only), so more seeds alone would not "
            "decide it; a metric_range (judged by a bound valid for any distribution on it) would"
        )
    if needs:
        n, c, what, sd = max(needs, key=lambda x: x[0])
        texts.append(
            f"If the observed gap and spread were the truth, about {n} seeds per side would show {what} with 80% power "
            f"({c.env}, {claim.better} vs {c.worse}, pooled SD {sd:.3g}; normal seeds)"
        )
    if not texts:
        texts.append("The observed differences point the other way: more seeds would more likely contradict it")
    return "; ".join(texts)


def _bounded_seeds_note(claim: OrderingClaim, comparisons: list[_Comparison]) -> str:
    """What would decide undecided matches / matches_or_beats comparisons (distribution-free intervals), if each
    side's seeds were spread as observed: the interval narrows about as 1/sqrt(n) around the observed difference."""
    sign = 1.0 if claim.higher_is_better else -1.0  # c.bounds and c.interval are of the signed values
    seeds = [(stats.seeds_for_bounded_ordering(claim.relation, sign * np.asarray(c.a), sign * np.asarray(c.b),
                                               claim.margin, c.bounds, MOST_SEEDS), c) for c in comparisons]
    out_of_reach = [c for n, c in seeds if n is None]
    wrong_side = [c for c in out_of_reach if float(c.interval.point) <= -claim.margin
                  or (claim.relation == "matches" and float(c.interval.point) >= claim.margin)]
    if wrong_side:
        c = wrong_side[0]
        return (f"The observed difference is beyond the margin ({c.env}, {claim.better} vs {c.worse}: "
                f"{float(c.interval.point):+.3g}, margin {claim.margin:g}): more seeds would more likely contradict it")
    if out_of_reach:
        c = out_of_reach[0]
        low, high = c.bounds
        return (f"Even {MOST_SEEDS} seeds per side spread like these would not decide it ({c.env}, {claim.better} vs "
                f"{c.worse}: observed difference {float(c.interval.point):+.3g}, margin {claim.margin:g}, on a range "
                f"{high - low:g} wide that a bound valid for any distribution must allow for); only a wider margin "
                "would, where the paper's words allow one")
    n, c = max(seeds, key=lambda x: x[0])
    return (f"If each side's seeds were spread as observed, about {n} seeds per side would decide it ({c.env}, "
            f"{claim.better} vs {c.worse}; the distribution-free interval narrows about as 1/sqrt(n))")


def _power_text(comparisons: list[_Comparison]) -> str:
    """'if the observed spread were the truth: n seeds per side detect D with 80% power (permutation test)'."""
    usable = [c for c in comparisons if not c.at_bound]
    if not usable:
        return ""
    sd = max(stats.pooled_sd([c.a, c.b]) for c in usable)
    n = min(min(len(c.a), len(c.b)) for c in usable)
    if stats.smallest_permutation_p(n, n) > stats.ALPHA:
        return f"{n} seeds per side cannot detect any difference (the permutation test's smallest p exceeds 0.025)"
    if not sd > 0:
        return ""
    return (
        f"if the spread seen were the truth (pooled SD {sd:.3g}, normal seeds): {n} seeds per side detect a "
        f"difference of {stats.detectable_difference(sd, n):.3g} with 80% power (permutation test, one-sided 0.025)"
    )


def _trivial_check(claim: OrderingClaim, spec: ExperimentSpec, comparisons: list[_Comparison]) -> str:
    """'' when every compared variant is shown above the trivial level by the claim's margin, else why not (one line)."""
    sign = 1.0 if claim.higher_is_better else -1.0
    failing, levels = [], []
    for c in comparisons:
        level, source = trivial_level_of(spec, c.env, claim.metric, claim.metric_range, claim.higher_is_better)
        if level is None:
            continue
        levels.append(f"{c.env} {level:.4g} ({source})")
        for name, values in ((claim.better, c.a), (c.worse, c.b)):
            if not bool(stats.above_trivial(sign * np.asarray(values), sign * level, claim.margin, c.bounds)):
                failing.append(f"{name} on {c.env}")
    if not failing:
        return ""
    return (
        f"uninformative: {', '.join(dict.fromkeys(failing))} not shown above the trivial level by the claim's margin "
        f"{claim.margin:g} (one-sided 0.025; trivial level {'; '.join(dict.fromkeys(levels))}): variants that learned "
        "nothing match"
    )


def trivial_level_of(
    spec: ExperimentSpec, env_id: str, metric: str, metric_range: tuple[float, float] | None, higher_is_better: bool
) -> tuple[float | None, str]:
    """The do-nothing level of a metric on an environment, and where it comes from.

    Returns: the upper end of the best trivial policy's measured 95% interval (``rlrepro.results.trivial``: a level
    inside that interval is the trivial policy's, whatever its mean) for a return metric, else the
    environment's random score (trivial scores missing); the range's worse end for a metric with a declared
    range; (None, reason) when neither exists.
    """
    if metric in RETURN_METRICS:
        env = next(e for e in spec.environments if e.id == env_id)
        try:
            score = trivial.trivial_level(env)
            short = trivial.too_few_episodes(env, score)
            return float(score.high), (f"{score.policy}, upper end of the 95% interval of its mean {score.mean:.4g} over "
                                       f"{score.episodes} episodes" + (f"; {short}" if short else ""))
        except trivial.TrivialScoresError as error:
            why = str(error).splitlines()[0]
        random = spec.random_score(env_id)
        if random is not None:
            return float(random), f"random score; {why}"
    if metric_range is not None:
        return (float(metric_range[0]) if higher_is_better else float(metric_range[1])), "the range's worse end"
    return None, "no trivial level for this metric"


# --- ordering claims on an aggregate over environments ---------------------------------------------------------


def normalised_scores(spec: ExperimentSpec, env_id: str, values: np.ndarray) -> np.ndarray:
    """Atari: human-normalised (dqn_zoo_57 table, 1 = human); others: (x - random_score) / (high - random_score)."""
    env = next(e for e in spec.environments if e.id == env_id)
    if env.kind == "atari":
        return human_normalized_scores([env.game] * values.shape[-1], values)
    return (values - env.random_score) / (env.return_range[1] - env.random_score)


def _variant_matrix(
    spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], variant: str, envs: list[str], metric: str
) -> np.ndarray | None:
    """(runs, envs) normalised scores of a variant, runs cut to its fewest per environment; None if any is missing."""
    columns = []
    for env in envs:
        cell = cells.get((variant, env))
        values = _finite(cell.values(metric)) if cell else []
        if not values:
            return None
        columns.append(values)
    runs = min(len(c) for c in columns)
    raw = np.asarray([c[:runs] for c in columns], dtype=np.float64).T
    return np.stack([normalised_scores(spec, env, raw[:, [j]])[:, 0] for j, env in enumerate(envs)], axis=1)


def _judge_ordering_aggregate(
    claim: OrderingClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], reps: int, *,
    advise: bool = True,
) -> Verdict:
    envs = claim.environments or sorted({env for (_, env) in cells})
    method = (
        f"permutation test of the difference of {claim.aggregate}s, whole runs permuted between the variants, "
        "one-sided 0.025 (any distribution; runs independent)" if claim.relation == "beats" else
        "stratified bootstrap over runs, small-sample corrected (asymptotic: not distribution-free at these n)"
    )
    better = _variant_matrix(spec, cells, claim.better, envs, claim.metric)
    if better is None:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"not run at this scale: {claim.better} on some of {envs}",
                       claim.paper_evidence, method=method)
    sign = 1.0 if claim.higher_is_better else -1.0
    codes, lines, matrices = [], [], {claim.better: better}
    for worse_name in claim.worse:
        worse = _variant_matrix(spec, cells, worse_name, envs, claim.metric)
        if worse is None:
            return Verdict(claim.id, claim.statement, NOT_JUDGED, f"not run at this scale: {worse_name} on some of {envs}",
                           claim.paper_evidence, method=method)
        if min(len(better), len(worse)) < 2:
            why = f"one run per side gives no interval ({claim.better} {len(better)}, {worse_name} {len(worse)} run(s))"
            return Verdict(claim.id, claim.statement, INCONCLUSIVE, why, claim.paper_evidence, method=method)
        matrices[worse_name] = worse
        code, line = _aggregate_comparison(claim, sign * better, sign * worse, worse_name, reps)
        codes.append(code)
        lines.append(line)
    code = int(stats.combine_each(codes))
    detail = (
        f"{claim.metric} normalised per environment (Atari: human-normalised, dqn_zoo_57; others: (x - random) / "
        f"(high - random)), {claim.aggregate} over {len(envs)} environments ({', '.join(envs)}) with rliable's "
        f"definition; {len(better)} run(s) of {claim.better}. " + "; ".join(lines)
    )
    if code == stats.UNDECIDED and advise:
        detail += ". More seeds per environment (or more environments) would decide it"
        if claim.relation == "beats" and stats.smallest_permutation_p(len(better), len(better)) > stats.ALPHA:
            detail += f" (the permutation test needs at least {stats.fewest_seeds_for_permutation()} runs per side)"
    if claim.relation != "beats" and code == stats.SUPPORTED:
        trivial = _aggregate_trivial_check(claim, spec, envs, matrices, reps)
        if trivial:
            return Verdict(claim.id, claim.statement, UNINFORMATIVE, f"{trivial}; the data alone would read {REPRODUCED}. "
                           f"{detail}", claim.paper_evidence, method=method)
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, method=method)


def _aggregate_comparison(claim: OrderingClaim, better: np.ndarray, worse: np.ndarray, worse_name: str, reps: int) -> tuple[int, str]:
    """(outcome code, line) of one aggregate comparison on signed normalised scores (positive = better)."""
    sign = 1.0 if claim.higher_is_better else -1.0
    if claim.relation == "beats":
        p = float(stats.aggregate_permutation_p(better, worse, claim.aggregate))
        reverse = float(stats.aggregate_permutation_p(worse, better, claim.aggregate))
        code = stats.SUPPORTED if p <= stats.ALPHA else stats.CONTRADICTED if reverse <= stats.ALPHA else stats.UNDECIDED
        point = float(batched_aggregate(claim.aggregate, better) - batched_aggregate(claim.aggregate, worse))
        return code, (f"{claim.aggregate}({claim.better}) - {claim.aggregate}({worse_name}) = {sign * point:+.3g}, "
                      f"permutation p = {p:.3g} {_LINE[code]}")
    point, low, high = stratified_bootstrap_difference(better, worse, claim.aggregate, reps=reps)
    if claim.relation == "matches":
        code = int(stats.decide_matches(low, high, claim.margin))
    else:
        code = int(stats.decide_non_inferior(low, high, claim.margin))
    shown = (point, low, high) if claim.higher_is_better else (-point, -high, -low)
    return code, (f"{claim.aggregate}({claim.better}) - {claim.aggregate}({worse_name}) = {shown[0]:+.3g} "
                  f"[stratified-bootstrap 95% CI {shown[1]:+.3g}, {shown[2]:+.3g}] {_LINE[code]}")


def _aggregate_trivial_check(
    claim: OrderingClaim, spec: ExperimentSpec, envs: list[str], matrices: dict[str, np.ndarray], reps: int
) -> str:
    """'' when each variant's aggregate is shown above the trivial policies' aggregate by the margin, else why not."""
    levels = []
    for env in envs:
        level, _ = trivial_level_of(spec, env, claim.metric, claim.metric_range, claim.higher_is_better)
        if level is None:
            return ""
        levels.append(float(normalised_scores(spec, env, np.asarray([level]))[0]))
    trivial = float(batched_aggregate(claim.aggregate, np.asarray([levels])))
    sign = 1.0 if claim.higher_is_better else -1.0
    failing = []
    for name, matrix in matrices.items():
        _, low, high = corrected_bootstrap_ci(sign * matrix, claim.aggregate, reps=reps)
        if not low > sign * trivial + claim.margin:
            failing.append(name)
    if not failing:
        return ""
    return (f"uninformative: {', '.join(failing)} not shown above the trivial policies' {claim.aggregate} "
            f"{trivial:.3g} by the claim's margin {claim.margin:g}: variants that learned nothing match")


# --- threshold and aggregate claims ----------------------------------------------------------------------------


SEED_FLAG = "best_is_seed"  # a search's summary: 1 when its best program is the unchanged bootstrap seed
HURDLE_REJECTS = "hurdle_reject_fraction"  # a search's summary: 1 when no program it trained cleared the hurdle
FOUND_PROGRAM_METRICS = ("best_td_like",)  # properties of the program a search found, not of its seed


def _judge_threshold(claim: ThresholdClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], *,
                     advise: bool = True) -> Verdict:
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    bounds = metric_bounds(spec, claim, claim.environment)
    method = (
        f"Anderson's distribution-free bound on the mean over seeds, range [{bounds[0]:g}, {bounds[1]:g}], one-sided "
        "0.025 (any distribution on the range)" if bounds is not None else
        "none: the metric has no declared range, so a mean over seeds is not decided (its t interval is shown for "
        "reference; it rests on normality, which seeds that partly collapse break)"
    )
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale",
                       claim.paper_evidence, method=method)
    needs = f"needs {claim.op} {claim.value:g} (tolerance {claim.tolerance:g})"
    seed_note = ""
    if claim.metric in FOUND_PROGRAM_METRICS:
        values, seed_note = _drop_searches_that_found_nothing(cell, claim.metric)
        if not values:
            detail = (
                f"{seed_note}: no search found a program of its own, so its {claim.metric} is no finding; a longer "
                "search (more proposals) would decide"
            )
            return _threshold_verdict(claim, stats.UNDECIDED, detail, method)
    if bounds is not None and not _inside(values, bounds):
        detail = (f"{claim.metric} of {claim.variant} on {claim.environment}: values outside the declared range "
                  f"[{bounds[0]:g}, {bounds[1]:g}] ({', '.join(f'{v:.4g}' for v in values)}): the range is wrong; fix it")
        return _threshold_verdict(claim, stats.UNDECIDED, detail, method)
    if len(values) < 2:
        detail = (
            f"{claim.metric} of {claim.variant} on {claim.environment}: {values[0]:.4g} from one seed; {needs}. "
            "One seed gives no interval: at least 2 seeds are needed to decide" + (f" ({seed_note})" if seed_note else "")
        )
        return _threshold_verdict(claim, stats.UNDECIDED, detail, method)
    code, interval = stats.decide_threshold_values(values, claim.op, claim.bound, bounds)
    code = int(code)
    kind = "distribution-free" if bounds is not None else "t (for reference)"
    detail = (
        f"{claim.metric} of {claim.variant} on {claim.environment}: mean {float(interval.point):.4g} "
        f"[95% {kind} interval {float(interval.low):.4g}, {float(interval.high):.4g}] over {len(values)} seeds; {needs}"
        + ("; reproduced only when the whole interval is on the claimed side" if bounds is not None else "")
    )
    if code == stats.UNDECIDED and advise:
        detail += _threshold_seeds_note(claim, values, bounds, interval)
    detail = _weak_bar_note(claim, spec) + detail
    return _threshold_verdict(claim, code, detail + (f" ({seed_note}; those searches are left out)" if seed_note else ""), method)


WEAK_BAR = 0.05  # a bar within 5% of the trivial-to-top span from the trivial level is reported as weak


def _weak_bar_note(claim: ThresholdClaim, spec: ExperimentSpec) -> str:
    """'weak bar: ...' when a return threshold sits within WEAK_BAR of the span (Atari: human - random; else the
    return range) above the trivial level (below it for '<='), else ''."""
    if claim.metric not in RETURN_METRICS:
        return ""
    env = next(e for e in spec.environments if e.id == claim.environment)
    if env.kind == "atari":
        from rlrepro.results.normalization import canonical_game_name, reference_scores  # noqa: PLC0415

        known = reference_scores("dqn_zoo_57").get(canonical_game_name(env.game))
        span = abs(known[1] - known[0]) if known else None
    else:
        bounds = getattr(env, "return_range", None)
        span = bounds[1] - bounds[0] if bounds is not None else None
    level, source = trivial_level_of(spec, claim.environment, claim.metric, claim.metric_range, claim.op == ">=")
    if not span or level is None:
        return ""
    gap = (claim.bound - level) if claim.op == ">=" else (level - claim.bound)
    if gap >= WEAK_BAR * span:
        return ""
    if gap <= 0:
        return (f"weak bar: {claim.op} {claim.bound:g} is inside the trivial level {level:.4g} ({source}): a trivial "
                "policy is not shown to miss it. ")
    return (f"weak bar: {claim.op} {claim.bound:g} is {100 * gap / span:.1f}% of the span ({span:.4g}) from the trivial "
            f"level {level:.4g} ({source}). ")


def _threshold_seeds_note(claim: ThresholdClaim, values: list[float], bounds: tuple[float, float] | None, interval: stats.Interval) -> str:
    """What would decide an undecided threshold, if the seeds' observed distribution were the truth."""
    gap = abs(float(interval.point) - claim.bound)
    on_side = claim.passes(float(interval.point))
    if bounds is not None:
        if not on_side:
            return ". The observed mean is on the other side: more seeds would more likely contradict it"
        n = stats.seeds_for_bounded_threshold(values, *bounds, claim.op, claim.bound)
        if n is None:
            return (f". Even 256 seeds spread like these would not decide it: a bound valid for any distribution on "
                    f"[{bounds[0]:g}, {bounds[1]:g}] must allow a share of seeds (shrinking as 1/sqrt(n)) at the far "
                    f"end of the range, and the bar is only {gap:.3g} from the observed mean")
        return f". If the seeds' observed distribution were the truth, about {n} seeds would put the bound on the claimed side"
    return (". The metric has no declared range, and a mean over seeds has no bound without one: seeds that partly "
            "collapse break the t interval's normality (shown for reference only), so more seeds alone would not decide "
            "it; a metric_range (judged by a bound valid for any distribution on it) or the claim stated per seed "
            "(seeds_share) would")


def _judge_best_of(claim: ThresholdClaim, cells: dict[tuple[str, str], CellResult], *, runs: int) -> Verdict:
    """'The best k of the n runs reach the value': a count of runs, not a mean (the paper's selection of its best
    k, or a mechanism seen in at least k runs, k = 1: 'PBT copied a member', 'the search found TD').

    At least k passing runs reproduce it whatever the missing runs would show; fewer than k, with too few runs
    missing to make up the count, do not. The share of passing runs gets a Clopper-Pearson interval: what a
    reader should expect of one more seed, which the best k alone hide. A search that found nothing (its best
    program is its unchanged bootstrap seed, or no program cleared the hurdle) has nothing to judge: where only
    such searches could make up the count, the claim is inconclusive (a longer search would decide), never
    contradicted.
    """
    k = claim.best_of
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    where = f"{claim.metric} of {claim.variant} on {claim.environment}"
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale",
                       claim.paper_evidence, method=BEST_OF_METHOD)
    counted, seed_note = (_drop_searches_that_found_nothing(cell, claim.metric) if claim.metric in FOUND_PROGRAM_METRICS
                          else (values, ""))
    runs = max(runs, len(values))
    passing = sum(claim.passes(v) for v in counted)
    best = sorted(counted, reverse=claim.op == ">=")[:k]
    low, high = stats.binomial_interval(passing, len(values))
    facts = (
        f"{where}: {passing} of {len(values)} finished runs (of {runs}) reach {claim.op} {claim.value:g} (tolerance "
        f"{claim.tolerance:g})" + (f" ({seed_note}: not a finding, not counted)" if seed_note else "")
        + f"; the best {len(best) or k}: {', '.join(f'{v:.4g}' for v in best) or 'none'}; the claim counts the best {k} of "
        f"the runs, not their mean. All {len(values)} runs: median {float(np.median(values)):.4g}; share of runs that "
        f"reach it {passing / len(values):.2f} [95% Clopper-Pearson {low:.2f}, {high:.2f}]"
    )
    if passing >= k:
        return _threshold_verdict(claim, stats.SUPPORTED, facts)
    missing = runs - len(values)
    if passing + missing >= k:
        detail = f"{facts}; {missing} run(s) missing: they decide whether {k} reach it"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence, method=BEST_OF_METHOD)
    if passing + missing + len(values) - len(counted) >= k:
        detail = (f"{facts}; only searches that found nothing could make up the count: a longer search (more "
                  "proposals) would decide")
        return _threshold_verdict(claim, stats.UNDECIDED, detail)
    return _threshold_verdict(claim, stats.CONTRADICTED, f"{facts}; fewer than {k} can reach it")


SHARE_METHOD = "share of seeds that pass: exact Clopper-Pearson interval, one-sided 0.025 (any distribution)"


def _judge_share(claim: ThresholdClaim, cells: dict[tuple[str, str], CellResult], *, advise: bool = True) -> Verdict:
    """'More than a share of the seeds pass on their own' (``seeds_share``): the passing share's Clopper-Pearson
    interval against it. A per-seed property (a discrete metric the seeds agree on exactly) is judged here; its mean
    with no spread would have no interval."""
    share = claim.seeds_share
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale",
                       claim.paper_evidence, method=SHARE_METHOD)
    passing = sum(claim.passes(v) for v in values)
    low, high = stats.binomial_interval(passing, len(values))
    code = int(stats.decide_share(passing, len(values), share))
    spread = f"{min(values):.3g} to {max(values):.3g}" if max(values) > min(values) else f"all {values[0]:.3g}"
    detail = (  # one clause up to the interval: a report's "ours" (rlrepro.results.claim_rows) shows the values too
        f"{claim.metric} of {claim.variant} on {claim.environment}: {passing} of {len(values)} seeds "
        f"{'lie' if claim.op == 'within' else 'reach'} {claim.requirement}, the seeds {spread}, share "
        f"{passing / len(values):.2f} [95% "
        f"Clopper-Pearson {low:.2f}, {high:.2f}]; needs more than {share:g} of the seeds, reproduced only when the "
        "whole interval is above it"
    )
    if code == stats.UNDECIDED and advise:
        more = next((n for n in range(len(values) + 1, 257)
                     if stats.decide_share(round(n * passing / len(values)), n, share) == stats.SUPPORTED), None)
        detail += (f". If the observed share were the truth, about {more} seeds would decide it" if more and passing
                   else ". The observed share does not exceed it: more seeds would more likely contradict it")
    return _threshold_verdict(claim, code, detail, SHARE_METHOD)


def _drop_searches_that_found_nothing(cell: CellResult, metric: str) -> tuple[list[float], str]:
    """The metric of the searches that found a program of their own, and a note on the others: a search found
    nothing when its best program is its unchanged bootstrap seed (DQN: TD by construction) or when no program it
    trained cleared the hurdle (its best is the least bad of losses that do not train: no finding either way)."""
    # per search: (value, best is its seed, no program cleared the hurdle); a search counts as one or the other
    rows = [(v, s == 1.0, s != 1.0 and h == 1.0)
            for v, s, h in zip(cell.values(metric), cell.values(SEED_FLAG), cell.values(HURDLE_REJECTS))
            if v is not None and math.isfinite(v)]
    kept = [v for v, seeded, no_hurdle in rows if not (seeded or no_hurdle)]
    notes = [f"{text} in {count} of {len(rows)} search(es)" for text, count in (
        ("the best program is the unchanged bootstrap seed", sum(r[1] for r in rows)),
        ("no program cleared the hurdle", sum(r[2] for r in rows))) if count]
    return kept, "; ".join(notes)


BEST_OF_METHOD = ("count of runs that pass (the best k: the paper's selection, or a mechanism seen in k runs); share of "
                  "runs: Clopper-Pearson (exact)")


def _threshold_verdict(claim: ThresholdClaim, code: int, detail: str, method: str = BEST_OF_METHOD) -> Verdict:
    if not claim.informative:
        detail = (
            f"uninformative: a trivial policy already passes it ({claim.informative_reason}); "
            f"the data alone would read {_OUTCOME[code]}. {detail}"
        )
        return Verdict(claim.id, claim.statement, UNINFORMATIVE, detail, claim.paper_evidence, method=method)
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, method=method)


# --- a run's policy against the trivial policies' games ----------------------------------------------------------

ABOVE_TRIVIAL_METHOD = (
    "two-sample permutation test of each run's evaluation games against each trivial policy's games (same protocol), "
    "one-sided 0.025, valid for any score distribution; every (run, policy) pair must hold (intersection-union); never "
    "'not reproduced' (a handful of games cannot rule out a policy that plays some games well)"
)


def _judge_above_trivial(claim: AboveTrivialClaim, spec: ExperimentSpec, scale: str,
                         cells: dict[tuple[str, str], CellResult], *, advise: bool = True) -> Verdict:
    """Each run's last evaluation games (summary.json ``eval_scores``) against the games of every trivial policy
    measured under the run's protocol (``rlrepro.results.trivial``): ``stats.decide_games_above_trivial`` per
    (run, policy), combined by intersection-union."""
    cell = cells.get((claim.variant, claim.environment))
    not_judged = lambda detail: Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence,  # noqa: E731
                                        method=ABOVE_TRIVIAL_METHOD)
    if cell is None or not cell.seeds:
        return not_judged(f"{claim.variant} on {claim.environment} not run at this scale")
    if lacking := [seed for seed, games in zip(cell.seeds, cell.eval_scores) if not games]:
        return not_judged(f"the run(s) of seed(s) {', '.join(map(str, lacking))} keep no evaluation games (summary.json "
                          "eval_scores; runs finished before they were kept): training them again would decide")
    env = resolve_env(spec, claim.environment, scale)
    try:
        scores = trivial.trivial_scores(env)
    except trivial.TrivialScoresError as error:
        return not_judged(str(error))
    if short := [policy for policy, score in scores.items() if len(score.scores) < trivial.MIN_EPISODES]:
        return not_judged(f"the stored {', '.join(short)} row(s) of {env.game} keep fewer than "
                          f"{trivial.MIN_EPISODES} per-game scores; measure them with: {trivial.measure_command(env)}")
    codes, lines = [], []
    for seed, games in zip(cell.seeds, cell.eval_scores):
        for policy, score in sorted(scores.items()):
            code, p = stats.decide_games_above_trivial(games, score.scores)
            codes.append(int(code))
            lines.append(f"seed {seed} ({len(games)} games, mean {np.mean(games):.4g}) v {policy} ({len(score.scores)} "
                         f"games, mean {score.mean:.4g}): p {float(p):.3g}, {_LINE[int(code)]}")
    code = int(stats.combine_each(np.array(codes)))
    detail = (f"{claim.environment} at the {scale} protocol ({env.max_episode_frames:,} frames per game at most); "
              + "; ".join(lines))
    if code == stats.UNDECIDED and advise:
        detail += (". Games at the trivial level show no gain but cannot rule one out (a policy that plays some games "
                   "well): more evaluation games (evaluation.episodes at this scale) would decide")
    splits = dict.fromkeys(stats.permutation_text(len(games), len(score.scores))
                           for games in cell.eval_scores for score in scores.values())
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence,
                   method=f"{ABOVE_TRIVIAL_METHOD}; {'; '.join(splits)}")


AGGREGATES = {"median_hns": "median", "mean_hns": "mean", "iqm_hns": "iqm"}


def hns_matrix(
    spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], variant: str, metric: str, table: str
) -> tuple[list[str], np.ndarray]:
    """Games and a (runs, games) matrix of human-normalised scores in percent (runs cut to the fewest seeds)."""
    games_by_env = {env.id: getattr(env, "game", env.id) for env in spec.environments}
    columns, games = [], []
    for (name, env), cell in sorted(cells.items()):
        values = _finite(cell.values(metric))
        if name == variant and values:
            games.append(games_by_env[env])
            columns.append(values)
    if not columns:
        return [], np.zeros((0, 0))
    runs = min(len(c) for c in columns)
    raw = np.asarray([c[:runs] for c in columns], dtype=np.float64).T
    return games, 100.0 * human_normalized_scores(games, raw, table)


AGGREGATE_BEST_OF_METHOD = ("count of runs whose own aggregate over the games passes (run i: seed i of every game; "
                            "the paper's one run per game), not a mean over runs")


def _judge_aggregate(
    claim: AggregateClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], reps: int, *, runs: int
) -> Verdict:
    method = "stratified bootstrap over runs, small-sample corrected (asymptotic: human-normalised scores have no range)"
    if claim.best_of is not None:
        method = AGGREGATE_BEST_OF_METHOD
    games, matrix = hns_matrix(spec, cells, claim.variant, claim.metric, claim.hns_table)
    known = [i for i, game in enumerate(games) if np.isfinite(matrix[:, i]).all()]
    if len(known) < claim.min_environments:
        detail = f"{len(known)} game(s) with scores at this scale; the claim needs {claim.min_environments}"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence, method=method)
    if claim.best_of is not None:
        return _judge_aggregate_best_of(claim, matrix[:, known], method, runs)
    point, low, high = corrected_bootstrap_ci(matrix[:, known], AGGREGATES[claim.aggregate], reps=reps)
    bound = claim.value - claim.tolerance if claim.op == ">=" else claim.value + claim.tolerance
    detail = (
        f"{claim.aggregate} of {claim.variant} over {len(known)} games ({matrix.shape[0]} run(s) each, "
        f"{claim.hns_table}): {point:.1f}% [95% CI {low:.1f}, {high:.1f}; stratified bootstrap, small-sample "
        f"corrected]; needs {claim.op} {claim.value:g}% (tolerance {claim.tolerance:g})"
    )
    if matrix.shape[0] < 2:
        return Verdict(claim.id, claim.statement, INCONCLUSIVE, detail + ". One run per game gives no interval",
                       claim.paper_evidence, method=method)
    code = int(stats.decide_threshold(low, high, claim.op, bound))
    if high - low <= 0:
        code, detail = stats.UNDECIDED, detail + ". No spread: a zero-width interval is not certainty"
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, method=method)


def _judge_aggregate_best_of(claim: AggregateClaim, matrix: np.ndarray, method: str, runs: int) -> Verdict:
    """'The aggregate of the best k runs reaches the value': each run's own aggregate over the games (``matrix``:
    runs x games, human-normalised in percent), at least k of them on the claimed side of value -+ tolerance.
    Fewer than k passing while the ``runs`` the scale plans could still make up k: not judged yet."""
    per_run = batched_aggregate(AGGREGATES[claim.aggregate], matrix[:, None, :])
    bound = claim.value - claim.tolerance if claim.op == ">=" else claim.value + claim.tolerance
    passing = int(sum(v >= bound if claim.op == ">=" else v <= bound for v in per_run))
    detail = (f"{claim.aggregate} of {claim.variant} over {matrix.shape[1]} games per run ({claim.hns_table}): "
              + ", ".join(f"{v:.1f}%" for v in per_run) + f"; {passing} of {len(per_run)} run(s) reach {claim.op} "
              f"{claim.value:g}% (tolerance {claim.tolerance:g}); the claim counts the best {claim.best_of}")
    if passing < claim.best_of and passing + runs - len(per_run) >= claim.best_of:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{detail}; {runs - len(per_run)} run(s) missing: they "
                       f"decide whether {claim.best_of} reach it", claim.paper_evidence, method=method)
    code = stats.SUPPORTED if passing >= claim.best_of else stats.CONTRADICTED
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, method=method)


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


# --- power up front (rlrepro plan) -----------------------------------------------------------------------------


#: What ``claim_power`` says when neither the spec nor a table gives a spread, and what that means.
POWER_UNKNOWN = "unknown"
POWER_UNKNOWN_MEANING = "no expected_sd in the spec and no table yet"


def claim_power(spec: ExperimentSpec, scale: str, table_json: Path | None = None) -> list[tuple[str, str]]:
    """Per ordering claim judged at ``scale`` (claim id, text): the smallest difference the scale's seeds per side
    can detect with 80% power with the 'beats' test (the permutation test, one-sided 0.025; normal seeds).

    From the claim's ``expected_sd`` (before any run), else from the spread seen in the experiment's last table
    (``table_json``), else POWER_UNKNOWN.
    """
    seen = {}
    if table_json is not None and table_json.exists():
        seen = {c["claim"]: c.get("power", "") for c in json.loads(table_json.read_text())["claims"]}
    seeds = spec.scale(scale).seeds
    powers = []
    for claim in spec.claims:
        if not isinstance(claim, OrderingClaim) or scale not in claim.judged_at:
            continue
        gap = f" (margin {claim.margin:g})" if claim.margin is not None else ""
        if claim.expected_sd is not None and claim.relation == "beats" and seeds < stats.fewest_seeds_for_permutation():
            text = (f"none: {seeds} seeds per side cannot reach 0.025 with the permutation test (at least "
                    f"{stats.fewest_seeds_for_permutation()} are needed)")
        elif claim.expected_sd is not None:
            d = stats.detectable_difference(claim.expected_sd, seeds)
            text = (f"{d:.3g} in {claim.metric} if the expected SD {claim.expected_sd:g} were the truth (normal seeds, "
                    f"permutation test){gap}")
        elif seen.get(claim.id):
            text = f"from the last table: {seen[claim.id]}{gap}"
        else:
            text = POWER_UNKNOWN
        powers.append((claim.id, text))
    return powers
