"""CF 1.8 / ACDD 1.3 metadata of the written files (rankmodels.tracking.cf): the trajectory
feature, standard names, flags, integer types, global attributes; the IOOS compliance checker
on a record, a truth and a track when it is installed."""

from __future__ import annotations

import importlib.util
import json
from datetime import datetime, timezone

import numpy as np
import pytest
import xarray as xr

from rankmodels.tracking.cf import (
    CARRIED,
    STANDARD_NAMES,
    WRITTEN_ATTRIBUTES,
    carried_attributes,
    conventions,
    flag_words,
    standard_name,
)
from rankmodels.tracking.records import read_float, write_float, write_truth
from rankmodels.tracking.simulate import dimes_float767

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def simulated():
    return dimes_float767(seed=5, days=12)


def test_standard_names_come_from_the_cf_table():
    """Every name in the table is a CF standard name (the checker's copy of the table v93)."""
    table = pytest.importorskip("compliance_checker").__file__.rsplit("/", 1)[0]
    text = open(f"{table}/data/cf-standard-name-table.xml", encoding="utf-8").read()
    for name in set(STANDARD_NAMES.values()):
        assert f'<entry id="{name}">' in text, name


def test_standard_name_modifier_and_none():
    assert standard_name("lat") == "latitude"
    assert standard_name("sound_speed_std") == "speed_of_sound_in_sea_water standard_error"
    assert standard_name("velocity_east_std") == "eastward_sea_water_velocity standard_error"
    assert standard_name("lat_std") is None  # a latitude-named std would read as a coordinate
    assert standard_name("ess") is None


def test_record_conventions(simulated):
    record, _ = simulated
    record = record.copy()
    record["source_label"] = record["source_label"].astype(np.int64)
    out = conventions(record, "record", "test", now=NOW)
    assert out.attrs["featureType"] == "trajectory"
    assert out["trajectory"].attrs["cf_role"] == "trajectory_id"
    assert str(out["trajectory"].values) == record.attrs["float_id"]
    assert out["source_label"].dtype == np.int32
    assert np.array_equal(out["source_label"].values, record["source_label"].values)
    flags = out["source_label"].attrs
    n = record.sizes["source"]
    assert list(flags["flag_values"]) == list(range(-2, n))
    words = flags["flag_meanings"].split()
    assert words[:2] == ["no_arrival", "clutter"] and len(words) == n + 2
    assert out["time"].attrs["standard_name"] == "time" and out["time"].attrs["axis"] == "T"
    assert out["toa"].attrs["coverage_content_type"] == "physicalMeasurement"
    assert out["source_lat"].attrs["coverage_content_type"] == "referenceInformation"
    lats = np.concatenate([record[v].values.ravel() for v in ("source_lat", "launch_lat")])
    lats = np.concatenate([lats, np.atleast_1d(record["recovery_lat"].values)])
    assert out.attrs["geospatial_lat_min"] == pytest.approx(np.nanmin(lats))
    assert out.attrs["geospatial_lat_max"] == pytest.approx(np.nanmax(lats))
    first = np.datetime64(record["time"].values[0], "s")
    last = np.datetime64(record["time"].values[-1], "s")
    assert out.attrs["time_coverage_start"] == f"{first}Z"
    assert out.attrs["time_coverage_end"] == f"{last}Z"
    assert out.attrs["date_created"] == "2026-01-02T03:04:05Z"
    assert out.attrs["history"].endswith(": test")
    assert set(out.attrs) - set(record.attrs) <= set(WRITTEN_ATTRIBUTES)
    again = conventions(out, "record", "again", now=NOW)
    assert again.attrs["history"].splitlines()[0] == out.attrs["history"]
    assert record["source_label"].dtype == np.int64  # the input is left alone


def test_who_made_it_is_copied_never_invented(simulated):
    record, _ = simulated
    out = conventions(record, "record", "test", now=NOW)
    assert not set(CARRIED) & set(out.attrs)
    stated = record.assign_attrs(institution="WHOI", creator_name="A. Person", other="x")
    assert carried_attributes(stated) == {"institution": "WHOI", "creator_name": "A. Person"}


