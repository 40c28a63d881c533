"""The per-experiment table: our numbers beside the paper's, claim verdicts, provenance; plus CSV, PNG, JSON."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rlrepro.jobs.run_folder import RESOLVED, read_json
from rlrepro.provenance import git_commit
from rlrepro.results.aggregation import aggregate_mean, stratified_bootstrap_ci, summarize
from rlrepro.results.claims import Verdict, hns_matrix, judge_claims
from rlrepro.results.collect import CellResult, collect
from rlrepro.results.figures import experiment_figures, plot_beside_paper
from rlrepro.results.numbers import number_text
from rlrepro.results.plots import plot_learning_curves, x_axis_label
from rlrepro.specs import ExperimentSpec, Scale, SpecError, load_spec, spec_hash
from rlrepro.specs.experiment import RETURN_METRICS
from rlrepro.workflow import ExperimentPlan, frame_count, plan_experiment, results_root
from rlrepro.workflow.retire import retired_runs_of


def aggregate_experiment(spec_path: Path, *, scale: Scale, results: Path) -> dict[str, Path]:
    """Write ``tables/<paper>/<experiment>.{md,csv,png,json}`` under the scale root; returns the paths."""
    spec = load_spec(spec_path)
    plan = plan_experiment(Path(spec_path), spec, scale)
    root = results_root(results, scale)
    cells = collect(plan, root)
    verdicts = judge_claims(spec, scale, cells)
    paths = {ext: Path(p) for ext, p in plan.table_paths(root).items()}
    paths["json"] = paths["md"].with_suffix(".json")
    paths["md"].parent.mkdir(parents=True, exist_ok=True)
    rows = _rows(cells, spec.paper_values, spec.scale(scale).frames, spec.run.report_metric)
    provenance = _provenance(plan, scale, cells, root)
    searches = search_results(plan, root)
    _write_csv(paths["csv"], rows, provenance)
    seeds = provenance["seeds"]
    title = f"{plan.key} at scale '{scale}' ({seeds} seed{'' if seeds == 1 else 's'})"
    plot_learning_curves(cells, paths["png"], title=title, metric=spec.run.curve_metric, x_label=x_axis_label(spec))
    figures = experiment_figures(spec, cells, paths["png"], title=title)
    figures += diagnostic_figures(spec_path, spec, cells, paths["png"], title=title)
    figures += profile_figures(plan, root, paths["png"], title=title)
    figures += paper_figures(plan, root, cells, paths["png"], title=title, prov=provenance)
    paths["md"].write_text(_markdown(plan, rows, verdicts, provenance, paths["png"].name, cells, searches)
                           + "".join(f"![{caption}]({path.name})\n\n" for caption, path in figures))
    data = {"provenance": provenance, "rows": rows, "claims": [v.as_dict() for v in verdicts]}
    if searches:
        data["search"] = searches
    paths["json"].write_text(json.dumps(data, indent=2) + "\n")
    return paths


def diagnostic_figures(
    spec_path: Path, spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], curves_png: Path, *, title: str
) -> list[tuple[str, Path]]:
    """One curves figure per ``run.diagnostic_curves`` key, beside the learning curves (``<experiment>.<key>.png``).

    A key that no run of the experiment logged is an error naming the spec and the keys the runs do log: a typo
    would otherwise draw an empty figure. A logged key with no finite value yet (e.g. before the first update)
    draws a panel that says so.
    """
    figures = []
    for metric in spec.run.diagnostic_curves:
        logged = sorted({key for cell in cells.values() for key in cell.logged_keys})
        if logged and metric not in logged:
            raise SpecError(str(spec_path), [
                f"run.diagnostic_curves: no run logged '{metric}'; expected one of the runs' metrics.jsonl keys: "
                + ", ".join(logged)
            ])
        path = curves_png.with_name(f"{curves_png.stem}.{metric}.png")
        diagnostic = {key: replace(cell, curves=cell.diagnostics.get(metric, [])) for key, cell in cells.items()}
        plot_learning_curves(diagnostic, path, title=f"{title}: {metric.replace('_', ' ')}", metric=metric,
                             x_label=x_axis_label(spec))
        figures.append((f"{metric.replace('_', ' ')} over {x_axis_label(spec)}", path))
    return figures


def profile_figures(plan: ExperimentPlan, root: Path, curves_png: Path, *, title: str) -> list[tuple[str, Path]]:
    """The SR profile over the Chain (Synthetic Returns, Fig. 3c), one figure per variant and environment whose
    runs wrote ``sr_profile.json``: c(s) per position with the final parameters, mean and sd over seeds."""
    from rlrepro.agents.impala_sr.profile import PROFILE_FILE, plot_profile, read_profiles  # noqa: PLC0415

    files: dict[tuple[str, str], list[Path]] = {}
    for job in plan.jobs:
        for unit in job.units:
            if (path := unit.run_dir(root) / PROFILE_FILE).exists():
                files.setdefault((unit.variant, unit.env), []).append(path)
    figures = []
    for (variant, env), found in files.items():
        suffix = variant if len({e for _, e in files}) == 1 else f"{variant}.{env}"
        path = curves_png.with_name(f"{curves_png.stem}.sr_profile.{suffix}.png")
        profiles, meta = read_profiles(found)
        plot_profile(profiles, meta, path, title=f"{title}\nSR profile over the chain: {variant} on {env}, final parameters")
        figures.append((f"SR profile over the chain: {variant} on {env} ({len(found)} runs; Fig. 3c)", path))
    return figures


def paper_figures(
    plan: ExperimentPlan, root: Path, cells: dict[tuple[str, str], CellResult], curves_png: Path, *, title: str,
    prov: dict,
) -> list[tuple[str, Path]]:
    """Our value per variant beside the paper's (``<experiment>.paper.png``) where the spec gives paper_values: the
    caption names the metric's unit, the scale, our runs' hardware and the paper's source and hardware."""
    spec = plan.spec
    path = curves_png.with_name(f"{curves_png.stem}.paper.png")
    path.unlink(missing_ok=True)
    if not spec.paper_values:
        return []
    metric = spec.run.report_metric
    seeds = prov["seeds"]
    caption = (f"{metric}: {metric_unit(metric)}. Ours: scale '{prov['scale']}' "
               f"({seeds} seed{'' if seeds == 1 else 's'}; "
               f"{prov['frames_text']}) on {run_hardware(plan, root)}"
               + ("" if prov["scale"] == "paper" else "; a reduced scale: read our bars against each other, not as the "
                  "paper's setting")
               + f". The paper's: {spec.paper_values_source or spec.reference.where}.")
    drawn = plot_beside_paper(cells, spec.paper_values, path, metric=metric, title=title, caption=caption)
    return [] if drawn is None else [(f"ours beside the paper's values ({metric}). {caption}", drawn)]


