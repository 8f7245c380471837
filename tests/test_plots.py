"""Tracking figures: offline Natural Earth, track map, TOA diagram, diagnostics."""

from __future__ import annotations

import io
import socket
import urllib.request
import warnings
from pathlib import Path

import cartopy
import cartopy.crs as ccrs
import matplotlib.dates as mdates
import numpy as np
import pytest
import shapely
from cartopy.io import Downloader, shapereader
from matplotlib import cbook
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba

from rankmodels.plots import cartopy_data, style, tracking, uncertainty
from tests._plots_data import SOURCES, great_circle_km, make_float

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def by_gid(fig, gid):
    return [a for a in fig.findobj() if a.get_gid() == gid]


def one(fig, gid):
    found = by_gid(fig, gid)
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def map_axes(fig):
    return one(fig, "track").axes


def projected(ax, lon, lat):
    xyz = ax.projection.transform_points(ccrs.PlateCarree(), np.asarray(lon), np.asarray(lat))
    return xyz[:, :2]


@pytest.fixture(scope="module")
def sample():
    return make_float(n_cycles=90)


def spanning(track):
    """``track`` stretched to cross the whole source array, so every source is on the map."""
    n = track.sizes["cycle"]
    return track.assign(
        lat=("cycle", np.linspace(-55.5, -60.5, n)), lon=("cycle", np.linspace(-110.5, -65.5, n))
    )


@pytest.fixture(scope="module")
def offline_map(sample):
    """The sample's map (zoomed to the track, with the overview inset) rendered offline."""
    return render_offline(*sample)


@pytest.fixture(scope="module")
def array_map(sample):
    """A map of a track across the whole source array (no inset), rendered offline."""
    record, track, _ = sample
    return render_offline(record, spanning(track), None)


