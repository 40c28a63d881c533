"""Plots and rliable-style figures: the statistics by hand, and the figures' content read back from matplotlib."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlrepro.results.aggregation import aggregate_mean, stratified_bootstrap_ci
from rlrepro.results.collect import CellResult
from rlrepro.results.figures import (
    claim_pairs,
    numeric_axis,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_ci,
    write_figures,
)
from rlrepro.results.plots import count_label, mean_curve_ci, plot_learning_curves, styles, variant_axes


def test_probability_of_improvement_by_hand() -> None:
    # x = {1, 3}, y = {2, 2}: of the 4 pairs, 3 > 2 twice, 1 > 2 never -> 2/4.
    assert probability_of_improvement([[1.0], [3.0]], [[2.0], [2.0]]) == 0.5
    # a tie counts one half: P = 0 + 0.5 * 1
    assert probability_of_improvement([[2.0]], [[2.0]]) == 0.5
    # two tasks, averaged: task 1: 1 > 0 -> 1; task 2: 5 = 5 -> 0.5; mean 0.75
    assert probability_of_improvement([[1.0, 5.0]], [[0.0, 5.0]]) == 0.75
    # x always better: 1, and its bootstrap interval cannot leave 1
    assert probability_of_improvement_ci([[5.0], [6.0]], [[1.0], [2.0]]) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="same tasks"):
        probability_of_improvement([[1.0, 2.0]], [[1.0]])


def test_performance_profile_by_hand() -> None:
    # scores {1, 2, 3, 4}: > 0: 4/4; > 2: {3, 4} = 2/4; > 4: none (strictly above)
    assert performance_profile([[1.0, 2.0], [3.0, 4.0]], [0.0, 2.0, 4.0]).tolist() == [1.0, 0.5, 0.0]


def test_a_lower_is_better_profile_counts_runs_below_tau_and_draws_the_best_variant_highest(tmp_path: Path, monkeypatch) -> None:
    # scores {1, 2, 3, 4}, lower is better: < 0: none; < 2: {1} = 1/4 (strictly below); < 5: 4/4
    assert performance_profile([[1.0, 2.0], [3.0, 4.0]], [0.0, 2.0, 5.0], higher_is_better=False).tolist() == [0.0, 0.25, 1.0]
    from rlrepro.results.figures import Comparison

    # FRODO's random walk: frodo's value error (0.01, 0.02) beats td's (0.05, 0.06); its profile must lie on top
    cells = {(v, "rw"): CellResult(v, "rw", seeds=[0, 1], final=e, frames=[10, 10], report_metric="value_error")
             for v, e in (("frodo", [0.01, 0.02]), ("td", [0.05, 0.06]))}
    written = dict(write_figures(tmp_path / "x.png", cells, metric="value_error", title="t",
                                 pairs=[Comparison("frodo", "td", "value_error", higher_is_better=False)]))
    path = written["performance profiles (lower is better: fraction of runs below τ)"]
    assert path.name == "x.profiles.png"
    import matplotlib.pyplot as plt

    from rlrepro.results import figures

    drawn = {}
    original = figures._save
    monkeypatch.setattr(figures, "_save", lambda fig, p, plt_: (drawn.setdefault("ax", fig.axes[0]), original(fig, p, plt_))[1])
    figures.plot_performance_profiles([("rw", {"frodo": np.array([[0.01], [0.02]]), "td": np.array([[0.05], [0.06]])})],
                                      tmp_path / "p.png", metric="value_error", title="t", higher_is_better=False)
    plt.close("all")
    ax = drawn["ax"]
    assert ax.get_ylabel() == "fraction of runs with score < τ (lower is better)"
    frodo, td = (line.get_ydata() for line in ax.lines[:2])
    assert (frodo >= td).all() and (frodo > td).any()  # the better (lower-error) variant's curve is on top


def test_profile_thresholds_span_the_scores_and_stay_readable_when_they_are_equal() -> None:
    from rlrepro.results.figures import profile_thresholds

    # scores 0..10: 5% pad on each side -> [-0.5, 10.5]
    taus = profile_thresholds([0.0, 4.0, 10.0])
    assert (taus[0], taus[-1], len(taus)) == (-0.5, 10.5, 101)
    # one run (Skiing's cpu scale): 2.93 % human-normalised -> +-1 (the pad's floor), not +-1e-9
    assert np.allclose(profile_thresholds([2.93])[[0, -1]], [1.93, 3.93])
    # equal large scores: 5% of their size
    assert np.allclose(profile_thresholds([-16_724.0, -16_724.0])[[0, -1]], [-16_724 - 836.2, -16_724 + 836.2])


@pytest.mark.parametrize(
    ("value", "text"), [(500, "500"), (12_800, "12.8k"), (100_000, "100k"), (1_000_000, "1M"), (1_500_000, "1.5M"),
                        (2e9, "2B"), (0, "0"), (0.25, "0.25")],
)
def test_ticks_read_as_counts(value: float, text: str) -> None:
    assert count_label(value) == text


def test_band_is_the_tables_interval_at_every_frame() -> None:
    # The table's interval of a mean over seeds is stratified_bootstrap_ci(values[:, None], aggregate_mean):
    # the curve's band at each frame must be exactly that interval of the seeds' values there.
    curves = [[(100, 1.0), (200, 2.0)], [(100, 4.0), (200, 2.0)], [(100, 2.5), (200, 5.0)], [(100, 7.0), (200, 0.0)]]
    frames, mean, low, high = mean_curve_ci(curves)
    assert frames.tolist() == [100, 200]
    for i, frame in enumerate(frames):
        values = np.array([dict(c)[frame] for c in curves])[:, None]
        assert (mean[i], low[i], high[i]) == pytest.approx(stratified_bootstrap_ci(values, aggregate_mean))


def test_a_grid_gets_colour_for_one_axis_and_line_style_for_the_other() -> None:
    variants = [f"corr={c}__lag={lag}" for c in ("vtrace", "one_step_is", "epsilon", "none") for lag in (0, 8, 32)]
    assert variant_axes(variants)[1] == {"corr": "vtrace", "lag": "8"}
    style = styles(variants)
    colours = {style[v]["color"] for v in variants}
    lines = {str(style[v]["linestyle"]) for v in variants}
    assert len(colours) == 4 and len(lines) == 3  # corr has more values: colour; lag: line style
    assert len({(style[v]["color"], str(style[v]["linestyle"])) for v in variants}) == 12  # all distinguishable
    for corr in ("vtrace", "none"):
        assert len({style[f"corr={corr}__lag={lag}"]["color"] for lag in (0, 8, 32)}) == 1
    assert numeric_axis(variants) == ("lag", "corr")
    assert variant_axes(["default"]) is None and numeric_axis(["a", "b"]) is None


def _cell(variant: str, env: str, curves: list[list[tuple[int, float]]], finals: list[float]) -> CellResult:
    return CellResult(variant, env, seeds=list(range(len(finals))), final=finals,
                      finals=[{"final_return": f} for f in finals], frames=[c[-1][0] if c else 0 for c in curves],
                      curves=curves)


def _axes_of(png_writer) -> list:
    """Run a plot function with savefig captured: the figure's axes, to read what was drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    captured = []
    original = plt.close

    def keep(fig=None):
        captured.append(fig)

    plt.close = keep
    try:
        png_writer()
    finally:
        plt.close = original
    fig = captured[-1]
    axes = [ax for ax in fig.axes if ax.get_visible()]
    return axes


