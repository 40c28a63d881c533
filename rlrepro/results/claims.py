"""Claim verdicts with calibrated statistics: reproduced, not reproduced, inconclusive, or not judged.

- *reproduced*: the data support the claim at one-sided level 0.025 (a 95% interval on the claimed side);
- *not reproduced*: the data contradict it (the interval lies wholly on the other side);
- *inconclusive*: this scale cannot decide (the detail says about how many seeds would);
- *not judged*: not run, scale below the claim's ``judged_at``, or missing runs.

A threshold claim that a uniform-random policy already passes (``informative: false``) is *uninformative*:
reported apart, never counted as reproduced. The statistics are in ``rlrepro.results.stats`` and their error
rates are measured by ``rlrepro.results.calibration``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rlrepro.results import stats
from rlrepro.results.aggregation import corrected_bootstrap_ci, stratified_bootstrap_difference
from rlrepro.results.collect import CellResult
from rlrepro.results.normalization import human_normalized_scores
from rlrepro.specs import AggregateClaim, ExperimentSpec, OrderingClaim, ThresholdClaim
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
    INCONCLUSIVE: "this scale cannot decide (the detail says about how many seeds would)",
    NOT_JUDGED: "not run, below the claim's scale, or missing runs",
    UNINFORMATIVE: "a uniform-random policy already passes the claim: never counted as reproduced",
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

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def judge_claims(
    spec: ExperimentSpec, scale: str, cells: dict[tuple[str, str], CellResult], *, reps: int = 2000
) -> list[Verdict]:
    """A verdict for every claim of the spec, from the finished runs in ``cells``."""
    verdicts = []
    for claim in spec.claims:
        if scale not in claim.judged_at:
            seeds = spec.scale(scale).seeds
            detail = (
                f"the claim is judged at scale(s) {', '.join(claim.judged_at)}; at '{scale}' {seeds} "
                f"seed{'s' if seeds != 1 else ''} of {frame_count(spec, scale).text()} are too small to tell"
            )
            verdicts.append(Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence))
        elif isinstance(claim, OrderingClaim) and claim.holds_on == "aggregate":
            verdicts.append(_judge_ordering_aggregate(claim, spec, cells, reps))
        elif isinstance(claim, OrderingClaim):
            verdicts.append(_judge_ordering(claim, spec, cells))
        elif isinstance(claim, ThresholdClaim) and claim.best_of is not None:
            verdicts.append(_judge_best_of(claim, cells, runs=spec.scale(scale).seeds))
        elif isinstance(claim, ThresholdClaim):
            verdicts.append(_judge_threshold(claim, cells))
        else:
            verdicts.append(_judge_aggregate(claim, spec, cells, reps))
    return verdicts


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


def _judge_ordering(claim: OrderingClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult]) -> Verdict:
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
            if not a or not b:
                missing.append(f"finite {claim.metric} for {claim.better} vs {worse_name} on {env}")
            elif len(a) < 2 or len(b) < 2:
                few.append(f"{claim.better} vs {worse_name} on {env} has {len(a)} and {len(b)} run(s)")
            else:
                comparisons.append(_compare(claim, spec, env, worse_name, a, b))
    if missing or not (comparisons or few):
        why = "not run at this scale: " + "; ".join(dict.fromkeys(missing)) if missing else "no runs to compare"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, why, claim.paper_evidence)
    if few:
        why = "one run per side gives no interval; at least 2 seeds per variant are needed: " + "; ".join(few)
        return Verdict(claim.id, claim.statement, INCONCLUSIVE, why, claim.paper_evidence)
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
    detail = f"{rule}. " + "; ".join(lines)
    if code == stats.UNDECIDED:
        detail += ". " + _what_would_decide(claim, comparisons)
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence, _power_text(comparisons))


def _compare(claim: OrderingClaim, spec: ExperimentSpec, env: str, worse: str, a: list[float], b: list[float]) -> _Comparison:
    """Welch's interval of the signed difference (positive = the claimed-better side) and its decision."""
    sign = 1.0 if claim.higher_is_better else -1.0
    interval = stats.welch_interval(sign * np.asarray(a), sign * np.asarray(b))
    if claim.relation == "beats":
        outcome = stats.decide_beats(interval.low, interval.high)
        p = stats.one_sided_p(interval, 0.0)
    elif claim.relation == "matches":
        outcome = stats.decide_matches(interval.low, interval.high, claim.margin)
        negated = stats.Interval(-interval.point, -interval.high, -interval.low, interval.se, interval.df)
        p = np.maximum(stats.one_sided_p(interval, -claim.margin), stats.one_sided_p(negated, -claim.margin))
    else:
        outcome = stats.decide_non_inferior(interval.low, interval.high, claim.margin)
        p = stats.one_sided_p(interval, -claim.margin)
    at_bound = _at_bound(spec, env, claim.metric, a, b)
    if at_bound:  # every seed of both at the floor (or ceiling): this scale cannot tell them apart
        outcome, p = stats.UNDECIDED, 1.0
    return _Comparison(env, worse, a, b, interval, int(outcome), float(p), at_bound)