def render_offline(record, track, truth):
    """A map rendered with every network path of urllib and cartopy's downloader blocked."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in tests")

    mp = pytest.MonkeyPatch()
    mp.setattr(urllib.request, "urlopen", refuse)
    mp.setattr(Downloader, "acquire_resource", refuse)
    mp.setattr(socket.socket, "connect", refuse)
    mp.setattr(socket, "create_connection", refuse)
    # pretend cartopy has no data at all: empty data dirs, so any lookup would have to download
    mp.setitem(cartopy.config, "pre_existing_data_dir", Path("/nonexistent-cartopy-pre"))
    mp.setitem(cartopy.config, "data_dir", Path("/nonexistent-cartopy-data"))
    try:
        fig = tracking.track_map(record, track, truth)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        pixels = np.asarray(canvas.buffer_rgba()).copy()
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=60)
    finally:
        mp.undo()
    return fig, pixels, png.getvalue(), attempts


# ------------------------------------------------------------------------------------------
# offline Natural Earth
# ------------------------------------------------------------------------------------------


def test_use_shipped_natural_earth_sets_default_and_is_idempotent(monkeypatch):
    monkeypatch.setitem(cartopy.config, "pre_existing_data_dir", Path(""))
    cartopy_data.use_shipped_natural_earth()
    first = cartopy.config["pre_existing_data_dir"]
    assert Path(first) == cartopy_data.SHIPPED_DATA_DIR
    cartopy_data.use_shipped_natural_earth()
    assert cartopy.config["pre_existing_data_dir"] == first


def test_use_shipped_natural_earth_keeps_a_users_own_setting(monkeypatch, tmp_path):
    monkeypatch.setitem(cartopy.config, "pre_existing_data_dir", tmp_path)
    cartopy_data.use_shipped_natural_earth()
    assert cartopy.config["pre_existing_data_dir"] == tmp_path


@pytest.mark.parametrize("scale", ["110m", "50m"])
@pytest.mark.parametrize("name", ["coastline", "land"])
def test_plain_cartopy_lookup_is_served_offline(monkeypatch, scale, name):
    """After use_shipped_natural_earth(), cartopy's own natural_earth() finds every shipped file
    without touching the network (downloads raise)."""

    def refuse(*args, **kwargs):
        raise AssertionError("cartopy tried to download")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(Downloader, "acquire_resource", refuse)
    monkeypatch.setitem(cartopy.config, "pre_existing_data_dir", Path(""))
    monkeypatch.setitem(cartopy.config, "data_dir", Path("/nonexistent-cartopy-data"))
    cartopy_data.use_shipped_natural_earth()
    path = Path(shapereader.natural_earth(resolution=scale, category="physical", name=name))
    assert path.is_relative_to(cartopy_data.SHIPPED_DATA_DIR)
    assert len(list(shapereader.Reader(str(path)).geometries())) > 0


def test_unshipped_scale_or_feature_is_refused():
    with pytest.raises(ValueError, match="10m"):
        cartopy_data.shipped_shapefile("land", "10m")
    with pytest.raises(ValueError, match="ocean"):
        cartopy_data.natural_earth_feature("ocean", "50m")


def test_feature_clipping_keeps_geometry_inside_the_box_and_wraps_the_antimeridian():
    box = (-80.0, -50.0, -60.0, -45.0)
    feat = cartopy_data.natural_earth_feature("land", "50m", extent=box)
    geoms = list(feat.geometries())
    assert geoms, "South America / Antarctic Peninsula should intersect the Drake Passage box"
    bounds = np.array([g.bounds for g in geoms])
    assert bounds[:, 0].min() >= box[0] - 1e-9 and bounds[:, 2].max() <= box[1] + 1e-9
    assert bounds[:, 1].min() >= box[2] - 1e-9 and bounds[:, 3].max() <= box[3] + 1e-9
    # the clipped land is exactly the land inside the box
    full = shapely.union_all(list(cartopy_data.natural_earth_feature("land", "50m").geometries()))
    expected = shapely.clip_by_rect(full, box[0], box[2], box[1], box[3]).area
    assert shapely.union_all(geoms).area == pytest.approx(expected, rel=1e-6)
    # a box across the date line (New Zealand's east, Chatham Islands at ~-176.5) keeps both sides
    wrapped = cartopy_data.natural_earth_feature("land", "50m", extent=(165.0, 190.0, -50.0, -30.0))
    lons = np.array([g.bounds[0] for g in wrapped.geometries()])
    assert (lons > 160).any() and (lons < -170).any()


@pytest.mark.parametrize("rendered", ["offline_map", "array_map"])
def test_map_renders_offline_without_any_download(rendered, request):
    fig, pixels, png, attempts = request.getfixturevalue(rendered)
    assert attempts == []
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_map_draws_land_and_coastline_from_natural_earth(array_map):
    fig, pixels, _, _ = array_map
    ax = map_axes(fig)
    land, coast = one(fig, "land"), one(fig, "coastline")
    land_geoms = list(land._feature.geometries())
    assert land_geoms and list(coast._feature.geometries())
    # points of the visible map well inside land are painted in the land colour
    x0, x1, y0, y1 = ax.get_extent()
    gx, gy = np.meshgrid(np.linspace(x0, x1, 60)[3:-3], np.linspace(y0, y1, 40)[3:-3])
    lonlat = ccrs.PlateCarree().transform_points(ax.projection, gx.ravel(), gy.ravel())
    inland = shapely.contains_xy(
        shapely.union_all(land_geoms).buffer(-0.3), lonlat[:, 0], lonlat[:, 1]
    )
    assert inland.sum() >= 3, "the sample map should show some land"
    cols, rows = ax.transData.transform(np.c_[gx.ravel(), gy.ravel()][inland]).T
    rgb = pixels[np.round(pixels.shape[0] - rows).astype(int), np.round(cols).astype(int), :3]
    land_rgb = np.array(to_rgba(style.LAND_COLOR)[:3])
    close = np.abs(rgb / 255.0 - land_rgb).max(axis=1) < 0.03
    assert close.mean() >= 0.8, rgb
    # and the ocean is not
    ocean = ~shapely.contains_xy(
        shapely.union_all(land_geoms).buffer(0.3), lonlat[:, 0], lonlat[:, 1]
    )
    cols, rows = ax.transData.transform(np.c_[gx.ravel(), gy.ravel()][ocean]).T
    rgb = pixels[np.round(pixels.shape[0] - rows).astype(int), np.round(cols).astype(int), :3]
    assert (np.abs(rgb / 255.0 - land_rgb).max(axis=1) < 0.03).mean() < 0.05


# ------------------------------------------------------------------------------------------
# map content
# ------------------------------------------------------------------------------------------


def test_map_sources_are_one_marker_each_at_their_projected_positions(array_map, sample):
    record, track, _ = sample
    fig = array_map[0]
    ax = map_axes(fig)
    sources = one(fig, "sources")
    offsets = np.asarray(sources.get_offsets())
    assert offsets.shape == (track.sizes["source"], 2)
    np.testing.assert_allclose(
        offsets, projected(ax, record["source_lon"].values, record["source_lat"].values), rtol=1e-9
    )
    # colours match the TOA diagram's source palette
    np.testing.assert_allclose(
        sources.get_facecolors(), style.source_colors(track.sizes["source"]), atol=1e-9
    )
    labels = [t.get_text() for t in ax.texts]
    for name in track["source"].values:
        assert any(lbl.split("\n")[0] == str(name) for lbl in labels)
    # late sources carry their start date
    late = [lbl for lbl in labels if "from " in lbl]
    assert {lbl.split("\n")[0] for lbl in late} == {"US2-1", "US2-2", "UK1-1"}
    # every source is on the map: no overview inset
    assert by_gid(fig, "overview-sources") == [] and len(fig.axes) == 2  # map and colour bar


@pytest.mark.parametrize("rendered", ["offline_map", "array_map"])
def test_map_source_labels_do_not_overlap(rendered, request):
    fig = request.getfixturevalue(rendered)[0]
    ax = map_axes(fig)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (ax.texts[i].get_text(), ax.texts[j].get_text())


def test_map_track_line_follows_the_track_and_is_coloured_by_date(offline_map, sample):
    _, track, _ = sample
    fig = offline_map[0]
    ax = map_axes(fig)
    lc = one(fig, "track")
    segs = np.asarray(lc.get_segments())
    expected = projected(ax, track["lon"].values, track["lat"].values)
    assert segs.shape == (track.sizes["cycle"] - 1, 2, 2)
    np.testing.assert_allclose(segs[:, 0], expected[:-1], rtol=1e-9)
    np.testing.assert_allclose(segs[:, 1], expected[1:], rtol=1e-9)
    np.testing.assert_allclose(lc.get_array(), mdates.date2num(track["time"].values[:-1]))


def test_map_truth_launch_recovery_and_extent(offline_map, sample):
    record, track, truth = sample
    fig = offline_map[0]
    ax = map_axes(fig)
    line = one(fig, "truth")
    np.testing.assert_allclose(
        np.c_[line.get_xdata(), line.get_ydata()],
        projected(ax, truth["lon"].values, truth["lat"].values),
        rtol=1e-9,
    )
    launch = np.asarray(one(fig, "launch").get_offsets())
    np.testing.assert_allclose(
        launch, projected(ax, [record["launch_lon"].item()], [record["launch_lat"].item()])
    )
    assert len(by_gid(fig, "recovery")) == 1
    # the map is zoomed to the track, truth, launch and recovery: all inside it
    x0, x1, y0, y1 = ax.get_extent()
    pts = np.concatenate(
        [
            projected(ax, track["lon"].values, track["lat"].values),
            projected(ax, truth["lon"].values, truth["lat"].values),
            projected(ax, record["recovery_lon"].values[None], record["recovery_lat"].values[None]),
        ]
    )
    assert (pts[:, 0] > x0).all() and (pts[:, 0] < x1).all()
    assert (pts[:, 1] > y0).all() and (pts[:, 1] < y1).all()
    assert isinstance(ax.projection, ccrs.LambertConformal)


def test_map_zooms_to_the_track_with_an_overview_of_the_whole_array(offline_map, sample):
    record, track, _ = sample
    fig = offline_map[0]
    ax = map_axes(fig)
    sxy = projected(ax, record["source_lon"].values, record["source_lat"].values)
    x0, x1, y0, y1 = ax.get_extent()
    on_map = (sxy[:, 0] >= x0) & (sxy[:, 0] <= x1) & (sxy[:, 1] >= y0) & (sxy[:, 1] <= y1)
    assert 0 < on_map.sum() < len(sxy)  # zoomed: some sources are off the main map
    # exactly the sources on the map are labelled there (besides the scale bar)
    labels = {t.get_text().split("\n")[0] for t in ax.texts if t.get_gid() != "scale-bar-label"}
    assert labels == set(record["source"].values[on_map].astype(str))
    # the inset shows every source (in the map's colours) and the track
    inset = one(fig, "overview-sources").axes
    assert inset is not ax and inset in ax.child_axes
    ix0, ix1, iy0, iy1 = inset.get_extent()
    ixy = projected(inset, record["source_lon"].values, record["source_lat"].values)
    assert ((ixy[:, 0] > ix0) & (ixy[:, 0] < ix1) & (ixy[:, 1] > iy0) & (ixy[:, 1] < iy1)).all()
    np.testing.assert_allclose(np.asarray(one(fig, "overview-sources").get_offsets()), ixy)
    np.testing.assert_allclose(
        one(fig, "overview-sources").get_facecolors(), one(fig, "sources").get_facecolors()
    )
    # its red outline is the main map's frame: it encloses the track and no off-map source
    outline = one(fig, "overview-extent")
    frame = shapely.Polygon(np.c_[outline.get_xdata(), outline.get_ydata()])
    # nothing drawn in the inset is cut off: the outline (whose top edge bulges north of its
    # corners on a conic map), the sources and the track lie inside the drawn inset, in pixels
    renderer = fig.canvas.get_renderer()
    inset.apply_aspect()
    ibox = inset.get_window_extent(renderer)
    for drawn in (np.c_[outline.get_xdata(), outline.get_ydata()], ixy):
        px = inset.transData.transform(drawn)
        assert ((px[:, 0] >= ibox.x0) & (px[:, 0] <= ibox.x1)).all()
        assert ((px[:, 1] >= ibox.y0) & (px[:, 1] <= ibox.y1)).all()
    txy = projected(inset, track["lon"].values, track["lat"].values)
    assert shapely.contains_xy(frame, txy[:, 0], txy[:, 1]).all()
    np.testing.assert_array_equal(shapely.contains_xy(frame, ixy[:, 0], ixy[:, 1]), on_map)
    # the inset sits in a corner holding no track point, the one overview_corner chose
    box = inset.get_window_extent(renderer)
    pix = ax.transData.transform(projected(ax, track["lon"].values, track["lat"].values))
    assert not ((pix[:, 0] > box.x0) & (pix[:, 0] < box.x1) & (pix[:, 1] > box.y0)
                & (pix[:, 1] < box.y1)).any()  # fmt: skip


def test_map_uncertainty_band_covers_the_track(offline_map, sample):
    _, track, _ = sample
    fig = offline_map[0]
    ax = map_axes(fig)
    band = shapely.union_all(list(one(fig, "uncertainty")._feature.geometries()))
    pts = shapely.points(projected(ax, track["lon"].values, track["lat"].values))
    assert shapely.contains(band.buffer(1.0), pts).all()


def test_map_without_truth_or_uncertainty(sample):
    record, track, _ = sample
    bare = track.drop_vars(["position_cov", "lat_std", "lon_std"])
    fig = tracking.track_map(record, bare)
    assert by_gid(fig, "truth") == [] and by_gid(fig, "uncertainty") == []
    assert len(by_gid(fig, "track")) == 1


def test_source_inactive_during_the_whole_track_is_hollow(sample):
    record, track, _ = sample
    rec = record.copy(deep=True)
    start = rec["source_start_time"].values.copy()
    start[0] = track["time"].values[-1] + np.timedelta64(30, "D")
    rec["source_start_time"] = ("source", start)
    end = np.full(track.sizes["source"], np.datetime64("NaT", "ns"))
    end[1] = track["time"].values[10]
    rec["source_end_time"] = ("source", end)
    fig = tracking.track_map(rec, spanning(track).drop_vars("position_cov"))
    face = one(fig, "sources").get_facecolors()
    np.testing.assert_allclose(face[0], [1, 1, 1, 1])
    np.testing.assert_allclose(face[1:], style.source_colors(track.sizes["source"])[1:])
    labels = [t.get_text() for t in map_axes(fig).texts]
    assert f"{track['source'].values[0]}\n(inactive)" in labels
    until = np.datetime_as_string(end[1], unit="D")
    assert f"{track['source'].values[1]}\nuntil {until}" in labels


def test_map_across_the_antimeridian_stays_regional(sample):
    record, track, _ = sample
    rec, tr = record.copy(deep=True), track.copy(deep=True)
    shift = lambda lon: (lon + 180.0 + 180.0) % 360.0 - 180.0  # noqa: E731
    for ds in (rec, tr):
        for name in ("source_lon", "lon", "launch_lon", "recovery_lon"):
            if name in ds:
                ds[name] = ds[name].copy(data=shift(ds[name].values))
    fig = tracking.track_map(rec, tr)
    ax = map_axes(fig)
    lon_w, lon_e, _, _ = ax.get_extent(crs=ccrs.PlateCarree(central_longitude=180))
    assert lon_e - lon_w < 90.0  # not a world map
    offsets = np.asarray(one(fig, "sources").get_offsets())
    assert np.isfinite(offsets).all()


def test_equatorial_map_uses_mercator(sample):
    record, track, _ = sample
    rec, tr = record.copy(deep=True), track.copy(deep=True)
    for ds in (rec, tr):
        for name in ("source_lat", "lat", "launch_lat", "recovery_lat"):
            if name in ds:
                ds[name] = ds[name].copy(data=ds[name].values + 58.0)
    fig = tracking.track_map(rec, tr.drop_vars("position_cov"))
    assert isinstance(map_axes(fig).projection, ccrs.Mercator)


# ------------------------------------------------------------------------------------------
# uncertainty maths
# ------------------------------------------------------------------------------------------


def test_confidence_ellipse_holds_95_percent_of_gaussian_errors(rng):
    lat0, lon0 = np.array([-58.0]), np.array([-90.0])
    cov = np.array([[[900.0, 360.0], [360.0, 400.0]]])  # km^2, correlated
    elat, elon = uncertainty.confidence_ellipses(lat0, lon0, cov, n_points=720)
    poly = shapely.Polygon(np.c_[elon[0], elat[0]])
    d = rng.multivariate_normal([0.0, 0.0], cov[0], size=20000)
    # map km offsets to degrees independently of the module (local tangent plane)
    lat = lat0[0] + np.rad2deg(d[:, 1] / 6371.0)
    lon = lon0[0] + np.rad2deg(d[:, 0] / (6371.0 * np.cos(np.deg2rad(lat0[0]))))
    inside = shapely.contains_xy(poly, lon, lat).mean()
    assert inside == pytest.approx(0.95, abs=0.006)


def test_covariance_from_lat_lon_std_matches_great_circle_distances(sample):
    _, track, _ = sample
    tr = track.drop_vars("position_cov")
    cov = uncertainty.position_covariance_km(tr)
    lat, lon = tr["lat"].values, tr["lon"].values
    north = great_circle_km(lat, lon, lat + tr["lat_std"].values, lon)
    east = great_circle_km(lat, lon, lat, lon + tr["lon_std"].values)
    np.testing.assert_allclose(np.sqrt(cov[:, 1, 1]), north, rtol=1e-3)
    np.testing.assert_allclose(np.sqrt(cov[:, 0, 0]), east, rtol=1e-3)
    assert (cov[:, 0, 1] == 0).all()


def test_position_cov_is_read_cycle_first_whatever_the_dim_names(sample):
    _, track, _ = sample
    cov = track["position_cov"].values
    assert uncertainty.position_covariance_km(track).shape == (track.sizes["cycle"], 2, 2)
    # the contract's literal (cycle, enu, enu), and a cycle-last layout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dup = track.drop_vars("position_cov")
        dup["position_cov"] = (("cycle", "enu", "enu"), cov)
        np.testing.assert_array_equal(uncertainty.position_covariance_km(dup), cov)
    last = track.drop_vars("position_cov")
    last["position_cov"] = (("enu", "enu2", "cycle"), np.moveaxis(cov, 0, -1))
    np.testing.assert_array_equal(uncertainty.position_covariance_km(last), cov)


# ------------------------------------------------------------------------------------------
# TOA diagram
# ------------------------------------------------------------------------------------------


def test_toa_diagram_plots_every_arrival_once_in_its_sources_colour(sample):
    record, track, _ = sample
    fig = tracking.toa_diagram(record, track)
    toa = track["toa"].values
    labels = track["association"].values
    probs = track["association_prob"].values
    dates = np.broadcast_to(mdates.date2num(track["time"].values)[:, None], toa.shape)
    colors = style.source_colors(track.sizes["source"])
    drawn = 0
    for i, name in enumerate(track["source"].values):
        mask = labels == i
        if not mask.any():
            assert by_gid(fig, f"arrivals-{name}") == []
            continue
        sc = one(fig, f"arrivals-{name}")
        offsets = np.asarray(sc.get_offsets())
        np.testing.assert_allclose(offsets, np.c_[dates[mask], toa[mask]])
        fc = sc.get_facecolors()
        np.testing.assert_allclose(fc[:, :3], np.broadcast_to(colors[i, :3], fc[:, :3].shape))
        # opacity increases with the association probability
        order = np.argsort(probs[mask])
        assert (np.diff(fc[order, 3]) >= -1e-12).all()
        drawn += len(offsets)
    clutter = one(fig, "clutter")
    assert len(clutter.get_offsets()) == (labels == -1).sum()
    drawn += len(clutter.get_offsets())
    assert drawn == np.isfinite(toa).sum()


def test_toa_diagram_predicted_curves_and_legend(sample):
    record, track, _ = sample
    fig = tracking.toa_diagram(record, track)
    ax = fig.axes[0]
    counts = {n: int((track["association"].values == i).sum()) for i, n in enumerate(SOURCES)}
    assert any(c == 0 for c in counts.values()) and any(c > 0 for c in counts.values())
    for i, name in enumerate(track["source"].values):
        if counts[name]:
            line = one(fig, f"predicted-{name}")
            np.testing.assert_allclose(line.get_ydata(), track["predicted_toa"].values[:, i])
            assert np.isnan(line.get_ydata()).any() == (name in ("US2-1", "US2-2", "UK1-1"))
        else:
            assert by_gid(fig, f"predicted-{name}") == []
    # the legend lists exactly the sources with arrivals (and clutter), in source order
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    n_clutter = int((track["association"].values == -1).sum())
    assert legend == [f"{n} ({c})" for n, c in counts.items() if c] + [f"clutter ({n_clutter})"]
    # the others are named once, in the note below the legend
    note = one(fig, "silent-sources").get_text()
    assert sorted(note.split("\n", 1)[1].replace("\n", " ").split(", ")) == sorted(
        n for n, c in counts.items() if not c
    )


def test_toa_y_axis_fits_the_arrivals_inside_the_window(sample):
    """The y range holds every recorded arrival and drawn prediction with a margin of 4 % of
    their range (10 s at least), clipped to the listening window, and the subtitle stays
    above the axes, left of the legend."""
    record, track, _ = sample
    window = float(record["window_length"])
    for shift, scale in ((0.0, 1.0), (600.0, 0.2), (-50.0, 1.0)):
        tr = track.copy(deep=True)
        tr["toa"] = tr["toa"] * scale + shift
        tr["predicted_toa"] = tr["predicted_toa"] * scale + shift
        fig = tracking.toa_diagram(record, tr)
        ax = fig.axes[0]
        heard = np.unique(tr["association"].values[tr["association"].values >= 0])
        values = np.concatenate(
            [tr["toa"].values.ravel(), tr["predicted_toa"].values[:, heard].ravel()]
        )
        lo, hi = np.nanmin(values), np.nanmax(values)
        pad = max(0.04 * (hi - lo), 10.0)
        assert ax.get_ylim() == pytest.approx((max(lo - pad, 0.0), min(hi + pad, window)))
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        if "dots: recorded arrivals" in text.get_text():
            assert box.x1 < legend.x0 and box.y0 >= ax.get_window_extent(renderer).y1
            assert box.y1 < ax.title.get_window_extent(renderer).y0


def test_toa_legend_without_clutter_or_silent_sources(sample):
    record, track, _ = sample
    tr = track.copy(deep=True)
    labels = tr["association"].values
    tr["association"][:] = np.where(labels == -1, 0, labels)  # clutter -> first source
    fig = tracking.toa_diagram(record, tr)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert not any(t.startswith("clutter") for t in legend)
    heard = [n for i, n in enumerate(SOURCES) if (tr["association"].values == i).any()]
    assert [t.rsplit(" (", 1)[0] for t in legend] == heard
    assert (by_gid(fig, "silent-sources") == []) == (len(heard) == len(SOURCES))


# ------------------------------------------------------------------------------------------
# diagnostics and hygiene
# ------------------------------------------------------------------------------------------


def test_diagnostics_marks_collapsed_cycles(sample):
    _, track, _ = sample
    tr = track.copy(deep=True)
    tr["ess"][3] = 1.0
    tr["loglik"][7] = -np.inf
    fig = tracking.diagnostics(tr)
    pts = np.asarray(one(fig, "collapsed").get_offsets())
    np.testing.assert_allclose(pts[:, 0], mdates.date2num(tr["time"].values[[3, 7]]))
    # an explicit flag from the filter wins over the ESS rule
    tr["collapsed"] = ("cycle", np.arange(tr.sizes["cycle"]) == 11)
    pts = np.asarray(one(tracking.diagnostics(tr), "collapsed").get_offsets())
    np.testing.assert_allclose(pts[:, 0], mdates.date2num(tr["time"].values[[11]]))
    assert by_gid(tracking.diagnostics(track), "collapsed") == []


def test_diagnostics_shows_the_95_percent_semi_major_axis(sample):
    _, track, _ = sample
    cov = track["position_cov"].values
    a, b, d = cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1]
    lam_max = (a + d) / 2 + np.sqrt(((a - d) / 2) ** 2 + b**2)  # closed form for 2 x 2
    chi2_95 = 5.991464547107979  # chi-square(2) 95 % quantile
    line = one(tracking.diagnostics(track), "uncertainty-km")
    np.testing.assert_allclose(line.get_ydata(), np.sqrt(chi2_95 * lam_max), rtol=1e-9)
    assert (
        by_gid(tracking.diagnostics(track.drop_vars(["position_cov", "lat_std"])), "uncertainty-km")
        == []
    )


def test_figures_do_not_touch_pyplot_state(sample):
    import matplotlib.pyplot as plt

    record, track, _ = sample
    before = plt.get_fignums()
    tracking.toa_diagram(record, track)
    tracking.diagnostics(track)
    assert plt.get_fignums() == before


def test_bad_association_index_is_a_value_error(sample):
    record, track, _ = sample
    tr = track.copy(deep=True)
    tr["association"][0, 0] = 99
    with pytest.raises(ValueError, match="association"):
        tracking.toa_diagram(record, tr)
    with pytest.raises(ValueError, match="lat"):
        tracking.track_map(record, track.drop_vars("lat"))


def test_degenerate_inputs_still_render(sample):
    """One cycle without optional record fields; a record without arrivals, with a missing
    position and a missing covariance."""
    record, track, truth = make_float(n_cycles=1)
    record = record.drop_vars(
        ["recovery_lat", "recovery_lon", "recovery_time", "source_start_time", "window_length"]
    )
    map_fig = tracking.track_map(record, track, truth)
    for fig in (map_fig, tracking.toa_diagram(record, track), tracking.diagnostics(track)):
        fig.savefig(io.BytesIO(), format="png", dpi=40)
    assert by_gid(map_fig, "recovery") == [] and len(by_gid(map_fig, "launch")) == 1

    record, track, truth = sample
    tr = track.copy(deep=True)
    for name in ("association_prob", "association_posterior", "toa"):
        tr[name][:] = np.nan
    tr["association"][:] = -2
    tr["lat"][5] = np.nan
    tr["position_cov"][7] = np.nan
    fig = tracking.track_map(record, tr, truth)
    fig.savefig(io.BytesIO(), format="png", dpi=40)
    # the two segments touching the missing position are left out
    assert len(one(fig, "track").get_segments()) == tr.sizes["cycle"] - 1 - 2
    toa_fig = tracking.toa_diagram(record, tr)
    assert sum(len(a.get_offsets()) for a in toa_fig.findobj() if a.get_gid() == "clutter") == 0


def test_label_placement_avoids_the_track_and_other_labels():
    from rankmodels.plots.labels import CANDIDATES, label_box, place_labels

    # a track running right through the preferred (upper-right) spot of the first anchor
    anchors = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 2.0], [np.nan, np.nan]])
    track = np.c_[np.linspace(0.5, 40.0, 200), np.full(200, 0.6)]
    texts = ["US1-1", "US1-2\nfrom 2010-01-01", "UK1-3", "lost"]
    per_pt = 0.1
    out = place_labels(anchors, texts, track, anchors[:3], per_pt, (-50.0, 50.0, -50.0, 50.0))
    assert out[3] is None
    boxes = []
    for anchor, text, cand in zip(anchors[:3], texts[:3], out[:3], strict=True):
        lines = text.split("\n")
        w = (0.56 * 7.5 * max(map(len, lines)) + 2.0) * per_pt
        h = 1.2 * 7.5 * len(lines) * per_pt
        box = label_box(anchor, cand, w, h, per_pt)
        inside = (track[:, 0] >= box[0]) & (track[:, 0] <= box[1])
        inside &= (track[:, 1] >= box[2]) & (track[:, 1] <= box[3])
        assert not inside.any(), (text, cand)
        boxes.append(box)
    assert out[0] != CANDIDATES[0]  # the default spot was on the track
    for i in range(3):
        for j in range(i + 1, 3):
            a, b = boxes[i], boxes[j]
            assert not (a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3])


def test_time_marks_fall_on_month_starts_or_every_ten_days(offline_map, sample):
    from rankmodels.plots.maps import time_marks

    day0 = np.datetime64("2009-01-23", "ns")
    long = day0 + np.arange(120) * np.timedelta64(1, "D")
    idx, label = time_marks(long)
    assert idx.tolist() == [9, 37, 68, 98] and "month" in label  # Feb 1, Mar 1, Apr 1, May 1
    idx, label = time_marks(long[:30])
    assert idx.tolist() == [10, 20] and "10 days" in label
    # on the map: one white dot per mark, on the track
    _, track, _ = sample
    fig = offline_map[0]
    marks = np.asarray(one(fig, "time-marks").get_offsets())
    expected = projected(map_axes(fig), track["lon"].values, track["lat"].values)
    np.testing.assert_allclose(marks, expected[time_marks(track["time"].values)[0]], rtol=1e-9)


# ------------------------------------------------------------------------------------------
# legibility: colours, graticule labels, scale bar, titles, one-cycle records, odd names
# ------------------------------------------------------------------------------------------


def saturation(rgba) -> np.ndarray:
    rgb = np.atleast_2d(np.asarray(rgba, dtype=float))[:, :3]
    hi, lo = rgb.max(axis=1), rgb.min(axis=1)
    return np.where(hi > 0, (hi - lo) / np.where(hi > 0, hi, 1.0), 0.0)


@pytest.mark.parametrize("n", [1, 5, 9, 10, 12, 18, 25])
def test_source_colours_are_chromatic_and_distinct_from_the_achromatic_markers(n):
    colors = style.source_colors(n)
    assert colors.shape == (n, 4)
    assert (saturation(colors) >= 0.15).all()  # no grey source that looks like clutter
    distinct = min(n, 18)
    d = np.linalg.norm(colors[:distinct, None, :3] - colors[None, :distinct, :3], axis=-1)
    assert (d[~np.eye(distinct, dtype=bool)] > 0.05).all()
    for other in (style.CLUTTER_COLOR, style.LAUNCH_COLOR, style.RECOVERY_COLOR):
        assert saturation(to_rgba(other))[0] == 0.0


def test_launch_and_recovery_markers_differ_from_every_source_colour(offline_map):
    fig = offline_map[0]
    sources = one(fig, "sources").get_facecolors()[:, :3]
    for gid in ("launch", "recovery"):
        face = one(fig, gid).get_facecolors()[:, :3]
        assert np.linalg.norm(sources - face, axis=1).min() > 0.3, gid


def _degrees(label: str) -> float:
    value = float(label.rstrip("NSEW").rstrip("°"))
    return -value if label.endswith(("S", "W")) else value


def _tick_label_centres(fig, axis) -> list[tuple[float, str]]:
    renderer = fig.canvas.get_renderer()
    out = []
    for text in axis.get_ticklabels():
        if text.get_visible() and text.get_text():
            box = text.get_window_extent(renderer)
            centre = 0.5 * (box.x0 + box.x1) if axis.axis_name == "x" else 0.5 * (box.y0 + box.y1)
            out.append((centre, text.get_text()))
    return out


@pytest.mark.parametrize("shift", [0.0, -10.0, 58.0])  # sample, further south, Mercator
def test_graticule_labels_sit_where_their_lines_cross_the_frame(sample, shift):
    from scipy.optimize import brentq

    record, track, _ = sample
    rec, tr = record.copy(deep=True), track.copy(deep=True)
    for ds in (rec, tr):
        for name in ("source_lat", "lat", "launch_lat", "recovery_lat"):
            if name in ds:
                ds[name] = ds[name].copy(data=ds[name].values + shift)
    fig = tracking.track_map(rec, tr.drop_vars("position_cov"))
    FigureCanvasAgg(fig).draw()
    ax = map_axes(fig)
    x0, x1, y0, y1 = ax.get_extent()
    geo = ccrs.PlateCarree()

    def xy(lon, lat):
        return ax.projection.transform_point(lon, lat, geo)

    bottom = _tick_label_centres(fig, ax.xaxis)
    left = _tick_label_centres(fig, ax.yaxis)
    assert len(bottom) >= 3 and len(left) >= 3
    for centre, text in bottom:
        lon = _degrees(text)
        lat = brentq(lambda la, lon=lon: xy(lon, la)[1] - y0, -89.0, 89.0)
        x_cross = xy(lon, lat)[0]
        assert x0 <= x_cross <= x1
        pixel = ax.transData.transform((x_cross, y0))[0]
        assert abs(centre - pixel) < 2.0, (text, centre, pixel)
    lon0 = ax.projection.proj4_params.get("lon_0", 0.0)
    for centre, text in left:
        lat = _degrees(text)
        lon = brentq(lambda lo, lat=lat: xy(lo, lat)[0] - x0, lon0 - 89.0, lon0)
        y_cross = xy(lon, lat)[1]
        assert y0 <= y_cross <= y1
        pixel = ax.transData.transform((x0, y_cross))[1]
        assert abs(centre - pixel) < 2.0, (text, centre, pixel)


def test_scale_bar_is_as_long_on_the_ground_as_its_label_says(offline_map):
    fig = offline_map[0]
    ax = map_axes(fig)
    bar = one(fig, "scale-bar")
    km = float(one(fig, "scale-bar-label").get_text().removesuffix(" km"))
    assert km / 10 ** np.floor(np.log10(km)) in (1.0, 2.0, 5.0)
    xs, ys = np.asarray(bar.get_xdata()), np.asarray(bar.get_ydata())
    lonlat = ccrs.Geodetic().transform_points(ax.projection, xs, ys)
    ground = great_circle_km(lonlat[0, 1], lonlat[0, 0], lonlat[1, 1], lonlat[1, 0])
    assert ground == pytest.approx(km, rel=0.015)
    x0, x1, y0, y1 = ax.get_extent()
    assert 0.08 <= (xs[1] - xs[0]) / (x1 - x0) <= 0.2
    assert (xs > x0).all() and (xs < x1).all() and (ys > y0).all() and (ys < y1).all()


@pytest.mark.parametrize(("smoothed", "kind"), [(1, "smoothed track"), (0, "filtered track")])
def test_titles_say_whether_the_track_is_smoothed(sample, smoothed, kind):
    record, track, _ = sample
    tr = track.drop_vars("position_cov")
    tr.attrs = {**track.attrs, "smoothed": smoothed}
    fig = tracking.track_map(record, tr)
    ax = map_axes(fig)
    assert kind in ax.get_title(loc="left")
    assert kind in [t.get_text() for t in fig.legends[0].get_texts()]
    diag = tracking.diagnostics(tr)
    assert kind in diag.get_suptitle()
    other = "filtered track" if smoothed else "smoothed track"
    assert other not in ax.get_title(loc="left") + diag.get_suptitle()


def test_diagnostics_panels_name_what_they_show(sample):
    _, track, truth = sample
    fig = tracking.diagnostics(track, truth)
    ess_ax, ll_ax, km_ax = fig.axes
    assert "effective sample size" in ess_ax.get_title(loc="left")
    assert "forward filter" in ess_ax.get_title(loc="left")
    assert "N = 1000 particles" in ess_ax.get_title(loc="left")
    assert "log-likelihood" in ll_ax.get_title(loc="left") and ll_ax.get_ylabel() == "nats"
    assert "smoothed track" in km_ax.get_title(loc="left") and km_ax.get_ylabel() == "km"


def test_diagnostics_shows_the_distance_to_the_truth(sample):
    _, track, truth = sample
    line = one(tracking.diagnostics(track, truth), "error-km")
    expected = great_circle_km(
        track["lat"].values, track["lon"].values, truth["lat"].values, truth["lon"].values
    )
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-3)
    bare = track.drop_vars(["position_cov", "lat_std"])
    assert len(tracking.diagnostics(bare, truth).axes) == 3
    assert len(tracking.diagnostics(bare).axes) == 2


def test_diagnostics_draw_the_true_velocity_the_truth_states(sample):
    """A truth with velocities (a drifting float's) is drawn as stated, at every cycle; one
    without is drawn as the velocity of each day's step between its positions (cm/s)."""
    from rankmodels.tracking.geometry import tangent_offsets

    _, track, truth = sample
    n = track.sizes["cycle"]
    v = np.linspace(-0.1, 0.1, n)  # m/s
    track = track.assign(
        velocity_east=("cycle", v), velocity_north=("cycle", -v),
        velocity_east_std=("cycle", np.full(n, 0.01)),
        velocity_north_std=("cycle", np.full(n, 0.01)),
    )  # fmt: skip
    stated = truth.assign(velocity_east=("cycle", 2 * v), velocity_north=("cycle", 3 * v))
    fig = tracking.diagnostics(track, stated)
    np.testing.assert_allclose(one(fig, "true-velocity-east").get_ydata(), 200 * v)
    np.testing.assert_allclose(one(fig, "true-velocity-north").get_ydata(), 300 * v)
    lat, lon = truth["lat"].values, truth["lon"].values
    _, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    seconds = np.diff(truth["time"].values).astype("timedelta64[s]").astype(float)
    line = one(tracking.diagnostics(track, truth), "true-velocity-north")
    np.testing.assert_allclose(line.get_ydata(), north * 1000.0 / seconds * 100.0, rtol=1e-9)


def _pixel(fig, ax, x, y) -> np.ndarray:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())
    col, row = ax.transData.transform((x, y))
    return pixels[int(round(pixels.shape[0] - row)), int(round(col)), :3] / 255.0


