"""Retired runs (``rlrepro.workflow.retire``): their MLflow mirrors are kept, re-keyed and tagged, never replaced."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rlrepro.tracking.common import RUN_KEY_TAG, sqlite_db_path
from rlrepro.tracking.reach import _bounded_retry, bound_http_requests, probe_store
from rlrepro.tracking.client import _client, _find_runs

#: On the MLflow runs of retired run folders (and their experiment's summary run): the folder they were moved to.
RETIRED_TAG = "rlrepro.retired"


def retire_mirrors(
    bare_keys: Sequence[str], summaries: Iterable[tuple[str, str]], *, uri: str, project: str | None, label: str,
    folder: str,
) -> str:
    """Re-key the mirrors of the runs ``bare_keys`` (``<scale>/<paper>/<experiment>/<variant>/<env>/seed<k>``) and the
    summary runs of ``summaries`` (``(paper/experiment, scale)``): their run key gets `` (retired <label>)``, their
    name too, and the tag ``rlrepro.retired`` says where the run folders went. A new mirror of the same key then
    starts beside them instead of replacing them. Returns what was done, in words."""
    from rlrepro.tracking.publish import SUMMARY_RUN_TAG

    db = sqlite_db_path(uri)
    if db is not None and not db.exists():
        return "no MLflow store yet: nothing to re-key"
    if (reason := probe_store(uri)) is not None:
        return f"not re-keyed ({reason}); the next mirror of these runs replaces them"
    bound_http_requests()
    client, call = _client(uri), _bounded_retry(uri)
    experiments: dict[str, object] = {}

    def experiment_id(name: str) -> str | None:
        if name not in experiments:
            experiments[name] = call(lambda: client.get_experiment_by_name(name))
        exp = experiments[name]
        return exp.experiment_id if exp is not None else None  # type: ignore[attr-defined]

    def retag(run, tag: str, key: str) -> None:
        call(lambda: client.set_tag(run.info.run_id, tag, f"{key} (retired {label})"))
        call(lambda: client.set_tag(run.info.run_id, RETIRED_TAG, folder))
        call(lambda: client.update_run(run.info.run_id, name=f"{run.info.run_name} (retired {label})"))

    count = 0
    for bare in bare_keys:
        if (exp := experiment_id("/".join(bare.split("/")[1:3]))) is None:
            continue
        key = f"{project}/{bare}" if project else bare
        for run in _find_runs(client, exp, key, call, bare):
            retag(run, RUN_KEY_TAG, run.data.tags.get(RUN_KEY_TAG, key))
            count += 1
    for name, scale in summaries:
        if (exp := experiment_id(name)) is None:
            continue
        key = f"{project}/{scale}/{name}" if project else f"{scale}/{name}"
        quote = "'" if "'" not in key else '"'
        flt = f"tags.`{SUMMARY_RUN_TAG}` = {quote}{key}{quote}"
        for run in call(lambda: client.search_runs([exp], filter_string=flt)):
            retag(run, SUMMARY_RUN_TAG, key)
            count += 1
    return f"{count} MLflow run(s) re-keyed and tagged {RETIRED_TAG}={folder}"