def run_hardware(plan: ExperimentPlan, root: Path) -> str:
    """Where the experiment's runs trained, from their spec.resolved.json ("device"): e.g. "2 CPU cores (JAX on the
    CPU)";
    several machines are listed apart; "hardware not recorded" for runs written before it was."""
    seen = []
    for job in plan.jobs:
        for unit in job.units:
            resolved = unit.run_dir(root) / RESOLVED
            device = read_json(resolved).get("device") if resolved.exists() else None
            if device:
                seen.append(_hardware_text(device))
    return " and ".join(dict.fromkeys(seen)) or "hardware not recorded"


def _hardware_text(device: dict) -> str:
    """"2 CPU cores (JAX on the CPU)", "1x NVIDIA H100 80GB HBM3 + 16 CPU cores": a run's ``device`` in words."""
    cores = f"{device['cpu_cores']} CPU cores" if device.get("cpu_cores") else "CPU cores not recorded"
    if device["platform"] == "cpu":
        return f"{cores} (JAX on the CPU)"
    return f"{device.get('device_count', 1)}x {device.get('device_kind') or device['platform']} + {cores}"


def search_results(plan: ExperimentPlan, root: Path, top: int = 5) -> list[dict]:
    """Loss searches: per run, the search statistics and its ``top`` best programs (from the run's search.json)."""
    results = []
    for job in plan.jobs:
        for unit in job.units:
            path = unit.run_dir(root) / "search.json"
            if path.exists():
                data = json.loads(path.read_text())
                results.append({"variant": unit.variant, "env": unit.env, "seed": unit.seed,
                                "statistics": data["statistics"], "best": data["best"][:top]})
    return results


