"""Tables for the terminal align names in any script: a CJK character takes two columns."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from rankmodels.text import display_width, pad
from rankmodels_app.aggregate import aggregate_command


@pytest.mark.parametrize(
    "text, width",
    [
        ("Bob", 3),
        ("张伟", 4),
        ("アリス", 6),
        ("ｱ", 1),
        ("Ａ", 2),
        ("é", 1),
        ("e\u0301", 1),
        ("", 0),
    ],
)
def test_display_width(text, width):
    assert display_width(text) == width
    assert display_width(pad(text, 8)) == 8
    assert pad(text, 8).startswith(text)


VOTES = "ranking,count\n张伟>Bob>李娜,5\nBob>李娜>张伟,4\n李娜>张伟>Bob,3\nアリス>Bob,1\n"


def _end_of_first_number(line: str) -> int:
    """Terminal column where the first round's (right-aligned) number ends."""
    match = re.search(r"\d+", line)
    assert match is not None, line
    return display_width(line[: match.end()])


NAMES = ("张伟", "李娜", "アリス", "Bob")


@pytest.mark.parametrize(
    "rule", [["--rule", "irv", "--until-one-left"], ["--rule", "stv", "--seats", "1"]]
)
def test_round_tables_align_cjk_names(rule, tmp_path):
    votes = tmp_path / "votes.csv"
    votes.write_text(VOTES, encoding="utf-8")
    result = CliRunner().invoke(aggregate_command, [*rule, str(votes)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("round "))
    rows = [line for line in lines[header + 1 :] if line.split(" ")[0] in NAMES]
    assert len(rows) == 4
    ends = {_end_of_first_number(row) for row in [lines[header], *rows]}
    assert len(ends) == 1, "\n".join([lines[header], *rows])
