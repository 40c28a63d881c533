"""report.html: one page per scale with every experiment's tables, figures, claim verdicts and provenance.

Why our own page rather than ``snakemake --report``: Snakemake's report is a separate invocation after the run
(it needs ``-c`` and re-plans the DAG), shows files as opaque result items in a JavaScript app, and has no place
for a verdict table or for our tables as tables. This page is written by the ``report`` rule of every run, is plain
HTML with relative links (no script, no network: it opens from ``file://`` and can be copied with the results
folder), and renders each experiment's own Markdown table file, so what the tables say (added by any module)
appears here without this module changing. ``snakemake --report`` shows ``report.standalone.html``, the same page
with every figure embedded (it puts a page in a ``data:`` iframe, where relative image paths cannot load).
"""

from __future__ import annotations

import base64
import html
import json
import re
from datetime import datetime, timezone
from pathlib import Path

from rlrepro.provenance import git_commit
from rlrepro.results.claim_rows import ClaimRow, short
from rlrepro.results.claims import NOT_JUDGED

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 1.5rem 3rem; color: #1a1a1a; line-height: 1.45; }
h1 { margin-top: 1.5rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
h3 { margin-top: 1.6rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .88rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; height: auto; border: 1px solid #e3e3e3; margin: .4rem 0; display: block; }
code { background: #f4f4f4; padding: 0 .2rem; font-size: .85em; overflow-wrap: anywhere; }
code.claim { overflow-wrap: normal; word-break: normal; }
tr.group th { background: #e8eef7; text-align: left; }
nav ul { columns: 2; } .files a { margin-right: .8rem; }
.verdict { font-weight: 600; padding: .05rem .4rem; border-radius: .25rem; white-space: nowrap; }
.verdict-reproduced { background: #d6f5d6; color: #145214; }
.verdict-not-reproduced { background: #fbd5d5; color: #7a1111; }
.verdict-inconclusive { background: #fff0c2; color: #6b4e00; }
.verdict-other { background: #e6e6e6; color: #333; }
.experiment { border-top: 1px solid #eee; }
.meta { color: #555; font-size: .9rem; }
table.results { display: table; width: 100%; table-layout: fixed; }
table.results col.c-claim { width: 34.5%; } table.results col.c-paper { width: 11%; } table.results col.c-ours { width: 25%; }
table.results col.c-verdict { width: 12%; } table.results col.c-rests { width: 17.5%; }
table.results td { overflow-wrap: anywhere; } table.results td.rests { color: #444; font-size: .82rem; }
table.results tr.claim td { border-bottom: none; } table.results tr.evidence td { background: #fff; border-top: none;
  padding-top: 0; font-size: .82rem; }
table.results details summary { cursor: pointer; color: #1a4f8b; } table.results details p { margin: .3rem 0 .3rem 1rem; }
.lead { background: #eef4fb; border-left: 4px solid #1a4f8b; padding: .4rem .8rem; }
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


def _results_tables(rows: list[ClaimRow], papers: dict[str, str]) -> str:
    """One table per paper of its judged claims: the claim (the paper's words, short, with its experiment and id),
    the paper's value, ours (with its interval, named by its method), the verdict, what it rests on, and the test,
    p-values and full evidence in a <details> a click away."""
    if not rows:
        return "<p>No claim is judged at this scale.</p>"
    out = []
    for paper, title in papers.items():
        mine = [row for row in rows if row.experiment.split("/")[0] == paper]
        if not mine:
            continue
        columns = "".join(f"<col class='c-{c}'>" for c in ("claim", "paper", "ours", "verdict", "rests"))
        out.append(f"<h3 id='paper-{_anchor(paper)[4:]}'>{html.escape(title)}</h3><table class='results'>"
                   f"<colgroup>{columns}</colgroup><thead><tr><th>claim</th><th>the paper</th><th>ours</th>"
                   "<th>verdict</th><th>rests on</th></tr></thead><tbody>")
        for row in mine:
            p_values = row.p_values.split(", ") if row.p_values else []
            summary = "test and evidence" + (f": p = {', '.join(p_values[:3])}" if p_values else "") + (
                f" and {len(p_values) - 3} more" if len(p_values) > 3 else "")
            evidence = "".join(f"<p><b>{label}</b> {_inline_code(text)}</p>" for label, text in (
                ("Test:", row.method), ("p:", row.p_values), ("Evidence:", row.detail),
                ("The claim:", row.statement), ("The paper:", row.paper_evidence)) if text)
            out.append(
                f"<tr class='claim' id='{row.anchor}'><td class='claim-text'>{html.escape(short(row.statement))}<br>"
                f"<a class='meta' href='#{_anchor(row.experiment)}'>{html.escape(row.experiment)}</a> "
                f"{claim_id_html(row.claim)}</td><td>{html.escape(row.paper)}</td><td>{html.escape(row.ours)}</td>"
                f"<td><span class='{verdict_class(row.verdict)}'>{html.escape(row.verdict)}</span></td>"
                f"<td class='rests'>{html.escape(row.rests_on)}</td></tr>"
                f"<tr class='evidence'><td colspan='5'><details><summary>{html.escape(summary)}</summary>{evidence}"
                "</details></td></tr>")
        out.append("</tbody></table>")
    return "".join(out)


def _changes_html(lines: list[str] | None) -> str:
    """The verdicts changed since the last published report (REPORT.md's section, its table as HTML)."""
    if lines is None:
        return ""
    return ("<h2 id='changes'>Verdicts changed since the last published report</h2>"
            + _markdown_html("\n".join(lines)))


def _verdict_table(rows: list[tuple[str, ...]]) -> str:
    """The judged claims, grouped under a row per experiment (linked to its section): claim | verdict | [method] |
    evidence, verdicts coloured by outcome. A row is (experiment, claim, verdict, detail[, method])."""
    if not rows:
        return "<p>No claim is judged at this scale.</p>"
    methods = any(len(row) > 4 and row[4] for row in rows)
    head = "<th>claim</th><th>verdict</th>" + ("<th>method</th>" if methods else "") + "<th>evidence</th>"
    out = [f"<table class='verdicts'><thead><tr>{head}</tr></thead><tbody>"]
    columns = 4 if methods else 3
    group = None
    for experiment, claim, verdict, detail, *rest in rows:
        if experiment != group:
            group = experiment
            out.append(f"<tr class='group'><th colspan='{columns}'><a href='#{_anchor(experiment)}'>"
                       f"{html.escape(experiment)}</a></th></tr>")
        method = f"<td>{html.escape(_method_text(rest[0] if rest else ''))}</td>" if methods else ""
        out.append(
            f"<tr><td>{claim_id_html(claim)}</td>"
            f"<td><span class='{verdict_class(verdict)}'>{html.escape(verdict)}</span></td>{method}"
            f"<td>{html.escape(detail)}</td></tr>"
        )
    return "".join(out) + "</tbody></table>"


def _method_text(method: object) -> str:
    """A verdict's method as text: a string as it is, a mapping (e.g. test and assumption) as 'key: value; ...'."""
    if isinstance(method, dict):
        return "; ".join(f"{k}: {v}" for k, v in method.items())
    return str(method or "")


def claim_id_html(claim: str) -> str:
    """A claim id that wraps only after an underscore, never mid-word."""
    return "<code class='claim'>" + "_<wbr>".join(html.escape(part) for part in claim.split("_")) + "</code>"


#: The reason of an experiment with no table at this scale (``rlrepro.results.report.not_run_text``).
NO_TABLE_YET = "not run at this scale (no table yet)"


def not_judged_groups(rows: list[tuple[str, ...]]) -> tuple[dict[tuple[str, str], list[str]], dict[str, int]]:
    """The not-judged claims by (experiment, reason), and apart (when two or more) the experiments with no table
    at this scale yet with their claim counts: after a run of a few experiments, one line rather than dozens."""
    groups: dict[tuple[str, str], list[str]] = {}
    for experiment, claim, _, detail, *_ in rows:
        groups.setdefault((experiment, detail), []).append(claim)
    unrun = {e: len(c) for (e, detail), c in groups.items() if detail == NO_TABLE_YET}
    if len(unrun) < 2:
        return groups, {}
    return {key: c for key, c in groups.items() if key[1] != NO_TABLE_YET}, unrun


def _not_judged_html(rows: list[tuple[str, ...]]) -> str:
    """Claims not judged at this scale, one line per experiment and reason (as REPORT.md groups them)."""
    groups, unrun = not_judged_groups(rows)
    if not groups and not unrun:
        return "<p>None.</p>"
    items = "".join(
        f"<li><a href='#{_anchor(e)}'>{html.escape(e)}</a>: {len(c)} claim{'' if len(c) == 1 else 's'} "
        f"({', '.join(claim_id_html(x) for x in c[:8])}{f' and {len(c) - 8} more' if len(c) > 8 else ''}): "
        f"{_inline_code(detail)}</li>"
        for (e, detail), c in groups.items())
    if unrun:
        items += (f"<li>{len(unrun)} experiments, {sum(unrun.values())} claims: {NO_TABLE_YET}: "
                  + ", ".join(f"<a href='#{_anchor(e)}'>{html.escape(e)}</a> ({n})" for e, n in unrun.items())
                  + "</li>")
    return f"<ul class='not-judged'>{items}</ul>"


def _anchor(key: str) -> str:
    return "exp-" + re.sub(r"[^A-Za-z0-9]+", "-", key)


def experiment_section(key: str, root: Path, not_run: str | None) -> tuple[str, list[tuple[str, ...]]]:
    """The HTML of one experiment (from its table files under ``root``) and its verdict rows; ``not_run``: why it
    has no table (``rlrepro.results.report.not_run_text``), or None."""
    md_path = root / "tables" / f"{key}.md"
    head = f"<section class='experiment' id='{_anchor(key)}'><h2>{html.escape(key)}</h2>"
    if not_run:
        return head + f"<p class='meta'>{_inline_code(not_run)}</p></section>", []
    data = json.loads(md_path.with_suffix(".json").read_text(encoding="utf-8"))
    rows = [(key, c["claim"], c["verdict"], c["detail"], c.get("method") or "") for c in data.get("claims", [])]
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
    body = _claims_pointer(body, rows)
    return head + f"<p class='files meta'>Files: {links}</p>" + body + extra + "</section>", rows


def _inline_code(text: str) -> str:
    """Plain text as HTML, its Markdown `code` spans (a command to run) as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _claims_pointer(body: str, rows: list[tuple[str, ...]]) -> str:
    """The table file's Claims section, whose verdicts the page lists once at the top, as one line pointing there."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in counts.items()) or "none"
    pointer = f"<h2>Claims</h2><p class='meta'>{tally}: each with its evidence in <a href='#claims'>the claims</a> above.</p>"
    return re.sub(r"<h2>Claims</h2>.*?(?=<h2>|<p><img|$)", lambda _: pointer, body, count=1, flags=re.S)


def write_html_report(
    sections: list[tuple[str, str | None]], rows: list[tuple[str, str, str, str]], *, scale: str, root: Path,
    claim_rows: list[ClaimRow] | None = None, lead: str = "", changes: list[str] | None = None,
    papers: dict[str, str] | None = None,
) -> Path:
    """Write ``<root>/report.html``.

    Args:
      sections: (experiment key, why it has no table or None), in report order.
      rows: (experiment, claim, verdict, detail) for every claim, as REPORT.md lists them.
      claim_rows: the judged claims as the papers' results tables show them (``rlrepro.results.claim_rows``).
      lead: what a run with ``only=`` selected (shown first); changes: the changed-verdicts section's Markdown.
      papers: paper -> its title, in report order.
    """
    parts = [experiment_section(key, root, not_run)[0] for key, not_run in sections]
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
        "Files: <a href='REPORT.md'>REPORT.md</a>, <a href='tables/'>tables/</a>"
        + (", <a href='runs/'>runs/</a>" if (root / "runs").is_dir() else "")  # a published copy has no run folders
        + ". " + html.escape(INTERVALS_NOTE) + "</p>"
        + (f"<p class='lead'>{html.escape(lead)}</p>" if lead else "")
        + _changes_html(changes)
        + f"<h2 id='claims'>Results per paper</h2>"
        + (_results_tables(claim_rows, papers or {}) if claim_rows is not None else
           _verdict_table([r for r in rows if r[2] != NOT_JUDGED]))
        + f"<h2>Claims not judged at this scale</h2>{_not_judged_html([r for r in rows if r[2] == NOT_JUDGED])}"
        f"<nav><h2>Experiments</h2><ul>{nav}</ul></nav>"
        + "".join(parts)
        + "</body></html>\n"
    )
    path = root / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    (root / STANDALONE).write_text(embed_images(page, root), encoding="utf-8")
    return path


#: What the page says of its intervals once, in its header (REPORT.md's INTERVALS_TEXT in short).
INTERVALS_NOTE = ("Each interval is named by its method where it appears (Welch, distribution-free, Clopper-Pearson, "
                  "stratified bootstrap); a claim's test and p-values are behind its row's evidence.")


#: The same page with every figure inside it: what ``snakemake --report`` shows (it embeds a page as a ``data:``
#: iframe, where relative image paths cannot load) and a file to mail.
STANDALONE = "report.standalone.html"


def embed_images(page: str, root: Path) -> str:
    """``page`` with each relative ``<img src>`` under ``root`` replaced by its bytes as a ``data:`` URI; links to
    other files stay relative. A missing image keeps its path (the browser shows its alt text)."""

    def inline(match: re.Match[str]) -> str:
        quote, url = match.group(1), match.group(2)
        path = root / html.unescape(url)
        if re.match(r"^[a-z]+:", url) or not path.is_file():
            return match.group(0)
        kind = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}.get(path.suffix, "application/octet-stream")
        return f"<img src={quote}data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}{quote}"

    return re.sub(r"""<img src=(['"])([^'"]+)\1""", inline, page)
