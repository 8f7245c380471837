"""``--help`` of every command without importing it.

A command's help page needs its options, and its options need its module, which loads
numba, scipy, xarray or matplotlib (several seconds). So the pages are rendered once, by
click from the real commands at 80 columns, and stored in ``help_pages.json`` beside this
module with a digest of the command modules' sources and of the library's table of the
tracking settings (:data:`LIBRARY_SOURCES`: the tracking commands' option names, help and
ranges). The entry points print a stored page when the command line is command names
followed by a help flag, the program is called by its own name, the terminal has at least
80 columns and the digest still matches; otherwise click renders the page itself.
Regenerate after changing a command or the table:
``python -m rankmodels_app.help_pages`` (a test checks the stored pages against click's).

This module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

PAGES_FILE = Path(__file__).with_name("help_pages.json")

PROGRAMS = {
    "rankmodels": ("rankmodels_app.cli", "cli"),
    "track-float": ("rankmodels_app.track", "track_float"),
    "aggregate": ("rankmodels_app.aggregate", "aggregate_command"),
}
"""Console scripts: program name -> (module, attribute) of its click command."""

COLUMNS = 80
"""Terminal width the pages are rendered for (click's help is never wider)."""

_FLAGS = ("--help", "-h")


LIBRARY_SOURCES = ("tracking/settings.py",)
"""Files of the ``rankmodels`` package that the pages show text of (the tracking commands'
options are made from :data:`rankmodels.tracking.settings.SETTINGS`)."""


def _library_folder() -> Path | None:
    """The ``rankmodels`` package's folder, found without importing it."""
    spec = importlib.util.find_spec("rankmodels")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def sources_digest() -> str:
    """SHA-256 of the command modules (``*.py`` beside this one, by name) and of
    :data:`LIBRARY_SOURCES`."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    library = _library_folder()
    for name in LIBRARY_SOURCES:
        path = None if library is None else library / name
        text = path.read_bytes() if path is not None and path.is_file() else b"missing"
        digest.update(name.encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


def stored_page(program: str, args: list[str]) -> str | None:
    """The stored help page for ``program args`` (command names, then one help flag), or
    None when it must be rendered live (other arguments, stale or missing pages, a narrow
    terminal)."""
    if not args or args[-1] not in _FLAGS:  # the usual case: decided before reading a file
        return None
    if shutil.get_terminal_size().columns < COLUMNS:
        return None
    try:
        stored = json.loads(PAGES_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = stored.get("pages", {}).get(" ".join([program, *args[:-1]]))
    if entry is None or args[-1] not in entry["flags"] or stored["digest"] != sources_digest():
        return None
    return entry["page"]


def serve(program: str) -> bool:
    """Print the stored page for this process's command line when there is one (see
    :func:`stored_page`); return whether it did."""
    if Path(sys.argv[0]).name != program:
        return False
    page = stored_page(program, sys.argv[1:])
    if page is None:
        return False
    sys.stdout.write(page)
    sys.stdout.flush()
    return True


def render_pages() -> dict[str, Any]:
    """Every command's help page as click renders it (imports every command)."""
    from click.testing import CliRunner

    runner = CliRunner()
    pages: dict[str, dict[str, Any]] = {}

    def visit(program: str, root: Any, path: list[str], command: Any) -> None:
        outputs = {}
        for flag in _FLAGS:
            env = {"COLUMNS": str(COLUMNS)}
            run = runner.invoke(root, [*path, flag], prog_name=program, env=env)
            if run.exit_code == 0:
                outputs[flag] = run.output
        page = outputs["--help"]
        flags = [flag for flag, text in outputs.items() if text == page]
        pages[" ".join([program, *path])] = {"flags": flags, "page": page}
        for name in sorted(getattr(command, "list_commands", lambda ctx: [])(None)):
            visit(program, root, [*path, name], command.get_command(None, name))

    for program, (module, attribute) in PROGRAMS.items():
        root = getattr(importlib.import_module(module), attribute)
        visit(program, root, [], root)
    return pages


def write_pages() -> None:
    """Render every page and store them with the current sources' digest."""
    text = json.dumps({"digest": sources_digest(), "pages": render_pages()}, indent=1)
    tmp = PAGES_FILE.with_suffix(".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, PAGES_FILE)


if __name__ == "__main__":  # pragma: no cover
    write_pages()
