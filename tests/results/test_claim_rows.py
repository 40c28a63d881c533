"""A judged claim as a row of its paper's results table (issue 49): ours from the verdict's evidence with the
interval its method names, the paper's number from the spec, what the verdict rests on from the spec."""

from __future__ import annotations

from rlrepro.results.claim_rows import ours_text, p_values_text, paper_text, rests_on_text, short
from rlrepro.specs import validate_spec
from rlrepro.specs.loading import load_spec
from tests.factories import toy_spec_data

# Evidence as the verdicts write it (rlrepro.results.claims), one per kind of test.
ORDERING = ("fps (higher is better): each difference must be significant by the permutation test (p <= 0.025), on "
            "every environment and against every worse variant (intersection-union test). pong: impala - a3c = -561 "
            "[Welch 95% CI -839, -283], permutation p = 1 CONTRADICTS; pong: impala - a2c = +389 [Welch 95% CI +118, "
            "+660], permutation p = 0.0143 supports")
MEAN = ("final_return of frodo on catch: mean 0.8852 [95% distribution-free interval 0.2346, 0.9718] over 16 seeds; "
        "needs >= 0.273 (tolerance 0); reproduced only when the whole interval is on the claimed side")
SHARE = ("the runs alone would read reproduced, but they are not shown beyond the frozen arm; the runs beyond the "
         "frozen arm: p = 1 (6 of 6 runs pass, 4 of 4 frozen runs; Fisher's exact test): more seeds would decide. "
         "far_fraction of refer on inverted_pendulum: 6 of 6 seeds reach <= 0.1 (tolerance 0.03), the seeds 0.0733 to "
         "0.0942, share 1.00 [95% Clopper-Pearson 0.54, 1.00]; needs more than 0.5 of the seeds")
GAMES = ("pong at the cpu protocol (27,000 frames per game at most); seed 0 (3 games, mean -20) v noop (30 games, "
         "mean -21): p 0.0909, undecided; seed 0 (3 games, mean -20) v uniform_random (30 games, mean -20.43): p 0.276, "
         "undecided")


def test_ours_is_the_first_estimate_with_the_interval_its_method_names() -> None:
    assert ours_text(ORDERING) == "pong: impala - a3c = -561 [Welch 95% CI -839, -283] (and 1 more in the evidence)"
    assert ours_text(MEAN) == ("final_return of frodo on catch: mean 0.8852 [95% distribution-free interval 0.2346, "
                               "0.9718]")
    # a share: how many seeds pass, the seeds' values and the share's interval (not the control's clause before it)
    assert ours_text(SHARE) == ("far_fraction of refer on inverted_pendulum: 6 of 6 seeds reach <= 0.1 (tolerance "
                                "0.03), the seeds 0.0733 to 0.0942, share 1.00 [95% Clopper-Pearson 0.54, 1.00]")
    # no interval (a run's games against a trivial policy's): the first clause with a mean
    assert ours_text(GAMES) == "seed 0 (3 games, mean -20) v noop (30 games, mean -21): p 0.0909, undecided"


def test_p_values_are_the_tests_not_the_rules_threshold() -> None:
    assert p_values_text(ORDERING) == "1, 0.0143"  # not the rule's "(p <= 0.025)"
    assert p_values_text(GAMES) == "0.0909, 0.276"
    assert p_values_text(MEAN + ". The permutation test's smallest p 0.05") == ""


def test_a_statement_is_cut_at_its_first_sentence_not_at_an_abbreviation() -> None:
    assert short("PBT exploited: a member copied a better one (App. F: 5 points). During the run.") == (
        "PBT exploited: a member copied a better one (App. F: 5 points)")
    assert short("x" * 300).endswith("...") and len(short("x" * 300)) == 200


def _spec():
    return validate_spec(toy_spec_data(
        budget={"frames": 2_000_000, "seeds": 5},
        scales={"smoke": {"frames": 100, "seeds": 1},
                "cpu": {"frames": 200_000, "seeds": 5, "rests_on": ["2 CPU cores (paper: 48 CPUs)"]}},
        variants=[{"name": "a"}, {"name": "b"}],
        paper_values={"a": {"catch": 0.9}, "b": {"catch": 0.4}},
        claims=[
            {"kind": "ordering", "id": "o", "statement": "a beats b", "better": "a", "worse": ["b"],
             "judged_at": ["cpu"], "rests_on": ["feed-forward agents (paper: LSTM 256)"]},
            {"kind": "ordering", "id": "kl", "statement": "a's KL is lower", "better": "a", "worse": ["b"],
             "metric": "kl", "higher_is_better": False, "judged_at": ["cpu"]},
            {"kind": "threshold", "id": "t", "statement": "a reaches 0.5", "variant": "a", "environment": "catch",
             "op": ">=", "value": 0.5, "tolerance": 0.1, "metric_range": [-1.0, 1.0], "judged_at": ["cpu"]},
        ]))


def test_the_papers_number_comes_from_the_spec_for_the_claims_metric_only() -> None:
    spec = _spec()
    ordering, kl, threshold = spec.claims
    assert paper_text(spec, ordering) == "a on catch: 0.9; b on catch: 0.4"
    assert paper_text(spec, kl) == "—"  # paper_values are of the table's metric (final_return), not of the KL
    assert paper_text(spec, threshold) == "bar >= 0.5 (tolerance 0.1) · a: 0.9"  # the claim's bar, named so


def test_rests_on_reads_the_claim_the_scale_and_the_budget_against_the_papers() -> None:
    spec = _spec()
    assert rests_on_text(spec, spec.claims[0], "cpu") == (
        "feed-forward agents (paper: LSTM 256); 2 CPU cores (paper: 48 CPUs); "
        "cpu scale: 200k frames per run (paper 2M)")  # the seeds are the paper's: not listed
    assert rests_on_text(spec, spec.claims[1], "smoke") == "smoke scale: 1 seed (paper 5), 100 frames per run (paper 2M)"
    assert rests_on_text(spec, spec.claims[1], "paper") == "the paper's setting"


def test_rests_on_names_a_mujoco_task_whose_version_differs_from_the_papers() -> None:
    """The v5 tasks that are not the paper's v2 (``comparable_to_paper: false``) say how in every claim read on
    them; HalfCheetah-v5 (no change to dynamics or reward) adds nothing."""
    vracer = load_spec("specs/refer/mujoco_vracer.yaml")
    band = next(c for c in vracer.claims if c.id == "refer_far_fraction_near_d")
    assert rests_on_text(vracer, band, "cpu").startswith(
        "InvertedPendulum-v5, not the paper's InvertedPendulum-v2: no alive reward on the terminating step")
    ddpg = load_spec("specs/refer/mujoco_ddpg.yaml")
    cheetah = next(c for c in ddpg.claims if c.id == "refer_rises_above_random_half_cheetah_reduced")
    assert "HalfCheetah" not in rests_on_text(ddpg, cheetah, "cpu")
    kl = next(c for c in ddpg.claims if c.id == "refer_memory_kl_below_er_ddpg_humanoid_walker")
    text = rests_on_text(ddpg, kl, "paper")
    assert "Humanoid-v5, not the paper's Humanoid-v2: " in text and "Walker2d-v5, not the paper's Walker2d-v2: " in text
