"""Every quotation in a claim's ``paper_evidence`` appears verbatim in its paper's text.

The papers' texts are not part of the repository: they sit in ``shared/papers/<paper>.txt`` beside the clone
(``<repo>/../shared/papers``, as CI has them). Without that folder the check skips and says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlrepro.specs.loading import load_specs

REPO = Path(__file__).parents[2]
PAPERS = REPO.parent / "shared" / "papers"

# A quotation: straight or curly single or double quotes, opened after a start, a space, '(' or ':' and closed
# before an end, a space or punctuation (so an apostrophe inside a word, "the paper's", opens and closes nothing).
_QUOTE = re.compile(
    r"""(?:(?<=^)|(?<=[\s(:]))(['"\u2018\u201c])(?P<text>.+?)(?:['"\u2019\u201d])(?=$|[\s.,;:)!?])"""
)
_GAP = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")  # an elision: the parts either side are quoted apart, in order
_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces, curly quotes made straight (a YAML file types them straight)."""
    return re.sub(r"\s+", " ", text.translate(_CURLY)).strip()


def quotations(evidence: str) -> list[str]:
    """The quoted passages of a ``paper_evidence`` text."""
    return [match.group("text") for match in _QUOTE.finditer(evidence)]


def missing_parts(quote: str, paper: str) -> list[str]:
    """The parts of ``quote`` (split at elisions '...') not found in ``paper``, in order, after normalising both."""
    missing, at = [], 0
    for part in (normalise(p) for p in _GAP.split(quote)):
        if not part:
            continue
        found = paper.find(part, at)
        if found < 0:
            missing.append(part)
        else:
            at = found + len(part)
    return missing


def test_quotations_are_read_as_quoted() -> None:
    evidence = """Section 3.3, Fig. 5c: 'a consistent spike ... the key' and "it's fine"; the paper's 'last'."""
    assert quotations(evidence) == ["a consistent spike ... the key", "it's fine", "last"]
    paper = normalise("we observe a consistent\n spike during the first phase that is aligned with the key")
    assert missing_parts("a consistent spike ... the key", paper) == []
    assert missing_parts("the key ... a consistent spike", paper) == ["a consistent spike"]  # out of order


def _specs_by_paper() -> list[tuple[Path, object]]:
    return load_specs([REPO / "specs"])


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"the papers' texts are not beside the clone ({PAPERS} is absent)")
def test_every_quoted_paper_evidence_is_verbatim_in_the_paper() -> None:
    texts: dict[str, str] = {}
    wrong = []
    quoted = 0
    for path, spec in _specs_by_paper():
        if spec.paper not in texts:
            source = PAPERS / f"{spec.paper}.txt"
            assert source.is_file(), f"{path}: no text for paper '{spec.paper}' ({source})"
            texts[spec.paper] = normalise(source.read_text(encoding="utf-8"))
        for claim in spec.claims:
            for quote in quotations(claim.paper_evidence):
                quoted += 1
                missing = missing_parts(quote, texts[spec.paper])
                if missing:
                    wrong.append(f"{path.relative_to(REPO)} {claim.id}: {missing}")
    papers = {spec.paper for _, spec in _specs_by_paper()}
    assert len(papers) == 5 and quoted >= 30  # every paper's specs were read, and their quotes found (35 today)
    assert not wrong, "quotes not in the paper:\n" + "\n".join(wrong)
