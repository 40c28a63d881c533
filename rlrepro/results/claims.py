"""Claim verdicts: reproduced, not reproduced, or not judged at this scale (with why)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rlrepro.results.aggregation import difference_of_means_ci, stratified_bootstrap_ci, aggregate_mean
from rlrepro.results.collect import CellResult
from rlrepro.specs import ExperimentSpec, OrderingClaim, ThresholdClaim

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
        else:
            verdicts.append(_judge_threshold(claim, cells, reps))
    return verdicts


def _judge_ordering(claim: OrderingClaim, cells: dict[tuple[str, str], CellResult], reps: int) -> Verdict:
    envs = claim.environments or sorted({env for (_, env) in cells})
    lines, holds, missing = [], True, []
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
            diff, low, high = difference_of_means_ci(a, b, reps=reps)
            ok = low > 0 if claim.higher_is_better else high < 0
            holds &= ok
            lines.append(f"{env}: {claim.better} - {worse_name} = {diff:+.3g} [95% CI {low:+.3g}, {high:+.3g}] {'ok' if ok else 'FAILS'}")
    if missing or not lines:
        why = "not run at this scale: " + "; ".join(missing) if missing else "no runs to compare"
        return Verdict(claim.id, claim.statement, NOT_JUDGED, why, claim.paper_evidence)
    verdict = REPRODUCED if holds else NOT_REPRODUCED
    side = "above" if claim.higher_is_better else "below"
    rule = f"{claim.metric}: every difference's bootstrap 95% CI (over seeds) must lie {side} 0"
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


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]
