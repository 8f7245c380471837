"""Small synthetic float record / track / truth datasets in the tracking-contract layout.

Used by tests/test_plots*.py (independent of the pipeline helper's simulator): a float drifting
between the DIMES sound sources, the first ``rank`` arrivals per cycle from detected sources and
uniform clutter, and a "track" whose association is the true label (with probabilities < 1).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

SOURCES = {
    "US1-1": (-59.914, -109.911),
    "US1-2": (-55.996, -109.910),
    "US1-3": (-58.101, -97.960),
    "US1-4": (-59.966, -86.154),
    "US1-5": (-55.963, -85.986),
    "US1-6": (-58.334, -74.414),
    "US2-1": (-58.169, -102.169),
    "US2-2": (-59.939, -78.003),
    "UK1-1": (-59.977, -65.990),
}
LATE = ("US2-1", "US2-2", "UK1-1")  # deployed a year after the US1 array
SOUND_SPEED = 1.48  # km/s
WINDOW = 1800.0
R_KM = 6371.0


def great_circle_km(lat1, lon1, lat2, lon2):
    p1, p2 = np.deg2rad(lat1), np.deg2rad(lat2)
    dl = np.deg2rad(lon2 - lon1)
    c = np.sin(p1) * np.sin(p2) + np.cos(p1) * np.cos(p2) * np.cos(dl)
    return R_KM * np.arccos(np.clip(c, -1.0, 1.0))


def make_float(
    n_cycles: int = 120,
    rank: int = 4,
    seed: int = 7,
    float_id: str = "767",
    with_cov: bool = True,
) -> tuple[xr.Dataset, xr.Dataset, xr.Dataset]:
    """``(record, track, truth)`` for a synthetic float of ``n_cycles`` daily cycles."""
    rng = np.random.default_rng(seed)
    names = list(SOURCES)
    s = len(names)
    src_lat = np.array([SOURCES[n][0] for n in names])
    src_lon = np.array([SOURCES[n][1] for n in names])
    time = np.datetime64("2009-01-23", "ns") + np.arange(n_cycles) * np.timedelta64(1, "D")
    start = np.full(s, np.datetime64("NaT", "ns"))
    mid = time[n_cycles // 2]
    for n in LATE:
        start[names.index(n)] = mid

    # truth: a smooth eastward drift with wiggles, launch (-56.326, -105.003)
    t = np.linspace(0.0, 1.0, n_cycles)
    true_lat = (
        -56.326 - 3.5 * t + 0.6 * np.sin(9 * t) + 0.05 * rng.standard_normal(n_cycles).cumsum() / 5
    )
    true_lon = -105.003 + 22.0 * t + 1.0 * np.sin(5 * t)

    dist = great_circle_km(true_lat[:, None], true_lon[:, None], src_lat[None], src_lon[None])
    active = ~(time[:, None] < np.where(np.isnat(start), time[0], start)[None])
    toa = np.full((n_cycles, rank), np.nan)
    label = np.full((n_cycles, rank), -2, dtype=np.int64)
    for c in range(n_cycles):
        det = active[c] & (rng.random(s) < 0.85)
        arr_t = dist[c, det] / SOUND_SPEED + rng.normal(0.0, 4.0, det.sum())
        arr_l = np.flatnonzero(det)
        n_clut = rng.poisson(0.8)
        arr_t = np.r_[arr_t, rng.uniform(0, WINDOW, n_clut)]
        arr_l = np.r_[arr_l, -np.ones(n_clut, dtype=np.int64)]
        keep = (arr_t >= 0) & (arr_t <= WINDOW)
        arr_t, arr_l = arr_t[keep], arr_l[keep]
        order = np.argsort(arr_t)[:rank]
        toa[c, : order.size] = arr_t[order]
        label[c, : order.size] = arr_l[order]

    record = xr.Dataset(
        {
            "toa": (("cycle", "rank"), toa),
            "source_lat": ("source", src_lat),
            "source_lon": ("source", src_lon),
            "source_start_time": ("source", start),
            "launch_lat": ((), true_lat[0]),
            "launch_lon": ((), true_lon[0]),
            "launch_time": ((), time[0]),
            "recovery_lat": ((), true_lat[-1]),
            "recovery_lon": ((), true_lon[-1]),
            "recovery_time": ((), time[-1]),
            "sound_speed": ((), SOUND_SPEED * 1000),
            "window_length": ((), WINDOW),
        },
        coords={"time": ("cycle", time), "source": names},
        attrs={"float_id": float_id, "simulated": 1},
    )

    # estimated track: truth + error, uncertainty growing away from launch/recovery
    sd_km = 4.0 + 25.0 * np.sin(np.pi * t)
    err = rng.standard_normal((n_cycles, 2)) * sd_km[:, None] * 0.5
    lat = true_lat + np.rad2deg(err[:, 1] / R_KM)
    lon = true_lon + np.rad2deg(err[:, 0] / (R_KM * np.cos(np.deg2rad(true_lat))))
    cov = np.zeros((n_cycles, 2, 2))
    cov[:, 0, 0] = (1.6 * sd_km) ** 2
    cov[:, 1, 1] = sd_km**2
    cov[:, 0, 1] = cov[:, 1, 0] = 0.3 * 1.6 * sd_km**2
    lat_std = np.rad2deg(sd_km / R_KM)
    lon_std = np.rad2deg(1.6 * sd_km / (R_KM * np.cos(np.deg2rad(lat))))

    prob = np.where(label == -2, np.nan, rng.uniform(0.4, 1.0, label.shape))
    posterior = np.full((n_cycles, rank, s + 1), np.nan)
    rec = label != -2
    posterior[rec] = 0.0
    idx = np.where(label == -1, s, label)
    ci, ri = np.nonzero(rec)
    posterior[ci, ri, idx[rec]] = prob[rec]
    posterior[ci, ri, (idx[rec] + 1) % (s + 1)] += 1.0 - prob[rec]
    est_dist = great_circle_km(lat[:, None], lon[:, None], src_lat[None], src_lon[None])
    predicted = np.where(active, est_dist / SOUND_SPEED, np.nan)
    ess = rng.uniform(50, 900, n_cycles)
    loglik = rng.normal(-15, 3, n_cycles)

    data = {
        "lat": ("cycle", lat),
        "lon": ("cycle", lon),
        "lat_std": ("cycle", lat_std),
        "lon_std": ("cycle", lon_std),
        "lat_filtered": ("cycle", lat),
        "lon_filtered": ("cycle", lon),
        "association": (("cycle", "rank"), label),
        "association_prob": (("cycle", "rank"), prob),
        "association_posterior": (("cycle", "rank", "candidate"), posterior),
        "toa": (("cycle", "rank"), toa),
        "predicted_toa": (("cycle", "source"), predicted),
        "ess": ("cycle", ess),
        "loglik": ("cycle", loglik),
        "source_lat": ("source", src_lat),
        "source_lon": ("source", src_lon),
    }
    if with_cov:
        data["position_cov"] = (("cycle", "enu", "enu2"), cov)  # as rankmodels.tracking.output
    track = xr.Dataset(
        data,
        coords={
            "time": ("cycle", time),
            "source": names,
            "candidate": [*names, "clutter"],
            "enu": ["east", "north"],
            "enu2": ["east", "north"],
        },
        attrs={
            "float_id": float_id,
            "source_file": "float767.nc",
            "engine": "exact",
            "particles": 1000,
            "seed": 1,
            "sigma": 5.0,
            "p_detect": 0.9,
            "clutter_rate": 1.0,
            "sound_speed": SOUND_SPEED * 1000,
            "process_noise_km": 8.0,
            "smoothed": 1,
            "rankmodels_version": "0.1.0",
            "created": "2026-11-23T09:00:00Z",
            "simulated": 1,
        },
    )
    truth = xr.Dataset(
        {
            "lat": ("cycle", true_lat),
            "lon": ("cycle", true_lon),
            "true_label": (("cycle", "rank"), label),
        },
        coords={"time": ("cycle", time)},
    )
    return record, track, truth
