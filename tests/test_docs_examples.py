"""Every Python example in docs/*.md runs (README.md's: tests/test_readme.py).

The ```python blocks of a page run in order in one namespace (a later block may use what an
earlier one made), in a folder holding a copy of ``data/``, so paths like
``data/votes.csv`` work and outputs never land in the repository. The default run makes
the big examples small through ``SHORTER`` (fewer samples, replicates, particles; no Dask
cluster); ``-m slow`` runs them as written, except that a remote scheduler is replaced by
this process.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").glob("*.md"))

SHORTER: dict[str, list[tuple[str, str]]] = {
    "mallows.md": [(r"1_000_000", "10_000")],
    "studies.md": [(r"replicates=50", "replicates=1, particles=30, cycles=3")],
    "tracking.md": [
        (r"particles=10_000", "particles=200"),
        (
            r'read_float\("data/float767.nc"\)',
            'read_float("data/float767.nc").isel(cycle=slice(0, 20))',
        ),
        (r", calibrate=True", ", calibrate=False, smooth=False"),
        (r'(load_dataset\("data/float767_truth.nc"\))', r"\1.isel(cycle=slice(0, 20))"),
    ],
}
"""Per page: substitutions that make the fast variant fast (same code paths)."""

ALWAYS = {
    "studies.md": [
        (r'dask_client\(scheduler="tcp://scheduler-host:8786"\)', "contextlib.nullcontext()"),
    ],
}
"""Per page: substitutions applied in both variants (no scheduler runs in the tests)."""


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


PYTHON_PAGES = [page for page in PAGES if python_blocks(page)]


def _run(page: Path, folder: Path, short: bool) -> None:
    shutil.copytree(REPO / "data", folder / "data")
    rules = ALWAYS.get(page.name, []) + (SHORTER.get(page.name, []) if short else [])
    namespace: dict[str, object] = {"contextlib": contextlib}
    old = Path.cwd()
    os.chdir(folder)
    try:
        for number, block in enumerate(python_blocks(page), start=1):
            for pattern, replacement in rules:
                block = re.sub(pattern, replacement, block)
            code = compile(block, f"{page.name} (python block {number})", "exec")
            with contextlib.redirect_stdout(io.StringIO()):
                exec(code, namespace)
    finally:
        os.chdir(old)


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.name)
def test_the_python_examples_run_shortened(page, tmp_path):
    _run(page, tmp_path, short=True)


@pytest.mark.slow
@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.name)
def test_the_python_examples_run_as_written(page, tmp_path):
    _run(page, tmp_path, short=False)


def test_the_substitutions_still_match():
    """A SHORTER rule that no longer matches its page would silently run the long example."""
    for name, rules in {**SHORTER, **ALWAYS}.items():
        text = "\n".join(python_blocks(REPO / "docs" / name))
        for pattern, _ in rules:
            assert re.search(pattern, text), f"{name}: {pattern}"


def test_every_page_with_python_is_run():
    assert {p.name for p in PYTHON_PAGES} >= {"ltr.md", "tracking.md", "mallows.md"}
