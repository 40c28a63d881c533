"""The report of a finished job, published in the repository, and the verdicts compared with it (issue 32).

``publish`` copies a results root's ``REPORT.md``, ``report.html``, ``verdicts.json`` and every experiment's table
(md, csv, json) and figures (png, downscaled to :data:`FIGURE_WIDTH`) into a folder such as ``docs/results/cpu``,
``REPORT.md`` headed by one line of provenance: the commits the runs trained at, the date, the machine the runs
name in ``spec.resolved.json`` and the wall time from their ``summary.json``. ``compare`` lists every claim whose
verdict differs between two such folders (a published one and a results root): a change that flips a verdict
shows there. Standard library (and Pillow, for the figures) only.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from rlrepro.jobs.run_folder import SUMMARY

#: What a published folder holds besides ``tables/``; the standalone page (every figure inlined) is left out.
REPORT_FILES = ("REPORT.md", "report.html", "verdicts.json")
TABLE_SUFFIXES = (".md", ".csv", ".json", ".png")
#: Figures wider than this (pixels) are scaled down to it when published: the folder stays a few MB.
FIGURE_WIDTH = 900
PROVENANCE_MARK = "Published:"


def verdicts(root: Path) -> dict[tuple[str, str], str]:
    """(experiment key, claim id) -> verdict, from every table JSON under ``root/tables`` (a results root at one
    scale, or a published folder)."""
    found = {}
    for path in sorted((Path(root) / "tables").glob("*/*.json")):
        key = f"{path.parent.name}/{path.stem}"
        for claim in json.loads(path.read_text(encoding="utf-8")).get("claims", []):
            found[(key, claim["claim"])] = claim["verdict"]
    return found


class Comparison(NamedTuple):
    """Two sets of verdicts side by side: the claims whose verdict differs (key, claim, before, now), those only
    one side judged (an experiment run on one side only, or a claim added or removed) and how many agree."""

    differ: list[tuple[str, str, str, str]]
    only_before: list[tuple[str, str]]
    only_now: list[tuple[str, str]]
    same: int


def compare(before: Path, now: Path) -> Comparison:
    """The verdicts of ``now`` against those of ``before`` (each a results root or a published folder)."""
    old, new = verdicts(before), verdicts(now)
    differ = [(*key, old[key], new[key]) for key in old if key in new and old[key] != new[key]]
    return Comparison(differ, [key for key in old if key not in new], [key for key in new if key not in old],
                      sum(1 for key in old if new.get(key) == old[key]))


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


def run_span(root: Path) -> tuple[float, float, datetime | None]:
    """The job's wall time from its runs' ``summary.json``: hours while any run was training (overlapping runs
    counted once; pauses between sessions left out), hours from the first start to the last end, and that end."""
    spans = []
    for path in (Path(root) / "runs").rglob(SUMMARY):
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


def provenance_line(root: Path) -> str:
    """The first line of a published REPORT.md: commits, date, machine and wall time, from the run folders."""
    commits = sorted({c for path in (Path(root) / "tables").glob("*/*.json")
                      for c in json.loads(path.read_text(encoding="utf-8")).get("provenance", {}).get("run_commits", [])})
    busy, span, last = run_span(root)
    date = (last or datetime.now(timezone.utc)).date().isoformat()
    return (f"{PROVENANCE_MARK} runs at commit{'s' if len(commits) != 1 else ''} "
            f"{', '.join(f'`{c[:12]}`' for c in commits) or 'unknown'}, finished {date}, on "
            f"{'; '.join(machines(root)) or 'an unrecorded machine'}; wall time {busy:.1f} h while training "
            f"({span:.1f} h from the first start to the last end, pauses included).")


def publish(root: Path, dest: Path) -> list[Path]:
    """Copy a finished job's report from ``root`` (a results root at one scale) into ``dest``, replacing what an
    earlier publication left there; returns the files written."""
    root, dest = Path(root), Path(dest)
    if dest.resolve() == root.resolve() or root.resolve() in dest.resolve().parents:
        raise ValueError(f"--to {dest}: inside the results root {root} it would replace the tables it copies; "
                         "publish to a folder outside it (e.g. docs/results/cpu)")
    if not (root / "REPORT.md").exists():
        raise FileNotFoundError(f"{root / 'REPORT.md'} does not exist: run the job (snakemake) to its report first")
    if (dest / "tables").exists():
        shutil.rmtree(dest / "tables")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in REPORT_FILES:
        if (root / name).exists():
            text = (root / name).read_text(encoding="utf-8")
            if name == "REPORT.md":
                text = provenance_line(root) + "\n\n" + text
            (dest / name).write_text(text, encoding="utf-8")
            written.append(dest / name)
    for path in sorted((root / "tables").rglob("*")):
        if not path.is_file() or path.suffix not in TABLE_SUFFIXES:
            continue
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".png":
            _downscaled(path, target)
        else:
            shutil.copyfile(path, target)
        written.append(target)
    return written


def _downscaled(source: Path, target: Path) -> None:
    """A figure no wider than FIGURE_WIDTH pixels, saved optimised (a copy when it is narrow enough already)."""
    from PIL import Image

    with Image.open(source) as image:
        if image.width <= FIGURE_WIDTH:
            shutil.copyfile(source, target)
            return
        height = round(image.height * FIGURE_WIDTH / image.width)
        image.resize((FIGURE_WIDTH, height), Image.LANCZOS).save(target, optimize=True)
