"""Float records: round trip, one clear error per violation, fuzzed validator and reader."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.tracking.records import (
    DEFAULT_SOUND_SPEED,
    active_sources,
    read_float,
    validate_float,
    write_float,
)
from rankmodels.tracking.signal_model import DEFAULT_WINDOW
from rankmodels.tracking.simulate import dimes_float767

_RECORD, _TRUTH = dimes_float767(seed=3, days=40)


@pytest.fixture
def record() -> xr.Dataset:
    return _RECORD.copy(deep=True)


def test_round_trip(record, tmp_path):
    path = tmp_path / "f.nc"
    write_float(record, path)
    back = read_float(path)
    assert np.allclose(back["toa"], record["toa"], equal_nan=True)
    assert (back["time"].values == record["time"].values).all()
    assert (back["source_label"].values == record["source_label"].values).all()
    assert (back["source_start_time"].values == record["source_start_time"].values).all()
    assert list(back["source"].values) == list(record["source"].values)
    assert float(back["sound_speed"]) == 1480.0
    assert back.attrs["simulated"] == 1 and "SIMULATED" in back.attrs["comment"]


def test_defaults_are_filled(record):
    bare = record.drop_vars(
        ["source_offset", "sound_speed", "window_length", "source_start_time", "source_end_time"]
    )
    out = validate_float(bare)
    assert (out["source_offset"] == 0).all()
    assert float(out["sound_speed"]) == DEFAULT_SOUND_SPEED
    assert float(out["window_length"]) == max(
        DEFAULT_WINDOW, 60 * np.ceil(np.nanmax(record["toa"]) / 60)
    )
    assert active_sources(out).all()


def test_active_sources_follow_the_schedule(record):
    act = active_sources(validate_float(record))
    names = list(record["source"].values)
    assert act[:, [n.startswith("US1") for n in names]].all()
    assert not act[:, [not n.startswith("US1") for n in names]].any()  # first 40 days of 2009


def _set(ds, name, values):
    ds[name] = (ds[name].dims, values)
    return ds


def _toa(ds, fn):
    toa = ds["toa"].values.astype(float).copy()
    fn(toa)
    return _set(ds, "toa", toa)


VIOLATIONS = {
    "missing toa": (lambda d: d.drop_vars("toa"), "toa", "missing required variable"),
    "toa wrong dims": (
        lambda d: d.assign(toa=d["toa"].transpose()),
        "toa",
        "expected dims ('cycle', 'rank')",
    ),
    "toa unsorted": (
        lambda d: _toa(d, lambda t: t.__setitem__((5, slice(0, 2)), [400.0, 300.0])),
        "toa",
        "not ascending",
    ),
    "toa gap": (
        lambda d: _toa(d, lambda t: t.__setitem__((3, 1), np.nan)),
        "toa",
        "after a missing",
    ),
    "toa negative": (lambda d: _toa(d, lambda t: t.__setitem__((2, 0), -1.0)), "toa", "negative"),
    "toa infinite": (lambda d: _toa(d, lambda t: t.__setitem__((2, 3), np.inf)), "toa", "infinite"),
    "toa all NaN": (lambda d: _toa(d, lambda t: t.fill(np.nan)), "toa", "no arrival recorded"),
    "empty record": (lambda d: d.isel(cycle=slice(0, 0)), "toa", "empty record"),
    "toa after window": (
        lambda d: d.assign(window_length=((), 100.0)),
        "toa",
        "after the end of the listening",
    ),
    "time not increasing": (
        lambda d: _set(d, "time", d["time"].values[::-1].copy()),
        "time",
        "strictly increasing",
    ),
    "time not datetime": (
        lambda d: d.assign_coords(time=("cycle", np.arange(d.sizes["cycle"], dtype=float))),
        "time",
        "datetime64",
    ),
    "source without position": (
        lambda d: _set(d, "source_lat", np.r_[np.nan, d["source_lat"].values[1:]]),
        "source_lat",
        "has no position",
    ),
    "missing source_lon": (lambda d: d.drop_vars("source_lon"), "source_lon", "missing"),
    "latitude out of range": (
        lambda d: _set(d, "source_lat", d["source_lat"].values - 100),
        "source_lat",
        ">= -90",
    ),
    "unknown label": (
        lambda d: _set(d, "source_label", np.where(d["source_label"] == 0, 12, d["source_label"])),
        "source_label",
        "unknown label 12",
    ),
    "label -2 on an arrival": (
        lambda d: _set(d, "source_label", np.full(d["source_label"].shape, -2)),
        "source_label",
        "no arrival",
    ),
    "sound speed zero": (lambda d: d.assign(sound_speed=((), 0.0)), "sound_speed", "> 0.0"),
    "sound speed NaN": (lambda d: d.assign(sound_speed=((), np.nan)), "sound_speed", "non-finite"),
    "partial recovery": (lambda d: d.drop_vars("recovery_lat"), "recovery_lat", "go together"),
    "recovery before end": (
        lambda d: d.assign(recovery_time=d["time"][5].reset_coords(drop=True)),
        "recovery_time",
        "before the last cycle",
    ),
    "source ends before start": (
        lambda d: _set(
            d, "source_end_time", d["source_start_time"].values - np.timedelta64(1, "D")
        ),
        "source_end_time",
        "ends before it starts",
    ),
    "cycle before launch": (
        lambda d: d.assign(launch_time=d["time"][3].reset_coords(drop=True)),
        "time",
        "before launch",
    ),
    "missing launch": (lambda d: d.drop_vars("launch_lat"), "launch_lat", "missing"),
    "duplicate source names": (
        lambda d: d.assign_coords(source=["US1-1"] * d.sizes["source"]),
        "source",
        "not unique",
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_each_violation_names_the_variable(record, case):
    mutate, field, words = VIOLATIONS[case]
    with pytest.raises(InputError) as info:
        validate_float(mutate(record), path="float.nc")
    err = info.value
    assert err.field == field and words in err.message
    assert str(err).startswith(f"float.nc: {field}: ")
    assert "\n" not in str(err)


def test_reader_errors(tmp_path, record):
    with pytest.raises(InputError, match="no such file"):
        read_float(tmp_path / "nope.nc")
    with pytest.raises(InputError, match="is a directory"):
        read_float(tmp_path)
    junk = tmp_path / "junk.nc"
    junk.write_text("this is not a NetCDF file\n")
    with pytest.raises(InputError, match="not a readable NetCDF"):
        read_float(junk)
    good = tmp_path / "good.nc"
    write_float(record, good)
    truncated = tmp_path / "truncated.nc"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(InputError, match=f"{truncated}: not a readable NetCDF"):
        read_float(truncated)
    no_toa = tmp_path / "no_toa.nc"
    record.drop_vars("toa").to_netcdf(no_toa)
    with pytest.raises(InputError, match=f"{no_toa}: toa: missing required variable"):
        read_float(no_toa)


NUMERIC = [
    "toa",
    "source_lat",
    "source_lon",
    "source_offset",
    "source_label",
    "launch_lat",
    "launch_lon",
    "sound_speed",
    "window_length",
    "recovery_lat",
    "recovery_lon",
]
VALUES = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e9, -1e9, 12.0, -3.0, 0.5])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_validator_raises_only_input_errors(data):
    ds = _RECORD.copy(deep=True)
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["value", "drop", "transpose", "slice"]))
        name = data.draw(st.sampled_from(NUMERIC))
        if name not in ds:
            continue
        if action == "drop":
            ds = ds.drop_vars(name)
        elif action == "transpose" and ds[name].ndim == 2:
            ds[name] = ds[name].transpose()
        elif action == "slice":
            ds = ds.isel(cycle=slice(0, data.draw(st.integers(0, 3))))
        else:
            arr = np.array(ds[name].values, dtype=float)
            flat = arr.reshape(-1)
            if flat.size:
                flat[data.draw(st.integers(0, flat.size - 1))] = data.draw(VALUES)
            ds[name] = (ds[name].dims, arr.reshape(ds[name].shape))
    try:
        out = validate_float(ds, path="fuzz.nc")
    except InputError as err:
        assert str(err).startswith("fuzz.nc: ") and "\n" not in str(err)
    else:
        toa = out["toa"].values
        rec = ~np.isnan(toa)
        assert rec.any() and (toa[rec] >= 0).all()
        assert (np.nan_to_num(np.diff(toa, axis=1), nan=0.0) >= 0).all()


@settings(max_examples=40, deadline=None)
@given(blob=st.binary(max_size=2000), cut=st.integers(0, 20_000))
def test_fuzz_reader_on_bytes(tmp_path_factory, blob, cut):
    """Arbitrary bytes, and a valid record cut at any point: an InputError naming the file, or
    (cut past the end) the record. Garbage *inside* an HDF5 file is not fuzzed: the HDF5 C
    library is not hardened against it (it can crash the process)."""
    folder = tmp_path_factory.mktemp("fuzz")
    good = folder / "good.nc"
    write_float(_RECORD, good)
    data = good.read_bytes()
    for payload in (blob, data[:cut], b"CDF\x01" + blob):
        path = folder / "x.nc"
        path.write_bytes(payload)
        try:
            read_float(path)
        except InputError as err:
            assert str(err).startswith(str(path))
        else:
            assert payload == data[:cut] and cut >= len(data)
