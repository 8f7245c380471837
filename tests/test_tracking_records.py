"""Float records: round trip, one clear error per violation, hand labels checked strictly only
when required, units attributes, the schema against the docs, fuzzed validator and reader."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.tracking.records import (
    InvalidLabelsWarning,
    active_sources,
    read_float,
    validate_float,
    write_float,
)
from rankmodels.tracking.schema import (
    DEFAULT_SOUND_SPEED,
    FLOAT_RECORD,
    TRACK,
    TRUTH,
    UNIT_SPELLINGS,
    annotate,
    unit_factor,
    unit_spellings_table,
)
from rankmodels.tracking.signal_model import DEFAULT_WINDOW
from rankmodels.tracking.simulate import FixSchedule, dimes_float767
from rankmodels_app.track import track_float

_RECORD, _TRUTH = dimes_float767(seed=3, days=40, fixes=FixSchedule(10.0), source_drift=0.01)
_RECORD = annotate(
    _RECORD.assign(
        clock_offset_launch=((), 1.0),
        clock_offset_recovery=((), -2.0),
        clock_offset_error=((), 0.4),
    ),
    FLOAT_RECORD,
)


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


def _label(ds, edit):
    labels = ds["source_label"].values.astype(float).copy()
    edit(labels)
    return _set(ds, "source_label", labels)


LABEL_VIOLATIONS = {
    "unknown label": (
        lambda d: _set(d, "source_label", np.where(d["source_label"] == 0, 12, d["source_label"])),
        "unknown label 12",
    ),
    "label -2 on an arrival": (
        lambda d: _set(d, "source_label", np.full(d["source_label"].shape, -2)),
        "no arrival",
    ),
    "fractional label": (lambda d: _label(d, lambda a: a.__setitem__((4, 1), 0.5)), "unknown"),
    "NaN label": (lambda d: _label(d, lambda a: a.__setitem__((4, 1), np.nan)), "unknown"),
    "one source, two arrivals": (
        lambda d: _label(d, lambda a: a.__setitem__((0, slice(0, 2)), 1)),
        "cycle 0: source 'US1-2' labels 2 arrivals",
    ),
    "source not yet deployed": (  # US2-1 (index 6) transmits from 2009-12-20
        lambda d: _label(d, lambda a: a.__setitem__((2, 3), 6)),
        "cycle 2: labelled source 'US2-1' is not active",
    ),
    "labels wrong dims": (
        lambda d: d.assign(source_label=d["source_label"].transpose()),
        "expected dims ('cycle', 'rank')",
    ),
    "labels as text": (
        lambda d: _set(d, "source_label", d["source_label"].values.astype(str)),
        "expected a real number",
    ),
}


@pytest.mark.parametrize("case", sorted(LABEL_VIOLATIONS))
def test_bad_labels_are_an_error_when_required(record, case):
    mutate, words = LABEL_VIOLATIONS[case]
    with pytest.raises(InputError) as info:
        validate_float(mutate(record), path="float.nc", labels_required=True)
    assert info.value.field == "source_label" and words in info.value.message
    assert str(info.value).startswith("float.nc: source_label: ")


@pytest.mark.parametrize("case", sorted(LABEL_VIOLATIONS))
def test_bad_labels_only_warn_and_are_dropped_when_not_required(record, case):
    """Engines other than labels do not use the labels: the record is still usable."""
    mutate, words = LABEL_VIOLATIONS[case]
    with pytest.warns(InvalidLabelsWarning) as caught:
        out = validate_float(mutate(record), path="float.nc")
    (warning,) = caught
    assert str(warning.message).startswith("float.nc: source_label: ")
    assert words in str(warning.message) and "ignored" in str(warning.message)
    assert "source_label" not in out
    assert np.array_equal(out["toa"].values, record["toa"].values)


def test_good_labels_pass_silently_in_both_modes(record):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loose = validate_float(record)
        strict = validate_float(record, labels_required=True)
    for out in (loose, strict):
        assert out["source_label"].dtype == np.int64
        assert np.array_equal(out["source_label"].values, record["source_label"].values)


def test_required_labels_must_be_present(record):
    bare = record.drop_vars("source_label")
    assert "source_label" not in validate_float(bare)
    with pytest.raises(InputError, match="f.nc: source_label: needed by the labels engine"):
        validate_float(bare, path="f.nc", labels_required=True)


def test_reader_checks_labels_strictly_only_when_asked(record, tmp_path):
    path = tmp_path / "bad_labels.nc"
    bad = LABEL_VIOLATIONS["unknown label"][0](record)
    bad.to_netcdf(path)  # write_float would refuse the inconsistent labels
    with pytest.raises(InputError, match=f"{path}: source_label: unknown label 12"):
        read_float(path, labels_required=True)
    with pytest.warns(InvalidLabelsWarning, match=f"{path}: source_label: unknown label 12"):
        out = read_float(path)
    assert "source_label" not in out and out.sizes["cycle"] == record.sizes["cycle"]
    with pytest.raises(InputError, match="source_label: unknown label 12"):
        write_float(bad, tmp_path / "out.nc")


def _track(path, *args):
    out = path.parent / f"out-{path.stem}"
    cmd = [str(path), "--particles", "200", "--no-plots", "-q", "--out", str(out), *args]
    return CliRunner().invoke(track_float, cmd)


def test_track_float_warns_about_unused_bad_labels_and_refuses_them_when_used(tmp_path):
    """End to end: bad hand labels do not stop the exact engine; the labels engine refuses."""
    path = tmp_path / "bad_labels.nc"
    record = dimes_float767(seed=3, days=12)[0]
    LABEL_VIOLATIONS["one source, two arrivals"][0](record).to_netcdf(path)
    used = _track(path, "--engine", "labels")
    assert used.exit_code == 2
    assert (
        used.output
        == f"Error: {path}: source_label: cycle 0: source 'US1-2' labels 2 arrivals; at most one\n"
    )
    unused = _track(path, "--engine", "exact")
    assert unused.exit_code == 0, unused.output
    assert f"{path}: source_label: cycle 0: source 'US1-2' labels 2 arrivals" in unused.output
    assert (tmp_path / "out-bad_labels" / "track.nc").is_file()


def test_track_float_refuses_unknown_units_in_one_line(record, tmp_path):
    path = tmp_path / "hours.nc"
    record["toa"].attrs["units"] = "hours"
    record.to_netcdf(path)
    res = _track(path)
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert res.output.startswith(f"Error: {path}: toa: units attribute 'hours' is not understood")


# --- units attributes -------------------------------------------------------------------------

UNIT_CASES = [  # variable, units attribute, factor from those units to the schema's
    ("toa", "ms", 1e-3),
    ("toa", " Milliseconds ", 1e-3),
    ("toa", "SECONDS", 1.0),
    ("toa", "sec", 1.0),
    ("source_offset", "ms", 1e-3),
    ("window_length", "min", 60.0),
    ("sound_speed", "km/s", 1000.0),
    ("sound_speed", "m/s", 1.0),
    ("source_lat", "degrees", 1.0),
    ("launch_lon", "degree_E", 1.0),
]


@pytest.mark.parametrize(("name", "units", "factor"), UNIT_CASES)
def test_known_units_are_converted(record, tmp_path, name, units, factor):
    """A record written in other units reads back in the schema's units (through a file)."""
    given = record.copy(deep=True)
    given[name] = (record[name].dims, record[name].values.astype(float) / factor, {"units": units})
    path = tmp_path / "units.nc"
    given.to_netcdf(path)
    out = read_float(path)
    assert np.allclose(out[name].values, record[name].values, rtol=1e-12, equal_nan=True)
    assert out[name].attrs["units"] == FLOAT_RECORD[name].units


