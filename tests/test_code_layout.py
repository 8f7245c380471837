"""The code's layout rules: short functions in the tracker, a pipeline that only sequences,
no module reading another's private names, and the tracker not drawing figures."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [p for p in (ROOT / "rankmodels", ROOT / "apps") if p.is_dir()]
TRACKING = ROOT / "rankmodels" / "tracking"
MAX_FUNCTION_LINES = 80
MAX_PIPELINE_LINES = 150


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_function_in_the_tracker_is_longer_than_80_lines():
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})"
        for path in _modules(TRACKING)
        for node in ast.walk(_tree(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_the_pipeline_only_sequences():
    lines = (TRACKING / "pipeline.py").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_PIPELINE_LINES


def _imports(path: Path):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            yield node.module or "", [a.name for a in node.names], node.level
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], 0


def test_no_module_imports_another_modules_private_names():
    private = [
        f"{path.relative_to(ROOT)}: from {module} import {name}"
        for path in _modules(*PACKAGES)
        for module, names, _ in _imports(path)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert private == []


def test_the_tracker_does_not_import_the_plots():
    upward = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in _modules(TRACKING)
        for module, names, level in _imports(path)
        if module.startswith("rankmodels.plots")
        or (level >= 2 and (module.startswith("plots") or (not module and "plots" in names)))
    ]
    assert upward == []


@pytest.mark.parametrize(
    "source, found",
    [
        ("from rankmodels.tracking.em import _search\n", True),
        ("from rankmodels.tracking.em import search, __all__\n", False),
    ],
)
def test_the_private_import_rule_sees_a_private_name(tmp_path, source, found):
    path = tmp_path / "m.py"
    path.write_text(source)
    names = [n for _, ns, _ in _imports(path) for n in ns]
    assert any(n.startswith("_") and not n.startswith("__") for n in names) is found
