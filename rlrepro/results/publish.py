"""The report of the main job, published in the repository, and the verdicts compared with it (issue 32).

``publish`` writes a results root's tables (md, csv, json) and figures (png, downscaled to :data:`FIGURE_WIDTH`)
into a folder such as ``docs/results/cpu``, with ``REPORT.md``, ``report.html`` and ``verdicts.json`` written anew
over every experiment the folder then holds, ``REPORT.md`` headed by one line of provenance: the commits the runs
trained at, the date, the machines the runs name in ``spec.resolved.json`` and the wall time from their
``summary.json``. A job longer than a session on a fresh machine is published a session at a time: what an earlier
publication holds and this one lacks is kept, and :data:`MANIFEST` records each publication. ``compare`` lists every
claim whose verdict differs between two such folders (a published one and a results root): a change that flips a
verdict shows there.
"""

from __future__ import annotations

import functools
import html
import json
import re
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from rlrepro.jobs.run_folder import SUMMARY
from rlrepro.results.collect import MissingRunsError
from rlrepro.results.claims import CONTROL_LEADS, INCONCLUSIVE, NOT_JUDGED, NOT_REPRODUCED, REPRODUCED, UNINFORMATIVE

#: What a published folder holds besides ``tables/``; the standalone page (every figure inlined) is left out.
REPORT_FILES = ("REPORT.md", "report.html", "verdicts.json")
TABLE_SUFFIXES = (".md", ".csv", ".json", ".png")
#: Figures wider than this (pixels) are scaled down to it when published: the folder stays a few MB.
FIGURE_WIDTH = 900
PROVENANCE_MARK = "Published:"
#: The publications a folder holds, one per session that added experiments (hours, machines, commits).
MANIFEST = "published.json"


def verdicts(root: Path) -> dict[tuple[str, str], str]:
    """(experiment key, claim id) -> verdict, from every table JSON under ``root/tables`` (a results root at one
    scale, or a published folder)."""
    found = {}
    for path in sorted((Path(root) / "tables").glob("*/*.json")):
        key = f"{path.parent.name}/{path.stem}"
        for claim in json.loads(path.read_text(encoding="utf-8")).get("claims", []):
            found[(key, claim["claim"])] = claim["verdict"]
    return found


#: What a changed-verdicts row says of a judged claim one side's spec does not have.
REMOVED, ADDED = "claim removed", "claim added"


class Comparison(NamedTuple):
    """Two sets of verdicts side by side: the claims whose verdict differs (key, claim, before, now), those only
    one side judged (an experiment run on one side only, or a claim added or removed) and how many agree."""

    differ: list[tuple[str, str, str, str]]
    only_before: list[tuple[str, str]]
    only_now: list[tuple[str, str]]
    same: int


def compare(before: Path, now: Path) -> Comparison:
    """The verdicts of ``now`` against those of ``before`` (each a results root or a published folder)."""
    return _compare(verdicts(before), verdicts(now))


def _compare(old: dict[tuple[str, str], str], new: dict[tuple[str, str], str]) -> Comparison:
    differ = [(*key, old[key], new[key]) for key in old if key in new and old[key] != new[key]]
    return Comparison(differ, [key for key in old if key not in new], [key for key in new if key not in old],
                      sum(1 for key in old if new.get(key) == old[key]))