def test_toa_in_milliseconds_is_not_read_as_seconds(record, tmp_path):
    """The finding: TOAs written in ms were read as seconds (1000 times too late)."""
    given = record.copy(deep=True)
    given["toa"] = (("cycle", "rank"), record["toa"].values * 1000.0, {"units": "ms"})
    given = given.drop_vars("window_length")
    path = tmp_path / "ms.nc"
    given.to_netcdf(path)
    out = read_float(path)
    assert np.allclose(out["toa"].values, record["toa"].values)
    assert float(out["window_length"]) == DEFAULT_WINDOW


@pytest.mark.parametrize("units", ["hours", "days", "furlong", "", "ms-1", 5])
def test_unknown_units_are_refused_naming_variable_and_attribute(record, units):
    given = record.copy(deep=True)
    given["toa"].attrs["units"] = units
    with pytest.raises(InputError) as info:
        validate_float(given, path="f.nc")
    assert info.value.field == "toa"
    assert info.value.message.startswith(f"units attribute {str(units)!r} is not understood")
    assert "'s'" in info.value.message and "'ms'" in info.value.message


UNIT_VARIABLES = [
    v.name for v in FLOAT_RECORD if v.kind == "real" and v.units and v.name in _RECORD
]
KNOWN = [spelling for spellings in UNIT_SPELLINGS.values() for spelling in spellings]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(UNIT_VARIABLES),
    units=st.one_of(
        st.text(max_size=12),
        st.sampled_from(KNOWN).map(lambda u: f"  {u.upper()} "),
        st.sampled_from(KNOWN),
    ),
)
def test_fuzz_units_attribute(name, units):
    """Any ``units`` string: converted by the spelling's factor when it is a spelling of the
    variable's unit, otherwise refused naming the variable and its units attribute."""
    given = _RECORD.copy(deep=True)
    given[name].attrs["units"] = units
    factor = UNIT_SPELLINGS[FLOAT_RECORD[name].units].get(" ".join(units.lower().split()))
    try:
        out = validate_float(given, path="fuzz.nc")
    except InputError as err:
        assert "\n" not in str(err)
        if factor is None:
            assert err.field == name and err.message.startswith("units attribute")
        else:  # a known unit may scale values out of range; never a units complaint
            assert not err.message.startswith("units attribute")
    else:
        assert factor is not None
        expected = np.asarray(_RECORD[name].values, dtype=float) * factor
        assert np.allclose(out[name].values, expected, equal_nan=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    units=st.one_of(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8),
        st.sampled_from(KNOWN),
    )
)
def test_fuzz_units_through_a_file(tmp_path_factory, units):
    """The same through NetCDF: ``read_float`` converts a known ``toa`` unit, refuses others."""
    path = tmp_path_factory.mktemp("units") / "f.nc"
    given = _RECORD.copy(deep=True).drop_vars("window_length")  # scaled toa may not fit
    given["toa"].attrs["units"] = units
    given.to_netcdf(path)
    factor = unit_factor("s", xr.open_dataset(path).toa.attrs["units"])
    try:
        out = read_float(path)
    except InputError as err:
        assert factor is None and err.field == "toa" and "units attribute" in err.message
        assert str(err).startswith(f"{path}: toa: ") and "\n" not in str(err)
    else:
        assert factor is not None
        assert np.allclose(out["toa"], _RECORD["toa"].values * factor, equal_nan=True)


