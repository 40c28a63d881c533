"""Claim verdicts: reproduced, not reproduced, or not judged at this scale (with why)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rlrepro.results.aggregation import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    difference_of_means_ci,
    stratified_bootstrap_ci,
)
from rlrepro.results.collect import CellResult
from rlrepro.results.normalization import human_normalized_scores
from rlrepro.specs import AggregateClaim, ExperimentSpec, OrderingClaim, ThresholdClaim

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_JUDGED = "not judged at this scale"


@dataclass(frozen=True)
class Verdict:
    claim: str
    statement: str
    verdict: str
    detail: str
    paper_evidence: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def judge_claims(
    spec: ExperimentSpec, scale: str, cells: dict[tuple[str, str], CellResult], *, reps: int = 2000
) -> list[Verdict]:
    """A verdict for every claim of the spec, from the finished runs in ``cells``."""
    verdicts = []
    for claim in spec.claims:
        if scale not in claim.judged_at:
            detail = (
                f"the claim is judged at scale(s) {', '.join(claim.judged_at)}; at '{scale}' the budget "
                f"({spec.scale(scale).frames:,} frames, {spec.scale(scale).seeds} seeds) is too small to tell"
            )
            verdicts.append(Verdict(claim.id, claim.statement, NOT_JUDGED, detail, claim.paper_evidence))
        elif isinstance(claim, OrderingClaim):
            verdicts.append(_judge_ordering(claim, cells, reps))
        elif isinstance(claim, ThresholdClaim):
            verdicts.append(_judge_threshold(claim, cells, reps))
        else:
            verdicts.append(_judge_aggregate(claim, spec, cells, reps))
    return verdicts


def _judge_ordering(claim: OrderingClaim, cells: dict[tuple[str, str], CellResult], reps: int) -> Verdict:
    envs = claim.environments or sorted({env for (_, env) in cells})
    lines, holds, missing, few = [], True, [], []
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
                continue
            if len(a) < 2 or len(b) < 2:  # one run per side: the bootstrap interval collapses to the point
                few.append(f"{claim.better} vs {worse_name} on {env} has {len(a)} and {len(b)} run(s)")
                continue
            diff, low, high = difference_of_means_ci(a, b, reps=reps)
            better_ = low > 0 if claim.higher_is_better else high < 0
            reversed_ = high < 0 if claim.higher_is_better else low > 0
            ok = better_ if claim.relation == "beats" else not reversed_
            holds &= ok
            if claim.relation == "beats":
                outcome = "ok" if ok else "REVERSED" if reversed_ else "inconclusive (CI spans 0)"
            else:
                outcome = "ok (better)" if better_ else "REVERSED" if reversed_ else "ok (CI spans 0: matches)"
            lines.append(f"{env}: {claim.better} - {worse_name} = {diff:+.3g} [95% CI {low:+.3g}, {high:+.3g}] {outcome}")
    if few and not missing:
        why = "an interval needs at least 2 runs of each variant: " + "; ".join(few)
        return Verdict(claim.id, claim.statement, NOT_JUDGED, why, claim.paper_evidence)
    if missing or not lines:
        why = "not run at this scale: " + "; ".join(missing) if missing else "no runs to compare"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, why, claim.paper_evidence)
    verdict = REPRODUCED if holds else NOT_REPRODUCED
    side, other = ("above", "below") if claim.higher_is_better else ("below", "above")
    if claim.relation == "beats":
        rule = f"{claim.metric}: every difference's bootstrap 95% CI (over seeds) must lie {side} 0"
    else:
        rule = f"{claim.metric}: no difference's bootstrap 95% CI (over seeds) may lie wholly {other} 0"
    return Verdict(claim.id, claim.statement, verdict, f"{rule}. " + "; ".join(lines), claim.paper_evidence)


def _judge_threshold(claim: ThresholdClaim, cells: dict[tuple[str, str], CellResult], reps: int) -> Verdict:
    cell = cells.get((claim.variant, claim.environment))
    values = _finite(cell.values(claim.metric)) if cell else []
    if not values:
        return Verdict(claim.id, claim.statement, NOT_JUDGED, f"{claim.variant} on {claim.environment} not run at this scale", claim.paper_evidence)
    point, low, high = stratified_bootstrap_ci(np.asarray(values)[:, None], aggregate_mean, reps=reps)
    if claim.op == ">=":
        ok = point >= claim.value - claim.tolerance
    else:
        ok = point <= claim.value + claim.tolerance
    detail = (
        f"{claim.metric} of {claim.variant} on {claim.environment}: mean {point:.4g} [95% CI {low:.4g}, {high:.4g}] over {len(values)} seeds; "
        f"needs {claim.op} {claim.value:g} (tolerance {claim.tolerance:g})"
    )
    return Verdict(claim.id, claim.statement, REPRODUCED if ok else NOT_REPRODUCED, detail, claim.paper_evidence)


AGGREGATES = {"median_hns": aggregate_median, "mean_hns": aggregate_mean, "iqm_hns": aggregate_iqm}


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
    point, low, high = stratified_bootstrap_ci(matrix[:, known], AGGREGATES[claim.aggregate], reps=reps)
    ok = point >= claim.value - claim.tolerance if claim.op == ">=" else point <= claim.value + claim.tolerance
    detail = (
        f"{claim.aggregate} of {claim.variant} over {len(known)} games ({matrix.shape[0]} run(s) each, "
        f"{claim.hns_table}): {point:.1f}% [95% CI {low:.1f}, {high:.1f}]; needs {claim.op} {claim.value:g}% "
        f"(tolerance {claim.tolerance:g})"
    )
    return Verdict(claim.id, claim.statement, REPRODUCED if ok else NOT_REPRODUCED, detail, claim.paper_evidence)


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]
