"""A judged claim as a row of a paper's results table: the paper's words, its number, ours, the verdict and what the
verdict rests on, with the test, the p-values and the full evidence kept for a click away (REPORT.md, report.html).

Everything here is read from the spec and the verdict (the table JSON's ``claims``), never typed for the report:
"the paper" is the claim's bar, named "bar" (threshold, aggregate), and the spec's ``paper_values`` where they cover
the claim's variants; "ours" is the first estimate of the verdict's evidence, with its interval as the verdict
computed it (the bracket names the method: Welch, distribution-free, Clopper-Pearson, stratified bootstrap); "rests
on" is the claim's and the scale's ``rests_on`` and the seeds and frames the scale runs against the paper's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlrepro.results.plots import count_label, x_axis_label

#: An interval of a verdict's evidence: a bracket that names an interval ("[Welch 95% CI ...]", "[95%
#: distribution-free interval ...]", "[95% Clopper-Pearson ...]").
_INTERVAL = re.compile(r"\[[^\[\]]*?(?:CI|interval|Clopper-Pearson)[^\[\]]*\]")
#: A p-value in the evidence: "permutation p = 0.0143", "p 0.0909," (not a test's "smallest p 0.05").
_P_VALUE = re.compile(r"(?<!smallest )\bp(?: =)? ((?:\d+(?:\.\d*)?|\.\d+)(?:e-?\d+)?)\b")
#: The longest "ours" or statement shown in a row; the rest is in the evidence.
SHORT = 200


@dataclass(frozen=True)
class ClaimRow:
    """One judged claim as a reader takes it in: what the paper says and has, what we have, the verdict, what it
    rests on; and the test, p-values and evidence behind it."""

    experiment: str
    claim: str
    statement: str
    paper: str
    ours: str
    verdict: str
    rests_on: str
    method: str
    p_values: str
    detail: str
    paper_evidence: str

    @property
    def anchor(self) -> str:
        """The id of the claim's evidence (REPORT.md's notes, the page's rows)."""
        return "evidence-" + re.sub(r"[^A-Za-z0-9]+", "-", f"{self.experiment}-{self.claim}").strip("-")


#: Words a full stop follows inside a sentence ("App. F", "Fig. 3", "e.g. a").
_ABBREVIATIONS = {"app", "fig", "figs", "sec", "tab", "eq", "e.g", "i.e", "cf", "vs", "al", "approx", "no"}


def short(text: str, limit: int = SHORT) -> str:
    """``text`` up to its first sentence's end, cut at ``limit`` characters ("..." where cut)."""
    text = text.strip()
    first = text
    for end in re.finditer(r"\. (?=[A-Z(])", text):
        word = re.split(r"[\s(]", text[: end.start()])[-1].lower()
        if word not in _ABBREVIATIONS and not re.fullmatch(r"[a-z]", word):
            first = text[: end.start()]
            break
    first = first.rstrip(".")
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def ours_text(detail: str) -> str:
    """Our estimate from a verdict's evidence: the clause of its first interval (the interval's bracket names its
    method), and how many more comparisons the evidence holds; without an interval (a count of the best runs,
    games against a trivial policy) its first clause."""
    found = _INTERVAL.search(detail)
    if found is None:  # the first clause with a mean (a run's games against a trivial policy's), else the first
        clauses = detail.split("; ")
        return short(next((c for c in clauses if re.search(r"\bmean -?\d", c)), clauses[0]))
    start = max(detail.rfind("; ", 0, found.start()), detail.rfind(". ", 0, found.start()))
    clause = detail[start + 2 if start >= 0 else 0:found.end()]
    more = len(_INTERVAL.findall(detail)) - 1
    return short(clause, SHORT) + (f" (and {more} more in the evidence)" if more else "")


def p_values_text(detail: str) -> str:
    """The p-values of a verdict's evidence, in order ("0.0143, 0.0143"), or '' where its test has none."""
    return ", ".join(_P_VALUE.findall(detail))