def test_one_cycle_record_is_drawn_as_markers():
    record, track, truth = make_float(n_cycles=1)
    day = mdates.date2num(track["time"].values[0])
    diag = tracking.diagnostics(track, truth)
    for gid, ax in (("ess", diag.axes[0]), ("loglik", diag.axes[1])):
        line = one(diag, gid)
        assert line.get_marker() == "o" and list(line.get_markevery()) == [0]
        y = float(track[gid].values[0])
        assert np.abs(_pixel(diag, ax, day, y) - to_rgba(line.get_color())[:3]).max() < 0.1
    # the map marks the single position in the track's colour map
    fig = tracking.track_map(record, track)
    dots = one(fig, "track-points")
    expected = projected(map_axes(fig), track["lon"].values, track["lat"].values)
    np.testing.assert_allclose(dots.get_offsets(), expected, rtol=1e-9)
    assert len(one(fig, "track").get_segments()) == 0
    # TOA: the predicted curves of the heard sources carry the marker too
    toa = tracking.toa_diagram(record, track)
    heard = [n for i, n in enumerate(SOURCES) if (track["association"].values == i).any()]
    assert heard
    for name in heard:
        line = one(toa, f"predicted-{name}")
        assert line.get_marker() == "o" and list(line.get_markevery()) == [0]
    lo, hi = toa.axes[0].get_xlim()
    assert lo < day < hi and hi - lo == pytest.approx(1.0)