def _at_bound(spec: ExperimentSpec, env_id: str, metric: str, a: list[float], b: list[float]) -> str:
    env = next((e for e in spec.environments if e.id == env_id), None)
    bounds = getattr(env, "return_range", None)
    if bounds is None or metric not in RETURN_METRICS:
        return ""
    for name, bound in zip(("floor", "ceiling"), bounds):
        if all(v == bound for v in [*a, *b]):
            return f"{name} {bound:g}"
    return ""


def _rule(claim: OrderingClaim) -> str:
    side = "higher" if claim.higher_is_better else "lower"
    if claim.relation == "beats":
        return f"{claim.metric} ({side} is better): each difference's 95% Welch interval must lie on the better side of 0"
    if claim.relation == "matches":
        return f"{claim.metric}: each difference's 95% Welch interval must lie inside +-{claim.margin:g} (two one-sided tests)"
    return (
        f"{claim.metric} ({side} is better): each difference's 95% Welch interval must lie above -{claim.margin:g} "
        "on the better side (non-inferiority)"
    )


def _comparison_line(claim: OrderingClaim, c: _Comparison) -> str:
    """'env: better - worse = d [95% CI low, high] supports' in the metric's own units and direction."""
    iv = c.interval
    point, low, high = (iv.point, iv.low, iv.high) if claim.higher_is_better else (-iv.point, -iv.high, -iv.low)
    text = f"{c.env}: {claim.better} - {c.worse} = {float(point):+.3g} [95% CI {float(low):+.3g}, {float(high):+.3g}] "
    if c.at_bound:
        return text + f"undecided (every seed of both at the {c.at_bound})"
    return text + _LINE[c.outcome]


def _what_would_decide(claim: OrderingClaim, comparisons: list[_Comparison]) -> str:
    """About how many seeds per side would decide the undecided comparisons (normal approximation, 80% power)."""
    needs = []
    for c in comparisons:
        if c.outcome != stats.UNDECIDED or c.at_bound:
            continue
        sd = stats.pooled_sd([c.a, c.b])
        observed = float(c.interval.point)
        if claim.relation == "beats":
            target, what = observed, f"the observed gap {abs(observed):.3g}"
        elif claim.relation == "matches":
            target, what = claim.margin - abs(observed), f"equivalence within {claim.margin:g} at the observed difference"
        else:
            target, what = observed + claim.margin, f"non-inferiority at margin {claim.margin:g}"
        if sd > 0 and target > 0:
            needs.append((stats.seeds_to_detect(sd, target, equivalence=claim.relation == "matches"), c, what, sd))
    if any(c.at_bound for c in comparisons):
        floor_note = "Runs that leave the floor/ceiling (more frames) would decide the comparisons stuck there"
    else:
        floor_note = ""
    if not needs:
        wrong = "The observed differences point the other way: more seeds would more likely contradict it"
        return "; ".join(x for x in (floor_note, wrong if not floor_note else "") if x)
    n, c, what, sd = max(needs, key=lambda x: x[0])
    text = (
        f"About {n} seeds per side would show {what} with 80% power ({c.env}, {claim.better} vs {c.worse}, pooled "
        f"SD {sd:.3g}; normal approximation, one-sided 0.025)"
    )
    return text + (f"; {floor_note}" if floor_note else "")


