"""report.html: one page per scale with every experiment's tables, figures, claim verdicts and provenance.

Why our own page rather than ``snakemake --report``: Snakemake's report is a separate invocation after the run
(it needs ``-c`` and re-plans the DAG), shows files as opaque result items in a JavaScript app, and has no place
for a verdict table or for our tables as tables. This page is written by the ``report`` rule of every run, is plain
HTML with relative links (no script, no network: it opens from ``file://`` and can be copied with the results
folder), and renders each experiment's own Markdown table file, so what the tables say (added by any module)
appears here without this module changing. The Snakefile still marks the page and the figures ``report(...)``
so ``snakemake --report`` collects them too.
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone
from pathlib import Path

from rlrepro.provenance import git_commit
from rlrepro.results.claims import detail_with_method

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 1.5rem 3rem; color: #1a1a1a; line-height: 1.45; }
h1 { margin-top: 1.5rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
h3 { margin-top: 1.6rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .88rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; height: auto; border: 1px solid #e3e3e3; margin: .4rem 0; display: block; }
code { background: #f4f4f4; padding: 0 .2rem; font-size: .85em; word-break: break-all; }
nav ul { columns: 2; } .files a { margin-right: .8rem; }
.verdict { font-weight: 600; padding: .05rem .4rem; border-radius: .25rem; white-space: nowrap; }
.verdict-reproduced { background: #d6f5d6; color: #145214; }
.verdict-not-reproduced { background: #fbd5d5; color: #7a1111; }
.verdict-inconclusive { background: #fff0c2; color: #6b4e00; }
.verdict-other { background: #e6e6e6; color: #333; }
.experiment { border-top: 1px solid #eee; }
.meta { color: #555; font-size: .9rem; }
"""


def verdict_class(verdict: str) -> str:
    """CSS class of a verdict: its words joined by '-', so an outcome added later still gets a class of its own."""
    slug = re.sub(r"[^a-z]+", "-", verdict.lower()).strip("-")
    known = {"reproduced", "not-reproduced", "inconclusive"}
    return f"verdict verdict-{slug}" if slug in known else f"verdict verdict-other verdict-{slug}"


def _markdown_html(text: str) -> str:
    """CommonMark with tables (markdown-it-py, already in the environment through rich)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _relink(fragment: str, prefix: str) -> str:
    """Make the relative ``src``/``href`` of a table file's Markdown relative to the report's folder."""

    def fix(match: re.Match[str]) -> str:
        attr, url = match.group(1), match.group(2)
        if re.match(r"^[a-z]+:|^#|^/", url):
            return match.group(0)
        return f'{attr}="{prefix}{url}"'

    return re.sub(r'(src|href)="([^"]*)"', fix, fragment)


def _verdict_table(rows: list[tuple[str, str, str, str]], *, link: bool) -> str:
    """experiment | claim | verdict | evidence, one row per claim, verdicts coloured by outcome."""
    if not rows:
        return "<p>No claims.</p>"
    out = ["<table class='verdicts'><thead><tr><th>experiment</th><th>claim</th><th>verdict</th><th>evidence</th>"
           "</tr></thead><tbody>"]
    for experiment, claim, verdict, detail in rows:
        name = f"<a href='#{_anchor(experiment)}'>{html.escape(experiment)}</a>" if link else html.escape(experiment)
        out.append(
            f"<tr><td>{name}</td><td><code>{html.escape(claim)}</code></td>"
            f"<td><span class='{verdict_class(verdict)}'>{html.escape(verdict)}</span></td>"
            f"<td>{html.escape(detail)}</td></tr>"
        )
    return "".join(out) + "</tbody></table>"


def _anchor(key: str) -> str:
    return "exp-" + re.sub(r"[^A-Za-z0-9]+", "-", key)


def experiment_section(key: str, root: Path, reason: str | None) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The HTML of one experiment (from its table files under ``root``) and its verdict rows."""
    md_path = root / "tables" / f"{key}.md"
    head = f"<section class='experiment' id='{_anchor(key)}'><h2>{html.escape(key)}</h2>"
    if reason or not md_path.exists():
        why = f"not run on this machine: {reason}" if reason else "not run at this scale (no table yet)"
        return head + f"<p class='meta'>{html.escape(why)}</p></section>", []
    data = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
    rows = [(key, c["claim"], c["verdict"], detail_with_method(c)) for c in data.get("claims", [])]
    folder = md_path.parent
    files = sorted(p for p in folder.iterdir() if p.name.startswith(md_path.stem + ".") and p.is_file())
    links = " ".join(f"<a href='tables/{html.escape(key.split('/')[0])}/{html.escape(p.name)}'>{html.escape(p.name)}</a>"
                     for p in files)
    figures = [p for p in files if p.suffix == ".png"]
    body = _relink(_markdown_html(md_path.read_text(encoding="utf-8")), f"tables/{key.split('/')[0]}/")
    body = re.sub(r"<h1>.*?</h1>", "", body, count=1, flags=re.S)  # the section has its own heading
    shown = set(re.findall(r'src="([^"]+)"', body))
    extra = "".join(
        f"<figure><img src='tables/{key.split('/')[0]}/{p.name}' alt='{html.escape(p.stem)}'>"
        f"<figcaption class='meta'>{html.escape(p.name)}</figcaption></figure>"
        for p in figures if f"tables/{key.split('/')[0]}/{p.name}" not in shown
    )
    verdicts = "<h3>Claim verdicts</h3>" + _verdict_table(rows, link=False)
    return head + f"<p class='files meta'>Files: {links}</p>" + verdicts + body + extra + "</section>", rows


def write_html_report(
    sections: list[tuple[str, str | None]], rows: list[tuple[str, str, str, str]], *, scale: str, root: Path
) -> Path:
    """Write ``<root>/report.html``.

    Args:
      sections: (experiment key, why it cannot run here or None), in report order.
      rows: (experiment, claim, verdict, detail) for every claim, as REPORT.md lists them.
    """
    parts = [experiment_section(key, root, reason)[0] for key, reason in sections]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    summary = ", ".join(f"<span class='{verdict_class(v)}'>{n} {html.escape(v)}</span>" for v, n in sorted(counts.items()))
    nav = "".join(f"<li><a href='#{_anchor(k)}'>{html.escape(k)}</a></li>" for k, _ in sections)
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>rlrepro report — scale {html.escape(scale)}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>rlrepro report — scale '{html.escape(scale)}'</h1>"
        f"<p class='meta'>Generated {generated} at commit <code>{html.escape(git_commit())}</code>. "
        f"{len(sections)} experiment(s), {len(rows)} claim(s): {summary or 'none'}. "
        "Files: <a href='REPORT.md'>REPORT.md</a>, <a href='tables/'>tables/</a>, <a href='runs/'>runs/</a>. "
        "Intervals are 95% stratified-bootstrap confidence intervals over seeds.</p>"
        f"<nav><h2>Experiments</h2><ul>{nav}</ul></nav>"
        f"<h2>Every claim</h2>{_verdict_table(rows, link=True)}"
        + "".join(parts)
        + "</body></html>\n"
    )
    path = root / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
