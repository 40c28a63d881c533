"""One toy experiment spec for every test file, and the one way tests write a spec file.

``toy_spec_data(**changes)`` returns a fresh deep copy of the base spec below with the given top-level keys replaced
(and new ones, such as ``run``, ``claims`` or ``paper_table``, added). Each test file passes the values it relies on
(variants, budget, scales, reference notes, environment kwargs, ...) where it builds its spec, so a reader sees them
there; deeper changes go through ``rlrepro.specs.apply_overrides`` on the result.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

_BASE: dict[str, Any] = {
    "paper": "toy",
    "experiment": "mini",
    "reference": {"title": "T", "citation": "C", "where": "W"},
    "agent": {
        "kind": "impala",
        "optimizer": {"learning_rate": 0.001, "epsilon": 0.01},
        "loss": {"entropy_cost": 0.01},
        "unroll_length": 5,
        "batch_size": 4,
    },
    "environments": [
        {"kind": "jax", "id": "catch", "name": "catch"},
        {"kind": "jax", "id": "cartpole", "name": "cartpole"},
    ],
    "variants": [{"name": "a"}, {"name": "b", "agent": {"loss.correction": "none"}}],
    "budget": {"frames": 1000, "seeds": 2},
    "scales": {"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 1}},
}


def toy_spec_data(**changes: Any) -> dict[str, Any]:
    """A valid toy spec (IMPALA, Catch and CartPole), a fresh copy, with top-level keys replaced by ``changes``."""
    data = copy.deepcopy(_BASE)
    data.update(copy.deepcopy(changes))
    return data


def write_spec(folder: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` to ``<folder>/<paper>/<experiment>.yaml`` (the file name must be the experiment id)."""
    path = Path(folder) / data["paper"] / f"{data['experiment']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