def test_positions_between_gaps_get_a_marker_and_others_do_not(sample):
    _, track, _ = sample
    tr = track.copy(deep=True)
    ess = tr["ess"].values
    ess[[9, 11]] = np.nan  # cycle 10 alone between gaps
    tr["ess"] = ("cycle", ess)
    line = one(tracking.diagnostics(tr), "ess")
    assert list(line.get_markevery()) == [10]
    assert one(tracking.diagnostics(track), "ess").get_marker() in ("None", "", None)


def test_names_with_control_characters_or_dollars_draw_literally(sample):
    record, track, _ = sample
    tr = track.copy(deep=True)
    tr.attrs["float_id"] = "7\x0067 $\\frac{$"
    names = list(SOURCES)
    names[0] = "a$b\x07"
    tr = tr.assign_coords(source=names, candidate=[*names, "clutter"])
    figs = [
        tracking.track_map(record, spanning(tr).drop_vars("position_cov")),
        tracking.toa_diagram(record, tr),
        tracking.diagnostics(tr),
    ]
    for fig in figs:
        fig.savefig(io.BytesIO(), format="png", dpi=30)  # '$\frac{$' used to fail to draw
        texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
        texts += [fig.get_suptitle(), *(ax.get_title(loc="left") for ax in fig.axes)]
        assert not any(ch in text for text in texts for ch in "\x00\x07")
    map_title = map_axes(figs[0]).get_title(loc="left")
    assert "7\ufffd67" in map_title
    # shown as plain text: mathtext stays off, so the dollar signs are drawn as they are
    (label,) = [t.get_text() for t in map_axes(figs[0]).texts if t.get_text().startswith("a")]
    legend = [t.get_text() for t in figs[1].axes[0].get_legend().get_texts()]
    for text in (map_title, label, legend[0], figs[2].get_suptitle()):
        assert not cbook.is_math_text(text), text


