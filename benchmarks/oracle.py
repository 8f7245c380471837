"""An oracle smoother for the simulated drifting floats, and track-float's error as a ratio to it.

The oracle is told what no tracker knows: which source sent each recorded arrival (the
truth's ``true_label``), which arrivals came by multipath (left out), the true sound speed,
clock and source offsets, the TOA noise, and the simulator's own dynamics. A drifting float
of :func:`rankmodels.tracking.simulate.drifting_track` moves each day ``k`` by ``(mu + u_k)
dt_k`` in the tangent plane of its position, with eddy velocities ``u_k`` an AR(1) of
stationary standard deviation ``s`` and ``phi_k = exp(-dt_k / tau)``. The oracle's estimate
is the maximum a posteriori velocity sequence (and mean drift ``mu``, under a flat prior) given
the labelled direct arrivals and the recovery fix:

    minimise  sum_i ((toa_i - pred_i(x_c(i)(u, mu))) / sigma)^2 + |u_0 / s|^2
              + sum_k |(u_k - phi_k u_k-1) / (s sqrt(1 - phi_k^2))|^2 + |(x_D - fix) / 0.1 km|^2,

by Gauss-Newton (the positions are cumulative sums of the steps, so every TOA depends on every
earlier velocity; the normal equations are a dense ``2 D + 2`` system). This is the iterated
Kalman smoother's answer for the simulator's own model, so its error is what the arrivals
allow; ``track-float`` must also find the associations and calibrate the geometry and the
statistics.

    python benchmarks/oracle.py [--floats 6] [--days 200 400] [--particles 10000]

prints per float the oracle's and track-float's (random walk and Lagrangian motion) median and
p90 errors and daily velocity rms errors, and the ratios.
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from rankmodels.tracking.config import COMMAND_MULTIPATH, TrackConfig
from rankmodels.tracking.geometry import EARTH_RADIUS_KM, great_circle_km, tangent_offsets
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import written_offsets
from rankmodels.tracking.simulate import SignalSpec, dimes_float767, range_dependent_detection

#: The simulator's eddies (``drifting_track``'s defaults): speed km/day, time scale days.
EDDY_SPEED, EDDY_DAYS = 4.0, 5.0
_TO_DEG = 180.0 / (np.pi * EARTH_RADIUS_KM)
_RECOVERY_KM = 0.1


def positions(
    start: tuple[float, float], u: np.ndarray, mu: np.ndarray, dt: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(lat, lon)`` (D,) after each day's step ``(mu + u_k) dt_k`` (km, tangent plane of
    the position before it), as the simulator takes them."""
    step = (mu[None, :] + u) * dt[:, None]
    lat = start[0] + np.cumsum(step[:, 1]) * _TO_DEG
    lat_before = np.r_[start[0], lat[:-1]]
    lon = start[1] + np.cumsum(step[:, 0] * _TO_DEG / np.cos(np.radians(lat_before)))
    return lat, lon


