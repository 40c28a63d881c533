"""Every Table C.1 number in IMPALA's Atari specs is the paper's for that agent and game.

The specs type the paper's per-game scores three times (a threshold claim per game, ``paper_values`` beside our
numbers, a score quoted in a claim's ``paper_evidence``); ``rlrepro/data/impala_table_c1_atari57_scores.csv`` holds
Table C.1 once. A number copied from the wrong column (the deep expert's Pong for the multi-task agent's) reads as
the paper's in the report, so each is checked against the table.
"""

from __future__ import annotations

import re

import pytest

from rlrepro import data
from rlrepro.specs import load_spec

#: Each spec and the Table C.1 column its agent is.
COLUMNS = {"atari57_deep": "impala_deep", "atari57_shallow": "impala_shallow",
           "atari57_multitask": "impala_deep_multitask"}
#: "Table C.1 (... on Pong: 8.58)": a game named in words and the score quoted for it.
_QUOTED = re.compile(r"Table C\.1 \([^)]*? on (?P<game>[A-Z][A-Za-z' ]+): (?P<score>-?[\d,]+(?:\.\d+)?)\)")


def _table() -> dict[str, dict[str, float]]:
    """Table C.1's scores per game and column (ACKTR's 'N/A' cells left out: no spec reads ACKTR)."""
    return {row["game"]: {k: float(v) for k, v in row.items() if k != "game" and v != "N/A"}
            for row in data.read_csv("impala_table_c1_atari57_scores.csv")}


@pytest.mark.parametrize("experiment", sorted(COLUMNS))
def test_the_specs_per_game_scores_are_table_c1s(experiment: str) -> None:
    spec, table, column = load_spec(f"specs/impala/{experiment}.yaml"), _table(), COLUMNS[experiment]
    [(variant, values)] = spec.paper_values.items()
    assert values == {game: table[game][column] for game in table}, f"paper_values.{variant}"
    quoted = 0
    for claim in spec.claims:
        if claim.id.startswith("score_"):
            assert claim.value == table[claim.environment][column], claim.id
        for match in _QUOTED.finditer(claim.paper_evidence or ""):
            game = match["game"].lower().replace(" ", "_").replace("'", "")
            assert float(match["score"].replace(",", "")) == table[game][column], (claim.id, match[0])
            quoted += 1
    if experiment == "atari57_multitask":
        assert quoted == 3  # the three above_trivial claims quote Pong, Breakout and Boxing
