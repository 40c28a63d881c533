"""Learning curves: mean over seeds with its 95% bootstrap interval, one panel per environment in table order.

What a reader of a paper expects of the figure: axes that say what they count (environment frames, or proposals
for a loss search) with ticks as 100k / 1M; a band that is the same 95% interval the tables give (percentile
bootstrap over seeds of the mean, as ``aggregation.stratified_bootstrap_ci``) and a caption that says so; markers
where a series has too few points to draw a line; a panel that says "no finished episode" instead of an empty
axis; and, for a grid of variants, colour for one grid axis and line style for the other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlrepro.results.collect import CellResult

LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)))
BAND_TEXT = "band: 95% bootstrap CI of the mean over seeds (as in the table)"
REPS, SEED = 2000, 0  # the tables' bootstrap (aggregation.stratified_bootstrap_ci defaults)


def mean_curve(curves: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames, mean and standard error over seeds, on the frames every seed reported."""
    frames, table = _common_table(curves)
    if table.size == 0:
        return frames, np.array([]), np.array([])
    mean = table.mean(axis=0)
    stderr = table.std(axis=0, ddof=1) / np.sqrt(len(curves)) if len(curves) > 1 else np.zeros_like(mean)
    return frames, mean, stderr


def _common_table(curves: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray]:
    """Frames every seed reported and the (seeds, frames) table of values there."""
    if not curves or not all(curves):
        return np.array([]), np.zeros((0, 0))
    common = sorted(set.intersection(*(set(f for f, _ in c) for c in curves)))
    table = np.array([[dict(c)[f] for f in common] for c in curves], dtype=np.float64)
    return np.asarray(common), table


def mean_curve_ci(
    curves: list[list[tuple[int, float]]], *, reps: int = REPS, confidence: float = 0.95, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frames, mean over seeds, and the percentile-bootstrap interval of that mean at every frame.

    The same resampling as the tables (seeds drawn with replacement, ``reps`` times, numpy's default_rng(seed)),
    done for all frames at once. With one seed the interval collapses to the curve.
    """
    frames, table = _common_table(curves)
    if table.size == 0:
        return frames, np.array([]), np.array([]), np.array([])
    mean = table.mean(axis=0)
    if table.shape[0] == 1:
        return frames, mean, mean.copy(), mean.copy()
    rng = np.random.default_rng(seed)
    means = table[rng.integers(0, table.shape[0], size=(reps, table.shape[0]))].mean(axis=1)  # (reps, frames)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail], axis=0)
    return frames, mean, low, high


def count_label(value: float, _position: object = None) -> str:
    """Axis ticks as a reader writes counts: 500, 100k, 1.5M, 2B."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}" if value != int(value) else f"{int(value)}"


def variant_axes(variants: Sequence[str]) -> list[dict[str, str]] | None:
    """Grid coordinates from variant names (``corr=vtrace__lag=32`` -> {corr: vtrace, lag: 32}), or None.

    None unless every name is ``key=value`` parts joined by ``__`` with the same keys in every name.
    """
    axes = []
    for name in variants:
        parts = [part.split("=", 1) for part in name.split("__")]
        if not all(len(p) == 2 for p in parts):
            return None
        axes.append({k: v for k, v in parts})
    if not axes or any(list(a) != list(axes[0]) for a in axes):
        return None
    return axes


def styles(variants: Sequence[str]) -> dict[str, dict]:
    """Colour and line style per variant: for a two-axis grid, colour = the axis with more values, style = the other."""
    import matplotlib.pyplot as plt

    palette = plt.get_cmap("tab10")
    axes = variant_axes(variants)
    if axes is None or len(axes[0]) != 2:
        return {v: {"color": palette(i % 10), "linestyle": LINE_STYLES[i // 10 % len(LINE_STYLES)]} for i, v in enumerate(variants)}
    keys = sorted(axes[0], key=lambda k: -len({a[k] for a in axes}))
    colour_values = list(dict.fromkeys(a[keys[0]] for a in axes))
    style_values = list(dict.fromkeys(a[keys[1]] for a in axes))
    return {
        v: {"color": palette(colour_values.index(a[keys[0]]) % 10),
            "linestyle": LINE_STYLES[style_values.index(a[keys[1]]) % len(LINE_STYLES)]}
        for v, a in zip(variants, axes)
    }


def _empty_text(metric: str) -> str:
    return "no finished episode" if "return" in metric else f"no finite {metric.replace('_', ' ')}"


def _setup_matplotlib():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(
    cells: dict[tuple[str, str], CellResult],
    path: Path,
    *,
    title: str,
    metric: str = "episode_return",
    x_label: str = "environment frames",
) -> None:
    """Write a PNG: per environment (table order), the mean of ``metric`` over seeds per variant with its 95% CI."""
    plt = _setup_matplotlib()
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    envs = list(dict.fromkeys(env for _, env in cells))
    variants = list(dict.fromkeys(variant for variant, _ in cells))
    style = styles(variants)
    columns = min(len(envs), 3)
    rows = math.ceil(len(envs) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(envs):]:
        ax.set_visible(False)
    for ax, env in zip(axes.flat, envs):
        drawn = 0
        for variant in variants:
            cell = cells.get((variant, env))
            if cell is None:
                continue
            frames, mean, low, high = mean_curve_ci(cell.curves)
            if frames.size == 0:
                continue
            few = frames.size <= 3
            ax.plot(frames, mean, label=f"{variant} (n={len(cell.curves)})", linewidth=1.4,
                    marker="o" if few else None, markersize=5, **style[variant])
            if len(cell.curves) < 2:
                pass  # one run: no interval to draw (the caption says so)
            elif few:
                ax.errorbar(frames, mean, yerr=[mean - low, high - mean], fmt="none", capsize=3,
                            color=style[variant]["color"], linewidth=1)
            else:
                ax.fill_between(frames, low, high, color=style[variant]["color"], alpha=0.15, linewidth=0)
            drawn += 1
        ax.set_title(env)
        ax.set_xlabel(x_label)
        ax.set_ylabel(metric.replace("_", " "))
        ax.xaxis.set_major_formatter(FuncFormatter(count_label))
        if x_label == "proposals":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not drawn:
            ax.text(0.5, 0.5, _empty_text(metric), ha="center", va="center", transform=ax.transAxes, fontsize=11,
                    color="#555")
            ax.set_xticks([])
            ax.set_yticks([])
        else:
            ax.grid(alpha=0.3)
    handles, labels = next(((h, lab) for h, lab in (ax.get_legend_handles_labels() for ax in axes.flat) if h), ([], []))
    if handles:
        fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"{title}\n{band_caption([len(c.curves) for c in cells.values()])}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def band_caption(runs: list[int]) -> str:
    """What the curves' caption may promise: a band only where a cell has two runs or more to draw one from."""
    if runs and max(runs) < 2:
        return "one run per variant: its curve, no band (an interval needs two runs or more)"
    if runs and min(runs) < 2:
        return f"mean over seeds; {BAND_TEXT} (none for a variant of one run)"
    return f"mean over seeds; {BAND_TEXT}"


def x_axis_label(spec) -> str:
    """What the curves' x values count: proposals for a loss search, environment frames otherwise."""
    return "proposals" if spec.agent.kind == "loss_search" else "environment frames"