class Oracle:
    """The oracle's problem for one simulated float (module docstring)."""

    def __init__(self, record: xr.Dataset, truth: xr.Dataset, sigma: float) -> None:
        launch = np.datetime64(record["launch_time"].values, "ns")
        day = np.timedelta64(86_400_000_000_000, "ns")
        cycle_day = (record["time"].values.astype("datetime64[ns]") - launch) / day
        recovery_day = (np.datetime64(record["recovery_time"].values, "ns") - launch) / day
        self.t = np.r_[cycle_day, recovery_day]
        self.dt = np.diff(np.r_[0.0, self.t])
        self.start = (float(record["launch_lat"]), float(record["launch_lon"]))
        self.fix = (float(record["recovery_lat"]), float(record["recovery_lon"]))
        self.sigma = sigma
        speed = (
            float(truth["sound_speed"]) if "sound_speed" in truth else float(record["sound_speed"])
        )
        label = np.asarray(truth["true_label"].values)
        cycle, rank = np.nonzero(label >= 0)
        source = label[cycle, rank].astype(int)
        offset = written_offsets(record)[cycle, source]
        if "source_offset" in truth:  # the true offsets, the float clock, the multipath
            offset = (
                offset
                - np.asarray(record["source_offset"].values)[source]
                + np.asarray(truth["source_offset"].values)[source]
            )
            offset = (
                offset
                + float(truth["clock_offset"])
                + float(truth["clock_drift"]) * (cycle_day[cycle])
            )
            direct = np.asarray(truth["multipath_delay"].values)[cycle, source] == 0
            cycle, source, rank, offset = (
                cycle[direct],
                source[direct],
                rank[direct],
                offset[direct],
            )
        self.cycle, self.source = cycle, source
        self.toa = np.asarray(record["toa"].values)[cycle, rank]
        self.offset = offset
        self.km_per_s = speed / 1000.0
        self.src_lat = np.asarray(record["source_lat"].values, dtype=float)
        self.src_lon = np.asarray(record["source_lon"].values, dtype=float)
        self.phi = np.exp(-self.dt / EDDY_DAYS)

    def predicted(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        d = great_circle_km(lat[self.cycle], lon[self.cycle], self.src_lat[self.source],
                            self.src_lon[self.source])  # fmt: skip
        return d / self.km_per_s + self.offset

    def residuals(self, u: np.ndarray, mu: np.ndarray) -> np.ndarray:
        lat, lon = positions(self.start, u, mu, self.dt)
        innovation = (u[1:] - self.phi[1:, None] * u[:-1]) / (
            EDDY_SPEED * np.sqrt(1.0 - self.phi[1:, None] ** 2)
        )
        east, north = tangent_offsets(lat[-1], lon[-1], *self.fix)
        return np.concatenate([
            (self.toa - self.predicted(lat, lon)) / self.sigma,
            (u[0] / EDDY_SPEED),
            innovation.ravel(),
            np.array([east, north]) / _RECOVERY_KM,
        ])  # fmt: skip

    def _chain(
        self, g_lat: np.ndarray, g_lon: np.ndarray, at: np.ndarray, u: np.ndarray, mu: np.ndarray
    ) -> np.ndarray:
        """``(I, 2 D + 2)`` derivatives in ``(u, mu)`` of residuals whose derivatives in the
        position (lat, lon) of day ``at`` (I,) are ``g_lat``, ``g_lon`` (I,): a north step moves
        the later latitudes and, through ``1 / cos(lat)``, the later longitudes too."""
        n = u.shape[0]
        lat, _ = positions(self.start, u, mu, self.dt)
        lat_before = np.r_[self.start[0], lat[:-1]]
        step_east = (mu[0] + u[:, 0]) * self.dt
        rad = np.radians(lat_before)
        w = step_east * _TO_DEG * np.sin(rad) / np.cos(rad) ** 2 * (np.pi / 180.0)
        cum = np.cumsum(w)  # cum[k] = sum_{i <= k} w_i
        days = np.arange(n)[None, :]
        upto = (days <= at[:, None]).astype(float)
        later = (cum[at][:, None] - cum[None, :]) * (days < at[:, None])
        out = np.zeros((at.size, 2 * n + 2))
        out[:, 0 : 2 * n : 2] = g_lon[:, None] * upto * (self.dt * _TO_DEG / np.cos(rad))[None, :]
        out[:, 1 : 2 * n : 2] = (g_lat[:, None] * upto + g_lon[:, None] * later) * (
            self.dt * _TO_DEG
        )[None, :]
        out[:, 2 * n] = out[:, 0 : 2 * n : 2].sum(axis=1)
        out[:, 2 * n + 1] = out[:, 1 : 2 * n : 2].sum(axis=1)
        return out

    def jacobian(self, u: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """``d residuals / d (u, mu)``: the TOAs' and the recovery fix's through the positions
        (central differences in lat and lon, chained through the cumulative steps by
        :meth:`_chain`), the priors' exactly."""
        n = u.shape[0]
        lat, lon = positions(self.start, u, mu, self.dt)
        h = 1e-5
        g_lat = (self.predicted(lat + h, lon) - self.predicted(lat - h, lon)) / (2 * h)
        g_lon = (self.predicted(lat, lon + h) - self.predicted(lat, lon - h)) / (2 * h)
        jac_toa = -self._chain(g_lat, g_lon, self.cycle, u, mu) / self.sigma
        prior = np.zeros((2 * n, 2 * n + 2))
        prior[0, 0] = prior[1, 1] = 1.0 / EDDY_SPEED
        scale = 1.0 / (EDDY_SPEED * np.sqrt(1.0 - self.phi[1:] ** 2))
        for axis in range(2):
            rows = 2 + 2 * np.arange(n - 1) + axis
            prior[rows, 2 * np.arange(1, n) + axis] = scale
            prior[rows, 2 * np.arange(n - 1) + axis] = -self.phi[1:] * scale
        fix = []
        for k in range(2):
            up_lat = np.array(tangent_offsets(lat[-1] + h, lon[-1], *self.fix))[k]
            down_lat = np.array(tangent_offsets(lat[-1] - h, lon[-1], *self.fix))[k]
            up_lon = np.array(tangent_offsets(lat[-1], lon[-1] + h, *self.fix))[k]
            down_lon = np.array(tangent_offsets(lat[-1], lon[-1] - h, *self.fix))[k]
            g_lat_fix = np.array([(up_lat - down_lat) / (2 * h)])
            g_lon_fix = np.array([(up_lon - down_lon) / (2 * h)])
            chained = self._chain(g_lat_fix, g_lon_fix, np.array([n - 1]), u, mu)
            fix.append(chained[0] / _RECOVERY_KM)
        return np.vstack([jac_toa, prior, np.array(fix)])

    def solve(self, iterations: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The MAP track ``(lat, lon)`` at the cycles and the velocity ``(T, 2)`` (east, north
        km/day) of the day into each, by Gauss-Newton with halving."""
        n = self.dt.size
        east, north = tangent_offsets(*self.start, *self.fix)
        z = np.zeros(2 * n + 2)
        z[2 * n :] = np.array([east, north]) / self.t[-1]

        def split(z):
            return z[: 2 * n].reshape(n, 2), z[2 * n :]

        cost = np.sum(self.residuals(*split(z)) ** 2)
        for _ in range(iterations):
            r, jac = self.residuals(*split(z)), self.jacobian(*split(z))
            step = np.linalg.solve(jac.T @ jac + 1e-9 * np.eye(z.size), -jac.T @ r)
            for _ in range(20):
                new_cost = np.sum(self.residuals(*split(z + step)) ** 2)
                if new_cost <= cost:
                    break
                step = step / 2
            if cost - new_cost < 1e-9 * max(cost, 1.0):
                z = z + step if new_cost <= cost else z
                break
            z, cost = z + step, new_cost
        u, mu = split(z)
        lat, lon = positions(self.start, u, mu, self.dt)
        return lat[:-1], lon[:-1], (u + mu)[:-1]


def errors(lat: np.ndarray, lon: np.ndarray, truth: xr.Dataset) -> np.ndarray:
    return great_circle_km(lat, lon, truth["lat"].values, truth["lon"].values)


def velocity_rms(velocity: np.ndarray, truth: xr.Dataset) -> float:
    """rms error (km/day) of the velocities ``(T, 2)`` at cycles ``1 ..`` against the true
    velocity of the day into each (the simulator's day-long velocity)."""
    lat, lon = truth["lat"].values, truth["lon"].values
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    return float(np.sqrt(np.mean((velocity[1:] - np.stack([east, north], 1)) ** 2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floats", type=int, default=6)
    parser.add_argument("--days", type=int, nargs=2, default=(200, 400))
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--sigma", type=float, nargs="+", default=[3.0, 5.0])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    ratios: dict[str, list[tuple[float, float, float]]] = {"random-walk": [], "lagrangian": []}
    for k in range(args.floats):
        seed = 300 + k
        days = int(rng.integers(args.days[0], args.days[1] + 1))
        sigma = args.sigma[k % len(args.sigma)]
        spec = SignalSpec(sigma=sigma, p_detect=range_dependent_detection(), clutter_rate=1.0)
        record, truth = dimes_float767(seed, days=days, spec=spec)
        lat, lon, velocity = Oracle(record, truth, sigma).solve()
        oracle, oracle_v = errors(lat, lon, truth), velocity_rms(velocity, truth)
        line = (f"float {seed} {days} d sigma {sigma:g}: oracle {np.median(oracle):.2f} / "
                f"{np.percentile(oracle, 90):.2f} km, {oracle_v:.2f} km/day")  # fmt: skip
        for motion in ratios:
            config = TrackConfig(calibrate=True, multipath=COMMAND_MULTIPATH, motion=motion,
                                 particles=args.particles)  # fmt: skip
            track, _ = track_float(record, config)
            err = errors(track["lat"].values, track["lon"].values, truth)
            if "velocity_east" in track:
                v = np.stack([track.velocity_east.values, track.velocity_north.values], 1) * 86.4
            else:  # the random walk's differenced positions, into each cycle
                la, lo = track["lat"].values, track["lon"].values
                east, north = tangent_offsets(la[:-1], lo[:-1], la[1:], lo[1:])
                v = np.vstack([[np.nan, np.nan], np.stack([east, north], 1)])
            ratio = (np.median(err) / np.median(oracle),
                     np.percentile(err, 90) / np.percentile(oracle, 90),
                     velocity_rms(v, truth) / oracle_v)  # fmt: skip
            ratios[motion].append(ratio)
            line += (f"; {motion} {np.median(err):.2f} / {np.percentile(err, 90):.2f} km "
                     f"({ratio[0]:.2f}x / {ratio[1]:.2f}x, velocity {ratio[2]:.2f}x)")  # fmt: skip
        print(line, flush=True)
    for motion, values in ratios.items():
        med, p90, vel = np.mean(values, axis=0)
        print(f"{motion}: median {med:.2f}x the oracle's on average, p90 {p90:.2f}x, daily "
              f"velocity rms {vel:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
