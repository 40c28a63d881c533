"""Atari-57 human-normalised scores (HNS).

HNS = (score - random) / (human - random), as a fraction (1.0 = human level), with the
random/human reference scores of ``rlrepro/data/atari57_human_random.csv`` (DQN Zoo's
``atari_data.py``; provenance in ``rlrepro/data/README.md``). Unknown games give NaN, as in DQN Zoo.

Two reference tables, selected by id (record the id with every aggregate):
- ``"dqn_zoo_57"``: the file as shipped (Video Pinball random = 16256.9). The IMPALA Table 4
  medians reproduce with it.
- ``"video_pinball_random_zero"``: the same with Video Pinball random = 0.0 (the MuZero-era
  value carried by rliable and Dopamine). The IMPALA Table 4 means come within 0.3 points with it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rlrepro import data

HNS_TABLES = ("dqn_zoo_57", "video_pinball_random_zero")

_REFERENCE_CSV = "atari57_human_random.csv"
# Suffixes of Gym / ALE environment ids, stripped (repeatedly) after the version.
_ID_SUFFIXES = ("NoFrameskip", "Deterministic", "-ram")


@functools.cache
def _dqn_zoo_table() -> dict[str, tuple[float, float]]:
    return {row["game"]: (float(row["random"]), float(row["human"])) for row in data.read_csv(_REFERENCE_CSV)}


@functools.cache
def _squashed_index() -> dict[str, str]:
    """Maps e.g. "montezumarevenge" -> "montezuma_revenge" for the 57 games."""
    return {_squash(game): game for game in _dqn_zoo_table()}


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def reference_scores(table: str = "dqn_zoo_57") -> dict[str, tuple[float, float]]:
    """The (random, human) raw scores per snake_case game for a reference table id in ``HNS_TABLES``."""
    scores = dict(_dqn_zoo_table())
    if table == "dqn_zoo_57":
        return scores
    if table == "video_pinball_random_zero":
        scores["video_pinball"] = (0.0, scores["video_pinball"][1])
        return scores
    raise ValueError(f"unknown HNS table {table!r}; expected one of {HNS_TABLES}")


def canonical_game_name(name: str) -> str:
    """The snake_case DQN Zoo name of a game given as itself or as an ALE / Gym id.

    ``"pong"``, ``"Pong"``, ``"ALE/Pong-v5"`` and ``"PongNoFrameskip-v4"`` all give ``"pong"``;
    ``"ALE/MontezumaRevenge-v5"`` gives ``"montezuma_revenge"``. A name that matches none of the
    57 games is returned in snake_case (``"MyGame-v0"`` -> ``"my_game"``).
    """
    base = name.strip().rsplit("/", 1)[-1]
    base = re.sub(r"-v\d+$", "", base)
    stripped = True
    while stripped:
        stripped = False
        for suffix in _ID_SUFFIXES:
            if base.endswith(suffix) and len(base) > len(suffix):
                base, stripped = base[: -len(suffix)], True
    known = _squashed_index().get(_squash(base))
    if known is not None:
        return known
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base)
    return re.sub(r"[^a-z0-9]+", "_", snake.lower()).strip("_")


def human_normalized_score(game: str, score: float, table: str = "dqn_zoo_57", *, capped: bool = False) -> float:
    """HNS of one raw score: (score - random) / (human - random); NaN for an unknown game.

    Args:
      game: snake_case name or ALE / Gym id (see ``canonical_game_name``).
      score: raw game score (undiscounted episode return, unclipped rewards).
      table: reference table id, one of ``HNS_TABLES``.
      capped: return min(1, HNS) (capped HNS, as for DMLab-30 in IMPALA).
    """
    reference = reference_scores(table).get(canonical_game_name(game))
    if reference is None:
        return float("nan")
    random, human = reference
    hns = (float(score) - random) / (human - random)
    return min(1.0, hns) if capped else hns


def human_normalized_scores(
    games: Sequence[str],
    scores: npt.ArrayLike,
    table: str = "dqn_zoo_57",
    *,
    capped: bool = False,
) -> np.ndarray:
    """Vectorised ``human_normalized_score``: ``scores[..., j]`` is a raw score of ``games[j]``.

    Accepts a vector of one score per game or a (num_runs, num_games) matrix; returns float64 HNS of
    the same shape, with NaN in the columns of unknown games (and wherever the score is NaN).
    """
    references = reference_scores(table)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 0 or scores.shape[-1] != len(games):
        raise ValueError(f"scores must have a last axis of len(games) = {len(games)}; got shape {scores.shape}")
    pairs = [references.get(canonical_game_name(g), (np.nan, np.nan)) for g in games]
    random = np.array([p[0] for p in pairs], dtype=np.float64)
    human = np.array([p[1] for p in pairs], dtype=np.float64)
    hns = (scores - random) / (human - random)
    return np.minimum(hns, 1.0) if capped else hns
