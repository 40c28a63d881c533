"""The SR profile over the Chain (Raposo et al. 2021, Fig. 3c): c(s) per chain position, mean and sd over seeds.

Reads the ``sr_profile.json`` every Chain run writes (final parameters), prints a table and draws a PNG:
``python -m rlrepro.agents.impala_sr.profile RUNS_DIR [--out sr_profile.png]`` where RUNS_DIR is a variant's
environment folder, e.g. ``results/cpu/runs/synthetic_returns/chain/sr/chain``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


PROFILE_FILE = "sr_profile.json"


def load_profiles(runs_dir: Path) -> tuple[np.ndarray, dict]:
    """``[seeds, positions]`` contributions and the first run's metadata (start, trigger)."""
    files = sorted(Path(runs_dir).glob(f"seed*/{PROFILE_FILE}"))
    if not files:
        raise FileNotFoundError(f"{runs_dir}: no seed*/{PROFILE_FILE} (run the Chain with impala_sr first)")
    return read_profiles(files)


def read_profiles(files: list[Path]) -> tuple[np.ndarray, dict]:
    """The contributions of the given ``sr_profile.json`` files, ``[runs, positions]``, and the first's metadata."""
    data = [json.loads(Path(f).read_text()) for f in files]
    return np.array([d["contribution"] for d in data], np.float64), data[0]


def profile_table(profiles: np.ndarray, meta: dict) -> str:
    """One line per chain position: mean and sd of c over seeds, and how many seeds peak there."""
    peaks = np.bincount(np.argmax(profiles, axis=1), minlength=profiles.shape[1])
    lines = ["position  mean_c     sd_c   seeds_peaking_here"]
    for position, (mean, sd) in enumerate(zip(profiles.mean(0), profiles.std(0))):
        mark = " <- trigger" if position == meta["trigger"] else (" <- start" if position == meta["start"] else "")
        lines.append(f"{position:8d}  {mean:7.3f}  {sd:7.3f}  {peaks[position]:4d}{mark}")
    return "\n".join(lines)


def plot_profile(profiles: np.ndarray, meta: dict, out: Path, *, title: str = "") -> None:
    """Mean c per position with a +-1 sd band and the trigger marked (the layout of Fig. 3c)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positions = np.arange(profiles.shape[1])
    mean, sd = profiles.mean(0), profiles.std(0)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.fill_between(positions, mean - sd, mean + sd, color="pink", alpha=0.6, label="+-1 sd over seeds")
    ax.plot(positions, mean, color="red", marker="o", label=f"mean c(s), {len(profiles)} seeds")
    ax.axvline(meta["trigger"], color="gray", linestyle="--", label="trigger")
    ax.axvline(meta["start"], color="black", linestyle=":", label="start")
    ax.set_xlabel("chain position")
    ax.set_ylabel("synthetic return c(s)")
    ax.set_title(title or "SR profile over the Chain (final parameters)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over the curve
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="PNG path (default: RUNS_DIR/sr_profile.png)")
    args = parser.parse_args(argv)
    profiles, meta = load_profiles(args.runs_dir)
    print(profile_table(profiles, meta))
    out = args.out or args.runs_dir / "sr_profile.png"
    plot_profile(profiles, meta, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
