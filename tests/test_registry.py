"""The shared registry pattern: order, lookups, errors, docs table."""

from dataclasses import dataclass

import pytest

from rankmodels.registry import Registry


@dataclass(frozen=True)
class _Entry:
    name: str
    summary: str


def test_registration_order_lookup_and_membership():
    reg = Registry[_Entry]("widget")
    a = reg.register(_Entry("a", "first"))
    reg.register(_Entry("b", "second"))
    assert reg.names == ("a", "b")
    assert reg["a"] is a
    assert "b" in reg and "c" not in reg and 3 not in reg
    assert [e.name for e in reg] == ["a", "b"] and len(reg) == 2


def test_unknown_and_duplicate_names_are_refused_with_the_known_names():
    reg = Registry[_Entry]("widget")
    reg.register(_Entry("a", "first"))
    with pytest.raises(ValueError, match=r"unknown widget 'z'; expected one of: a$"):
        reg["z"]
    with pytest.raises(ValueError, match="unknown widget"):
        reg[["unhashable"]]
    with pytest.raises(ValueError, match="registered already"):
        reg.register(_Entry("a", "again"))
    with pytest.raises(TypeError, match="non-empty string name"):
        reg.register(_Entry("", "nameless"))


def test_markdown_table_lists_every_entry():
    reg = Registry[_Entry]("widget")
    reg.register(_Entry("a", "first"))
    reg.register(_Entry("b", "second"))
    assert reg.markdown_table().splitlines() == [
        "| widget | what it is |",
        "|---|---|",
        "| `a` | first |",
        "| `b` | second |",
    ]