def _search_lines(searches: list[dict]) -> list[str]:
    """The best programs of each search as simplified equations with their scores, and the proposal counts."""
    if not searches:
        return []
    lines = ["", "## Search: best programs", "",
             "Equations in the paper's notation: Q = Q(s_t, a_t), M = max_a Q_targ(s_{t+1}, a), Y = r + gamma M "
             "(gamma = 0 at terminals); fitness = sum of normalized training returns over the training environments."]
    for run in searches:
        stats = run["statistics"]
        lines += ["", f"### {run['variant']} / {run['env']} / seed {run['seed']}", "", search_counts_text(stats), "",
                  "| rank | fitness | per environment | loss |", "|---|---|---|---|"]
        for rank, best in enumerate(run["best"], 1):
            scores = ", ".join(number_text(v, decimals=FITNESS_DECIMALS) for v in best["scores"])
            fitness = number_text(best["fitness"], decimals=FITNESS_DECIMALS)
            lines.append(f"| {rank} | {fitness} | {scores} | `{best['equation']}` |")
    return lines


def search_counts_text(stats: dict[str, float]) -> str:
    """'N proposals: D functional duplicates (x%); T programs trained, H rejected by the hurdle (y%)'."""
    trials, trained = stats["trials"], stats["programs_evaluated"]
    duplicates = stats.get("duplicates", stats["duplicate_fraction"] * trials)  # older search.json: from the fraction
    rejected = stats.get("hurdle_rejections", stats["hurdle_reject_fraction"] * trained)
    return (
        f"{trials:.0f} proposals: {duplicates:.0f} functional duplicates ({stats['duplicate_fraction']:.0%}; paper ~70%); "
        f"{trained:.0f} programs trained, {rejected:.0f} rejected by the hurdle "
        f"({stats['hurdle_reject_fraction']:.0%}; paper ~40%)."
    )


def _rows(
    cells: dict[tuple[str, str], CellResult], paper_values: dict[str, dict[str, float]], budget: int,
    metric: str = "final_return",
) -> list[dict]:
    """One summary row per cell (the JSON's and the table's): the mean over seeds of ``metric`` with its 95% CI,
    the per-seed values, the paper's value where it gives one; ``frames`` is what the runs trained (whole chunks),
    ``frames_budget`` the scale's budget."""
    rows = []
    for (variant, env), cell in cells.items():
        finite = [v for v in cell.final if math.isfinite(v)]
        point = low = high = math.nan
        if finite:
            point, low, high = stratified_bootstrap_ci(np.asarray(finite)[:, None], aggregate_mean)
        if len(finite) < 2:  # one run has no spread to resample: no interval, rather than one of zero width
            low = high = math.nan
        rows.append(
            {
                "variant": variant,
                "env": env,
                "metric": metric,
                "unit": metric_unit(metric),
                "seeds": len(cell.seeds),
                "frames": max(cell.frames),
                "frames_budget": budget,
                "mean": clean_float(point),
                "ci95_low": clean_float(low),
                "ci95_high": clean_float(high),
                "per_seed": [{"seed": seed, "value": clean_float(v)} for seed, v in zip(cell.seeds, cell.final)],
                "paper": paper_values.get(variant, {}).get(env, math.nan),
                "config_hash": ",".join(sorted(cell.config_hashes)),  # the configuration behind the numbers
            }
        )
    return rows


def clean_float(value: float) -> float:
    """A run's value without float32 noise: -0.8199999928474426 (a float32 -0.82 widened) reads -0.82.

    Summaries store float32 metrics as float64; 7 significant digits are what float32 holds, so rounding there
    changes no digit a run computed.
    """
    return float(f"{value:.7g}") if math.isfinite(value) else value


CSV_FIELDS = ("experiment", "scale", "variant", "env", "seed", "metric", "unit", "value", "paper", "frames",
              "frames_budget", "spec_hash", "config_hash", "run_commits")


def _frames_text(plan: ExperimentPlan, scale: str, cells: dict[tuple[str, str], CellResult]) -> str:
    """"16,000 frames per run (budget 12,800; training runs whole chunks)": what the summaries say was trained, what
    is counted (a loss search: proposals, and what one costs) and the budget beside it where they differ."""
    planned = frame_count(plan.spec, scale, list(cells))
    trained = [f for c in cells.values() for f in c.frames]
    return replace(planned, low=min(trained), high=max(trained)).text()