def changed_verdicts(before: Path, now: Path) -> tuple[list[dict[str, str]], int, int, int]:
    """The claims whose verdict differs between two folders (each a results root or a published folder), each with
    the reason their tables give; and how many are the same, judged only before, only now.

    A reason is read, never typed: what differs between the two tables' provenance (the spec's hash, the seeds, the
    commits the runs trained at) and between the two verdicts' tests; where the runs and the test are the same, the
    same runs were judged by other rules (the commits the tables were made at), beside a changed spec hash (which
    may be a field the claim does not read). A verdict a control set (uninformative, or the runs not
    shown beyond their frozen arm), and a claim not judged now (not testable on this machine, say), lead with their
    detail's first clause: that, not the provenance, is why it reads so. A judged claim the spec removed or added
    since, in an experiment both folders hold, is a row too ("claim removed", "claim added"); the counts are of the
    rest.
    """
    sides = {REMOVED: verdicts(before), ADDED: verdicts(now)}  # each folder's table JSONs read once
    result = _compare(sides[REMOVED], sides[ADDED])
    _table = functools.cache(_read_table)  # an experiment's table JSON read once per folder, not once per claim

    changed = []
    for key, claim, old, new in result.differ:
        a, b = (_table(folder, key) for folder in (before, now))
        pa, pb = a.get("provenance", {}), b.get("provenance", {})
        va, vb = (next((c for c in t.get("claims", []) if c["claim"] == claim), {}) for t in (a, b))
        reasons = []
        if pa.get("spec_hash") != pb.get("spec_hash"):
            reasons.append(f"spec changed (hash {pa.get('spec_hash')} -> {pb.get('spec_hash')})")
        if pa.get("seeds") != pb.get("seeds"):
            reasons.append(f"seeds {pa.get('seeds')} -> {pb.get('seeds')}")
        if pa.get("run_commits") != pb.get("run_commits"):
            reasons.append("runs trained again (at " + ", ".join(c[:12] for c in pb.get("run_commits", [])) + ")")
        same_test = (va.get("method") or "") == (vb.get("method") or "")
        if not same_test:
            reasons.append(f"test now: {vb.get('method') or 'none'}")
        same_runs = pa.get("seeds") == pb.get("seeds") and pa.get("run_commits") == pb.get("run_commits")
        if not reasons or (same_runs and same_test and pa.get("table_commit") != pb.get("table_commit")):
            reasons.append(f"the same runs judged by the rules of another commit (tables at "
                           f"{str(pa.get('table_commit', '?'))[:12]} -> {str(pb.get('table_commit', '?'))[:12]})")
        if vb.get("detail") and (new == NOT_JUDGED or vb["detail"].startswith(CONTROL_LEADS)):
            reasons.insert(0, vb["detail"].split(";")[0])  # why it is not judged, or the control that set it: first
        changed.append({"experiment": key, "claim": claim, "before": old, "now": new, "reason": "; ".join(reasons)})
    # A judged claim that the spec dropped or added, in an experiment both sides hold, changed too: listed, not only
    # counted. (Claims of an experiment one side lacks were not compared: it was not run there.)
    both = {key for key, _ in sides[REMOVED]} & {key for key, _ in sides[ADDED]}
    for outcome, keys in ((REMOVED, result.only_before), (ADDED, result.only_now)):
        for key, claim in keys:
            verdict = sides[outcome][(key, claim)]
            if key not in both or verdict == NOT_JUDGED:
                continue
            old, new = (verdict, outcome) if outcome == REMOVED else (outcome, verdict)
            hashes = [_table(folder, key).get("provenance", {}).get("spec_hash") for folder in (before, now)]
            changed.append({"experiment": key, "claim": claim, "before": old, "now": new,
                            "reason": f"{outcome} in the spec (hash {hashes[0]} -> {hashes[1]})"})
    listed = {(c["experiment"], c["claim"]) for c in changed}
    return (changed, result.same, sum(1 for k in result.only_before if k not in listed),
            sum(1 for k in result.only_now if k not in listed))


def _read_table(folder: Path, key: str) -> dict:
    path = Path(folder) / "tables" / f"{key}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def compare_lines(before: Path, now: Path) -> tuple[list[str], bool]:
    """What ``rlrepro report --compare`` prints, and whether any verdict differs."""
    result = compare(before, now)
    if not result.same and not result.differ:
        raise FileNotFoundError(f"no claim is judged on both sides: tables under {before}/tables and {now}/tables "
                                "(expected a results root at one scale, e.g. results/cpu, or a published folder)")
    from rlrepro.plan_text import wrap  # noqa: PLC0415 -- the terminal layout (80 columns)

    lines = wrap(f"verdicts of {now} against {before}: {result.same} claim(s) the same, {len(result.differ)} differ",
                 hanging="  ")
    for key, claim, old, new in result.differ:
        lines += wrap(f"{key} {claim}: {old} -> {new}", indent="  ")
    for side, keys in ((str(before), result.only_before), (str(now), result.only_now)):
        if keys:
            experiments = sorted({key for key, _ in keys})
            lines += wrap(f"only in {side} ({len(keys)} claim(s) of {len(experiments)} experiment(s); not compared): "
                          + ", ".join(experiments), hanging="  ")
    return lines, bool(result.differ)


def run_span(root: Path, experiments: set[str] | None = None) -> tuple[float, float, datetime | None]:
    """The job's wall time from its runs' ``summary.json`` (those of ``experiments``, "paper/experiment" keys, when
    given): hours while any run was training (overlapping runs counted once; pauses between sessions left out),
    hours from the first start to the last end, and that end."""
    spans = []
    for path in (Path(root) / "runs").rglob(SUMMARY):
        key = "/".join(path.relative_to(Path(root) / "runs").parts[:2])
        if experiments is not None and key not in experiments:
            continue
        summary = json.loads(path.read_text(encoding="utf-8"))
        if not summary.get("completed_at") or summary.get("wall_time") is None:
            continue
        end = datetime.fromisoformat(summary["completed_at"])
        spans.append((end - timedelta(seconds=float(summary["wall_time"])), end))
    if not spans:
        return 0.0, 0.0, None
    spans.sort()
    busy, (start, end) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += (end - start).total_seconds()
            start, end = s, e
        else:
            end = max(end, e)
    busy += (end - start).total_seconds()
    last = max(e for _, e in spans)
    return busy / 3600, (last - spans[0][0]).total_seconds() / 3600, last


