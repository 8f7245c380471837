"""End to end: the real simulator and tracker feed the figures and the report (after a NetCDF
round trip, as the CLI's outputs would be re-read)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankmodels.plots import tracking
from rankmodels.plots.report import tracking_report
from rankmodels.tracking import pipeline, records, simulate


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
        "diagnostics": tracking.diagnostics(track),
    }
    for name, fig in figures.items():
        FigureCanvasAgg(fig).draw()
        fig.savefig(tmp_path / f"{name}.png", dpi=50)
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        images[name] = f"{name}.png"
    html_text = tracking_report(track, summary, images)
    for name in track["source"].values:
        assert f"<td>{name}</td>" in html_text
    for src in images.values():
        assert f'src="{src}"' in html_text
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