def test_curves_panel_order_markers_empty_panels_and_labels(tmp_path: Path) -> None:
    cells = {
        ("a", "pong"): _cell("a", "pong", [[], []], [math.nan, math.nan]),  # no finished episode
        ("a", "catch"): _cell("a", "catch", [[(100_000, 1.0)], [(100_000, 2.0)]], [1.0, 2.0]),  # one point each
        ("b", "catch"): _cell("b", "catch", [[(f, f / 1e6) for f in (100_000, 500_000, 1_000_000, 1_500_000)]] * 2,
                              [1.0, 1.0]),
    }
    path = tmp_path / "curves.png"
    axes = _axes_of(lambda: plot_learning_curves(cells, path, title="t", metric="episode_return"))
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert [ax.get_title() for ax in axes] == ["pong", "catch"]  # the table's order (cells' order), not sorted
    pong, catch = axes
    assert [t.get_text() for t in pong.texts] == ["no finished episode"] and not pong.lines
    single = [line for line in catch.lines if line.get_label().startswith("a ")]
    assert single and single[0].get_marker() == "o"  # a single point is drawn as a marker
    assert catch.get_xlabel() == "environment frames"
    catch.figure.canvas.draw()
    ticks = [t.get_text() for t in catch.get_xticklabels() if t.get_text()]
    assert any(t.endswith("k") for t in ticks) and any(t.endswith("M") for t in ticks), ticks
    assert "95% bootstrap CI" in catch.figure._suptitle.get_text()


