"""Times in exported float tables, pinned at every unit boundary: the coarsest of s, ms, us
and ns that writes every time of the record exactly, chosen by divisibility of the
nanoseconds, and read back to the same instants."""

from __future__ import annotations

import numpy as np
import pytest

from rankmodels.tracking import simulate, tables

BASE = np.datetime64("2009-01-24T06:00:05", "ns")
NS = np.timedelta64(1, "ns")


@pytest.mark.parametrize(
    ("offsets_ns", "texts"),
    [
        ([0, 10**9], ["2009-01-24T06:00:05", "2009-01-24T06:00:06"]),
        ([0, 10**6], ["2009-01-24T06:00:05.000", "2009-01-24T06:00:05.001"]),
        ([0, 999 * 10**6], ["2009-01-24T06:00:05.000", "2009-01-24T06:00:05.999"]),
        ([0, 10**9 + 10**3], ["2009-01-24T06:00:05.000000", "2009-01-24T06:00:06.000001"]),
        ([0, 10**6 + 10**3], ["2009-01-24T06:00:05.000000", "2009-01-24T06:00:05.001001"]),
        ([0, 1], ["2009-01-24T06:00:05.000000000", "2009-01-24T06:00:05.000000001"]),
        ([0, 10**6 - 1], ["2009-01-24T06:00:05.000000000", "2009-01-24T06:00:05.000999999"]),
        ([10**3, 10**6], ["2009-01-24T06:00:05.000001", "2009-01-24T06:00:05.001000"]),
        # a tenth of each unit needs the next one
        ([0, 10**8], ["2009-01-24T06:00:05.000", "2009-01-24T06:00:05.100"]),
        ([0, 10**5], ["2009-01-24T06:00:05.000000", "2009-01-24T06:00:05.000100"]),
        ([0, 10**2], ["2009-01-24T06:00:05.000000000", "2009-01-24T06:00:05.000000100"]),
    ],
)
def test_the_coarsest_exact_unit_for_all_times(offsets_ns, texts):
    """One time finer than the rest sets the unit of all of them."""
    times = BASE + np.array(offsets_ns) * NS
    assert tables._time_text(times) == texts


def test_not_a_time_is_empty_and_does_not_choose_the_unit():
    times = np.array([BASE, np.datetime64("NaT", "ns"), BASE + 2 * 10**9 * NS])
    assert tables._time_text(times) == ["2009-01-24T06:00:05", "", "2009-01-24T06:00:07"]


def test_times_before_1970_are_divided_as_after():
    """Negative nanoseconds since the epoch: a whole second is still a whole second, half a
    second still needs milliseconds."""
    t = np.datetime64("1969-12-31T23:59:58", "ns")
    assert tables._time_text(np.array([t])) == ["1969-12-31T23:59:58"]
    half = t + 5 * 10**8 * NS
    assert tables._time_text(np.array([t, half])) == [
        "1969-12-31T23:59:58.000", "1969-12-31T23:59:58.500",
    ]  # fmt: skip


@pytest.mark.parametrize("step_ns", [10**9, 10**6, 10**3, 1])
def test_exported_times_read_back_exactly_at_each_unit(tmp_path, step_ns):
    """A record whose cycle times are whole days plus a multiple of ``step_ns``: the table
    is written in that unit and reads back to the same nanoseconds."""
    record, _ = simulate.dimes_float767(seed=1, days=4)
    n = record.sizes["cycle"]
    day = np.timedelta64(86_400_000_000_000, "ns")
    launch = np.datetime64(record["launch_time"].values, "ns")
    times = launch + (np.arange(n) + 1) * day + (np.arange(n) + 1) * 7 * step_ns * NS
    record = record.assign_coords(time=("cycle", times))
    tables.export_tables(record, tmp_path)
    lines = (tmp_path / "toa.csv").read_text().splitlines()[1:]
    written = [line.split(",")[0] for line in lines]
    digits = {10**9: 0, 10**6: 3, 10**3: 6, 1: 9}[step_ns]
    for text in written:
        fraction = text.split(".")[1] if "." in text else ""
        assert len(fraction) == digits, text
    meta = tables.parse_meta(tables.read_meta_table(tmp_path / "meta.csv"))
    back = tables.record_from_tables(tmp_path / "toa.csv", tmp_path / "sources.csv", meta)
    np.testing.assert_array_equal(back["time"].values.astype("datetime64[ns]"), times)