def _provenance(plan: ExperimentPlan, scale: str, cells: dict[tuple[str, str], CellResult], root: Path) -> dict:
    commits = sorted(set().union(*(c.commits for c in cells.values())))
    return {
        "experiment": plan.key,
        "spec": str(plan.spec_path),
        "spec_hash": spec_hash(plan.spec),
        "scale": scale,
        "seeds": max(len(c.seeds) for c in cells.values()),
        "frames_per_run": max(max(c.frames) for c in cells.values()),  # trained (whole chunks), from the summaries
        "frames_budget": plan.spec.scale(scale).frames,
        "frames_text": _frames_text(plan, scale, cells),
        "run_commits": commits,
        "resumed_runs": [f"{v} {e} {r}" for (v, e), c in cells.items() for r in c.resumed],
        "runs": sum(len(c.seeds) for c in cells.values()),
        "run_spec_hashes": sorted(set().union(*(c.spec_hashes for c in cells.values()))),
        "run_spec_sources": sorted(set().union(*(c.spec_sources for c in cells.values()))),
        "retired": retired_runs_of(root, plan.key),  # earlier configurations' runs, kept (workflow.retire)
        "table_commit": git_commit(),
        "metric": _metric_text(plan.spec.run.report_metric, plan.spec.run.final_fraction),
    }


#: Units of the metrics a table can show, so every number in a table says what it counts.
METRIC_UNITS = {"fps": "environment frames per second of wall time, all actors", "best_fitness": "fitness, the sum of "
                "normalised training returns", "eval_return": "game score (points)", "final_return": "episode return",
                "best_eval_return": "game score (points)", "value_error": "mean squared error of the values over states",
                "changepoint_error": "mean squared error of the values over states after the change point",
                "far_fraction": "fraction of replayed samples far from the current policy", "kl": "KL divergence (nats)",
                "normalized_return": "normalised return", "run_return": "episode return",
                "duplicate_fraction": "fraction of proposals"}


def metric_unit(metric: str) -> str:
    """The unit of ``metric`` (METRIC_UNITS), or 'as logged' for a metric without one written down."""
    return METRIC_UNITS.get(metric, "as logged")


def _metric_text(metric: str, fraction: float) -> str:
    if metric == "final_return":
        return f"final_return: mean episode return over the last {fraction:.0%} of frames"
    unit = f" (unit: {METRIC_UNITS[metric]})" if metric in METRIC_UNITS else ""
    return f"{metric}{unit}: its mean over the last {fraction:.0%} of frames"


def _configuration_lines(prov: dict) -> list[str]:
    """Which configuration the numbers come from (each row's config hash: the CSV's and the JSON's ``config_hash``),
    and where the runs of earlier ones are kept."""
    lines = []
    if prov.get("run_spec_sources"):
        lines.append(f"- configuration: runs trained from {', '.join(f'`{s}`' for s in prov['run_spec_sources'])}; "
                     "each row's config hash is the CSV's and JSON's `config_hash`")
    lines += [f"- earlier configuration retired (kept): `{r['folder']}`, {r['runs']} run(s) of config hash(es) "
              f"{', '.join(f'`{h}`' for h in r['config_hashes'])} from `{r['spec_source']}`" for r in prov.get("retired") or []]
    return lines


def _resumed_lines(prov: dict) -> list[str]:
    """The runs that more than one start trained (a kill, a time limit). A resume is exact where the job checkpoints
    its environments; Atari games restart and a DQN replay refills (each run's summary.json lists its attempts)."""
    resumed = prov.get("resumed_runs") or []
    if not resumed:
        return []
    return [f"- resumed: {len(resumed)} of {prov['runs']} runs after an interruption ({'; '.join(resumed)}): exact "
            "where a job checkpoints its environments (pure JAX, MuJoCo); Atari games restart and a DQN replay "
            "refills (summary.json: attempts)"]


