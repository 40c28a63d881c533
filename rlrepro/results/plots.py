"""Learning curves: mean over seeds with a band, one panel per environment."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rlrepro.results.collect import CellResult


def mean_curve(curves: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames, mean and standard error over seeds, on the frames every seed reported."""
    if not curves or not all(curves):
        return np.array([]), np.array([]), np.array([])
    common = sorted(set.intersection(*(set(f for f, _ in c) for c in curves)))
    table = np.array([[dict(c)[f] for f in common] for c in curves], dtype=np.float64)
    mean = table.mean(axis=0)
    stderr = table.std(axis=0, ddof=1) / np.sqrt(len(curves)) if len(curves) > 1 else np.zeros_like(mean)
    return np.asarray(common), mean, stderr


def plot_learning_curves(
    cells: dict[tuple[str, str], CellResult], path: Path, *, title: str, metric: str = "episode_return"
) -> None:
    """Write a PNG: per environment, the mean of ``metric`` over seeds for every variant, with a +-1 s.e. band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({env for _, env in cells})
    variants = list(dict.fromkeys(variant for variant, _ in cells))
    colours = plt.get_cmap("tab20" if len(variants) > 10 else "tab10")
    fig, axes = plt.subplots(1, len(envs), figsize=(6 * len(envs), 4.2), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for i, variant in enumerate(variants):
            cell = cells.get((variant, env))
            if cell is None:
                continue
            frames, mean, stderr = mean_curve(cell.curves)
            if frames.size == 0:
                continue
            colour = colours(i % colours.N)
            ax.plot(frames, mean, color=colour, label=f"{variant} (n={len(cell.curves)})", linewidth=1.2)
            ax.fill_between(frames, mean - stderr, mean + stderr, color=colour, alpha=0.2, linewidth=0)
        ax.set_title(env)
        ax.set_xlabel("frames")
        ax.set_ylabel(f"{metric.replace('_', ' ')} (mean over seeds, band: ±1 s.e.)")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
