"""Error rates of the claim verdicts, measured by simulation (no training): the calibration suite's engine.

Each function simulates ``sims`` experiments at once (vectorised numpy, seeded) and passes them through the
decision functions the verdicts use (``rlrepro.results.stats``, ``rlrepro.results.aggregation``), returning
the fraction of experiments that come out *reproduced*. Under a null (the claim false, at its least
favourable point) that fraction is the false-"reproduced" rate, which must stay at or below 0.025 (one
side of a 95% interval) up to Monte-Carlo error; under an alternative it is the power.

Data shapes (all with mean 0 and scale 1, so effects are in units of the spread): ``normal``; ``lognormal``
and ``exponential`` (skewed), centred and scaled to SD 1; ``t3`` (heavy tails, scaled to SD 1) and ``t2``
(infinite variance, unit scale).

RL's shapes (issue #25, ``rl_rate``): seeds on [0, 1] that learn or fail (bimodal), collapse to the floor, have
no spread, or sit at the random level, for every claim kind at its least favourable null.

Run ``python -m rlrepro.results.calibration`` to print the tables of the issue (#10); ``--rl`` prints issue
#25's grid over RL's shapes (``--sims`` sets its size; minutes at the default 2000).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlrepro.results import stats
from rlrepro.results.aggregation import (
    bootstrap_difference_intervals,
    difference_of_means_ci,
)

SHAPES = ("normal", "lognormal", "exponential", "t3", "t2")
SEED_COUNTS = (2, 3, 5, 10)


def draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Samples of mean 0 and SD 1 (``t2``: scale 1, infinite variance) of a named shape."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "lognormal":  # lognormal(0, 1): mean e^0.5, variance (e - 1) e
        return (rng.lognormal(0.0, 1.0, size) - np.exp(0.5)) / np.sqrt((np.e - 1.0) * np.e)
    if shape == "exponential":
        return rng.exponential(1.0, size) - 1.0
    if shape == "t3":
        return rng.standard_t(3, size) / np.sqrt(3.0)
    if shape == "t2":
        return rng.standard_t(2, size)
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


def _pair(rng: np.random.Generator, shape: str, n: int, sims: int, difference: float) -> tuple[np.ndarray, np.ndarray]:
    """(sims, n) runs of `better` and of `worse`, true mean(better) - mean(worse) = difference."""
    return draw(rng, shape, (sims, n)) + difference, draw(rng, shape, (sims, n))


def ordering_rate(
    relation: str, n: int, shape: str, difference: float, *, margin: float = 0.0, sims: int = 4000, seed: int = 0
) -> float:
    """P(reproduced) of one comparison (one environment, one worse variant) as the verdict decides it with no
    range (unbounded shapes): the permutation test for beats; matches / matches_or_beats are never decided."""
    a, b = _pair(np.random.default_rng(seed), shape, n, sims, difference)
    if relation == "beats":
        return float(np.mean(stats.permutation_p(a, b) <= stats.ALPHA))
    outcome = stats.decide_ordering(relation, a, b, margin, None)
    return float(np.mean(outcome == stats.SUPPORTED))


def factor_rate(
    n: int, shape: str, log_gap: float, *, factor: float = 10.0, worse_spread: float = 1.0, sims: int = 4000, seed: int = 0
) -> float:
    """P(reproduced) of 'beats by at least ``factor``' (``stats.decide_beats_by_factor``) when the better variant's
    signed log10 values lie ``log_gap`` above the worse's (null at its least favourable point: log_gap = log10 factor)
    and the worse's log10 values spread ``worse_spread`` times as widely (1: a pure shift, where the test is exact)."""
    rng = np.random.default_rng(seed)
    a, b = draw(rng, shape, (sims, n)) + log_gap, worse_spread * draw(rng, shape, (sims, n))
    return float(np.mean(stats.decide_beats_by_factor(a, b, factor)[0] == stats.SUPPORTED))


