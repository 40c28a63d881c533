"""The control arm: each variant a claim reads, trained again with its learning switched off (``learning: false``).

A claim that the same agent passes without learning (a policy left at its initialisation, the same environments,
exploration, memory, schedules and metrics; PBT keeps its explore and exploit steps) says nothing about what the
agent learned. The plan generates this arm from the claims (the spec says nothing to get it), the runner trains it
like any variant, and ``rlrepro.results.claims`` judges every claim a second time on it.

A control variant is named ``<variant>@frozen``: '@' is no character of a spec's own names, so no variant a spec
writes can collide with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the claims' types, for annotations only (this module is imported by the spec models)
    from rlrepro.specs.experiment import ExperimentSpec

FROZEN = "frozen"
SEPARATOR = "@"
#: The agent field a control arm sets (every agent kind's spec has it: ``AgentSpecModel.learning``).
CONTROL_OVERRIDES: dict[str, dict[str, bool]] = {FROZEN: {"learning": False}}
#: Seeds of a control arm (fewer when the scale runs fewer): the fewest at which the runs can be shown beyond it at
#: 0.025 whatever their own count (``rlrepro.results.control``: 4 v 4 permutations give 1/70, n v 4 Fisher at n >= 6
#: gives 1/210 or less). The arm is there to be beaten, not to be estimated finely, and it costs as much as training
#: per run (``rlrepro.workflow.cost.FROZEN_COST``): 4 seeds keep the main job within its hours.
CONTROL_SEEDS = 4


def control_seeds(seeds: int) -> int:
    """The seeds a control arm runs at a scale of ``seeds`` seeds."""
    return min(seeds, CONTROL_SEEDS)


def control_name(variant: str, control: str = FROZEN) -> str:
    """The name of a variant's control arm: ``vtrace`` -> ``vtrace@frozen``."""
    return f"{variant}{SEPARATOR}{control}"


def split_variant(name: str) -> tuple[str, str | None]:
    """``vtrace@frozen`` -> (``vtrace``, ``frozen``); a spec's own variant -> (name, None).

    Raises:
        ValueError: the part after '@' names no control.
    """
    base, sep, control = name.partition(SEPARATOR)
    if not sep:
        return name, None
    if control not in CONTROL_OVERRIDES:
        raise ValueError(f"variant {name!r}: '{control}' is no control arm; expected {', '.join(CONTROL_OVERRIDES)}")
    return base, control


def claim_variants(claim: object) -> list[str]:
    """The variants a claim reads: an ordering's better and worse ones, else its one variant."""
    better = getattr(claim, "better", None)
    return [better, *claim.worse] if better is not None else [claim.variant]


def controlled_variants(spec: ExperimentSpec, scale: str) -> list[str]:
    """The variants that get a frozen arm at ``scale``: those read by a claim judged there whose ``control`` is
    frozen; at ``smoke`` (the path check), those of every such claim, so the arm's path is exercised too."""
    wanted: list[str] = []
    for claim in spec.claims:
        if claim.control == FROZEN and (scale == "smoke" or scale in claim.judged_at):
            wanted += claim_variants(claim)
    return list(dict.fromkeys(wanted))