# --- the schema is the one home of the format ------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tracking.md"


@pytest.mark.parametrize(
    "table",
    [
        FLOAT_RECORD.markdown_table(),
        TRUTH.markdown_table(),
        TRACK.markdown_table(),
        unit_spellings_table(),
    ],
    ids=["float record", "truth", "track", "units"],
)
def test_docs_show_the_schema_tables(table):
    assert table in DOCS.read_text(encoding="utf-8"), (
        "docs/tracking.md's table differs from rankmodels.tracking.schema; paste:\n" + table
    )


def test_simulated_files_follow_the_schema():
    """Every variable the simulator writes is declared, with the schema's dims and attributes."""
    for ds, fmt in ((_RECORD, FLOAT_RECORD), (_TRUTH, TRUTH)):
        for name, var in ds.variables.items():
            spec = fmt[str(name)]
            assert var.dims == spec.dims, name
            assert {k: var.attrs[k] for k in spec.attrs()} == spec.attrs(), name


@pytest.mark.parametrize("spec", list(FLOAT_RECORD), ids=lambda v: v.name)
def test_each_declared_variable_is_checked(record, spec):
    """From the schema alone: a required variable may not be missing (optional ones may), and
    no variable may have other dims."""
    groups = (  # all or none
        ["recovery_lat", "recovery_lon", "recovery_time", "clock_offset_recovery"],
        ["fix_time", "fix_lat", "fix_lon", "fix_error"],
        ["clock_offset_launch", "clock_offset_recovery"],
    )
    names = next((g for g in groups if spec.name in g), [spec.name])
    dropped = record.drop_vars(names, errors="ignore")
    if spec.required:
        with pytest.raises(InputError) as info:
            validate_float(dropped, path="f.nc")
        assert info.value.field == spec.name and "missing required" in info.value.message
    else:
        validate_float(dropped)
    if spec.name not in record.variables:
        record[spec.name] = (spec.dims, np.zeros([record.sizes[d] for d in spec.dims]))
    wrong = record.assign({spec.name: ((*spec.dims, "extra"), record[spec.name].values[..., None])})
    with pytest.raises(InputError) as info:
        validate_float(wrong, path="f.nc", labels_required=True)
    assert info.value.field == spec.name and "expected dims" in info.value.message