def _write_csv(path: Path, rows: list[dict], provenance: dict) -> None:
    """The tidy CSV: one row per run (variant, environment, seed) with the metric, its unit and value, and the
    paper's value of the cell beside it (empty where the paper gives none): ``pandas.read_csv`` reads typed columns."""
    extra = {k: provenance[k] for k in ("experiment", "scale", "spec_hash")}
    extra["run_commits"] = ";".join(provenance["run_commits"])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            for run in row["per_seed"]:
                writer.writerow({
                    **extra, "variant": row["variant"], "env": row["env"], "seed": run["seed"],
                    "metric": row["metric"], "unit": row["unit"], "value": _csv_number(run["value"]),
                    "paper": _csv_number(row["paper"]), "frames": row["frames"], "frames_budget": row["frames_budget"],
                    "config_hash": row.get("config_hash", ""),
                })


def _csv_number(value: float) -> str:
    """A number as its shortest text; empty for a missing one (pandas reads an empty field as NaN)."""
    return "" if not math.isfinite(value) else repr(float(value))


def _estimate(point: str, low: str, high: str, one_run: bool) -> str:
    """"point [low, high]"; from one run, "point (1 run: no interval)": a bootstrap over one run has zero width, which
    would read as certainty."""
    return f"{point} (1 run: no interval)" if one_run else f"{point} [{low}, {high}]"


#: Decimals of a human-normalised score (%) and of a loss search's fitness (a sum of normalised returns).
HNS_DECIMALS, FITNESS_DECIMALS = 1, 3


SCORE_METRICS = ("eval_return", "best_eval_return", "final_return")  # raw game scores, which human-normalisation applies to


def _random_row(spec: ExperimentSpec, envs: list[str]) -> list[str]:
    """A uniform-random policy's score per environment, beside ours, where the spec knows it and the table's metric
    is a return (spec.random_score: Atari's reference table, else the environment's random_score)."""
    if spec.run.report_metric not in SCORE_METRICS:
        return []
    scores = [spec.random_score(env) for env in envs]
    if all(score is None for score in scores):
        return []
    return ["| *uniform-random policy* | " + " | ".join("—" if x is None else number_text(x) for x in scores) + " |"]


def _hns_lines(spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult]) -> list[str]:
    """For Atari: human-normalised scores per variant, aggregated over the games run (rliable's definitions)."""
    metric = spec.run.report_metric
    if metric not in SCORE_METRICS or not any(env.kind == "atari" for env in spec.environments):
        return []
    lines = ["", "## Human-normalised scores", "", f"{metric} normalised with the dqn_zoo_57 table (random, human), in %.", ""]
    lines += ["| variant | games | median [95% CI] | mean [95% CI] | IQM [95% CI] |", "|---|---|---|---|---|"]
    for variant in dict.fromkeys(v for v, _ in cells):
        games, matrix = hns_matrix(spec, cells, variant, metric, "dqn_zoo_57")
        keep = [i for i in range(len(games)) if np.isfinite(matrix[:, i]).all()]
        if not keep:
            continue
        stats = summarize(matrix[:, keep])
        one_run = matrix.shape[0] < 2
        parts = [_estimate(*(number_text(stats[k][x], decimals=HNS_DECIMALS) for x in ("point", "low", "high")),
                           one_run) for k in ("median", "mean", "iqm")]
        lines.append(f"| {variant} | {len(keep)} | " + " | ".join(parts) + " |")
    lines += _hns_per_game_lines(spec, cells, metric)
    return lines


def _hns_per_game_lines(spec: ExperimentSpec, cells: dict[tuple[str, str], CellResult], metric: str) -> list[str]:
    """Each game's human-normalised score per variant (mean over seeds, in %)."""
    per_variant = {variant: hns_matrix(spec, cells, variant, metric, "dqn_zoo_57") for variant in dict.fromkeys(v for v, _ in cells)}
    games = list(dict.fromkeys(g for names, _ in per_variant.values() for g in names))
    if not games:
        return []
    lines = ["", "Per game (mean over seeds, in %):", "", "| variant | " + " | ".join(games) + " |", "|---" * (len(games) + 1) + "|"]
    for variant, (names, matrix) in per_variant.items():
        means = dict(zip(names, np.nanmean(matrix, axis=0) if matrix.size else []))
        shown = [number_text(means[g], decimals=HNS_DECIMALS) if np.isfinite(means.get(g, np.nan)) else "—"
                 for g in games]
        lines.append(f"| {variant} | " + " | ".join(shown) + " |")
    return lines