def machines(root: Path) -> list[str]:
    """The devices the runs name in ``spec.resolved.json`` ("cpu, 2 cores"), each once."""
    found = []
    for path in sorted((Path(root) / "runs").rglob("spec.resolved.json")):
        device = json.loads(path.read_text(encoding="utf-8")).get("device") or {}
        if not device.get("platform"):
            continue
        text = device["platform"] + (f", {device['cpu_cores']} cores" if device.get("cpu_cores") else "")
        if device["platform"] != "cpu":
            text += f" ({device.get('device_count', 1)}x {device.get('device_kind', '?')})"
        if text not in found:
            found.append(text)
    return found


def experiments_with_tables(root: Path) -> list[str]:
    """The experiments ("paper/experiment") that have a table JSON under ``root/tables``."""
    return [f"{path.parent.name}/{path.stem}" for path in sorted((Path(root) / "tables").glob("*/*.json"))]


def provenance_line(dest: Path) -> str:
    """The first line of a published REPORT.md: commits (from the tables), date, machines and wall time (from the
    publications recorded in ``dest``'s :data:`MANIFEST`: a job run across sessions sums their training hours)."""
    commits = sorted({c for path in (Path(dest) / "tables").glob("*/*.json")
                      for c in json.loads(path.read_text(encoding="utf-8")).get("provenance", {}).get("run_commits", [])})
    manifest = _manifest(dest)
    sessions = manifest["sessions"]
    busy = sum(s["busy_h"] for s in sessions)
    span = sum(s["span_h"] for s in sessions)
    found = [m for s in sessions for m in s["machines"]]
    date = max((s["finished"] for s in sessions), default=datetime.now(timezone.utc).date().isoformat())
    replaced = sum(s["busy_h"] for s in sessions if s.get("replaced"))
    beside = [key for key in experiments_with_tables(dest) if key not in manifest["job"]]
    extra = sum(s.get("opt_in_busy_h", 0.0) for s in sessions)
    return (f"{PROVENANCE_MARK} {_coverage(dest)}; runs at commit{'s' if len(commits) != 1 else ''} "
            f"{', '.join(f'`{c[:12]}`' for c in commits) or 'unknown'}, finished {date}, on "
            f"{'; '.join(dict.fromkeys(found)) or 'an unrecorded machine'}; wall time {busy:.1f} h while training "
            f"({span:.1f} h from the first start to the last end, pauses included"
            + (f"; in {len(sessions)} sessions, {MANIFEST} lists each" if len(sessions) > 1 else "")
            + (f"; {replaced:.1f} h of it in sessions whose tables were partly replaced since" if replaced else "")
            + ")" + (f"; published beside it: {len(beside)} experiment(s) of opt-in sets ({extra:.1f} h while "
                     "training)" if beside else "") + ".")


def summary_line(dest: Path, scale: str = "cpu", specs: list[str | Path] | None = None) -> str:
    """The README's line for a published report: "N claims judged at the cpu scale: a reproduced, ..." (from
    ``verdicts.json``; N counts every verdict but "not judged"), and how much of the main job it covers (given
    ``specs``: and whether that job is still theirs)."""
    claims = json.loads((Path(dest) / "verdicts.json").read_text(encoding="utf-8"))["claims"]
    shown = (REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED, UNINFORMATIVE)
    judged = sum(n for verdict, n in claims.items() if verdict != NOT_JUDGED)
    return (f"{judged} claims judged at the {scale} scale: "
            + ", ".join(f"{claims.get(verdict, 0)} {verdict}" for verdict in shown) + f" ({_coverage(dest, specs)})")