def test_int64_outside_int32_refused(simulated):
    record, _ = simulated
    big = record.assign(source_label=record["source_label"].astype(np.int64) + 2**40)
    with pytest.raises(ValueError, match="source_label: integer values outside int32"):
        conventions(big, "record", "test")
    with pytest.raises(ValueError, match="kind"):
        conventions(record, "profile", "test")


def test_flag_words():
    assert flag_words(["US1-1", "UK 2", "a/b"]) == ["US1-1", "UK_2", "a_b"]
    assert flag_words(["a b", "a_b"]) == ["source_0", "source_1"]


def test_written_record_reads_back(simulated, tmp_path):
    """The reader takes the CF file as before: the same record, the trajectory id dropped."""
    record, truth = simulated
    write_float(record, tmp_path / "r.nc")
    write_truth(truth, tmp_path / "t.nc")
    back = read_float(tmp_path / "r.nc")
    assert "trajectory" not in back
    xr.testing.assert_equal(back, read_float_from_memory(record, tmp_path))
    raw = xr.open_dataset(tmp_path / "t.nc", decode_times=False)
    assert raw["time"].dtype == np.float64  # no 64-bit integers


def read_float_from_memory(record, tmp_path):
    """The record as the reader returns it when written without the CF metadata."""
    from rankmodels.tracking.netcdf import write_netcdf
    from rankmodels.tracking.records import compressed_encoding, validate_float

    plain = validate_float(record, labels_required=True)
    write_netcdf(plain, tmp_path / "plain.nc", compressed_encoding(plain))
    return read_float(tmp_path / "plain.nc")


HAS_CHECKER = importlib.util.find_spec("compliance_checker") is not None


def _failures(path) -> dict[str, list[str]]:
    """The compliance checker's failed checks of high and medium priority, per standard."""
    from compliance_checker.runner import CheckSuite, ComplianceChecker

    out = path.with_suffix(".json")
    CheckSuite().load_all_available_checkers()
    ComplianceChecker.run_checker(
        str(path),
        ["cf:1.8", "acdd:1.3"],
        0,
        "normal",
        output_filename=str(out),
        output_format="json_new",
    )
    result = json.loads(out.read_text())[str(path)]
    failed = {}
    for std, report in result.items():
        for priority in ("high_priorities", "medium_priorities"):
            for check in report.get(priority, []):
                if check["value"][0] < check["value"][1]:
                    failed.setdefault(f"{std} {priority}", []).extend(check["msgs"])
    return failed


@pytest.mark.skipif(not HAS_CHECKER, reason="compliance-checker is not installed")
def test_compliance_checker_passes_cf(simulated, tmp_path):
    """CF 1.8: no failed check of high or medium priority on a record and a truth; ACDD 1.3:
    the only high-priority failures are standard names CF does not have."""
    record, truth = simulated
    write_float(record, tmp_path / "r.nc")
    write_truth(truth, tmp_path / "t.nc")
    for path in (tmp_path / "r.nc", tmp_path / "t.nc"):
        failed = _failures(path)
        assert not any(key.startswith("cf:") for key in failed), failed
        assert set(failed.get("acdd:1.3 high_priorities", [])) <= {"standard_name"}, failed


@pytest.mark.skipif(not HAS_CHECKER, reason="compliance-checker is not installed")
def test_compliance_checker_passes_cf_on_a_track(simulated, tmp_path):
    """A calibrated track: CF 1.8 clean; ACDD's high-priority failures only the standard names
    CF does not have (and the quality checks' units, which differ per check)."""
    from click.testing import CliRunner

    from rankmodels_app.cli import cli

    record, _ = simulated
    write_float(record, tmp_path / "r.nc")
    args = ["track-float", str(tmp_path / "r.nc"), "--out", str(tmp_path / "t")]
    done = CliRunner().invoke(cli, [*args, "--particles", "200", "--seed", "1", "--no-plots"])
    assert done.exit_code == 0, done.output
    failed = _failures(tmp_path / "t" / "track.nc")
    assert not any(key.startswith("cf:") for key in failed), failed
    assert set(failed.get("acdd:1.3 high_priorities", [])) <= {"standard_name", "units"}, failed
