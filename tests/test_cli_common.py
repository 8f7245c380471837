"""The CLI plumbing: atomic outputs and one-line errors."""

from __future__ import annotations

import os
import stat

import click
import pytest
from click.testing import CliRunner

from rankmodels.errors import InputError
from rankmodels_app._common import (
    BadInput,
    atomic_output,
    atomic_path,
    refuse_to_overwrite,
    reports_bad_input,
)


def test_atomic_output_keeps_old_file_when_writer_fails(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target, "w") as handle:
        handle.write("partial")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]  # no temporary left behind


@pytest.mark.parametrize("opener", ["output", "path"])
def test_atomic_outputs_have_ordinary_permissions(tmp_path, opener):
    target = tmp_path / "result.nc"
    umask = os.umask(0o022)
    try:
        if opener == "output":
            with atomic_output(target, "w") as handle:
                handle.write("x")
        else:
            with atomic_path(target) as tmp:
                tmp.write_text("x")
    finally:
        os.umask(umask)
    assert target.read_text() == "x"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_refuse_to_overwrite_an_input(tmp_path):
    src = tmp_path / "votes.csv"
    src.write_text("ranking\nA>B\n")
    with pytest.raises(BadInput, match="over the input"):
        refuse_to_overwrite(tmp_path / "." / "votes.csv", [src])


def test_input_errors_become_one_line_exit_2(tmp_path):
    @click.command()
    @reports_bad_input
    def cmd() -> None:
        raise InputError("must be ascending within each cycle", path="f.nc", field="toa")

    result = CliRunner().invoke(cmd, [])
    assert result.exit_code == 2
    assert result.output.strip() == "Error: f.nc: toa: must be ascending within each cycle"
    assert "Traceback" not in result.output