def _coverage(dest: Path, specs: list[str | Path] | None = None) -> str:
    """How much of the main job a published folder holds (from its MANIFEST), and, given ``specs``, whether that job
    is still theirs (a job that changed since is never called complete)."""
    from rlrepro.workflow import DEFAULT_SET, cannot_run, plan  # noqa: PLC0415 -- planning, only for this line

    job = json.loads((Path(dest) / MANIFEST).read_text(encoding="utf-8"))["job"]
    done = [key for key in experiments_with_tables(dest) if key in job]
    text = (f"{len(done)} of the main job's {len(job)} experiments published so far" if len(done) < len(job)
            else f"all {len(job)} experiments of the main job")
    if specs is None:
        return text
    today = [p.key for p in plan(specs, "cpu") if p.job_set == DEFAULT_SET and not cannot_run(p)]
    if today != job:
        text += (f" as it was when published; today's main job, {len(today)} experiments, is not published yet")
    return text


def publish(root: Path | None, dest: Path, specs: list[str | Path] | None = None, *, scale: str | None = None
            ) -> tuple[list[Path], list[str]]:
    """Publish the experiments ``root`` (a results root at one scale) has tables of into ``dest``.

    Each is judged anew from its runs with ``specs`` (default: this checkout's ``specs``) and this code: runs trained
    at a pinned commit are judged by the claims and verdict rules of the commit that publishes (the report's
    "Generated at" line). A job that runs across sessions on fresh machines publishes what each session finished:
    the tables ``dest`` already holds for experiments ``root`` lacks are kept (when their spec is unchanged),
    ``root``'s replace the rest, and REPORT.md, report.html and verdicts.json are written anew over the union.
    An experiment whose runs under ``root`` are not all finished (a session that ended mid-experiment) is not
    published from it: the earlier publication's table stays where its spec is unchanged.
    Returns the files of the published folder and a note per experiment not published from ``root`` and per
    published table left out (its spec changed since).

    ``root`` None (``rlrepro publish --refresh``): no run is added; ``dest``'s tables at ``scale`` are judged and
    its report written anew with this checkout's specs and code, so that what the report says of the experiments it
    does not hold (their not-run lines) and its verdict rules are today's. Its training record is kept as it was.
    """
    from rlrepro.results.report import write_report  # noqa: PLC0415 -- report imports the planner
    from rlrepro.results.tables import aggregate_experiment  # noqa: PLC0415 -- matplotlib
    from rlrepro.specs import spec_hash  # noqa: PLC0415
    from rlrepro.workflow import DEFAULT_SET, cannot_run, plan  # noqa: PLC0415

    dest, specs = Path(dest), list(specs or ["specs"])
    if root is None:
        if not experiments_with_tables(dest):
            raise FileNotFoundError(f"--refresh: no published table under {dest / 'tables'}")
        scale, new = scale or dest.name, []
    else:
        root, scale = Path(root), root.name
        if dest.resolve() == root.resolve() or root.resolve() in dest.resolve().parents:
            raise ValueError(f"--to {dest}: inside the results root {root} it would replace the tables it copies; "
                             "publish to a folder outside it (e.g. docs/results/cpu)")
        new = experiments_with_tables(root)
        if not new:
            raise FileNotFoundError(f"no table under {root / 'tables'}: run at least one experiment to its table first")
    plans = plan(specs, scale)
    by_key = {p.key: p for p in plans}
    if missing := [key for key in new if key not in by_key]:
        raise ValueError(f"{', '.join(missing)}: tables under {root / 'tables'} with no spec in {', '.join(map(str, specs))}")
    unfinished = {}
    for key in new:  # judged anew: this checkout's claims and rules on the runs' numbers
        try:
            aggregate_experiment(by_key[key].spec_path, scale=scale, results=root.parent)
        except MissingRunsError as error:  # the session ended mid-experiment: its table in root is an older one's
            unfinished[key] = f"{str(error).splitlines()[0].rstrip(':')}: not published from {root} (its runs finish first)"
    new = [key for key in new if key not in unfinished]
    if root is not None and not new:
        raise MissingRunsError("nothing to publish: " + "; ".join(unfinished.values()))
    dest.parent.mkdir(parents=True, exist_ok=True)
    # The new folder is written beside ``dest`` and swapped in whole: an interrupted publication leaves the old one.
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.") as tmp:
        stage = Path(tmp) / scale
        kept, dropped = _stage_tables(root, dest, stage, new, {p.key: spec_hash(p.spec) for p in plans})
        dropped = [*unfinished.values(), *dropped]
        earlier = dest if experiments_with_tables(dest) else None  # the verdicts changed since: a section
        write_report(specs, scale=scale, results=Path(tmp), compare_to=earlier)
        for path in stage.iterdir():
            if path.is_file() and path.name not in REPORT_FILES:
                path.unlink()  # spec_sets.json (this machine's paths), the standalone page (every figure inlined)
        job = [p.key for p in plans if p.job_set == DEFAULT_SET and not cannot_run(p)]
        _record_publication(root, dest, stage, new, kept, job)
        line = provenance_line(stage)
        report = stage / "REPORT.md"
        report.write_text(line + "\n\n" + report.read_text(encoding="utf-8"), encoding="utf-8")
        page = stage / "report.html"  # the same line under the page's title, the commits as code
        shown = re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(line, quote=False))
        page.write_text(page.read_text(encoding="utf-8").replace("</h1>", f"</h1><p class='meta'>{shown}</p>", 1),
                        encoding="utf-8")
        old = Path(tmp) / "old"
        if dest.exists():
            dest.rename(old)
        stage.rename(dest)
    return sorted(path for path in dest.rglob("*") if path.is_file()), dropped


