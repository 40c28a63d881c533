"""The figures rliable made standard (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice"),
drawn from our own aggregates, plus the paper's summary figure where a variant grid has a numeric axis.

rliable 1.2.0 itself cannot be installed with our pins (it needs pandas < 3 through ``arch``; STACK.md trap 3), so
the statistics are ours (``aggregation.py``) and tested against hand-computed cases:

* interval estimates of median, IQM and mean per variant (Fig. 9 of rliable), 95% stratified-bootstrap CIs;
* performance profiles: the fraction of runs scoring above a threshold tau (Fig. 6), with bootstrap bands;
* probability of improvement P(X > Y) between the variants a claim compares (Fig. 10), averaged over tasks;
* aggregate sample-efficiency curves: IQM of human-normalised scores against frames (Atari, Fig. 11);
* final score against a numeric grid axis, one line per value of the other axis (IMPALA Fig. E.1: return
  against policy lag per off-policy correction).

Atari experiments use human-normalised scores over games (one task per game); other experiments are drawn per
environment on their raw returns (one task), since they have no agreed normalisation.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from rlrepro.results.aggregation import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    stratified_bootstrap_ci,
    summarize,
)
from rlrepro.results.collect import CellResult
from rlrepro.results.plots import BAND_TEXT, REPS, SEED, _setup_matplotlib, count_label, mean_curve_ci, styles, variant_axes

CI_TEXT = "95% stratified-bootstrap CI"


# --------------------------------------------------------------------------------------------------
# statistics


def probability_of_improvement(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """P(X > Y) averaged over tasks, ties counting one half (rliable ``probability_of_improvement``).

    Args:
      x, y: (runs, tasks) scores of two algorithms on the same tasks (run counts may differ).
    Per task this is the Mann-Whitney U statistic over all run pairs divided by runs_x * runs_y.
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or a.size == 0 or b.size == 0:
        raise ValueError(f"x and y must be (runs, tasks) with the same tasks; got {a.shape} and {b.shape}")
    wins = (a[:, None, :] > b[None, :, :]).mean(axis=(0, 1)) + 0.5 * (a[:, None, :] == b[None, :, :]).mean(axis=(0, 1))
    return float(wins.mean())