OUT_OF_RANGE_MARK = "‼"


def declared_range(spec: ExperimentSpec, metric: str, env_id: str) -> tuple[float, float] | None:
    """The range every run's value of ``metric`` on ``env_id`` lies in, as the spec declares it: a claim's
    ``metric_range`` for that metric (and environment), else the environment's ``return_range`` for a return metric;
    None where the spec declares none (a loss, frames/s)."""
    for claim in spec.claims:
        envs = getattr(claim, "environments", None) or [getattr(claim, "environment", env_id)]
        bounds = getattr(claim, "metric_range", None)  # threshold and equivalence claims have one; others do not
        if getattr(claim, "metric", None) == metric and bounds is not None and env_id in envs:
            return float(bounds[0]), float(bounds[1])
    env = next((e for e in spec.environments if e.id == env_id), None)
    bounds = getattr(env, "return_range", None)
    return (float(bounds[0]), float(bounds[1])) if bounds is not None and metric in RETURN_METRICS else None


def outside_range(row: dict, bounds: tuple[float, float] | None) -> list[str]:
    """The per-seed values of a table row outside ``bounds``, as "seed N: value"; none without bounds."""
    if bounds is None:
        return []
    low, high = bounds
    slack = 1e-6 * max(1.0, abs(low), abs(high))  # float32 rounding of a mean at the bound (as collect's check)
    return [f"seed {run['seed']}: {number_text(run['value'])}" for run in row["per_seed"]
            if math.isfinite(run["value"]) and not low - slack <= run["value"] <= high + slack]


def _results_lines(spec: ExperimentSpec, by_cell: dict[tuple[str, str], dict], variants: list[str],
                   envs: list[str]) -> list[str]:
    """"Our results": mean [95% CI] per variant and environment, the paper's value beside it; a cell with a run
    outside the metric's declared range is flagged (OUT_OF_RANGE_MARK) and the runs named under the table: such a
    value is a bug in the run or a wrong range in the spec, never a result to read."""
    lines = ["", "## Our results", "", "| variant | " + " | ".join(envs) + " |", "|---" * (len(envs) + 1) + "|"]
    flagged = []
    for variant in variants:
        cells = []
        for env in envs:
            row = by_cell.get((variant, env))
            paper = spec.paper_values.get(variant, {}).get(env)
            text = "—" if row is None else _estimate(
                number_text(row["mean"]), number_text(row["ci95_low"]), number_text(row["ci95_high"]),
                one_run=math.isfinite(row["mean"]) and not math.isfinite(row["ci95_low"]),
            )
            bounds = declared_range(spec, row["metric"], env) if row is not None else None
            if row is not None and (outside := outside_range(row, bounds)):
                text = f"{OUT_OF_RANGE_MARK} {text}"
                flagged.append(f"{variant} on {env} ({'; '.join(outside)}) outside [{number_text(bounds[0])}, "
                               f"{number_text(bounds[1])}]")
            cells.append(text if paper is None else f"{text} (paper {number_text(paper)})")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    if flagged:
        lines += ["", f"{OUT_OF_RANGE_MARK} outside the metric's declared range (a bug in the run, or a wrong range in "
                  f"the spec; not a result): {'; '.join(flagged)}.", ""]
    return lines


