"""Human-normalised scores, the shipped reference data, and the IMPALA Table 4 recomputation."""

from __future__ import annotations

import hashlib
import math
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from rlrepro import data
from rlrepro.results import aggregation
from rlrepro.results.normalization import (
    HNS_TABLES,
    canonical_game_name,
    human_normalized_score,
    human_normalized_scores,
    reference_scores,
)

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# sha256 recorded for atari57_human_random.csv by the shared data README (copied from google-deepmind/dqn_zoo).
_ATARI57_SHA256 = "7d61b5b33398685f120e5421a48f44fc851a6ad769dbab86601aef88377e51c1"


def _readme_checksums() -> dict[str, str]:
    text = data.data_path("README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([^`]+\.csv)` \| \d+ \| `([0-9a-f]{64})` \|$", text, flags=re.MULTILINE))


# --- shipped data -------------------------------------------------------------------------------


def test_every_shipped_csv_matches_its_readme_checksum():
    checksums = _readme_checksums()
    from rlrepro.results.trivial import CSV_NAME  # measured here row by row (README): no fixed checksum

    assert sorted(checksums) == [name for name in data.available() if name != CSV_NAME]
    for name, expected in checksums.items():
        assert hashlib.sha256(data.data_path(name).read_bytes()).hexdigest() == expected, name


def test_atari_reference_csv_is_the_dqn_zoo_table():
    assert _readme_checksums()["atari57_human_random.csv"] == _ATARI57_SHA256
    assert hashlib.sha256(data.data_path("atari57_human_random.csv").read_bytes()).hexdigest() == _ATARI57_SHA256


def test_read_csv_returns_rows_as_strings():
    rows = data.read_csv("atari57_human_random.csv")
    assert len(rows) == 57
    assert rows[0] == {"game": "alien", "random": "227.8", "human": "7127.7"}


@pytest.mark.parametrize("name", ["missing.csv", "../README.md", "/etc/passwd"])
def test_data_path_rejects_unknown_files(name):
    with pytest.raises(FileNotFoundError, match="available"):
        data.data_path(name)


# --- reference tables ---------------------------------------------------------------------------


def test_reference_tables_differ_only_in_video_pinball_random():
    dqn_zoo = reference_scores("dqn_zoo_57")
    zero = reference_scores("video_pinball_random_zero")
    assert HNS_TABLES == ("dqn_zoo_57", "video_pinball_random_zero")
    assert len(dqn_zoo) == len(zero) == 57
    assert dqn_zoo["video_pinball"] == (16256.9, 17667.9)
    assert zero["video_pinball"] == (0.0, 17667.9)
    assert {g: v for g, v in dqn_zoo.items() if zero[g] != v} == {"video_pinball": (16256.9, 17667.9)}


def test_reference_scores_returns_a_copy():
    reference_scores()["pong"] = (0.0, 1.0)
    assert reference_scores()["pong"] == (-20.7, 14.6)


def test_unknown_table_is_an_error():
    with pytest.raises(ValueError, match="dqn_zoo_57"):
        reference_scores("nature_dqn")
    with pytest.raises(ValueError, match="unknown HNS table"):
        human_normalized_score("pong", 0.0, table="nature_dqn")


# --- HNS by hand --------------------------------------------------------------------------------


def test_hns_by_hand():
    # pong: random -20.7, human 14.6; IMPALA deep 20.98 -> (20.98 + 20.7) / (14.6 + 20.7) = 41.68 / 35.3
    assert human_normalized_score("pong", 20.98) == pytest.approx(41.68 / 35.3)  # 1.18074
    assert human_normalized_score("pong", -20.7) == 0.0
    assert human_normalized_score("pong", 14.6) == pytest.approx(1.0)
    # breakout: random 1.7, human 30.5; 787.34 -> (787.34 - 1.7) / (30.5 - 1.7) = 785.64 / 28.8
    assert human_normalized_score("breakout", 787.34) == pytest.approx(785.64 / 28.8)  # 27.2792
    # skiing (both references negative): random -17098.1, human -4336.9; -10180.38 -> 6917.72 / 12761.2
    assert human_normalized_score("skiing", -10180.38) == pytest.approx(6917.72 / 12761.2)  # 0.54209


def test_hns_video_pinball_depends_on_the_table():
    # dqn_zoo_57: (572898.27 - 16256.9) / (17667.9 - 16256.9) = 556641.37 / 1411 = 394.50
    assert human_normalized_score("video_pinball", 572898.27) == pytest.approx(556641.37 / 1411.0)
    # video_pinball_random_zero: 572898.27 / 17667.9 = 32.43
    assert human_normalized_score("video_pinball", 572898.27, "video_pinball_random_zero") == pytest.approx(
        572898.27 / 17667.9
    )