def test_search_curves_count_proposals_with_integer_ticks(tmp_path: Path) -> None:
    cells = {("s", "cartpole"): _cell("s", "cartpole", [[(1, 0.1), (2, 0.3), (3, 0.3), (4, 0.5)]] * 2, [0.5, 0.5])}
    axes = _axes_of(lambda: plot_learning_curves(cells, tmp_path / "s.png", title="t", metric="best_fitness",
                                                 x_label="proposals"))
    axes[0].figure.canvas.draw()
    ticks = [t.get_text() for t in axes[0].get_xticklabels() if t.get_text()]
    assert axes[0].get_xlabel() == "proposals" and all("." not in t for t in ticks), ticks


def test_write_figures_draws_rliable_pictures_and_the_lag_summary(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    cells = {}
    for corr, base in (("vtrace", 10.0), ("none", 4.0)):
        for lag in (0, 32):
            v = f"corr={corr}__lag={lag}"
            finals = list(base - lag / 16 + rng.normal(0, 0.5, 3))
            cells[(v, "catch")] = _cell(v, "catch", [[(100, f)] for f in finals], finals)
    png = tmp_path / "x.png"
    (tmp_path / "x.efficiency.png").write_bytes(b"stale")  # from an earlier aggregate: must go
    written = write_figures(png, cells, metric="final_return", title="t",
                            pairs=[("corr=vtrace__lag=32", "corr=none__lag=32")])
    names = sorted(p.name for _, p in written)
    assert names == ["x.improvement.png", "x.intervals.png", "x.profiles.png", "x.summary.png"]
    assert not (tmp_path / "x.efficiency.png").exists()
    for _, path in written:
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_claim_pairs_follow_the_ordering_claims() -> None:
    from types import SimpleNamespace as NS

    spec = NS(claims=[NS(better="a", worse=["b", "c"]), NS(variant="a"), NS(better="a", worse=["b"])])
    assert claim_pairs(spec) == [("a", "b"), ("a", "c")]


def test_the_throughput_table_states_its_unit() -> None:
    from rlrepro.results.tables import _metric_text

    assert _metric_text("fps", 0.5) == (
        "fps (unit: environment frames per second of wall time, all actors): its mean over the last 50% of frames"
    )


def test_atari_figures_use_human_normalised_scores_and_draw_sample_efficiency(tmp_path: Path) -> None:
    from types import SimpleNamespace as NS

    from rlrepro.results.figures import atari_scores
    from rlrepro.results.normalization import human_normalized_scores

    spec = NS(environments=[NS(kind="atari", id="pong", game="pong"), NS(kind="atari", id="breakout", game="breakout")],
              claims=[NS(better="deep", worse=["shallow"])])
    cells = {}
    for variant, level in (("shallow", 0.0), ("deep", 10.0)):
        for env in ("pong", "breakout"):
            finals = [level + s for s in range(3)]
            curves = [[(100_000, level / 2 + s), (200_000, level + s)] for s in range(3)]
            cells[(variant, env)] = CellResult(variant, env, seeds=[0, 1, 2], final=finals,
                                               finals=[{"eval_return": f} for f in finals], frames=[200_000] * 3,
                                               curves=curves, report_metric="eval_return")
    hns, curves = atari_scores(spec, cells, "eval_return", "episode_return")
    # HNS of (variant, game) = 100 * (score - random) / (human - random), from the dqn_zoo_57 table
    # columns in hns_matrix order (sorted by environment id: breakout, pong)
    expected = 100.0 * human_normalized_scores(["breakout", "pong"], np.array([[10.0, 10.0], [11.0, 11.0], [12.0, 12.0]]),
                                               "dqn_zoo_57")
    assert hns["deep"] == pytest.approx(expected)
    per_frame, frames = curves
    assert frames["deep"].tolist() == [100_000, 200_000] and per_frame["deep"][1] == pytest.approx(expected)
    written = write_figures(tmp_path / "a.png", cells, metric="eval_return", title="t", pairs=[("deep", "shallow")],
                            hns=hns, hns_curves=curves)
    assert "a.efficiency.png" in {p.name for _, p in written}


def _improvement_axes(tmp_path: Path, cells, pairs, metric: str):
    """Draw the experiment's figures and return {file name: the improvement figure's axes}, read back from pyplot."""
    import matplotlib.pyplot as plt

    seen = {}
    original = plt.Figure.savefig

    def keep(fig, path, *args, **kwargs):
        seen[Path(path).name] = fig.axes[0]
        return original(fig, path, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        write_figures(tmp_path / "x.png", cells, metric=metric, title="t", pairs=pairs)
    finally:
        plt.Figure.savefig = original
    return {name: ax for name, ax in seen.items() if ".improvement" in name}


def test_probability_of_improvement_honours_lower_is_better_and_the_claims_metric(tmp_path: Path) -> None:
    from rlrepro.results.figures import Comparison, improvement_rows

    # FRODO's random walk: frodo's value error 0.10 is worse than TD(lambda)'s 0.05 and 0.06 (lower is better), so
    # P(frodo beats td) = 0 (every pair: 0.10 > 0.05), not the 1.0 a higher-is-better comparison gives.
    def cell(v: str, errors: list[float], kl: list[float]) -> CellResult:
        return CellResult(v, "rw", seeds=list(range(len(errors))), final=errors, frames=[10] * len(errors),
                          finals=[{"value_error": e, "kl": k, "final_return": 5.0} for e, k in zip(errors, kl)],
                          report_metric="value_error")

    cells = {("frodo", "rw"): cell("frodo", [0.10, 0.11], [0.2, 0.3]), ("td", "rw"): cell("td", [0.05, 0.06], [0.9, 0.8])}
    lower = Comparison("frodo", "td", "value_error", higher_is_better=False)
    panels = [("rw", {"frodo": np.array([[0.10], [0.11]]), "td": np.array([[0.05], [0.06]])})]
    assert improvement_rows(panels, [lower])[0][:2] == ("P(frodo < td)", 0.0)
    axes = _improvement_axes(tmp_path, cells, [lower, Comparison("frodo", "td", "kl", higher_is_better=False)],
                             metric="value_error")
    assert set(axes) == {"x.improvement.png", "x.improvement.kl.png"}
    for name, metric in (("x.improvement.png", "value_error"), ("x.improvement.kl.png", "kl")):
        ax = axes[name]
        assert metric in ax.get_title() and "lower is better" in ax.get_title()
        point = ax.lines[0].get_xdata()[0]  # the first row's point estimate
        # value error: frodo worse in all 4 pairs -> 0; KL (0.2, 0.3 against 0.9, 0.8): frodo lower in all 4 -> 1
        assert point == (0.0 if metric == "value_error" else 1.0), (name, point)


def test_claim_comparisons_carry_metric_and_direction() -> None:
    from types import SimpleNamespace as NS

    from rlrepro.results.figures import Comparison, claim_comparisons

    spec = NS(run=NS(report_metric="final_return"),
              claims=[NS(better="refer", worse=["er"], metric="kl", higher_is_better=False), NS(better="a", worse=["b"])])
    assert claim_comparisons(spec) == [Comparison("refer", "er", "kl", False), Comparison("a", "b", "final_return", True)]


def test_a_caption_never_promises_a_band_it_does_not_draw(tmp_path: Path) -> None:
    # issue 31: the smoke scale runs one seed per cell; the captions promised a 95% band the figures cannot draw
    one = {("a", "catch"): _cell("a", "catch", [[(f, f / 100) for f in (100, 200, 300, 400)]], [4.0]),
           ("b", "catch"): _cell("b", "catch", [[(f, f / 200) for f in (100, 200, 300, 400)]], [2.0])}
    axes = _axes_of(lambda: plot_learning_curves(one, tmp_path / "c.png", title="t", metric="episode_return"))
    caption = axes[0].figure._suptitle.get_text()
    assert "no band" in caption and "95%" not in caption and not axes[0].collections  # nothing filled
    written = dict((p.name, p) for _, p in write_figures(tmp_path / "c.png", one, metric="final_return", title="t"))
    assert {"c.intervals.png", "c.profiles.png"} <= set(written)
    from rlrepro.results.plots import band_caption

    assert band_caption([1, 3]).endswith("(none for a variant of one run)") and "95%" in band_caption([3, 3])


def test_the_improvement_figure_marks_p_0_and_1_visibly_and_draws_no_bar_it_has_not(tmp_path: Path) -> None:
    """Issue 31: P = 0 with a zero-width interval drew a zero-width bar and a line on the frame: nothing to see. One
    run per side: P(a > b) = 1 (5 > 1), P(b > a) = 0; each gets an unclipped diamond, no bar, and a caption that
    promises no bar."""
    from rlrepro.results.figures import Comparison, improvement_key

    cells = {("a", "catch"): _cell("a", "catch", [[(100, 5.0)]], [5.0]),
             ("b", "catch"): _cell("b", "catch", [[(100, 1.0)]], [1.0])}
    pairs = [Comparison("a", "b", "final_return"), Comparison("b", "a", "final_return")]
    ax = _improvement_axes(tmp_path, cells, pairs, metric="final_return")["x.improvement.png"]
    marks = [line for line in ax.lines if line.get_marker() not in (None, "None", "")]
    assert [(line.get_xdata()[0], line.get_ydata()[0]) for line in marks] == [(1.0, 0), (0.0, 1)]
    assert all(line.get_markersize() >= 6 and not line.get_clip_on() for line in marks)
    assert not ax.patches  # no zero-width bars
    assert "no bar" in ax.get_title() and "bar: 95%" not in ax.get_title()
    assert improvement_key([("p", 0.5, 0.2, 0.8), ("q", 0.0, 0.0, 0.0)]) == (
        "diamond: P; bar: 95% stratified-bootstrap CI (no bar where it has no width)")


def test_our_values_are_drawn_beside_the_papers_with_unit_and_hardware_in_the_caption(tmp_path: Path) -> None:
    """IMPALA Table 1 as bars: a's runs 100 and 300 frames/s (mean 200) beside the paper's 17,000; b has no paper
    value (its bar alone); c has the paper's only (nothing of ours). The caption passed in is printed under it."""
    import matplotlib.pyplot as plt

    from rlrepro.results.figures import plot_beside_paper

    cells = {("a", "pong"): _cell("a", "pong", [[(100, 100.0)], [(100, 300.0)]], [100.0, 300.0]),
             ("b", "pong"): _cell("b", "pong", [[(100, 50.0)]], [50.0])}
    seen = {}
    original = plt.Figure.savefig

    def keep(fig, path, *args, **kwargs):
        seen["fig"] = fig
        return original(fig, path, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        path = plot_beside_paper(cells, {"a": {"pong": 17_000.0}, "c": {"pong": 9_000.0}}, tmp_path / "t.paper.png",
                                 metric="final_return", title="t",
                                 caption="fps: frames per second; ours on 2 CPU cores")
    finally:
        plt.Figure.savefig = original
    assert path.read_bytes()[:4] == b"\x89PNG"
    fig = seen["fig"]
    ax = fig.axes[0]
    widths = sorted(round(patch.get_width(), 6) for patch in ax.patches)
    assert widths == [50.0, 200.0, 9_000.0, 17_000.0]  # b's one run, a's mean, the paper's a and c; c has none of ours
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert ax.get_xscale() == "log" and "log axis" in ax.get_xlabel()  # 17,000 / 50 > 20: ours would be slivers
    labels = [t.get_text().strip() for t in ax.texts]
    assert labels == ["200", "paper 17,000", "50", "paper 9,000"]  # the report's number format
    assert "fps: frames per second; ours on 2 CPU cores" in [t.get_text() for t in fig.texts]
    assert "error bar: 95%" in fig._suptitle.get_text()  # a has two runs: its interval is drawn
    assert plot_beside_paper(cells, {"a": {"breakout": 1.0}}, tmp_path / "u.png", metric="fps", title="t",
                             caption="") is None  # no environment that ran has a paper value