def probability_of_improvement_ci(
    x: npt.ArrayLike, y: npt.ArrayLike, *, reps: int = REPS, confidence: float = 0.95, seed: int = SEED
) -> tuple[float, float, float]:
    """Point and percentile-bootstrap interval, resampling each side's runs within every task independently."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    point = probability_of_improvement(a, b)
    if a.shape[0] == 1 and b.shape[0] == 1:
        return point, point, point
    rng = np.random.default_rng(seed)
    tasks = np.arange(a.shape[1])
    values = np.empty(reps)
    for rep in range(reps):
        ra = a[rng.integers(0, a.shape[0], size=a.shape), tasks]
        rb = b[rng.integers(0, b.shape[0], size=b.shape), tasks]
        values[rep] = probability_of_improvement(ra, rb)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return point, float(low), float(high)


def performance_profile(scores: npt.ArrayLike, taus: npt.ArrayLike, *, higher_is_better: bool = True) -> np.ndarray:
    """Fraction of all runs x tasks scores strictly above each tau (rliable's run-score distribution); strictly below
    it for a metric where lower is better (an error), so the best variant's curve is the highest either way."""
    flat = np.asarray(scores, dtype=np.float64).ravel()
    taus = np.asarray(taus, dtype=np.float64)[:, None]
    return ((flat[None, :] > taus) if higher_is_better else (flat[None, :] < taus)).mean(axis=1)


def performance_profile_ci(
    scores: npt.ArrayLike, taus: npt.ArrayLike, *, reps: int = REPS, seed: int = SEED, higher_is_better: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The profile and its 95% stratified-bootstrap band (runs resampled within each task)."""
    matrix = np.asarray(scores, dtype=np.float64)
    point = performance_profile(matrix, taus, higher_is_better=higher_is_better)
    if matrix.shape[0] == 1:
        return point, point.copy(), point.copy()
    rng = np.random.default_rng(seed)
    tasks = np.arange(matrix.shape[1])
    draws = np.stack([
        performance_profile(matrix[rng.integers(0, matrix.shape[0], size=matrix.shape), tasks], taus,
                            higher_is_better=higher_is_better) for _ in range(reps)
    ])
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return point, low, high


# --------------------------------------------------------------------------------------------------
# score matrices from the collected runs


def score_matrices(
    cells: dict[tuple[str, str], CellResult], metric: str, hns: dict[str, np.ndarray] | None
) -> list[tuple[str, dict[str, np.ndarray]]]:
    """Panels of (title, {variant: (runs, tasks) matrix}): one over all games (HNS) or one per environment."""
    variants = list(dict.fromkeys(v for v, _ in cells))
    if hns is not None:
        return [("human-normalised score (%) over games", {v: hns[v] for v in variants if v in hns and hns[v].size})]
    panels = []
    for env in dict.fromkeys(e for _, e in cells):
        matrices = {}
        for variant in variants:
            cell = cells.get((variant, env))
            values = [v for v in (cell.values(metric) if cell else []) if np.isfinite(v)]
            if values:
                matrices[variant] = np.asarray(values, dtype=np.float64)[:, None]
        if matrices:
            panels.append((env, matrices))
    return panels


# --------------------------------------------------------------------------------------------------
# figures


def plot_interval_estimates(panels: list[tuple[str, dict[str, np.ndarray]]], path: Path, *, metric: str, title: str) -> Path:
    """Median, IQM and mean per variant with 95% CIs: one row of three panels per task group."""
    plt = _setup_matplotlib()
    rows = len(panels)
    variants = list(dict.fromkeys(v for _, m in panels for v in m))
    colour = styles(variants)
    fig, axes = plt.subplots(rows, 3, figsize=(11, 0.45 * len(variants) * rows + 1.2 * rows + 0.6), squeeze=False)
    for row, (name, matrices) in zip(axes, panels):
        names = [v for v in variants if v in matrices]
        stats = {v: summarize(matrices[v], reps=REPS, seed=SEED) for v in names}
        for ax, key, label in zip(row, ("median", "iqm", "mean"), ("Median", "IQM", "Mean")):
            for i, v in enumerate(names):
                s = stats[v][key]
                ax.barh(i, s["high"] - s["low"], left=s["low"], height=0.6, color=colour[v]["color"], alpha=0.55)
                ax.plot([s["point"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=1.5)
            ax.set_yticks(range(len(names)), names if key == "median" else [""] * len(names), fontsize=7)
            ax.invert_yaxis()
            low_end = min(stats[v][key]["low"] for v in names)
            high_end = max(stats[v][key]["high"] for v in names)
            pad = 0.1 * (high_end - low_end) or 0.05 * max(abs(high_end), 1e-9)
            ax.set_xlim(low_end - pad, high_end + pad)  # room around the intervals: no bar touches the frame
            ax.set_title(f"{label} — {name}", fontsize=8)
            ax.set_xlabel(metric.replace("_", " "), fontsize=8)
            ax.grid(axis="x", alpha=0.3)
    one_run = all(m.shape[0] < 2 for _, ms in panels for m in ms.values())
    what = "line: the one run's score (one run per variant: no interval)" if one_run else f"bar: {CI_TEXT}; line: point estimate"
    fig.suptitle(f"{title}\n{what}", fontsize=9)
    fig.tight_layout()
    return _save(fig, path, plt)


def profile_thresholds(scores: npt.ArrayLike, points: int = 101) -> np.ndarray:
    """The taus of a profile: the scores' range padded by 5% on each side.

    Equal scores (one run, or every run at a ceiling) get a pad of 5% of their size (at least 1), not a sliver
    of width 2e-9 that matplotlib labels with an offset nobody can read.
    """
    scores = np.asarray(scores, dtype=float)
    low_end, high_end = float(scores.min()), float(scores.max())
    span = high_end - low_end
    pad = 0.05 * span if span > 0 else max(1.0, 0.05 * abs(high_end))
    return np.linspace(low_end - pad, high_end + pad, points)


def plot_performance_profiles(
    panels: list[tuple[str, dict[str, np.ndarray]]], path: Path, *, metric: str, title: str, higher_is_better: bool = True
) -> Path:
    """Fraction of runs scoring above tau (below it where lower is better), per variant, with bootstrap bands; one
    panel per task group."""
    plt = _setup_matplotlib()
    variants = list(dict.fromkeys(v for _, m in panels for v in m))
    style = styles(variants)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    for ax, (name, matrices) in zip(axes[0], panels):
        taus = profile_thresholds(np.concatenate([m.ravel() for m in matrices.values()]))
        for v, m in matrices.items():
            point, low, high = performance_profile_ci(m, taus, higher_is_better=higher_is_better)
            ax.plot(taus, point, label=f"{v} (n={m.shape[0]})", linewidth=1.4, **style[v])
            ax.fill_between(taus, low, high, color=style[v]["color"], alpha=0.12, linewidth=0)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"{metric.replace('_', ' ')} threshold τ")
        ax.set_ylabel("fraction of runs with score > τ" if higher_is_better else
                      "fraction of runs with score < τ (lower is better)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    one_run = all(m.shape[0] < 2 for _, ms in panels for m in ms.values())
    band = "one run per variant: no band" if one_run else f"band: {CI_TEXT}"
    fig.suptitle(f"{title}\nperformance profiles; {band}", fontsize=9)
    fig.tight_layout()
    return _save(fig, path, plt)


class Comparison(NamedTuple):
    """One ordering a claim makes: ``better`` beats ``worse`` on ``metric`` (lower wins where not higher_is_better)."""

    better: str
    worse: str
    metric: str
    higher_is_better: bool = True


def improvement_rows(
    panels: list[tuple[str, dict[str, np.ndarray]]], comparisons: Sequence[Comparison]
) -> list[tuple[str, float, float, float]]:
    """(label, P, low, high) per comparison: P(better's run beats worse's run) over every task group that ran both.

    "Beats" follows the claim: for a metric where lower is better (a value error, a KL) the scores are negated, so
    P reads the same way for every claim (above 0.5: the claimed order holds).
    """
    rows = []
    for c in comparisons:
        tasks = [(m[c.better], m[c.worse]) for _, m in panels if c.better in m and c.worse in m]
        if not tasks:
            continue
        runs = min(min(a.shape[0], b.shape[0]) for a, b in tasks)
        sign = 1.0 if c.higher_is_better else -1.0
        x = sign * np.concatenate([a[:runs] for a, _ in tasks], axis=1)
        y = sign * np.concatenate([b[:runs] for _, b in tasks], axis=1)
        word = ">" if c.higher_is_better else "<"
        rows.append((f"P({c.better} {word} {c.worse})", *probability_of_improvement_ci(x, y)))
    return rows


def plot_probability_of_improvement(
    panels: list[tuple[str, dict[str, np.ndarray]]], comparisons: Sequence[Comparison], path: Path, *, title: str,
    metric: str,
) -> Path | None:
    """P(better beats worse) with 95% CIs for the pairs the claims compare on ``metric`` (rliable Fig. 10)."""
    rows = improvement_rows(panels, comparisons)
    if not rows:
        return None
    lower = [c for c in comparisons if not c.higher_is_better]
    direction = "lower is better" if lower else "higher is better"
    plt = _setup_matplotlib()
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.6))
    for i, (label, point, low, high) in enumerate(rows):
        if high > low:  # a zero-width interval draws no bar: the caption says so rather than promise one
            ax.barh(i, high - low, left=low, height=0.6, color="#4c72b0", alpha=0.55)
        # a marker, never clipped: P = 0 or 1 sits on the frame, where a bare line vanished into the spine
        ax.plot([point], [i], marker="D", markersize=7, color="black", linestyle="none", clip_on=False, zorder=3)
    ax.axvline(0.5, color="#999", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-0.03, 1.03)  # a P of exactly 0 or 1 stays visible, off the frame
    ax.set_xlabel(f"probability that a run of the first beats one of the second on {metric.replace('_', ' ')} "
                  f"({direction}; ties 1/2)", fontsize=8)
    ax.set_title(f"{title}\nmetric: {metric} ({direction}); {improvement_key(rows)}; dashed: 0.5 (no difference)",
                 fontsize=9)
    fig.tight_layout()
    return _save(fig, path, plt)


def improvement_key(rows: Sequence[tuple[str, float, float, float]]) -> str:
    """What the improvement figure draws, said only where drawn: a bar for an interval of some width, a diamond
    for P."""
    widths = [high - low for _, _, low, high in rows]
    if all(width <= 0 for width in widths):
        return "diamond: P (no bar: the interval has no width, e.g. one run per side)"
    none = " (no bar where it has no width)" if any(width <= 0 for width in widths) else ""
    return f"diamond: P; bar: {CI_TEXT}{none}"


def plot_sample_efficiency(
    curves: dict[str, list[np.ndarray]], frames: dict[str, np.ndarray], path: Path, *, title: str
) -> Path | None:
    """IQM of human-normalised scores over games x runs against frames, with its 95% bootstrap band."""
    if not curves:
        return None
    plt = _setup_matplotlib()
    from matplotlib.ticker import FuncFormatter

    style = styles(list(curves))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for variant, per_frame in curves.items():
        points = [stratified_bootstrap_ci(m, aggregate_iqm, reps=REPS, seed=SEED) for m in per_frame]
        point, low, high = (np.array(p) for p in zip(*points))
        few = len(points) <= 3
        ax.plot(frames[variant], point, label=variant, marker="o" if few else None, **style[variant])
        ax.fill_between(frames[variant], low, high, color=style[variant]["color"], alpha=0.15, linewidth=0)
    ax.xaxis.set_major_formatter(FuncFormatter(count_label))
    ax.set_xlabel("environment frames")
    ax.set_ylabel("IQM human-normalised score (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{title}\naggregate sample efficiency; band: {CI_TEXT}", fontsize=9)
    fig.tight_layout()
    return _save(fig, path, plt)


def numeric_axis(variants: Sequence[str]) -> tuple[str, str] | None:
    """For a two-axis grid with one all-numeric axis: (numeric axis, other axis); else None."""
    axes = variant_axes(variants)
    if axes is None or len(axes[0]) != 2:
        return None
    keys = list(axes[0])
    for i, key in enumerate(keys):
        try:
            [float(a[key]) for a in axes]
        except ValueError:
            continue
        return key, keys[1 - i]
    return None


def plot_final_vs_axis(
    cells: dict[tuple[str, str], CellResult], path: Path, *, metric: str, title: str
) -> Path | None:
    """Final score (mean, 95% CI) against the numeric grid axis, one line per value of the other (IMPALA Fig. E.1)."""
    variants = list(dict.fromkeys(v for v, _ in cells))
    found = numeric_axis(variants)
    if found is None:
        return None
    x_key, line_key = found
    coords = dict(zip(variants, variant_axes(variants) or []))
    plt = _setup_matplotlib()
    palette = plt.get_cmap("tab10")
    envs = list(dict.fromkeys(e for _, e in cells))
    lines = list(dict.fromkeys(coords[v][line_key] for v in variants))
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.8), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for j, line in enumerate(lines):
            xs, points, lows, highs = [], [], [], []
            for v in variants:
                values = [x for x in (cells[(v, env)].values(metric) if (v, env) in cells else []) if np.isfinite(x)]
                if coords[v][line_key] != line or not values:
                    continue
                point, low, high = stratified_bootstrap_ci(np.asarray(values)[:, None], aggregate_mean, reps=REPS, seed=SEED)
                xs.append(float(coords[v][x_key]))
                points.append(point)
                lows.append(point - low)
                highs.append(high - point)
            if xs:
                order = np.argsort(xs)
                ax.errorbar(np.array(xs)[order], np.array(points)[order],
                            yerr=[np.array(lows)[order], np.array(highs)[order]],
                            marker="o", capsize=3, color=palette(j % 10), label=f"{line_key}={line}")
        ax.set_title(env)
        ax.set_xlabel(x_key)
        ax.set_ylabel(f"{metric.replace('_', ' ')} (mean over seeds)")
        ax.set_xticks(sorted({float(coords[v][x_key]) for v in variants}))
        ax.xaxis.set_major_formatter(count_label_formatter())
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"{title}\nerror bars: {CI_TEXT} of the mean over seeds (as in the table)", fontsize=9)
    fig.tight_layout()
    return _save(fig, path, plt)


#: Panels of the figure beside the paper's values at most (Atari's 57 games would make a poster, not a figure).
MAX_PAPER_PANELS = 12
#: Bars further apart than this factor (ours at a reduced scale, the paper's at its own) are drawn on a log axis.
LOG_RATIO = 20


def plot_beside_paper(
    cells: dict[tuple[str, str], CellResult], paper_values: dict[str, dict[str, float]], path: Path, *, metric: str,
    title: str, caption: str,
) -> Path | None:
    """Our value of ``metric`` per variant (mean over seeds: bar; each run: dot; 95% CI where two runs or more) beside
    the paper's (hatched), one panel per environment that ran and has a paper value (IMPALA Table 1 as bars).
    ``caption`` names the unit and both sides' hardware; None when no environment that ran has a paper value."""
    from rlrepro.results.numbers import number_text

    envs = [e for e in dict.fromkeys(e for _, e in cells) if any(env == e for v in paper_values.values() for env in v)]
    if not envs:
        return None
    shown = envs[:MAX_PAPER_PANELS]
    # every variant that ran, then a paper row no variant of this scale ran (its bar alone)
    variants = list(dict.fromkeys([*(v for v, _ in cells), *(v for v, by_env in paper_values.items()
                                                            if any(e in by_env for e in shown))]))
    plt = _setup_matplotlib()
    colour = styles(variants)
    fig, axes = plt.subplots(1, len(shown), figsize=(6.5 * len(shown), 0.55 * len(variants) + 1.8), squeeze=False)
    intervals = False
    for ax, env in zip(axes[0], shown):
        for i, variant in enumerate(variants):
            values = [x for x in (cells[(variant, env)].values(metric) if (variant, env) in cells else [])
                      if np.isfinite(x)]
            paper = paper_values.get(variant, {}).get(env)
            if values:
                mean = float(np.mean(values))
                ax.barh(i - 0.2, mean, height=0.38, color=colour[variant]["color"], alpha=0.8)
                if len(values) > 1:
                    _, low, high = stratified_bootstrap_ci(np.asarray(values)[:, None], aggregate_mean, reps=REPS,
                                                           seed=SEED)
                    ax.errorbar(mean, i - 0.2, xerr=[[mean - low], [high - mean]], color="black", capsize=3,
                                linewidth=1)
                    intervals = True
                ax.plot(values, [i - 0.2] * len(values), "o", color="black", markersize=3)
                ax.annotate(f" {number_text(mean)}", (mean, i - 0.2), va="center", fontsize=7)
            if paper is not None:
                ax.barh(i + 0.2, paper, height=0.38, color="white", edgecolor="#555", hatch="///")
                ax.annotate(f" paper {number_text(paper)}", (paper, i + 0.2), va="center", fontsize=7, color="#555")
        ax.set_yticks(range(len(variants)), variants, fontsize=7)
        ax.invert_yaxis()
        drawn = [p.get_width() for p in ax.patches if p.get_width() > 0]
        if drawn and max(drawn) > LOG_RATIO * min(drawn):  # ours at a reduced scale beside the paper's: a log axis
            ax.set_xscale("log")  # shows both, where a linear one shrinks ours to slivers
            ax.set_xlim(min(drawn) / 2, max(drawn) * 3)
            axis_note = " (log axis)"
        else:
            ax.set_xlim(0, ax.get_xlim()[1] * 1.15)  # room for the value labels
            axis_note = ""
        ax.set_title(env, fontsize=9)
        ax.set_xlabel(metric.replace("_", " ") + axis_note, fontsize=8)
        ax.xaxis.set_major_formatter(count_label_formatter())
        ax.grid(axis="x", alpha=0.3)
    more = f" (the first {len(shown)} of {len(envs)} environments)" if len(envs) > len(shown) else ""
    bars = f"error bar: {CI_TEXT}" if intervals else "one run per variant: no interval"
    fig.suptitle(f"{title}\nours (solid: mean; dots: runs; {bars}) beside the paper's (hatched){more}", fontsize=9)
    fig.text(0.5, 0.0, textwrap.fill(caption, 110 * len(shown)), ha="center", va="top", fontsize=7)
    fig.tight_layout()
    return _save(fig, path, plt)


def count_label_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(count_label)


def _save(fig, path: Path, plt) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------------
# all figures of one experiment


FIGURES = ("intervals", "profiles", "improvement", "efficiency", "summary")


def write_figures(
    curves_png: Path,
    cells: dict[tuple[str, str], CellResult],
    *,
    metric: str,
    title: str,
    pairs: Sequence[Comparison | tuple[str, str]] = (),
    hns: dict[str, np.ndarray] | None = None,
    hns_curves: tuple[dict[str, list[np.ndarray]], dict[str, np.ndarray]] | None = None,
) -> list[tuple[str, Path]]:
    """Write the experiment's extra figures beside its curves (``<stem>.<figure>.png``); returns (caption, path).

    ``pairs`` are the claims' comparisons (a bare (better, worse) pair compares on ``metric``, higher better).
    The probability of improvement is drawn once per metric the claims compare on: ``<stem>.improvement.png`` for
    ``metric``, ``<stem>.improvement.<other metric>.png`` for the others. Figures of an earlier aggregate that no
    longer apply are deleted, so the folder shows only current ones.
    """
    for name in FIGURES:
        curves_png.with_name(f"{curves_png.stem}.{name}.png").unlink(missing_ok=True)
    for stale in curves_png.parent.glob(f"{curves_png.stem}.improvement.*.png"):
        stale.unlink()
    out = curves_png.with_name
    panels = score_matrices(cells, metric, hns)
    label = "human-normalised score (%)" if hns is not None else metric
    written: list[tuple[str, Path | None]] = []
    if panels:
        written.append(("interval estimates of median, IQM and mean",
                        plot_interval_estimates(panels, out(f"{curves_png.stem}.intervals.png"), metric=label, title=title)))
    comparisons = [c if isinstance(c, Comparison) else Comparison(*c, metric=metric) for c in pairs]
    if panels:
        # the claims on the table's metric say which way is better (an error: lower); none say: higher
        lower = [c for c in comparisons if c.metric == metric and not c.higher_is_better]
        higher = not lower or any(c.higher_is_better for c in comparisons if c.metric == metric)
        written.append(("performance profiles" + ("" if higher else " (lower is better: fraction of runs below τ)"),
                        plot_performance_profiles(panels, out(f"{curves_png.stem}.profiles.png"), metric=label,
                                                  title=title, higher_is_better=higher)))
    for compared in dict.fromkeys(c.metric for c in comparisons):
        own = [c for c in comparisons if c.metric == compared]
        name = "improvement" if compared == metric else f"improvement.{compared}"
        metric_panels = panels if compared == metric else score_matrices(cells, compared, None)
        shown = label if compared == metric else compared
        written.append((f"probability of improvement on {shown} between the variants the claims compare",
                        plot_probability_of_improvement(metric_panels, own, out(f"{curves_png.stem}.{name}.png"),
                                                        title=title, metric=shown)))
    if hns_curves is not None:
        written.append(("aggregate sample efficiency (IQM of human-normalised scores)",
                        plot_sample_efficiency(*hns_curves, out(f"{curves_png.stem}.efficiency.png"), title=title)))
    written.append((f"final {metric} against the numeric grid axis",
                    plot_final_vs_axis(cells, out(f"{curves_png.stem}.summary.png"), metric=metric, title=title)))
    return [(caption, path) for caption, path in written if path is not None]


__all__ = [
    "aggregate_median",
    "performance_profile",
    "probability_of_improvement",
    "write_figures",
]


def claim_pairs(spec) -> list[tuple[str, str]]:
    """(better, worse) variant pairs of the spec's ordering claims, in claim order, without repeats."""
    return list(dict.fromkeys((c.better, c.worse) for c in claim_comparisons(spec)))


def claim_comparisons(spec) -> list[Comparison]:
    """What the spec's ordering claims compare: (better, worse, metric, higher_is_better), without repeats."""
    found: list[Comparison] = []
    for claim in spec.claims:
        better, worse = getattr(claim, "better", None), getattr(claim, "worse", None)
        if not (better and worse):
            continue
        metric = getattr(claim, "metric", None) or getattr(getattr(spec, "run", None), "report_metric", "final_return")
        higher = getattr(claim, "higher_is_better", True)
        found += [c for w in worse if (c := Comparison(better, w, metric, higher)) not in found]
    return found


def atari_scores(spec, cells: dict[tuple[str, str], CellResult], metric: str, curve_metric: str):
    """For Atari specs: per-variant HNS matrices of ``metric`` and HNS curves of ``curve_metric``; else (None, None)."""
    from rlrepro.results.claims import hns_matrix
    from rlrepro.results.normalization import human_normalized_scores
    from rlrepro.results.plots import _common_table

    if not any(env.kind == "atari" for env in spec.environments) or metric not in ("eval_return", "final_return"):
        return None, None
    games_by_env = {env.id: getattr(env, "game", env.id) for env in spec.environments}
    variants = list(dict.fromkeys(v for v, _ in cells))
    hns = {}
    for variant in variants:
        games, matrix = hns_matrix(spec, cells, variant, metric, "dqn_zoo_57")
        keep = [i for i in range(len(games)) if np.isfinite(matrix[:, i]).all()]
        if keep:
            hns[variant] = matrix[:, keep]
    curves, frames = {}, {}
    for variant in variants:
        tables = {env: _common_table(cell.curves) for (v, env), cell in cells.items() if v == variant}
        tables = {env: t for env, t in tables.items() if t[1].size}
        if not tables:
            continue
        common = sorted(set.intersection(*(set(t[0].tolist()) for t in tables.values())))
        runs = min(t[1].shape[0] for t in tables.values())
        if not common:
            continue
        envs = sorted(tables)  # the column order of hns_matrix
        games = [games_by_env[e] for e in envs]
        per_frame = []
        for f in common:
            raw = np.array([[tables[e][1][r, list(tables[e][0]).index(f)] for e in envs] for r in range(runs)])
            normalised = 100.0 * human_normalized_scores(games, raw, "dqn_zoo_57")
            per_frame.append(normalised[:, np.isfinite(normalised).all(axis=0)])
        if all(m.size for m in per_frame):
            curves[variant], frames[variant] = per_frame, np.asarray(common)
    return (hns or None), ((curves, frames) if curves else None)


def experiment_figures(spec, cells: dict[tuple[str, str], CellResult], curves_png: Path, *, title: str) -> list[tuple[str, Path]]:
    """Every extra figure of one experiment, from the spec's metrics and claims (called by the aggregate step)."""
    hns, hns_curves = atari_scores(spec, cells, spec.run.report_metric, spec.run.curve_metric)
    return write_figures(curves_png, cells, metric=spec.run.report_metric, title=title, pairs=claim_comparisons(spec),
                         hns=hns, hns_curves=hns_curves)
