"""The map's overview inset covers nothing drawn: checked with the projected positions of the
track, the truth, the sources, launch and recovery (and the drawn labels, band and scale bar),
on the shipped sample (its true track as the track, and a track that ends far off the truth as
``track-float --no-calibrate`` draws it), on a track filling the whole map (the map grows a
strip for the inset) and, with ``-m slow``, on the sample's real ``track-float`` outputs."""

from __future__ import annotations

import cartopy.crs as ccrs
import numpy as np
import pytest
import shapely
import xarray as xr
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankmodels.plots import maps, placement, tracking
from rankmodels.tracking.records import read_float
from rankmodels_app.track import track_float
from tests.conftest import REPO

# ------------------------------------------------------------------------------------------
# the check
# ------------------------------------------------------------------------------------------


def projected(ax, lon, lat):
    lon, lat = np.atleast_1d(lon).astype(float), np.atleast_1d(lat).astype(float)
    return ax.projection.transform_points(ccrs.Geodetic(), lon, lat)[:, :2]


def densified(xy, steps=8):
    """Points along each segment between consecutive finite points (a segment may cross a
    box with both ends outside it)."""
    a, b = xy[:-1], xy[1:]
    keep = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    f = np.linspace(0.0, 1.0, steps)[None, :, None]
    return (a[keep, None] + f * (b[keep, None] - a[keep, None])).reshape(-1, 2)


def inset_of(fig):
    ax = next(a for a in fig.findobj() if a.get_gid() == "track").axes
    (inset,) = [a for a in ax.child_axes if a.get_gid() == "overview"]
    return ax, inset


def assert_nothing_under_the_inset(fig, record, track, truth=None):
    """Every projected position drawn on the main map lies outside the inset's box (converted
    from pixels to the map's projected coordinates), and so do the labels, the uncertainty band
    and the scale bar; returns the box."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax, inset = inset_of(fig)
    pixels = inset.get_window_extent(renderer)
    (x0, y0), (x1, y1) = ax.transData.inverted().transform(
        [[pixels.x0, pixels.y0], [pixels.x1, pixels.y1]]
    )

    def under(xy):
        xy = xy[np.isfinite(xy).all(axis=1)]
        return (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)

    mx0, mx1, my0, my1 = ax.get_extent()
    track_xy = projected(ax, track["lon"].values, track["lat"].values)
    drawn = {"track": np.concatenate([track_xy, densified(track_xy)])}
    if truth is not None:
        truth_xy = projected(ax, truth["lon"].values, truth["lat"].values)
        drawn["truth"] = np.concatenate([truth_xy, densified(truth_xy)])
    sxy = projected(ax, record["source_lon"].values, record["source_lat"].values)
    on_map = (sxy[:, 0] >= mx0) & (sxy[:, 0] <= mx1) & (sxy[:, 1] >= my0) & (sxy[:, 1] <= my1)
    drawn["sources"] = sxy[on_map]
    for end in ("launch", "recovery"):
        if f"{end}_lat" in record:
            drawn[end] = projected(ax, record[f"{end}_lon"].item(), record[f"{end}_lat"].item())
    for name, xy in drawn.items():
        assert not under(xy).any(), f"{name}: {under(xy).sum()} positions under the inset"
    for text in ax.texts:
        if text.get_visible() and text.get_text():
            assert not text.get_window_extent(renderer).overlaps(pixels), text.get_text()
    box = shapely.box(x0, y0, x1, y1)
    for artist in fig.findobj():
        if artist.get_gid() == "uncertainty":
            band = shapely.union_all(list(artist._feature.geometries()))
            assert not band.intersects(box), "uncertainty band under the inset"
        if artist.get_gid() == "scale-bar":
            assert not under(np.c_[artist.get_xdata(), artist.get_ydata()]).any()
    for legend in fig.legends:
        assert not legend.get_window_extent(renderer).overlaps(pixels)
    return x0, x1, y0, y1


# ------------------------------------------------------------------------------------------
# the shipped sample, fast: its truth as the track, and a track that fails like --no-calibrate
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    record = read_float(REPO / "data" / "float767.nc")
    truth = xr.load_dataset(REPO / "data" / "float767_truth.nc")
    return record, truth


def as_track(record, lat, lon, sd_km=6.0):
    """A track in the contract's layout at ``lat``/``lon`` with a round ``sd_km`` error."""
    n = lat.size
    cov = np.zeros((n, 2, 2))
    cov[:, 0, 0] = cov[:, 1, 1] = sd_km**2
    return xr.Dataset(
        {
            "lat": ("cycle", lat),
            "lon": ("cycle", lon),
            "position_cov": (("cycle", "enu", "enu2"), cov),
            "source_lat": ("source", record["source_lat"].values),
            "source_lon": ("source", record["source_lon"].values),
        },
        coords={"time": ("cycle", record["time"].values), "source": record["source"].values},
        attrs={"float_id": "767", "smoothed": 1},
    )