def test_capped_hns():
    assert human_normalized_score("pong", 20.98, capped=True) == 1.0  # min(1, 1.18)
    assert human_normalized_score("pong", -3.05, capped=True) == pytest.approx(0.5)  # 17.65 / 35.3, below the cap
    # a negative HNS is not floored: (-21 + 20.7) / 35.3 = -0.0085
    assert human_normalized_score("pong", -21.0, capped=True) == pytest.approx(-0.3 / 35.3)


@pytest.mark.parametrize("game", ["not_a_game", "ALE/NotAGame-v5", ""])
def test_unknown_game_is_nan(game):
    assert math.isnan(human_normalized_score(game, 100.0))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pong", "pong"),
        ("Pong", "pong"),
        ("ALE/Pong-v5", "pong"),
        ("PongNoFrameskip-v4", "pong"),
        ("Pong-ramDeterministic-v4", "pong"),
        ("ALE/MontezumaRevenge-v5", "montezuma_revenge"),
        ("KungFuMaster-v4", "kung_fu_master"),
        ("UpNDown", "up_n_down"),
        ("Jamesbond", "jamesbond"),
        ("private_eye", "private_eye"),
        ("videopinball", "video_pinball"),
        ("ALE/MyGame-v0", "my_game"),
    ],
)
def test_canonical_game_name(name, expected):
    assert canonical_game_name(name) == expected


def test_hns_accepts_ale_ids():
    assert human_normalized_score("ALE/Pong-v5", 20.98) == human_normalized_score("pong", 20.98)


def test_vectorised_matches_scalar():
    games = list(reference_scores())
    rng = np.random.default_rng(0)
    raw = rng.uniform(-100.0, 10_000.0, size=(3, len(games)))
    for table in HNS_TABLES:
        for capped in (False, True):
            hns = human_normalized_scores(games, raw, table, capped=capped)
            assert hns.shape == raw.shape
            expected = [[human_normalized_score(g, s, table, capped=capped) for g, s in zip(games, row)] for row in raw]
            np.testing.assert_allclose(hns, expected, rtol=1e-12)


def test_vectorised_unknown_game_column_is_nan():
    hns = human_normalized_scores(["pong", "not_a_game", "ALE/Breakout-v5"], [14.6, 5.0, 1.7])
    assert hns[0] == pytest.approx(1.0)
    assert math.isnan(hns[1])
    assert hns[2] == 0.0


def test_vectorised_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="len\\(games\\) = 2"):
        human_normalized_scores(["pong", "breakout"], [1.0, 2.0, 3.0])


# --- IMPALA Table 4 from Table C.1 (impala.notes.md section 3, section 6 item 6) ----------------------


def _impala_hns_percent(column: str, table: str) -> np.ndarray:
    rows = data.read_csv("impala_table_c1_atari57_scores.csv")
    games = [row["game"] for row in rows]
    raw = np.array([[float(row[column]) for row in rows]])  # one "run": the paper's per-game score
    hns = 100.0 * human_normalized_scores(games, raw, table)
    assert hns.shape == (1, 57) and np.all(np.isfinite(hns))
    return hns


@pytest.mark.parametrize(
    ("column", "median"),
    [("impala_deep", 191.8), ("impala_shallow", 93.2), ("impala_deep_multitask", 59.7)],
)
def test_impala_table4_medians_reproduce(column, median):
    for table in HNS_TABLES:  # Video Pinball is far above the median under either reference
        assert round(aggregation.aggregate_median(_impala_hns_percent(column, table)), 1) == median


@pytest.mark.parametrize(
    ("column", "paper_mean", "recomputed_mean"),
    [("impala_deep", 957.6, 957.3), ("impala_shallow", 466.4, 466.1), ("impala_deep_multitask", 176.9, 176.6)],
)
def test_impala_table4_means_with_video_pinball_random_zero(column, paper_mean, recomputed_mean):
    mean = aggregation.aggregate_mean(_impala_hns_percent(column, "video_pinball_random_zero"))
    assert round(mean, 1) == recomputed_mean
    assert abs(mean - paper_mean) < 0.5
    # with the dqn_zoo_57 reference Video Pinball dominates the mean (1592.5 / 707.4 / 179.4)
    assert aggregation.aggregate_mean(_impala_hns_percent(column, "dqn_zoo_57")) > paper_mean + 2.0


def test_importing_results_stays_light():
    # jax, mlflow (slow) and scipy, pandas (0.3-0.6 s each) must not be pulled in by rlrepro.results.
    code = (
        "import sys, rlrepro.results; "
        "print(sorted(m for m in ('jax', 'mlflow', 'scipy', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=_REPO_ROOT)
    assert out.stdout.strip() == "[]"
