"""Issue 45: every claim is decidable where it is judged. No claim of the real specs may sit at a scale whose seeds
could never show it reproduced (``rlrepro.results.claims.cannot_show_at``): its verdict there would be
"inconclusive" before the first step, a verdict on the design rather than on the data."""

from __future__ import annotations

from pathlib import Path

from rlrepro.results.claims import MOST_SEEDS, cannot_show_at, fewest_seeds_to_show
from rlrepro.specs import load_specs

REPO = Path(__file__).resolve().parents[2]


def test_no_claim_of_the_real_specs_is_judged_where_its_seeds_cannot_show_it() -> None:
    offending = []
    for path, spec in load_specs([REPO / "specs"]):
        for claim in spec.claims:
            for scale in claim.judged_at:
                if why := cannot_show_at(spec, claim, scale):
                    fewest = fewest_seeds_to_show(spec, claim, scale)
                    fix = (f"{fewest} seeds would (scales.{scale}.seeds, or budget.seeds at the paper scale)" if fewest
                           else f"no count up to {MOST_SEEDS} seeds would: declare a metric_range, state it per run (seeds_share, best_of)"
                           " or drop the scale from judged_at with the reason in the spec")
                    offending.append(f"{Path(path).relative_to(REPO)} {claim.id} at {scale} "
                                     f"({spec.scale(scale).seeds} seeds): {why}; {fix}")
    assert not offending, f"{len(offending)} claim(s) judged where their seeds cannot show them:\n" + "\n".join(offending)


def test_every_claim_judged_at_no_scale_says_why() -> None:
    """A claim kept for the record with judged_at: [] carries its reason into the report: the verdicts' rules' own
    (``cannot_show_at`` at the scales it would run) or the spec's ``not_judged_because`` (a budget, not the seeds)."""
    silent = [f"{Path(path).relative_to(REPO)} {claim.id}"
              for path, spec in load_specs([REPO / "specs"]) for claim in spec.claims
              if not claim.judged_at and not claim.not_judged_because.strip()
              and not all(cannot_show_at(spec, claim, scale) for scale in ("cpu", "paper"))]
    assert not silent, "judged at no scale without a reason (give not_judged_because):\n" + "\n".join(silent)