def paper_text(spec, claim) -> str:
    """The paper's number for a claim: the claim's bar, named so (a threshold's or an aggregate's value: the paper's
    number where the paper gives one, else what the claim needs, e.g. a trivial policy's level plus a margin), and
    the spec's ``paper_values`` of the claim's variants where it has them; '—' for an ordering without paper values."""
    values = spec.paper_values
    bar = ""
    if getattr(claim, "kind", "") == "threshold":
        bar = f"bar {claim.requirement}" if claim.tolerance else f"bar {claim.op} {claim.value:g}"
        variants, envs = [claim.variant], [claim.environment]
    elif getattr(claim, "kind", "") == "aggregate":
        return f"bar: {claim.aggregate.replace('_', ' ')} {claim.op} {claim.value:g}%"
    elif getattr(claim, "kind", "") == "ordering":
        variants = [claim.better, *claim.worse]
        envs = claim.environments or [env.id for env in spec.environments]
    else:
        return "—"
    same_metric = getattr(claim, "metric", spec.run.report_metric) == spec.run.report_metric  # paper_values' metric
    known = [(v, e, values[v][e]) for e in envs for v in variants if same_metric and e in values.get(v, {})]
    shown = "; ".join(f"{v}{'' if len(envs) == 1 else f' on {e}'}: {x:g}" for v, e, x in known[:4])
    shown += f" and {len(known) - 4} more" if len(known) > 4 else ""
    return " · ".join(part for part in (bar, shown) if part) or "—"


def rests_on_text(spec, claim, scale: str) -> str:
    """What the verdict rests on: the claim's ``rests_on``, the scale's, and the seeds and frames the scale runs
    where they differ from the paper's (derived from the spec)."""
    items = [*getattr(claim, "rests_on", []), *_environment_changes(spec, claim, scale)]
    if scale != "paper":
        run = spec.scale(scale)
        items += [item for item in run.rests_on if item not in items]
        unit = x_axis_label(spec).split()[-1]
        budget = []
        if run.seeds != spec.budget.seeds:
            budget.append(f"{run.seeds} seed{'s' if run.seeds != 1 else ''} (paper {spec.budget.seeds})")
        if run.frames != spec.budget.frames:
            budget.append(f"{count_label(run.frames)} {unit} per run (paper {count_label(spec.budget.frames)})")
        if budget:
            items.append(f"{scale} scale: " + ", ".join(budget))
    return "; ".join(items) or "the paper's setting"


def _environment_changes(spec, claim, scale: str) -> list[str]:
    """The claim's environments whose version differs from the paper's in a way that matters (a MuJoCo task whose
    ``comparable_to_paper`` is false: its ``changes_from_paper``), each named with the paper's version."""
    one = getattr(claim, "environment", None)
    ids = [one] if one else (getattr(claim, "environments", None) or spec.scale(scale).environments
                             or [env.id for env in spec.environments])
    by_id = {env.id: env for env in spec.environments}
    return [f"{env.name}, not the paper's {env.paper_name}: {env.changes_from_paper}"
            for env in (by_id[i] for i in ids if i in by_id) if getattr(env, "comparable_to_paper", True) is False]


def claim_rows(experiment, verdicts: list[dict]) -> list[ClaimRow]:
    """The rows of one experiment's judged claims (``experiment``: its plan; ``verdicts``: its table JSON's
    ``claims``), in the spec's order."""
    by_id = {claim.id: claim for claim in experiment.spec.claims}
    rows = []
    for verdict in verdicts:
        claim = by_id.get(verdict["claim"])
        detail = verdict.get("detail", "")
        rows.append(ClaimRow(
            experiment=experiment.key, claim=verdict["claim"], statement=verdict.get("statement", ""),
            paper="—" if claim is None else paper_text(experiment.spec, claim), ours=ours_text(detail),
            verdict=verdict["verdict"],
            rests_on="" if claim is None else rests_on_text(experiment.spec, claim, experiment.scale),
            method=_method(verdict.get("method")), p_values=p_values_text(detail), detail=detail,
            paper_evidence=verdict.get("paper_evidence", "")))
    return rows


def _method(method: object) -> str:
    if isinstance(method, dict):
        return "; ".join(f"{k}: {v}" for k, v in method.items())
    return str(method or "")
