"""End to end: the real simulator and tracker feed the figures and the report (after a NetCDF
round trip, as the CLI's outputs would be re-read)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankmodels.errors import InputError
from rankmodels.plots import tracking, truth
from rankmodels.plots.report import tracking_report
from rankmodels.tracking import pipeline, records, simulate
from rankmodels_app.cli import cli
from rankmodels_app.track import track_float
from tests._plots_data import great_circle_km
from tests._report_check import decoded_images, external_references


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    record, truth = simulate.dimes_float767(seed=11, days=30)
    record = records.validate_float(record)
    config = pipeline.TrackConfig(particles=400, ensemble=60, seed=5)
    track, summary = pipeline.track_float(record, config)
    path = tmp_path_factory.mktemp("track") / "track.nc"
    track.to_netcdf(path)
    with xr.open_dataset(path) as ds:
        track = ds.load()
    return record, track, truth, summary


def test_figures_and_report_from_a_real_run(run, tmp_path):
    record, track, truth, summary = run
    images = {}
    figures = {
        "map": tracking.track_map(record, track, truth),
        "toa": tracking.toa_diagram(record, track),
        "diagnostics": tracking.diagnostics(track, truth),
    }
    for name, fig in figures.items():
        FigureCanvasAgg(fig).draw()
        images[name] = tracking.figure_png(fig, dpi=50)
        assert len(images[name]) > 1000
    html_text = tracking_report(track, summary, images, truth)
    assert "Comparison with the true track" in html_text
    for name in track["source"].values:
        assert f"<td>{name}</td>" in html_text
    assert external_references(html_text) == []
    shown = decoded_images(html_text)
    assert [png for png, _ in shown] == list(images.values())
    assert shown[0][1].size == tuple(round(50 * v) for v in figures["map"].get_size_inches())
    # the map's track is the posterior mean, sources one marker each
    fig = figures["map"]
    (lc,) = [a for a in fig.findobj() if a.get_gid() == "track"]
    assert len(lc.get_segments()) == track.sizes["cycle"] - 1
    (src,) = [a for a in fig.findobj() if a.get_gid() == "sources"]
    assert len(src.get_offsets()) == track.sizes["source"]
    # every recorded arrival appears exactly once on the TOA diagram
    toa_fig = figures["toa"]
    dots = sum(
        len(a.get_offsets())
        for a in toa_fig.findobj()
        if str(a.get_gid()).startswith("arrivals-") or a.get_gid() == "clutter"
    )
    assert dots == np.isfinite(track["toa"].values).sum()


# ------------------------------------------------------------------------------------------
# the truth beside a simulated record
# ------------------------------------------------------------------------------------------


def test_truth_path_is_beside_the_record(tmp_path):
    assert truth.truth_path(tmp_path / "float767.nc") == tmp_path / "float767_truth.nc"


def test_the_shipped_sample_has_its_truth_beside_it(repo_data):
    record = records.read_float(repo_data / "float767.nc")
    found = truth.truth_beside(repo_data / "float767.nc", record)
    assert found is not None
    with xr.open_dataset(repo_data / "float767_truth.nc") as raw:
        np.testing.assert_array_equal(found["lat"].values, raw["lat"].values)
    assert found.sizes["cycle"] == record.sizes["cycle"]


def test_truth_only_for_a_simulated_record_with_a_usable_file(tmp_path):
    record, true = simulate.dimes_float767(seed=3, days=12)
    record = records.validate_float(record)
    path = tmp_path / "sim.nc"
    assert truth.truth_beside(path, record) is None  # no file
    true.to_netcdf(tmp_path / "sim_truth.nc")
    found = truth.truth_beside(path, record)
    np.testing.assert_allclose(found["lon"].values, true["lon"].values)
    real = record.copy()
    real.attrs = {k: v for k, v in record.attrs.items() if k != "simulated"}
    assert truth.truth_beside(path, real) is None
    # a truth of another record, or not a NetCDF file: an InputError naming file and field
    true.isel(cycle=slice(0, 5)).to_netcdf(tmp_path / "sim_truth.nc")
    with pytest.raises(InputError, match=r"sim_truth\.nc: lat: .*another record"):
        truth.truth_beside(path, record)
    (tmp_path / "sim_truth.nc").write_bytes(b"lat,lon\n1,2\n")
    with pytest.raises(InputError, match=r"sim_truth\.nc: not a NetCDF"):
        truth.truth_beside(path, record)
    true.drop_vars("true_label").to_netcdf(tmp_path / "other_truth.nc")
    with pytest.raises(InputError, match="true_label: missing"):
        truth.read_truth(tmp_path / "other_truth.nc", record)


def test_track_float_compares_a_simulated_record_with_its_truth(tmp_path):
    """simulate-float writes NAME.nc and NAME_truth.nc; track-float finds the truth and the
    report compares with it; an unusable truth file is one warning line, not a failure."""
    made = CliRunner().invoke(
        cli, ["simulate-float", "--out", str(tmp_path), "--name", "sim", "--days", "15"]
    )
    assert made.exit_code == 0, made.output
    record = tmp_path / "sim.nc"
    args = ["--particles", "300", "--seed", "2", "--quiet"]
    run = CliRunner().invoke(track_float, [str(record), "--out", str(tmp_path / "a"), *args])
    assert run.exit_code == 0, run.output
    assert "warning" not in run.stderr
    report = (tmp_path / "a" / "report.html").read_text()
    assert "Comparison with the true track" in report
    # the report travels alone: nothing outside it is referred to, and it embeds the very
    # figures written beside it
    assert external_references(report) == []
    embedded = [png for png, _ in decoded_images(report)]
    assert embedded == [
        (tmp_path / "a" / f).read_bytes() for f in ("map.png", "toa.png", "diagnostics.png")
    ]
    track = xr.load_dataset(tmp_path / "a" / "track.nc")
    true = xr.load_dataset(tmp_path / "sim_truth.nc")
    err = great_circle_km(
        track["lat"].values, track["lon"].values, true["lat"].values, true["lon"].values
    )
    expected = f"{np.median(err):.1f} / {np.percentile(err, 90):.1f} / {err.max():.1f}"
    assert f'<td class="num">{expected}</td>' in report

    (tmp_path / "sim_truth.nc").write_bytes(b"\x89HDF\r\n\x1a\n garbage")
    run = CliRunner().invoke(track_float, [str(record), "--out", str(tmp_path / "b"), *args])
    assert run.exit_code == 0, run.output
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"warning: {tmp_path / 'sim_truth.nc'}: not a readable NetCDF")
    assert "Comparison with the true track" not in (tmp_path / "b" / "report.html").read_text()