def test_inset_leaves_the_sample_track_and_every_source_visible(sample):
    """The sample's track (its truth here) runs past US1-5 in the upper right corner, where
    the inset used to hide it."""
    record, truth = sample
    track = as_track(record, truth["lat"].values, truth["lon"].values)
    fig = tracking.track_map(record, track, truth)
    x0, x1, y0, y1 = assert_nothing_under_the_inset(fig, record, track, truth)
    ax, _ = inset_of(fig)
    labels = {t.get_text().split("\n")[0] for t in ax.texts}
    assert "US1-5" in labels  # drawn and named on the main map


def test_inset_leaves_a_failed_track_and_its_evidence_visible(sample):
    """A track that leaves the truth for the north-east (as the sample's uncalibrated track
    does): the recovery square, the end of the true track and the track's own end stay
    visible."""
    record, truth = sample
    lat, lon = truth["lat"].values.copy(), truth["lon"].values.copy()
    k = 520
    n = lat.size - k
    lat[k:] = np.linspace(lat[k], -56.4, n) + 0.15 * np.sin(np.linspace(0, 20, n))
    lon[k:] = np.linspace(lon[k], -87.0, n)
    track = as_track(record, lat, lon)
    fig = tracking.track_map(record, track, truth)
    assert_nothing_under_the_inset(fig, record, track, truth)


def test_inset_beside_a_track_filling_its_map(sample):
    """A lawnmower track over its whole extent (no launch or recovery to widen the map)."""
    record, _ = sample
    n = record.sizes["cycle"]
    rows = 12
    s = np.linspace(0.0, rows, n)
    row, along = np.floor(s).clip(max=rows - 1), s - np.floor(s).clip(max=rows - 1)
    lat = -61.0 + 4.0 * row / (rows - 1)
    lon = -100.0 + 10.0 * np.where(row % 2 == 0, along, 1.0 - along)
    track = as_track(record, lat, lon, sd_km=3.0)
    record = record.drop_vars([f"{e}_{c}" for e in ("launch", "recovery") for c in ("lat", "lon")])
    fig = tracking.track_map(record, track)
    assert_nothing_under_the_inset(fig, record, track)


def test_a_map_without_room_grows_a_strip_for_the_inset(sample):
    """When everything drawn fills the map, the map grows an empty strip beside it and the
    inset goes there, clear of the old map."""
    record, truth = sample
    lat, lon = truth["lat"].values, truth["lon"].values
    plain = maps.map_frame(lat, lon).bounds
    full = shapely.box(plain[0], plain[2], plain[1], plain[3])

    def view_of(frame):
        return maps.overview_view(
            frame, record["source_lat"].values, record["source_lon"].values, lat, lon
        )

    frame, view, box = maps.frame_with_overview(lat, lon, view_of, lambda frame: full)
    x0, x1, y0, y1 = frame.bounds
    assert (x1 - x0) > (plain[1] - plain[0]) or (y1 - y0) > (plain[3] - plain[2])
    assert frame.bounds[0] == pytest.approx(plain[0]) and frame.bounds[2] == pytest.approx(plain[2])
    clearance = maps.OVERVIEW_CLEARANCE_PT * frame.per_pt
    assert shapely.box(box[0], box[2], box[1], box[3]).distance(full) >= clearance * 0.999
    assert (box[1] - box[0]) / (box[3] - box[2]) == pytest.approx(view.aspect)


# ------------------------------------------------------------------------------------------
# placement geometry
# ------------------------------------------------------------------------------------------


