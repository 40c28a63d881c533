"""Presentation: the experiment's summary run, tags and notes a person browsing the MLflow UI sees."""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rlrepro.tracking.common import (
    MAX_METRICS_PER_BATCH, MAX_PARAMS_TAGS_PER_BATCH, MAX_TAG_VAL_LENGTH, PROJECT_TAG, RUN_KEY_TAG,
)
from rlrepro.tracking.store import ensure_store
from rlrepro.tracking.reach import (
    StoreUnreachableError, _bounded_retry, _exception_chain, bound_http_requests, probe_store,
)
from rlrepro.tracking.folders import _chunks, _is_number, _safe_key, _truncate, display_variant, variant_names
from rlrepro.tracking.client import _client, _get_or_create_experiment


#: The experiment's kind as MLflow 3's UI reads it (its ExperimentKind values: "custom_model_development", ...): the
#: kind selector shows "model training" and the runs page reads "Training runs". It does not by itself change a
#: browser in the UI's GenAI mode (the default), which opens experiments on a traces overview: README's link adds
#: ``workflowType=machine_learning`` for that.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
#: The experiment's (and a run's) description, shown as Markdown by the UI.
NOTE_TAG = "mlflow.note.content"
PARENT_TAG = "mlflow.parentRunId"
#: On each seed run: the id of its experiment's summary run at its scale. A link, not MLflow's nesting
#: (``mlflow.parentRunId``), which hides the seed runs in the runs table until the summary is expanded.
SUMMARY_LINK_TAG = "rlrepro.summary_run"
#: Identity of the summary (parent) run of one experiment at one scale: "<scale>/<paper>/<experiment>".
SUMMARY_RUN_TAG = "rlrepro.experiment_summary"
#: Summary values (summary.json "final") are logged as metrics under this prefix, so the runs table can sort by them
#: without mixing them into the curves of the same name (metrics.jsonl's keys are logged unprefixed).
SUMMARY_METRIC_PREFIX = "summary."


def experiment_description(spec: Mapping[str, Any], spec_path: str | None = None) -> str:
    """Markdown for the experiment's description: the paper, the section/figure, the spec file."""
    reference = spec.get("reference") or {}
    # The experiments list shows the first line as it is: plain text, no Markdown.
    title, citation = reference.get("title", spec.get("paper", "?")), reference.get("citation", "")
    lines = [
        f"{title} ({citation}): {reference.get('where', '?')}" if citation else f"{title}: {reference.get('where', '?')}",
    ]
    if spec_path:
        lines += ["", f"Spec: `{spec_path}`"]
    lines += ["", "Runs: one per (variant, environment, seed) and scale, named `<env> s<seed> · <variant>` (tags "
              "`scale`, `variant`, `env`, `seed`); the run named `summary (<scale>)` holds the table, figures and "
              "claim verdicts, and its metrics each cell's mean with its 95% interval (`<env> - <variant> - mean`, "
              "`- ci95_lo`, `- ci95_hi`).",
              "", "Charts: step = environment frames (x axis \"Step\"; every seed run also logs `frames`, which the "
              "chart's x-axis menu offers by name)."]
    return "\n".join(lines)


def _present_experiment(client, experiment_id: str, spec: Mapping[str, Any], call: Callable, spec_path: str | None = None) -> None:
    """Open in the model-training view; describe the experiment (kept if one with the spec path is already there)."""
    _set_experiment_tag(client, experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND, call)
    if spec_path is None:
        current = call(lambda: client.get_experiment(experiment_id)).tags.get(NOTE_TAG)
        if current:
            return
    note = _truncate(experiment_description(spec, spec_path), MAX_TAG_VAL_LENGTH)
    _set_experiment_tag(client, experiment_id, NOTE_TAG, note, call)


# a unique key violated, as sqlite and PostgreSQL word it (also in a tracking server's error text)
_DUPLICATE_KEY_MESSAGES = ("UNIQUE constraint failed", "duplicate key value violates unique constraint")