@pytest.mark.parametrize("n_cycles", [4, 12, 40])
def test_a_short_record_fills_its_map(sample, n_cycles):
    """A short record's map is not mostly empty: its content spans at least half the map one
    way unless the map is at its least size, a degree of latitude each way, and each axis
    keeps at least two labelled grid lines."""
    record, track, truth = make_float(n_cycles=120)
    part = {"cycle": slice(0, n_cycles)}
    record, track, truth = record.isel(part), track.isel(part), truth.isel(part)
    record["recovery_lat"] = truth["lat"][-1].item()
    record["recovery_lon"] = truth["lon"][-1].item()
    fig = tracking.track_map(record, track, truth)
    ax = map_axes(fig)
    x0, x1, y0, y1 = ax.get_extent()
    pts = np.concatenate(
        [
            projected(ax, track["lon"].values, track["lat"].values),
            projected(ax, truth["lon"].values, truth["lat"].values),
        ]
    )
    spans = np.ptp(pts, axis=0) / np.array([x1 - x0, y1 - y0])
    lat_lo, lat_hi = ccrs.PlateCarree().transform_points(
        ax.projection, np.array([0.5 * (x0 + x1)] * 2), np.array([y0, y1])
    )[:, 1]
    assert lat_hi - lat_lo >= 0.99
    assert spans.max() >= 0.5 or lat_hi - lat_lo <= 1.05, spans
    assert len(ax.get_xticks()) >= 2 and len(ax.get_yticks()) >= 2