def test_free_box_avoids_what_is_drawn_and_prefers_the_corners():
    bounds = (0.0, 10.0, 0.0, 5.0)
    nothing = shapely.GeometryCollection()
    box = placement.free_box(bounds, 2.0, nothing)
    assert box == pytest.approx((10.0 - 3.4, 10.0, 5.0 - 1.7, 5.0))  # upper right, 34 %
    # a point in the upper right corner moves it to the upper left
    drawn = shapely.Point(9.0, 4.5).buffer(0.1)
    box = placement.free_box(bounds, 2.0, drawn)
    assert box[0] == 0.0 and box[3] == 5.0
    # a grid of points everywhere: nothing free, whatever the size
    xs, ys = np.meshgrid(np.linspace(0, 10, 30), np.linspace(0, 5, 15))
    dense = shapely.union_all(shapely.points(np.c_[xs.ravel(), ys.ravel()]).tolist()).buffer(0.05)
    assert placement.free_box(bounds, 2.0, dense) is None
    # brute force: every returned box really is clear of a random scatter
    rng = np.random.default_rng(4)
    for _ in range(20):
        pts = rng.uniform((0, 0), (10, 5), size=(8, 2))
        drawn = shapely.union_all(shapely.points(pts).tolist()).buffer(0.2)
        box = placement.free_box(bounds, 1.5, drawn, clearance=0.1)
        if box is not None:
            near = (
                (pts[:, 0] > box[0] - 0.3)
                & (pts[:, 0] < box[1] + 0.3)
                & (pts[:, 1] > box[2] - 0.3)
                & (pts[:, 1] < box[3] + 0.3)
            )
            inner = (
                (pts[:, 0] > box[0] + 0.3)
                & (pts[:, 0] < box[1] - 0.3)
                & (pts[:, 1] > box[2] + 0.3)
                & (pts[:, 1] < box[3] - 0.3)
            )
            assert not inner.any() and not near.any()


def test_growth_makes_an_empty_strip_that_holds_the_inset():
    for bounds, aspect in (((0.0, 10.0, 0.0, 4.0), 2.0), ((0.0, 3.0, 0.0, 9.0), 0.7)):
        left, right, bottom, top = placement.growth(bounds, aspect, clearance=0.1)
        grown = (bounds[0] - left, bounds[1] + right, bounds[2] - bottom, bounds[3] + top)
        old = shapely.box(bounds[0], bounds[2], bounds[1], bounds[3])
        box = placement.free_box(grown, aspect, old, clearance=0.1, sizes=[0.34])
        assert box is not None  # the full-size inset fits beside the old map
        width, height = box[1] - box[0], box[3] - box[2]
        assert width / height == pytest.approx(aspect)


def test_polyline_geometry_breaks_at_gaps():
    xy = np.array([[0.0, 0.0], [1.0, 0.0], [np.nan, np.nan], [5.0, 0.0], [6.0, 0.0], [9.0, 9.0]])
    xy[4:] = [[np.nan, np.nan], [9.0, 9.0]]
    shape = placement.polyline_geometry(xy, 0.1)
    assert shape.contains(shapely.Point(0.5, 0.0))
    assert not shape.intersects(shapely.Point(3.0, 0.0))  # no line across the gap
    assert shape.contains(shapely.Point(5.0, 0.0)) and shape.contains(shapely.Point(9.0, 9.0))


# ------------------------------------------------------------------------------------------
# the sample's real track-float outputs (slow: two whole runs)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("calibrate", ["--calibrate", "--no-calibrate"])
def test_the_sample_maps_of_track_float_hide_nothing(sample, repo_data, tmp_path, calibrate):
    record, truth = sample
    run = CliRunner().invoke(
        track_float, [str(repo_data / "float767.nc"), "--out", str(tmp_path), calibrate, "-q"]
    )
    assert run.exit_code == 0, run.output
    track = xr.load_dataset(tmp_path / "track.nc")
    fig = tracking.track_map(record, track, truth)
    assert_nothing_under_the_inset(fig, record, track, truth)


def test_inset_leaves_a_true_track_along_the_map_edges_visible(sample):
    """The true track runs around the map's border and the track sits in its middle: the only
    thing in the corners is the truth, which the inset must not hide either."""
    record, _ = sample
    n = record.sizes["cycle"]
    s = np.linspace(0.0, 4.0, n)
    side, f = np.floor(s).clip(max=3), s - np.floor(s).clip(max=3)
    corners = np.array([[-61.0, -100.0], [-61.0, -90.0], [-57.0, -90.0], [-57.0, -100.0]])
    a, b = corners[side.astype(int)], corners[(side.astype(int) + 1) % 4]
    true = a + f[:, None] * (b - a)
    truth = xr.Dataset(
        {"lat": ("cycle", true[:, 0]), "lon": ("cycle", true[:, 1])},
        coords={"time": ("cycle", record["time"].values)},
    )
    lat = -59.0 + 0.3 * np.sin(np.linspace(0, 6, n))
    lon = -95.0 + 0.6 * np.cos(np.linspace(0, 6, n))
    track = as_track(record, lat, lon, sd_km=3.0)
    record = record.drop_vars([f"{e}_{c}" for e in ("launch", "recovery") for c in ("lat", "lon")])
    fig = tracking.track_map(record, track, truth)
    assert_nothing_under_the_inset(fig, record, track, truth)