def _power_text(comparisons: list[_Comparison]) -> str:
    """'n seeds per side detect a difference of D (t-based, 80% power) at the spread seen (pooled SD s)'."""
    usable = [c for c in comparisons if not c.at_bound]
    if not usable:
        return ""
    sd = max(stats.pooled_sd([c.a, c.b]) for c in usable)
    n = min(min(len(c.a), len(c.b)) for c in usable)
    return (
        f"{n} seeds per side detect a difference of {stats.detectable_difference(sd, n):.3g} with 80% power at the "
        f"largest spread seen (pooled SD {sd:.3g}; t-based, one-sided 0.025)"
    )


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
    claim: OrderingClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], reps: int
) -> Verdict:
    envs = claim.environments or sorted({env for (_, env) in cells})
    better = _variant_matrix(spec, cells, claim.better, envs, claim.metric)
    if better is None:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"not run at this scale: {claim.better} on some of {envs}", claim.paper_evidence)
    sign = 1.0 if claim.higher_is_better else -1.0
    codes, lines = [], []
    for worse_name in claim.worse:
        worse = _variant_matrix(spec, cells, worse_name, envs, claim.metric)
        if worse is None:
            return Verdict(claim.id, claim.statement, NOT_JUDGED, f"not run at this scale: {worse_name} on some of {envs}", claim.paper_evidence)
        if min(len(better), len(worse)) < 2:
            why = f"one run per side gives no interval ({claim.better} {len(better)}, {worse_name} {len(worse)} run(s))"
            return Verdict(claim.id, claim.statement, INCONCLUSIVE, why, claim.paper_evidence)
        point, low, high = stratified_bootstrap_difference(sign * better, sign * worse, claim.aggregate, reps=reps)
        if claim.relation == "beats":
            code = stats.decide_beats(low, high)
        elif claim.relation == "matches":
            code = stats.decide_matches(low, high, claim.margin)
        else:
            code = stats.decide_non_inferior(low, high, claim.margin)
        codes.append(int(code))
        shown = (point, low, high) if claim.higher_is_better else (-point, -high, -low)
        lines.append(
            f"{claim.aggregate}({claim.better}) - {claim.aggregate}({worse_name}) = {shown[0]:+.3g} "
            f"[95% CI {shown[1]:+.3g}, {shown[2]:+.3g}] {_LINE[int(code)]}"
        )
    code = int(stats.combine_each(codes))
    detail = (
        f"{claim.metric} normalised per environment (Atari: human-normalised, dqn_zoo_57; others: (x - random) / "
        f"(high - random)), {claim.aggregate} over {len(envs)} environments ({', '.join(envs)}) with rliable's "
        f"definition; interval: stratified bootstrap over runs within each environment, {reps} resamples, "
        f"small-sample corrected; {len(better)} run(s) of {claim.better}. " + "; ".join(lines)
    )
    if code == stats.UNDECIDED:
        detail += ". More seeds per environment (or more environments) would narrow the interval"
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence)


# --- threshold and aggregate claims ----------------------------------------------------------------------------


SEED_FLAG = "best_is_seed"  # a search's summary: 1 when its best program is the unchanged bootstrap seed
FOUND_PROGRAM_METRICS = ("best_td_like",)  # properties of the program a search found, not of its seed


def _judge_threshold(claim: ThresholdClaim, cells: dict[tuple[str, str], CellResult]) -> Verdict:
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale", claim.paper_evidence)
    needs = f"needs {claim.op} {claim.value:g} (tolerance {claim.tolerance:g})"
    seed_note = ""
    if claim.metric in FOUND_PROGRAM_METRICS:
        values, seed_note = _drop_unchanged_seeds(cell, claim.metric)
        if not values:
            detail = (
                f"{seed_note}: its {claim.metric} is the seed's (DQN is TD by construction), not a finding; a longer "
                "search (more proposals) would decide"
            )
            return _threshold_verdict(claim, stats.UNDECIDED, detail)
    if len(values) < 2:
        detail = (
            f"{claim.metric} of {claim.variant} on {claim.environment}: {values[0]:.4g} from one seed; {needs}. "
            "One seed gives no interval: at least 2 seeds are needed to decide" + (f" ({seed_note})" if seed_note else "")
        )
        return _threshold_verdict(claim, stats.UNDECIDED, detail)
    interval = stats.one_sample_interval(values)
    code = int(stats.decide_threshold(interval.low, interval.high, claim.op, claim.bound))
    detail = (
        f"{claim.metric} of {claim.variant} on {claim.environment}: mean {float(interval.point):.4g} "
        f"[95% t interval {float(interval.low):.4g}, {float(interval.high):.4g}] over {len(values)} seeds; {needs}; "
        "reproduced only when the whole interval is on the claimed side"
    )
    gap = abs(float(interval.point) - claim.bound)
    sd = float(np.std(values, ddof=1))
    if code == stats.UNDECIDED and sd > 0 and gap > 0:
        n = max(2, math.ceil(stats.seeds_to_detect(sd, gap) / 2))  # one sample: half the two-sample count
        detail += f". About {n} seeds would decide it at the observed mean (SD {sd:.3g}; normal approximation, 80% power)"
    return _threshold_verdict(claim, code, detail + (f" ({seed_note}; those searches are left out)" if seed_note else ""))