def _stage_tables(root: Path, dest: Path, stage: Path, new: list[str], hashes: dict[str, str]
                  ) -> tuple[list[str], list[str]]:
    """Copy into ``stage/tables`` the tables of ``root`` (figures downscaled) and those ``dest`` published earlier
    for experiments ``root`` lacks, where their spec is unchanged (``hashes``: experiment -> today's spec hash).
    Returns the experiments kept from ``dest`` and a note for each left out."""
    kept, dropped = [], []
    for key in experiments_with_tables(dest):
        if key in new:
            continue
        published = json.loads((dest / "tables" / f"{key}.json").read_text(encoding="utf-8"))["provenance"]["spec_hash"]
        if hashes.get(key) != published:
            dropped.append(f"{key}: left out, its spec changed since it was published (hash {published} -> "
                           f"{hashes.get(key, 'no such experiment')}): run it again")
            continue
        kept.append(key)
    for source_root, keys in ((dest, kept), (root, new)):
        for key in keys:
            paper, experiment = key.split("/")
            for path in sorted((source_root / "tables" / paper).glob(f"{experiment}*")):
                if path.is_file() and path.suffix in TABLE_SUFFIXES and path.name.split(".")[0] == experiment:
                    target = stage / "tables" / paper / path.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    (_downscaled if path.suffix == ".png" else shutil.copyfile)(path, target)
    return kept, dropped


def _manifest(dest: Path) -> dict:
    """``dest``'s :data:`MANIFEST` (the default job's experiments, the publications), empty before the first."""
    path = Path(dest) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"job": [], "sessions": []}


def _record_publication(root: Path, dest: Path, stage: Path, new: list[str], kept: list[str], job: list[str]) -> None:
    """Write ``stage``'s :data:`MANIFEST`: ``dest``'s publications and this one (its experiments, training hours,
    machines, commits), with the experiments of the scale's default job (``job``: what a complete publication
    holds); earlier publications lose the experiments this one replaces (one left with none is removed; one left
    with some is marked, its hours counted still). A refresh (nothing ``new``) records no publication of its own."""
    sessions = []
    for session in _manifest(dest)["sessions"]:
        left = [key for key in session["experiments"] if key in kept]
        if left:
            gone = [key for key in session["experiments"] if key not in left]
            sessions.append({**session, "experiments": left,
                             **({"replaced": session.get("replaced", []) + gone} if gone else {})})
    if not new:
        (stage / MANIFEST).write_text(json.dumps({"job": job, "sessions": sessions}, indent=2) + "\n", encoding="utf-8")
        return
    in_job = {key for key in new if key in job}  # the main job's wall time; opt-in experiments published beside it apart
    busy, span, last = run_span(root, in_job)
    extra = run_span(root, set(new) - in_job)[0]
    commits = sorted({c for key in new for c in json.loads((root / "tables" / f"{key}.json").read_text(
        encoding="utf-8")).get("provenance", {}).get("run_commits", [])})
    sessions.append({"finished": (last or datetime.now(timezone.utc)).date().isoformat(), "busy_h": round(busy, 3),
                     "span_h": round(span, 3), "opt_in_busy_h": round(extra, 3), "machines": machines(root),
                     "run_commits": commits,
                     "experiments": new})
    (stage / MANIFEST).write_text(json.dumps({"job": job, "sessions": sessions}, indent=2) + "\n", encoding="utf-8")


def _downscaled(source: Path, target: Path) -> None:
    """A figure no wider than FIGURE_WIDTH pixels, saved optimised (a copy when it is narrow enough already)."""
    from PIL import Image

    with Image.open(source) as image:
        if image.width <= FIGURE_WIDTH:
            shutil.copyfile(source, target)
            return
        height = round(image.height * FIGURE_WIDTH / image.width)
        image.resize((FIGURE_WIDTH, height), Image.LANCZOS).save(target, optimize=True)
