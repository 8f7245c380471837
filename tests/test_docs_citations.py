"""Citations in docs/ are readable without the cited text.

The docs cite the dissertation [Pareek2017] and the papers in ``docs/references.md`` by
equation and section number ("eq. 5.26", "§3.5.1", "(5.23)", "section 4.6"). Neither is in
the repository, so every such number must come with what it says: in the same sentence, a
formula in backticks, a parenthesised gloss after the number ("eq. 3.18 (the weak learner
maximising ...)"), or a description before it with the number in parentheses ("the baseline
likelihood (eq. 5.72)"). This is a heuristic, not a reading test; the failures it reports
name the page and line.

``docs/references.md`` gives every cited work in full: the dissertation by title, degree and
university, and every bracketed key used in docs/, docstrings or help texts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
REFERENCES = DOCS / "references.md"
PAGES = sorted(page for page in DOCS.glob("*.md") if page != REFERENCES)

NUMBER = r"\d+(?:\.\d+)*[a-z]?"
CITATION = re.compile(
    rf"\b(?:[Ee]qs?\.|[Ee]quations?)\s*\(?{NUMBER}\)?(?:\s*(?:[-–,]|and)\s*\(?{NUMBER}\)?)*"
    r"|(?<!sub-)§\s?\d{1,2}(?!\d)(?:\.\d+)*"
    r"|\b[Ss]ections?\s+\d+\.\d+(?:\.\d+)*"
    r"|(?<![\w.(])(?<!\d )\([2-5]\.\d{1,2}\)"
)
"""Equation and section numbers: ``eq. 5.26``, ``eqs. 5.25-5.27``, ``eq. (4.6)``,
``§3.5.1``, ``section 4.6`` and a bare label of the dissertation's chapters 2-5, ``(5.23)``
(not a number in parentheses after another number, as tables print standard errors; not a
statute's ``§723-A sub-§1``)."""

ABBREVIATIONS = {"e.g.", "i.e.", "cf.", "eq.", "eqs.", "Eq.", "Eqs.", "Fig.", "vs.", "al.", "prop."}
CODE_SPAN = re.compile(r"`[^`]+`")


def _units(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every paragraph, list item, heading and table cell outside code
    blocks, joined across wrapped lines."""
    units: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    fenced = False

    def flush() -> None:
        if current:
            units.append((start, " ".join(current)))
            current.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced or line.startswith("    ") and not current:
            continue
        if not stripped:
            flush()
        elif stripped.startswith("|"):
            flush()
            units.extend((number, cell.strip()) for cell in stripped.strip("|").split("|"))
        elif re.match(r"(#+|[*-]|\d+\.)\s", stripped):
            flush()
            start = number
            current.append(stripped)
        else:
            if not current:
                start = number
            current.append(stripped)
    flush()
    return units


def sentences(text: str) -> list[tuple[int, str]]:
    """``(line, sentence)`` of a markdown page: units split after ``.``, ``!`` or ``?`` followed by
    a space, except after the abbreviations above."""
    found: list[tuple[int, str]] = []
    for line, unit in _units(text):
        begin = 0
        for match in re.finditer(r"[.!?]\s+", unit):
            words = unit[: match.start() + 1].split()
            if words and words[-1].lstrip('("') in ABBREVIATIONS:
                continue
            found.append((line, unit[begin : match.end()].strip()))
            begin = match.end()
        if unit[begin:].strip():
            found.append((line, unit[begin:].strip()))
    return found


def described(sentence: str, citation: re.Match[str]) -> bool:
    """Whether the sentence states what the cited number says (module docstring)."""
    if CODE_SPAN.search(sentence):
        return True
    after = sentence[citation.end() :]
    if re.match(r"\s*(?:'s\s+\w+|[(:]|,\s+(?:the|a|an|whose|which)\b)", after):
        return True
    before = sentence[: citation.start()]
    opening = before.rfind("(")
    words_before = before[:opening] if opening >= 0 else before
    return len(re.findall(r"[A-Za-z]{3,}", words_before)) >= 2 and (
        opening >= 0 or re.search(r"(?:,|\bof|\bby|\bin|\bfrom)\s*$", before) is not None
    )


def undescribed(text: str) -> list[str]:
    """``"line: sentence"`` for every citation the heuristic finds undescribed."""
    bad = []
    for line, sentence in sentences(text):
        for citation in CITATION.finditer(sentence):
            if not described(sentence, citation):
                bad.append(f"{line}: {citation.group(0)!r} in {sentence!r}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_equation_citation_states_what_it_says(page: Path) -> None:
    assert undescribed(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("The likelihood is eq. 5.26. Next.", True),
        ("See §3.6 for the setup.", True),
        ("Pairwise factors (5.23) forbid it.", True),
        ("The baseline is section 5.5.1.", True),
        ("The likelihood (eq. 5.26) sums over associations.", False),
        ("Eq. 3.18 (the weak learner maximising ⟨d, h⟩/‖h‖) picks it.", False),
        ("The random walk `N(0, q² dt I₂)` of eq. 5.1.", False),
        ("Loss as in eq. 3.28: the conjugate minus a linear term.", False),
        ("It is eq. 5.1, e.g. eq. 5.2.", True),
        ("The filter is eq. 5.26 as usual. The walk is `N(0, q²)`.", True),
    ],
)
def test_the_heuristic(text: str, flagged: bool) -> None:
    assert bool(undescribed(text)) is flagged


def test_sentences_keep_code_blocks_out_and_abbreviations_in() -> None:
    text = "Intro e.g. eq. 5 here.\n\n```python\nx = 1  # eq. 5.26\n```\n\n| a | eq. 4.5 |\n"
    assert sentences(text) == [(1, "Intro e.g. eq. 5 here."), (7, "a"), (7, "eq. 4.5")]


def _reference_keys() -> set[str]:
    return set(re.findall(r"\*\*\[([^\]]+)\]\*\*", REFERENCES.read_text(encoding="utf-8")))


def test_references_name_the_dissertation() -> None:
    text = REFERENCES.read_text(encoding="utf-8")
    entry = re.search(r"\*\*\[Pareek2017\]\*\*(.*?)(?=\n- \*\*\[|\n## )", text, flags=re.S)
    assert entry is not None
    body = " ".join(entry.group(1).split())
    for part in ("H. H. Pareek", "PhD dissertation", "Listwise ranking functions"):
        assert part in body
    for chapter in range(2, 6):
        assert f"chapter {chapter}" in body.lower()


def test_every_cited_key_is_listed() -> None:
    keys = _reference_keys()
    cited: dict[str, str] = {}
    sources = [*PAGES, REPO / "README.md", *sorted((REPO / "rankmodels").rglob("*.py"))]
    sources += sorted((REPO / "apps").rglob("*.py"))
    for path in sources:
        for key in re.findall(r"\[([A-Z][A-Za-z]+\+?\d{4}|Maine723A|ABIF)\]", path.read_text()):
            cited.setdefault(key, str(path.relative_to(REPO)))
    assert {key: where for key, where in cited.items() if key not in keys} == {}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_pages_citing_the_dissertation_point_to_its_reference(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    if "dissertation" in text.lower():
        assert "references.md" in text