def _markdown(
    plan: ExperimentPlan, rows: list[dict], verdicts: list[Verdict], prov: dict, png: str,
    cells_by_key: dict[tuple[str, str], CellResult], searches: list[dict] | None = None,
) -> str:
    spec = plan.spec
    envs = list(dict.fromkeys(r["env"] for r in rows))
    by_cell = {(r["variant"], r["env"]): r for r in rows}
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines = [
        f"# {spec.paper}/{spec.experiment}",
        "",
        f"{spec.reference.title} ({spec.reference.citation}), {spec.reference.where}.",
        "",
        f"- scale: **{prov['scale']}**, seeds: {prov['seeds']}, {prov['frames_text']}",
        f"- spec: `{prov['spec']}` (hash `{prov['spec_hash']}`; runs made with spec hash(es) "
        f"{', '.join(f'`{h}`' for h in prov['run_spec_hashes'])}: a run is reused only while its resolved config is unchanged)",
        *_configuration_lines(prov),
        f"- code: runs at commit(s) {', '.join(f'`{c}`' for c in prov['run_commits'])}; table at `{prov['table_commit']}`",
        *_resumed_lines(prov),
        f"- metric: {prov['metric']}; cells: mean over seeds [95% stratified-bootstrap CI]",
    ]
    if spec.reference.notes:
        lines += [f"- the paper's setting, as the spec's author wrote it (what each run trained with: Hyper-parameters "
                  f"below): {spec.reference.notes}"]
    lines += _results_lines(spec, by_cell, variants, envs)
    lines += _random_row(spec, envs)
    lines += _hns_lines(spec, cells_by_key)
    if spec.paper_table:
        table = spec.paper_table
        lines += ["", "## The paper's numbers", "", table.caption, "", "| " + " | ".join(table.columns) + " |"]
        lines += ["|---" * len(table.columns) + "|"] + ["| " + " | ".join(str(c) for c in row) + " |" for row in table.rows]
    lines += hyperparameter_lines(spec, prov["scale"], variants, envs)
    lines += _search_lines(searches or [])
    lines += ["", "## Claims", ""]
    lines += [
        f"- **{v.claim}**: {v.verdict}. {v.statement} — {v.detail}" + (f" (power: {v.power})" if v.power else "")
        + (f" (test: {v.method})" if v.method else "")
        for v in verdicts
    ] or ["- (no claims)"]
    lines += ["", f"![learning curves]({png})", ""]
    return "\n".join(lines)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{'loss.entropy_cost': 0.01, ...}: nested mappings as dotted keys (the spec's override syntax)."""
    if not isinstance(data, dict):
        return {prefix: data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """'key a → b' for every dotted key whose value differs (a missing key reads '—')."""
    keys = [k for k in dict.fromkeys([*before, *after]) if before.get(k, "—") != after.get(k, "—")]
    return [f"{k} {_setting(before.get(k, '—'))} → {_setting(after.get(k, '—'))}" for k in keys]


def _setting(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def hyperparameter_lines(spec: ExperimentSpec, scale: Scale, variants: list[str], envs: list[str]) -> list[str]:
    """The settings each variant trained with, derived from the resolved spec (never prose): per variant what it
    changes from the spec's agent, and what the scale changes from the paper's values (paper → this run), for the
    agent and the environments. Common changes are listed once above the table."""
    from rlrepro.specs import resolve_agent, resolve_env  # noqa: PLC0415

    base = _flatten(spec.agent.model_dump(mode="json"))
    rows = []
    for name in variants:
        variant, control = spec.variant_named(name)  # a control arm: its variant with learning false
        paper = _flatten(resolve_agent(spec, variant, "paper", control=control).model_dump(mode="json"))
        run = _flatten(resolve_agent(spec, variant, scale, control=control).model_dump(mode="json"))
        own = _changes(base, paper) if paper.get("kind") == base.get("kind") else [
            f"{key} {_setting(value)}" for key, value in _flatten(variant.agent).items()]  # an agent of its own
        rows.append((name, own, _changes(paper, run)))
    common = set.intersection(*(set(r[2]) for r in rows)) if rows else set()
    env_changes = [f"{env}: " + ", ".join(c) for env in envs
                   if (c := _changes(_flatten(resolve_env(spec, env, "paper").model_dump(mode="json")),
                                     _flatten(resolve_env(spec, env, scale).model_dump(mode="json"))))]
    lines = ["", "## Hyper-parameters", "",
             f"Derived from the resolved spec: what each variant changes from the spec's agent (the paper's setting), "
             f"and what scale '{scale}' changes from the paper's values (paper → this run)."]
    if scale != "paper":
        lines += ["", "- every variant at this scale: " + ("; ".join(sorted(common)) or "the paper's values")]
        lines += [f"- environment {text}" for text in env_changes]
    lines += ["", "| variant | its change from the spec's agent | further at this scale (paper → this run) |",
              "|---|---|---|"]
    for name, own, scaled in rows:
        rest = [c for c in scaled if c not in common]
        lines.append(f"| {name} | {'; '.join(own) or '— (the spec agent)'} | {'; '.join(rest) or '—'} |")
    return lines