def _set_experiment_tag(client, experiment_id: str, key: str, value: str, call: Callable) -> None:
    """MLflow's SQL store sets a tag by a select and then an insert or an update: two jobs tagging a new experiment
    at once can both insert, and the second fails on the tag's unique key. Set again, it finds the row and updates
    it (the jobs of one experiment write the same values)."""
    try:
        call(lambda: client.set_experiment_tag(experiment_id, key, value))
    except Exception as exc:
        if not any(m in str(e) for e in _exception_chain(exc) for m in _DUPLICATE_KEY_MESSAGES):
            raise
        call(lambda: client.set_experiment_tag(experiment_id, key, value))


def summary_metrics(summary: Mapping[str, Any], timestamp_ms: int | None = None) -> list:
    """summary.json's "final" values (and frames) as metrics ``summary.<key>`` at step = the run's frames, the
    job's peak resident memory as ``summary.memory.peak_rss_mb`` (MB; rlrepro.jobs.memory), and how many starts
    trained the run as ``summary.attempts``."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    frames = summary.get("frames", 0)
    step = int(frames) if _is_number(frames) and math.isfinite(frames) else 0
    values = {**(summary.get("final") or {}), "frames": frames}
    if isinstance(summary.get("memory"), Mapping) and "peak_rss_mb" in summary["memory"]:
        values["memory.peak_rss_mb"] = summary["memory"]["peak_rss_mb"]
    if isinstance(summary.get("attempts"), list):  # starts that trained the run: more than 1 after a resume
        values["attempts"] = len(summary["attempts"])
    return [
        Metric(key=_safe_key(SUMMARY_METRIC_PREFIX + key), value=float(value), timestamp=ts, step=step)
        for key, value in values.items()
        if _is_number(value)
    ]


def publish_experiment(
    *,
    uri: str,
    scale: str,
    paper: str,
    experiment: str,
    spec: Mapping[str, Any],
    spec_path: str,
    table_json: Path,
    files: Iterable[Path],
    project: str | None = None,
) -> str:
    """The summary run of one experiment at one scale: table, figures and verdicts as artifacts, verdicts as tags,
    each cell's mean and 95% interval as metrics (:func:`cell_metrics`), and the scale's seed runs linked to it
    (tag ``rlrepro.summary_run``; not nested, so the runs table lists them). Idempotent; returns the run id.

    A tracking server gets the same bounds as training and ``mlflow-sync``: one short probe first, then MLflow's
    own HTTP retries only (``bound_http_requests``), none of ours on top.

    Raises:
        StoreUnreachableError: the tracking server does not answer the probe (nothing is sent).
    """
    if (reason := probe_store(uri)) is not None:
        raise StoreUnreachableError(reason)
    bound_http_requests()
    from mlflow.entities import Metric, RunTag

    ensure_store(uri)
    client = _client(uri)
    call = _bounded_retry(uri)
    name = f"{paper}/{experiment}"
    experiment_id = _get_or_create_experiment(client, uri, name, call)
    _present_experiment(client, experiment_id, spec, call, spec_path)
    key = f"{project}/{scale}/{name}" if project else f"{scale}/{name}"
    quote = "'" if "'" not in key else '"'
    found = call(lambda: client.search_runs([experiment_id], filter_string=f"tags.`{SUMMARY_RUN_TAG}` = {quote}{key}{quote}"))
    tags = {SUMMARY_RUN_TAG: key, "scale": scale, "paper": paper, "experiment": experiment, "variant": "(all)",
            "env": "(all)", "seed": "(all)", **({PROJECT_TAG: project} if project else {})}
    if found:
        run_id = found[0].info.run_id
        for extra in found[1:]:
            call(lambda: client.delete_run(extra.info.run_id))
    else:
        run_id = call(lambda: client.create_run(experiment_id, run_name=f"summary ({scale})", tags=tags)).info.run_id
    data = json.loads(Path(table_json).read_text())
    verdicts = data.get("claims", [])
    note = [f"Summary of `{name}` at scale `{scale}`: the table, figures and claim verdicts are this run's artifacts.",
            "", *[f"- **{v['claim']}**: {v['verdict']}" for v in verdicts]]
    if frames := (data.get("provenance") or {}).get("frames_text"):  # what each run trained, its budget beside it
        note[1:1] = ["", f"Runs: {frames}."]
    run_tags = [RunTag(k, _truncate(str(v), MAX_TAG_VAL_LENGTH)) for k, v in tags.items()]
    run_tags += [RunTag(_safe_key(f"verdict.{v['claim']}"), v["verdict"]) for v in verdicts]
    run_tags += [RunTag(_safe_key(f"verdict_method.{v['claim']}"), v["method"]) for v in verdicts if v.get("method")]
    run_tags.append(RunTag(NOTE_TAG, _truncate("\n".join(note), MAX_TAG_VAL_LENGTH)))
    for chunk in _chunks(run_tags, MAX_PARAMS_TAGS_PER_BATCH):
        call(lambda: client.log_batch(run_id, tags=chunk, synchronous=True))
    metrics = cell_metrics(data.get("rows", []), variant_names(spec))
    for chunk in _chunks(metrics, MAX_METRICS_PER_BATCH):
        call(lambda: client.log_batch(run_id, metrics=chunk, synchronous=True))
    for path in files:
        call(lambda: client.log_artifact(run_id, str(path)))
    with tempfile.TemporaryDirectory() as folder:
        verdict_file = Path(folder) / "verdicts.json"
        verdict_file.write_text(json.dumps(verdicts, indent=2) + "\n")
        call(lambda: client.log_artifact(run_id, str(verdict_file)))
    call(lambda: client.set_terminated(run_id, status="FINISHED"))
    seed_runs = call(lambda: client.search_runs([experiment_id], filter_string=f"tags.scale = '{scale}'", max_results=5000))
    for seed_run in seed_runs:
        tags = seed_run.data.tags
        if tags.get(PROJECT_TAG) != project or seed_run.info.run_id == run_id or RUN_KEY_TAG not in tags:
            continue  # another checkout's runs on a shared server, or the summary run itself
        if "rlrepro.retired" in tags:  # an earlier configuration's run (tracking.retired): its own summary stays
            continue
        if tags.get(SUMMARY_LINK_TAG) != run_id:
            call(lambda: client.set_tag(seed_run.info.run_id, SUMMARY_LINK_TAG, run_id))
        if PARENT_TAG in tags:  # nested by an older rlrepro: hidden under the summary until expanded
            call(lambda: client.delete_tag(seed_run.info.run_id, PARENT_TAG))
    return run_id


def cell_metrics(rows: Iterable[Mapping[str, Any]], variants: Iterable[str] = (), timestamp_ms: int | None = None) -> list:
    """Each table cell as three summary-run metrics a runs table can show: ``<env> - <variant> - mean``,
    ``... - ci95_lo`` and ``... - ci95_hi`` (the variant shortened as in run names), at step = the cell's frames.
    A bound that is not finite (a cell of one run has no interval) is left out."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    variants = list(variants)
    metrics = []
    for row in rows:
        name = display_variant(row["variant"], variants)
        frames = int(row["frames"]) if _is_number(row.get("frames")) and math.isfinite(row["frames"]) else 0
        for suffix, field in (("mean", "mean"), ("ci95_lo", "ci95_low"), ("ci95_hi", "ci95_high")):
            value = row.get(field)
            if _is_number(value) and math.isfinite(value):
                metrics.append(Metric(_safe_key(f"{row['env']} - {name} - {suffix}"), float(value), ts, frames))
    return metrics