def each_rate(n: int, shape: str, differences: list[float], *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of 'beats on each' over several comparisons with the given true differences (IUT)."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for difference in differences:
        a, b = _pair(rng, shape, n, sims, difference)
        outcomes.append(np.where(stats.permutation_p(a, b) <= stats.ALPHA, stats.SUPPORTED, stats.UNDECIDED))
    return float(np.mean(stats.combine_each(np.stack(outcomes, axis=-1)) == stats.SUPPORTED))


def at_least_rate(n: int, shape: str, differences: list[float], k: int, *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of 'beats on at least k of the environments' (permutation p per environment, Holm).

    Only supported outcomes are counted, which do not depend on the contradicted ones (not computed).
    """
    rng = np.random.default_rng(seed)
    p_values = []
    for difference in differences:
        a, b = _pair(rng, shape, n, sims, difference)
        p_values.append(stats.permutation_p(a, b))
    p = np.stack(p_values, -1)
    outcome = stats.decide_at_least(p, np.zeros(p.shape, dtype=bool), k)
    return float(np.mean(outcome == stats.SUPPORTED))


def threshold_rate(n: int, shape: str, op: str, offset: float, *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of a threshold claim 'mean op 0' when the true mean is ``offset`` (no range: t interval)."""
    x = draw(np.random.default_rng(seed), shape, (sims, n)) + offset
    code, _ = stats.decide_threshold_values(x, op, 0.0, None)
    return float(np.mean(code == stats.SUPPORTED))


def aggregate_rate(
    n: int, shape: str, aggregate: str, difference: float, *, tasks: int = 5, sims: int = 1000, reps: int = 500, seed: int = 0
) -> float:
    """P(reproduced) of 'beats on the aggregate over tasks' (stratified bootstrap, small-sample corrected).

    Each task has its own level (0, 1, ..., tasks - 1, both variants alike) and better's scores are shifted
    by ``difference`` on every task, so the aggregates differ by exactly ``difference``.
    """
    rng = np.random.default_rng(seed)
    levels = np.arange(tasks, dtype=np.float64)
    a = draw(rng, shape, (sims, n, tasks)) + levels + difference
    b = draw(rng, shape, (sims, n, tasks)) + levels
    _, low, high = bootstrap_difference_intervals(a, b, aggregate, reps, stats.CONFIDENCE, rng)
    return float(np.mean(stats.decide_beats(low, high) == stats.SUPPORTED))


def aggregate_permutation_rate(
    n: int, shape: str, aggregate: str, difference: float, *, tasks: int = 5, sims: int = 300, seed: int = 0
) -> float:
    """P(reproduced) of 'beats on the aggregate over tasks' as the verdict decides it: whole runs permuted."""
    rng = np.random.default_rng(seed)
    levels = np.arange(tasks, dtype=np.float64)
    a = draw(rng, shape, (sims, n, tasks)) + levels + difference
    b = draw(rng, shape, (sims, n, tasks)) + levels
    return float(np.mean(stats.aggregate_permutation_p(a, b, aggregate) <= stats.ALPHA))


def old_bootstrap_rates(n: int, *, sims: int = 400, seed: int = 0) -> tuple[float, float]:
    """The issue's table before the change: percentile-bootstrap 'beats' at difference 0, and the old
    'matches_or_beats' (no interval wholly below 0) when better is truly 1 SD worse; normal data."""
    rng = np.random.default_rng(seed)
    beats = mob = 0
    for sim in range(sims):
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        _, low, _ = difference_of_means_ci(a, b, seed=sim)
        beats += low > 0
        _, _, high = difference_of_means_ci(a - 1.0, b, seed=sim)
        mob += not high < 0
    return beats / sims, mob / sims


def monte_carlo_bound(rate: float, sims: int, z: float = 3.0) -> float:
    """rate + z Monte-Carlo standard errors: the largest measured rate consistent with a true ``rate``."""
    return rate + z * np.sqrt(rate * (1.0 - rate) / sims)


def table(rows: list[tuple[str, Callable[[int], float]]], seed_counts: tuple[int, ...] = SEED_COUNTS) -> str:
    """A markdown table: one row per (label, rate(n)) and one column per seed count."""
    lines = ["| case | " + " | ".join(f"n = {n}" for n in seed_counts) + " |", "|---" * (len(seed_counts) + 1) + "|"]
    for label, rate in rows:
        lines.append(f"| {label} | " + " | ".join(f"{rate(n):.3f}" for n in seed_counts) + " |")
    return "\n".join(lines)


def issue_table() -> str:
    """The issue's two columns, before (percentile bootstrap) and after (the permutation test; matches_or_beats on
    normal data, which have no range, is never decided), normal data."""
    lines = [
        "| seeds per side | P(beats reproduced, true diff 0): before | after | "
        "P(matches_or_beats reproduced, better 1 SD worse): before | after (margin 0.5 SD, no range) |",
        "|---|---|---|---|---|",
    ]
    for n in SEED_COUNTS:
        old_beats, old_mob = old_bootstrap_rates(n)
        new_beats = ordering_rate("beats", n, "normal", 0.0)
        new_mob = ordering_rate("matches_or_beats", n, "normal", -1.0, margin=0.5)
        lines.append(f"| {n} | {old_beats:.3f} | {new_beats:.3f} | {old_mob:.3f} | {new_mob:.3f} |")
    return "\n".join(lines)


# --- RL's shapes (issue #25): bounded on [0, 1], the shapes seeds of RL agents take -------------------------------

RL_SHAPES = (
    "bimodal_0.2", "bimodal_0.5", "bimodal_0.8", "collapse_0.1", "collapse_0.2", "collapse_0.3", "zero_spread",
    "at_random",
)
RL_KINDS = (
    "beats", "matches", "matches_or_beats", "matches (no range)", "matches_or_beats (no range)", "threshold >=",
    "threshold <=", "threshold >= (no range)", "threshold <= (no range)", "best_of", "share of seeds",
    "at least 1 of 5", "at least 3 of 5", "aggregate median of 5", "aggregate iqm of 5", "aggregate mean of 5",
)
SHARE_BAR = 0.75  # the share-of-seeds claim's per-seed bar: passed by learners, failed by failures and collapses
RL_SEED_COUNTS = (2, 3, 4, 5, 8, 10, 16)
RL_BOUNDS = (0.0, 1.0)
RL_MARGIN = 0.2  # of matches / matches_or_beats, in units of the range
RANDOM_LEVEL = 0.09  # Catch's random policy, -0.82 +- 0.05 on [-1, 1], mapped to [0, 1]: 0.09 +- 0.025
ZERO_SPREAD_VALUE = 0.7


def rl_draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Seeds on [0, 1] of an RL shape: learners U[0.9, 1], failures U[0, 0.1] with a learn probability
    (``bimodal_p``); a share at the floor 0, the rest U[0.9, 1] (``collapse_s``); one value (``zero_spread``);
    an agent that learned nothing (``at_random``: 0.09 +- 0.025, clipped)."""
    kind, _, parameter = shape.partition("_")
    if kind == "bimodal":
        learned = rng.random(size) < float(parameter)
        return np.where(learned, rng.uniform(0.9, 1.0, size), rng.uniform(0.0, 0.1, size))
    if kind == "collapse":
        return np.where(rng.random(size) < float(parameter), 0.0, rng.uniform(0.9, 1.0, size))
    if shape == "zero_spread":
        return np.full(size, ZERO_SPREAD_VALUE)
    if shape == "at_random":
        return np.clip(rng.normal(RANDOM_LEVEL, 0.025, size), 0.0, 1.0)
    raise ValueError(f"unknown shape {shape!r}; expected one of {RL_SHAPES}")


def rl_mean(shape: str) -> float:
    """The true mean of an RL shape (clipping of ``at_random`` is below 1e-200)."""
    kind, _, parameter = shape.partition("_")
    if kind == "bimodal":
        return float(parameter) * 0.95 + (1.0 - float(parameter)) * 0.05
    if kind == "collapse":
        return (1.0 - float(parameter)) * 0.95
    return ZERO_SPREAD_VALUE if shape == "zero_spread" else RANDOM_LEVEL


def _pass_share(shape: str) -> float:
    """The true probability that one seed of an RL shape reaches SHARE_BAR."""
    kind, _, parameter = shape.partition("_")
    if kind == "bimodal":
        return float(parameter)
    if kind == "collapse":
        return 1.0 - float(parameter)
    return float(ZERO_SPREAD_VALUE >= SHARE_BAR) if shape == "zero_spread" else 0.0


def _shifted(rng: np.random.Generator, x: np.ndarray, mean: float, shift: float) -> np.ndarray:
    """x with its true mean moved by exactly ``shift`` while staying on [0, 1]: a share of seeds replaced by the
    floor (shift < 0, share -shift / mean) or the ceiling (shift > 0, share shift / (1 - mean))."""
    if shift < 0:
        return np.where(rng.random(x.shape) < -shift / mean, 0.0, x)
    return np.where(rng.random(x.shape) < shift / (1.0 - mean), 1.0, x)


def _null_pair(rng: np.random.Generator, shape: str, relation: str, size: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, float]:
    """(better, worse, trivial level) at the least favourable null of a relation.

    beats: one distribution for both. matches: |difference| = margin (shifted down where the mean allows).
    matches_or_beats: better worse by the margin. at_random: both at the random level (difference 0), where
    matches / matches_or_beats hold numerically but are uninformative.
    """
    worse = rl_draw(rng, shape, size)
    better = rl_draw(rng, shape, size)
    mean = rl_mean(shape)
    trivial = RANDOM_LEVEL if shape == "at_random" else 0.0
    if relation == "beats" or shape == "at_random":
        return better, worse, trivial
    if relation == "matches":
        return _shifted(rng, better, mean, -RL_MARGIN if mean >= RL_MARGIN else RL_MARGIN), worse, trivial
    return _shifted(rng, better, mean, -RL_MARGIN), worse, trivial


def _ordering_outcome(
    relation: str, better: np.ndarray, worse: np.ndarray, trivial: float, bounds: tuple[float, float] | None = RL_BOUNDS
) -> np.ndarray:
    """The verdict's decision (``stats.decide_ordering``) and, for matches / matches_or_beats, its trivial-level rule."""
    margin = None if relation == "beats" else RL_MARGIN
    code = stats.decide_ordering(relation, better, worse, margin, bounds)
    if relation != "beats":
        shown = stats.above_trivial(better, trivial, RL_MARGIN, bounds) & stats.above_trivial(worse, trivial, RL_MARGIN, bounds)
        code = np.where(shown, code, stats.UNDECIDED)
    return code


def rl_rate(kind: str, shape: str, n: int, *, sims: int = 2000, seed: int = 0) -> float:
    """P(reproduced) of a claim kind at its least favourable null on an RL shape, n seeds per side (``RL_KINDS``)."""
    rng = np.random.default_rng(seed)
    if kind == "beats":  # supported needs only the claim's p-value (the reverse test decides 'contradicted')
        better, worse, _ = _null_pair(rng, shape, kind, (sims, n))
        return float(np.mean(stats.permutation_p(better, worse) <= stats.ALPHA))
    if kind.split()[0] in ("matches", "matches_or_beats"):
        # "(no range)": the same seeds, the metric's range undeclared (undecided by rule: Welch's interval read them
        # as reproduced up to 0.47 of the time)
        relation = kind.split()[0]
        better, worse, trivial = _null_pair(rng, shape, relation, (sims, n))
        bounds = None if kind.endswith("(no range)") else RL_BOUNDS
        return float(np.mean(_ordering_outcome(relation, better, worse, trivial, bounds) == stats.SUPPORTED))
    if kind.startswith("threshold"):
        # with the range declared: Anderson's bound; "(no range)": a claim on a metric with no declared range, on
        # the same seeds (undecided by rule: its t interval read them as reproduced up to 0.66 of the time)
        op = kind.split()[1]
        bounds = None if kind.endswith("(no range)") else RL_BOUNDS
        code, _ = stats.decide_threshold_values(rl_draw(rng, shape, (sims, n)), op, rl_mean(shape), bounds)
        return float(np.mean(code == stats.SUPPORTED))
    if kind == "best_of":
        # a count of the runs that pass (the paper's selection), no inference: with the value above every run's
        # reach (the claim false), no run passes; the rule reads reproduced only when k runs pass
        x = rl_draw(rng, shape, (sims, n))
        return float(np.mean((x >= 1.0 + 1e-9).sum(axis=-1) >= 1))
    if kind == "share of seeds":
        # the least favourable null: the claimed share equals the true share of seeds that pass the bar (learners
        # pass it, failures and collapses do not; where no seed can pass, any share is a false claim: 0.5)
        x = rl_draw(rng, shape, (sims, n))
        truth = _pass_share(shape)
        share = truth if 0.0 < truth < 1.0 else 0.5
        return float(np.mean(stats.decide_share((x >= SHARE_BAR).sum(axis=-1), n, share) == stats.SUPPORTED))
    if kind.startswith("at least"):
        k = int(kind.split()[2])
        p_values = []
        for task in range(5):
            if task < k - 1:  # the k - 1 tasks where the claim clearly holds: learners against failures
                better, worse = rng.uniform(0.9, 1.0, (sims, n)), rng.uniform(0.0, 0.1, (sims, n))
            else:
                better, worse = rl_draw(rng, shape, (sims, n)), rl_draw(rng, shape, (sims, n))
            p_values.append(stats.permutation_p(better, worse))
        p = np.stack(p_values, -1)
        outcome = stats.decide_at_least(p, np.zeros(p.shape, dtype=bool), k)  # supported ignores contradictions
        return float(np.mean(outcome == stats.SUPPORTED))
    if kind.startswith("aggregate"):
        aggregate = kind.split()[1]
        better, worse = rl_draw(rng, shape, (sims, n, 5)), rl_draw(rng, shape, (sims, n, 5))
        return float(np.mean(stats.aggregate_permutation_p(better, worse, aggregate) <= stats.ALPHA))
    raise ValueError(f"unknown kind {kind!r}; expected one of {RL_KINDS}")


def beats_power_rate(n: int, *, effect: float = 1.5, sims: int = 2000, seed: int = 1) -> float:
    """Power of the 'beats' verdict for normal seeds ``effect`` SDs apart, n per side (simulated)."""
    rng = np.random.default_rng(seed)
    better, worse = rng.standard_normal((sims, n)) + effect, rng.standard_normal((sims, n))
    return float(np.mean(stats.permutation_p(better, worse) <= stats.ALPHA))


def added_seeds_rate(n: int, more: int, shape: str, *, sims: int = 2000, seed: int = 2) -> tuple[float, float]:
    """'beats' at no difference, both sides drawn alike from an RL shape: P(reproduced) of one experiment of n + more
    seeds, and of n seeds judged, then, when undecided, ``more`` seeds added and judged again (what an
    "inconclusive: about N seeds would decide it" invites): the second look raises the false 'reproduced' rate."""
    rng = np.random.default_rng(seed)
    a, b = rl_draw(rng, shape, (sims, n + more)), rl_draw(rng, shape, (sims, n + more))
    first = stats.permutation_p(a[:, :n], b[:, :n]) <= stats.ALPHA
    whole = stats.permutation_p(a, b) <= stats.ALPHA
    return float(whole.mean()), float((first | whole).mean())


def rl_table(seed_counts: tuple[int, ...] = RL_SEED_COUNTS, *, sims: int = 2000, aggregate_sims: int = 300) -> str:
    """Markdown: P(reproduced) at the null for every claim kind and RL shape (rows) and seed count (columns)."""
    lines = ["| claim kind | shape | " + " | ".join(f"n = {n}" for n in seed_counts) + " |",
             "|---|---" + "|---" * len(seed_counts) + "|"]
    for kind in RL_KINDS:
        for shape in RL_SHAPES:
            count = aggregate_sims if kind.startswith("aggregate") else sims
            rates = [rl_rate(kind, shape, n, sims=count) for n in seed_counts]
            lines.append(f"| {kind} | {shape} | " + " | ".join(f"{r:.3f}" for r in rates) + " |")
    return "\n".join(lines)


# --- the frozen arm beside a claim (rlrepro.results.control) -------------------------------------------------------

CONTROL_KINDS = ("beats", "threshold >=", "share of seeds", "matches")
#: (better, worse) RL shapes of the runs: a gap that the runs' own test passes most of the time.
CONTROL_PAIRS = (("bimodal_0.8", "bimodal_0.2"), ("collapse_0.1", "at_random"), ("zero_spread", "at_random"))
CONTROL_SEED_COUNTS = (4, 5, 6, 8, 10, 16)
CONTROL_BAR = 0.5  # the threshold claims' bar on [0, 1] (a mean >= it; a share of seeds above it)


def control_rates(kind: str, pair: tuple[str, str], n: int, *, learned: bool = False, sims: int = 400,
                  seed: int = 0) -> tuple[float, float]:
    """(P(reproduced), P(uninformative)) of a claim beside its frozen arm (``control.combine``), n runs per variant
    and ``specs.control.control_seeds(n)`` frozen runs. ``learned`` false: the frozen arm has the runs' own
    distribution (a claim a frozen agent passes: reproduced must stay at most 0.025); true: the frozen agents play at
    the random level (a real effect: the rate is the power)."""
    from rlrepro.results import control  # noqa: PLC0415 -- control imports stats, as this module does
    from rlrepro.specs.control import control_seeds  # noqa: PLC0415

    rng, m = np.random.default_rng(seed), control_seeds(n)
    reproduced = uninformative = 0
    for _ in range(sims):
        a, b = rl_draw(rng, pair[0], (n,)), rl_draw(rng, pair[1], (n,))
        fa, fb = ((rl_draw(rng, "at_random", (m,)), rl_draw(rng, "at_random", (m,))) if learned
                  else (rl_draw(rng, pair[0], (m,)), rl_draw(rng, pair[1], (m,))))
        if kind == "matches":  # both variants of the better shape: they match; the frozen arm matches too
            b, fb = rl_draw(rng, pair[0], (n,)), (rl_draw(rng, "at_random", (m,)) if learned else rl_draw(rng, pair[0], (m,)))
        code, frozen_code, beyond = _control_codes(kind, a, b, fa, fb, control)
        outcome = control.combine(int(code), int(frozen_code), beyond, matches=kind == "matches")
        reproduced += outcome == "reproduced"
        uninformative += outcome == "uninformative"
    return reproduced / sims, uninformative / sims


def _control_codes(kind: str, a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray, control) -> tuple:
    """(the runs' code, the frozen arm's code, rule 2's p) of one simulated experiment, by the verdicts' functions."""
    if kind == "beats":
        return (stats.decide_beats_permutation(a, b)[0], stats.decide_beats_permutation(fa, fb)[0],
                control.did_p(a, b, fa, fb))
    if kind == "threshold >=":
        return (stats.decide_threshold_values(a, ">=", CONTROL_BAR, RL_BOUNDS)[0],
                stats.decide_threshold_values(fa, ">=", CONTROL_BAR, RL_BOUNDS)[0], control.beyond_p(a, fa))
    if kind == "share of seeds":
        passing, frozen_passing = int((a >= CONTROL_BAR).sum()), int((fa >= CONTROL_BAR).sum())
        return (stats.decide_share(passing, len(a), CONTROL_BAR), stats.decide_share(frozen_passing, len(fa), CONTROL_BAR),
                control.share_beyond_p(passing, len(a), frozen_passing, len(fa)))
    code = _ordering_outcome("matches", a, b, 0.0)
    return code, _ordering_outcome("matches", fa, fb, 0.0), max(control.beyond_p(a, fa), control.beyond_p(b, fb))


def control_table(seed_counts: tuple[int, ...] = CONTROL_SEED_COUNTS, *, sims: int = 400) -> str:
    """Markdown: per control rule (claim kind) and runs' shapes, P(reproduced) / P(uninformative) when a frozen
    agent passes the claim as well, and the power (P(reproduced)) when the frozen agents play at random."""
    lines = ["| claim kind | runs (better, worse) | frozen arm | " + " | ".join(f"n = {n}" for n in seed_counts) + " |",
             "|---|---|---" + "|---" * len(seed_counts) + "|"]
    for kind in CONTROL_KINDS:
        for pair in CONTROL_PAIRS:
            if kind == "matches" and pair[0] == "zero_spread":
                continue
            for learned in (False, True):
                cells = []
                for n in seed_counts:
                    rep, unin = control_rates(kind, pair, n, learned=learned, sims=sims, seed=n)
                    cells.append(f"{rep:.3f}" if learned else f"{rep:.3f} / {unin:.2f}")
                arm = "at random (power)" if learned else "as the runs"
                lines.append(f"| {kind} | {', '.join(pair) if kind != 'matches' else pair[0]} | {arm} | "
                             + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- a run's policy against a trivial policy's games (claim kind above_trivial) ------------------------------------

#: Score distributions of one policy's games: Pong-like (the floor -21 and a few points), Breakout-like (few, small
#: counts), Boxing-like (normal), heavy-tailed, one big score now and then (bimodal), and every game the same.
GAME_SHAPES = ("pong_like", "counts", "normal", "lognormal", "t2", "rare_big", "no_spread")
GAMES, TRIVIAL_GAMES = 3, 30  # the multi-task cpu scale's evaluation games and the trivial rows' games


def game_draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Scores of games of one policy (``GAME_SHAPES``)."""
    if shape == "pong_like":
        return rng.choice([-21.0, -20.0, -19.0], size=size, p=[0.6, 0.35, 0.05])
    if shape == "counts":
        return rng.poisson(1.5, size).astype(np.float64)
    if shape == "rare_big":
        return np.where(rng.random(size) < 0.2, 10.0, 0.0)
    if shape == "no_spread":
        return np.full(size, -21.0)
    return draw(rng, shape, size)


def games_rate(shape: str, *, shift: float = 0.0, learned_share: float | None = None, reverse_gain: float | None = None,
               games: int = GAMES, trivial_games: int = TRIVIAL_GAMES, sims: int = 2000, seed: int = 0) -> float:
    """P(reproduced) of ``stats.decide_games_above_trivial`` when the run's games are the trivial policy's shifted by
    ``shift``; with ``learned_share``, instead that share of the run's games scores ``shift / learned_share`` more
    (the same mean gain: a policy that plays some games well). With ``reverse_gain``: P(the reverse test, not used
    by the verdict, shows the games below the trivial policy's plus that gain): why the kind is never contradicted."""
    rng = np.random.default_rng(seed)
    trivial = game_draw(rng, shape, (sims, trivial_games))
    run = game_draw(rng, shape, (sims, games))
    if learned_share is None:
        run = run + shift
    else:
        run = run + np.where(rng.random(run.shape) < learned_share, shift / learned_share, 0.0)
    if reverse_gain is not None:
        return float(np.mean(stats.permutation_p(trivial + reverse_gain, run) <= stats.ALPHA))
    code, _ = stats.decide_games_above_trivial(run, trivial)
    return float(np.mean(code == stats.SUPPORTED))


def games_table(*, sims: int = 2000) -> str:
    """Markdown: the above_trivial verdict's error rates per game shape (3 games v 30; shifts in the shape's units)."""
    rows = [
        ("false reproduced: the run plays like the trivial policy", dict()),
        ("power: the run's games shifted up by 3", dict(shift=3.0)),
        ("power: 1 game in 5 scores 15 more (mean gain 3)", dict(shift=3.0, learned_share=0.2)),
        ("(not used) reverse test 'below trivial + 1', true gain 1 in 1 game of 5", dict(shift=1.0, learned_share=0.2,
                                                                                         reverse_gain=1.0)),
    ]
    lines = ["| rate | " + " | ".join(GAME_SHAPES) + " |", "|---" + "|---" * len(GAME_SHAPES) + "|"]
    for label, kwargs in rows:
        lines.append(f"| {label} | " + " | ".join(f"{games_rate(shape, sims=sims, **kwargs):.3f}" for shape in GAME_SHAPES) + " |")
    return "\n".join(lines)


def _main() -> None:
    import argparse  # noqa: PLC0415 -- the CLI only

    parser = argparse.ArgumentParser(description="Error rates of the claim verdicts by simulation.")
    parser.add_argument("--rl", action="store_true", help="issue #25's grid over RL's shapes and every claim kind")
    parser.add_argument("--sims", type=int, default=2000, help="simulated experiments per cell of the --rl grid")
    parser.add_argument("--games", action="store_true", help="kind above_trivial: a run's games against a trivial policy's")
    args = parser.parse_args()
    if args.games:
        print(f"above_trivial: {GAMES} games of the run v {TRIVIAL_GAMES} of the trivial policy; "
              f"{args.sims} simulated runs per cell.\n")
        print(games_table(sims=args.sims))
        return
    if args.rl:
        print(f"P(reproduced) at each kind's least favourable null; {args.sims} simulated experiments per cell "
              f"(aggregates {max(args.sims // 5, 100)}).\n")
        print(rl_table(sims=args.sims, aggregate_sims=max(args.sims // 5, 100)), "\n")
        print("Power of 'beats', normal seeds 1.5 SD apart: " + ", ".join(
            f"n = {n}: {beats_power_rate(n, sims=args.sims):.3f}" for n in RL_SEED_COUNTS))
        print("\nSeeds added after looking ('beats', no difference; one experiment of 20 seeds / 10 judged, then 10 "
              "more when undecided): " + ", ".join(
                  "{}: {:.3f} / {:.3f}".format(shape, *added_seeds_rate(10, 10, shape, sims=args.sims))
                  for shape in ("bimodal_0.5", "collapse_0.2", "at_random")))
        sims = max(args.sims // 5, 100)
        print(f"\nThe frozen arm beside a claim (rlrepro.results.control), {sims} simulated experiments per cell; "
              "frozen seeds min(n, 4). 'as the runs': a frozen agent passes the claim as well: P(reproduced) "
              "(at most 0.025) / P(uninformative); 'at random': the frozen agents learned nothing, the runs did: "
              "P(reproduced), the power.\n")
        print(control_table(sims=sims))
        return
    print("False 'reproduced' rates (nominal 0.025) and power; 4000 simulated experiments per cell unless noted.\n")
    print(issue_table(), "\n")
    for shape in SHAPES:
        rows: list[tuple[str, Callable[[int], float]]] = [
            ("beats, diff 0", lambda n, s=shape: ordering_rate("beats", n, s, 0.0)),
            ("matches (margin 1), diff 1", lambda n, s=shape: ordering_rate("matches", n, s, 1.0, margin=1.0)),
            ("matches_or_beats (margin 0.5), diff -0.5", lambda n, s=shape: ordering_rate("matches_or_beats", n, s, -0.5, margin=0.5)),
            ("each of 3, one diff 0 (others +10)", lambda n, s=shape: each_rate(n, s, [0.0, 10.0, 10.0])),
            ("at least 3 of 5, two +10, three 0", lambda n, s=shape: at_least_rate(n, s, [10.0, 10.0, 0.0, 0.0, 0.0], 3)),
            ("threshold >=, mean at bound", lambda n, s=shape: threshold_rate(n, s, ">=", 0.0)),
            ("threshold <=, mean at bound", lambda n, s=shape: threshold_rate(n, s, "<=", 0.0)),
            ("aggregate median of 5, diff 0 (300 sims)", lambda n, s=shape: aggregate_permutation_rate(n, s, "median", 0.0)),
            ("aggregate IQM of 5, diff 0 (300 sims)", lambda n, s=shape: aggregate_permutation_rate(n, s, "iqm", 0.0)),
            ("aggregate mean of 5, diff 0 (300 sims)", lambda n, s=shape: aggregate_permutation_rate(n, s, "mean", 0.0)),
            ("power: beats, diff 1.5 SD", lambda n, s=shape: ordering_rate("beats", n, s, 1.5)),
            ("beats by factor 10, log10 gap exactly 1 (SD 1)", lambda n, s=shape: factor_rate(n, s, 1.0)),
            ("same, worse's log10 spread 3x", lambda n, s=shape: factor_rate(n, s, 1.0, worse_spread=3.0)),
            ("power: by factor 10, log10 gap 2.5", lambda n, s=shape: factor_rate(n, s, 2.5)),
        ]
        print(f"### {shape}\n\n{table(rows)}\n")


if __name__ == "__main__":
    _main()