def _judge_best_of(claim: ThresholdClaim, cells: dict[tuple[str, str], CellResult], *, runs: int) -> Verdict:
    """'The best k of the n runs reach the value' (the paper's selection): a count of runs, not a mean.

    At least k passing runs reproduce it whatever the missing runs would show; fewer than k, with too few runs
    missing to make up the count, do not. The share of passing runs gets a Clopper-Pearson interval: what a
    reader should expect of one more seed, which the best k alone hide.
    """
    k = claim.best_of
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    where = f"{claim.metric} of {claim.variant} on {claim.environment}"
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale", claim.paper_evidence)
    runs = max(runs, len(values))
    passing = sum(claim.passes(v) for v in values)
    best = sorted(values, reverse=claim.op == ">=")[:k]
    low, high = stats.binomial_interval(passing, len(values))
    facts = (
        f"{where}: {passing} of {len(values)} finished runs (of {runs}) reach {claim.op} {claim.value:g} (tolerance "
        f"{claim.tolerance:g}); the best {min(k, len(values))}: {', '.join(f'{v:.4g}' for v in best)}; the claim is "
        f"the paper's selection, the best {k} of the runs. All {len(values)} runs: median {float(np.median(values)):.4g}; "
        f"share of runs that reach it {passing / len(values):.2f} [95% Clopper-Pearson {low:.2f}, {high:.2f}]"
    )
    if passing >= k:
        return _threshold_verdict(claim, stats.SUPPORTED, facts)
    missing = runs - len(values)
    if passing + missing >= k:
        detail = f"{facts}; {missing} run(s) missing: they decide whether {k} reach it"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence)
    return _threshold_verdict(claim, stats.CONTRADICTED, f"{facts}; fewer than {k} can reach it")


def _drop_unchanged_seeds(cell: CellResult, metric: str) -> tuple[list[float], str]:
    """The metric of the searches whose best program is not the unchanged seed, and a note on the others."""
    flags = cell.values(SEED_FLAG)
    pairs = [(v, f) for v, f in zip(cell.values(metric), flags) if v is not None and math.isfinite(v)]
    kept = [v for v, f in pairs if not f == 1.0]
    seeded = len(pairs) - len(kept)
    if not seeded:
        return kept, ""
    return kept, f"the best program is the unchanged bootstrap seed in {seeded} of {len(pairs)} search(es)"


def _threshold_verdict(claim: ThresholdClaim, code: int, detail: str) -> Verdict:
    if not claim.informative:
        detail = (
            f"uninformative: a uniform-random policy already passes it ({claim.informative_reason}); "
            f"the data alone would read {_OUTCOME[code]}. {detail}"
        )
        return Verdict(claim.id, claim.statement, UNINFORMATIVE, detail, claim.paper_evidence)
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence)


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


def _judge_aggregate(claim: AggregateClaim, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], reps: int) -> Verdict:
    games, matrix = hns_matrix(spec, cells, claim.variant, claim.metric, claim.hns_table)
    known = [i for i, game in enumerate(games) if np.isfinite(matrix[:, i]).all()]
    if len(known) < claim.min_environments:
        detail = f"{len(known)} game(s) with scores at this scale; the claim needs {claim.min_environments}"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence)
    point, low, high = corrected_bootstrap_ci(matrix[:, known], AGGREGATES[claim.aggregate], reps=reps)
    bound = claim.value - claim.tolerance if claim.op == ">=" else claim.value + claim.tolerance
    detail = (
        f"{claim.aggregate} of {claim.variant} over {len(known)} games ({matrix.shape[0]} run(s) each, "
        f"{claim.hns_table}): {point:.1f}% [95% CI {low:.1f}, {high:.1f}; stratified bootstrap, small-sample "
        f"corrected]; needs {claim.op} {claim.value:g}% (tolerance {claim.tolerance:g})"
    )
    if matrix.shape[0] < 2:
        return Verdict(claim.id, claim.statement, INCONCLUSIVE, detail + ". One run per game gives no interval", claim.paper_evidence)
    code = int(stats.decide_threshold(low, high, claim.op, bound))
    return Verdict(claim.id, claim.statement, _OUTCOME[code], detail, claim.paper_evidence)


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


# --- power up front (rlrepro plan) -----------------------------------------------------------------------------


#: What ``claim_power`` says when neither the spec nor a table gives a spread, and what that means.
POWER_UNKNOWN = "unknown"
POWER_UNKNOWN_MEANING = "no expected_sd in the spec and no table yet"


def claim_power(spec: ExperimentSpec, scale: str, table_json: Path | None = None) -> list[tuple[str, str]]:
    """Per ordering claim judged at ``scale`` (claim id, text): the smallest difference the scale's seeds per side
    can detect with 80% power (t-based, one-sided 0.025).

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
        if claim.expected_sd is not None:
            d = stats.detectable_difference(claim.expected_sd, seeds)
            text = f"{d:.3g} in {claim.metric} at the expected SD {claim.expected_sd:g}{gap}"
        elif seen.get(claim.id):
            text = f"from the last table: {seen[claim.id]}{gap}"
        else:
            text = POWER_UNKNOWN
        powers.append((claim.id, text))
    return powers