def test_reader_errors(tmp_path, record):
    with pytest.raises(InputError, match="no such file"):
        read_float(tmp_path / "nope.nc")
    with pytest.raises(InputError, match="is a directory"):
        read_float(tmp_path)
    junk = tmp_path / "junk.nc"
    junk.write_text("this is not a NetCDF file\n")
    with pytest.raises(InputError, match="not a readable NetCDF.*rankmodels float import"):
        read_float(junk)
    binary = tmp_path / "binary.nc"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(InputError, match=r"HDF5 file\)$"):  # no CSV hint for binary junk
        read_float(binary)
    track = tmp_path / "track.nc"
    made = xr.Dataset(
        {"lat_filtered": ("cycle", [1.0]), "association": (("cycle", "rank"), [[0]])},
        attrs={"source_file": "float.nc"},
    )
    made.to_netcdf(track)
    with pytest.raises(InputError, match="track written by track-float, not a float record; "):
        read_float(track)
    made.drop_attrs().to_netcdf(track)
    with pytest.raises(InputError, match="track-float, not a float record$"):
        read_float(track)
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
    required = data.draw(st.booleans())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = validate_float(ds, path="fuzz.nc", labels_required=required)
    except InputError as err:
        assert str(err).startswith("fuzz.nc: ") and "\n" not in str(err)
    else:
        toa = out["toa"].values
        rec = ~np.isnan(toa)
        assert rec.any() and (toa[rec] >= 0).all()
        assert (np.nan_to_num(np.diff(toa, axis=1), nan=0.0) >= 0).all()
        if "source_label" in out:  # kept labels are consistent with the TOAs
            assert not caught and ((out["source_label"].values == -2) == ~rec).all()
        elif "source_label" not in ds:
            assert not caught
        else:  # dropped (only when not required): said so in one warning naming the file
            assert not required
            (warning,) = caught
            assert issubclass(warning.category, InvalidLabelsWarning)
            assert str(warning.message).startswith("fuzz.nc: source_label: ")


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


def test_an_arrival_after_the_default_window_stretches_it_with_a_note(tmp_path, record):
    """No window_length and a TOA after the default 1800 s window: the window becomes the next
    whole minute after it (1920 s for 1860.5 s), and read_record says so on one line."""
    from rankmodels.tracking.batch import read_record
    from rankmodels.tracking.records import WindowStretchedWarning

    late = record.drop_vars("window_length", errors="ignore")
    toa = late["toa"].values.copy()
    toa[0, 0] = 1860.5
    toa[0] = np.sort(toa[0])  # NaN stay last
    late["toa"] = (late["toa"].dims, toa, late["toa"].attrs)
    path = tmp_path / "late.nc"
    late.to_netcdf(path)
    back, note = read_record(path)
    assert float(back["window_length"]) == 1920.0
    assert note.startswith(f"{path}: window_length: no window_length and an arrival at 1860.5 s")
    with pytest.warns(WindowStretchedWarning):
        validate_float(late)
    edge = np.where(toa == 1860.5, 1800.0, toa)  # an arrival at the window's very end
    edge[0] = np.sort(edge[0])
    assert np.nanmax(edge) == 1800.0
    ok = late.assign(toa=(late["toa"].dims, edge, late["toa"].attrs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(validate_float(ok)["window_length"]) == 1800.0
