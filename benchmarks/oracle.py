"""An oracle smoother for the simulated drifting floats, and track-float's error as a ratio to it.

The oracle is told what no tracker knows: which source sent each recorded arrival (the
truth's ``true_label``), which arrivals came by multipath (left out), the true sound speed,
clock and source offsets, the TOA noise, and the simulator's own dynamics. A drifting float
of :func:`rankmodels.tracking.simulate.drifting_track` moves over the interval ``k`` (from
cycle ``k - 1`` to cycle ``k``, ``dt_k`` days) by ``mu dt_k + d_k`` in the tangent plane of its
position, where ``d_k`` is the integral of a stationary Ornstein-Uhlenbeck eddy velocity
``u(t)`` (standard deviation ``s``, time scale ``tau``: the truth's ``eddy_speed`` and
``time_scale``). Given ``u_k-1``, per axis ``(d_k, u_k)`` is Gaussian with mean ``(a_k u_k-1,
phi_k u_k-1)`` and covariance ``V_k`` (the closed form of
:meth:`rankmodels.tracking.dynamics.LagrangianMotion.transition`). The oracle's estimate is the
maximum a posteriori path ``z = (u_0, (d_k, u_k)_k, mu)`` (flat prior on the mean drift ``mu``)
given the labelled direct arrivals and the recovery fix, found from the truth:

    minimise  sum_i ((toa_i - pred_i(x_c(i)(d, mu))) / sigma)^2 + |u_0 / s|^2
              + sum_k |L_k^-1 ((d_k, u_k) - (a_k, phi_k) u_k-1)|^2 + |(x_D - fix) / 0.1 km|^2,

with ``L_k L_k^T = V_k``, by Gauss-Newton (the positions are cumulative sums of the steps, so
every TOA depends on every earlier step; the normal equations are a dense ``4 D + 4`` system).
This is the iterated Kalman smoother's answer for the simulator's own model, so its error is
what the arrivals allow; ``track-float`` must also find the associations and calibrate the
geometry and the statistics.

    python benchmarks/oracle.py [--floats 20] [--days 200 730] [--seed 0]

runs on the first ``--floats`` drifting worlds of :func:`rankmodels.tracking.worlds.draw_world`
(varied noise, detection, clutter, multipath, geometric mismatch, eddy speed and time scale)
and prints per world the oracle's and track-float's (its calibrated defaults with the
Lagrangian motion and with the random walk) median and p90 errors and daily velocity rms
errors (against the truth's instantaneous velocity at the cycles; the random walk's from its
centred differences), and the ratios.
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from rankmodels.tracking.config import COMMAND_MULTIPATH, COMMAND_PARTICLES, TrackConfig
from rankmodels.tracking.dynamics import M_PER_S, LagrangianMotion
from rankmodels.tracking.geometry import EARTH_RADIUS_KM, great_circle_km, tangent_offsets
from rankmodels.tracking.pipeline import track_float
from rankmodels.tracking.records import written_offsets
from rankmodels.tracking.worlds import World, draw_world, simulate_world

_TO_DEG = 180.0 / (np.pi * EARTH_RADIUS_KM)
_RECOVERY_KM = 0.1


def positions(start: tuple[float, float], steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lat, lon)`` (D,) after each interval's step ``steps (D, 2)`` (east, north km, tangent
    plane of the position before it), as the simulator takes them."""
    lat = start[0] + np.cumsum(steps[:, 1]) * _TO_DEG
    lat_before = np.r_[start[0], lat[:-1]]
    lon = start[1] + np.cumsum(steps[:, 0] * _TO_DEG / np.cos(np.radians(lat_before)))
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
        self.prior = self._prior(float(truth["eddy_speed"]), float(truth["time_scale"]))

    # layout of z: u_0 (2), then per interval k = 1 .. n: d_k (2), u_k (2); then mu (2)
    def _d(self, z: np.ndarray) -> np.ndarray:
        return z[2:-2].reshape(-1, 4)[:, :2]

    def _u(self, z: np.ndarray) -> np.ndarray:
        return np.vstack([z[:2], z[2:-2].reshape(-1, 4)[:, 2:]])

    def _steps(self, z: np.ndarray) -> np.ndarray:
        return z[-2:][None, :] * self.dt[:, None] + self._d(z)

    def _prior(self, eddy_speed: float, time_scale: float) -> np.ndarray:
        """The prior's whitened residuals as a matrix: ``prior @ z`` (``2 + 4 n`` rows)."""
        n = self.dt.size
        motion = LagrangianMotion((0.0, 0.0), eddy_speed, time_scale)
        phi, a, vxx, vxu, vuu = motion.transition(self.dt)
        l11 = np.sqrt(vxx)
        l21 = vxu / l11
        l22 = np.sqrt(vuu - l21 * l21)
        out = np.zeros((2 + 4 * n, 4 * n + 4))
        out[0, 0] = out[1, 1] = 1.0 / eddy_speed
        for k in range(n):
            for axis in range(2):
                u_from = axis if k == 0 else 2 + 4 * (k - 1) + 2 + axis
                d, u = 2 + 4 * k + axis, 2 + 4 * k + 2 + axis
                row_d, row_u = 2 + 4 * k + axis, 2 + 4 * k + 2 + axis
                # r_d = (d - a u_from) / l11;  r_u = ((u - phi u_from) - l21 r_d) / l22
                out[row_d, d] = 1.0 / l11[k]
                out[row_d, u_from] = -a[k] / l11[k]
                out[row_u, u] = 1.0 / l22[k]
                out[row_u, u_from] = -phi[k] / l22[k]
                out[row_u] -= l21[k] / l22[k] * out[row_d]
        return out

    def predicted(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        d = great_circle_km(lat[self.cycle], lon[self.cycle], self.src_lat[self.source],
                            self.src_lon[self.source])  # fmt: skip
        return d / self.km_per_s + self.offset

    def residuals(self, z: np.ndarray) -> np.ndarray:
        lat, lon = positions(self.start, self._steps(z))
        east, north = tangent_offsets(lat[-1], lon[-1], *self.fix)
        return np.concatenate([
            (self.toa - self.predicted(lat, lon)) / self.sigma,
            self.prior @ z,
            np.array([east, north]) / _RECOVERY_KM,
        ])  # fmt: skip

    def _chain(
        self, g_lat: np.ndarray, g_lon: np.ndarray, at: np.ndarray, steps: np.ndarray
    ) -> np.ndarray:
        """``(I, 4 n + 4)`` derivatives in ``z`` of residuals whose derivatives in the position
        (lat, lon) after interval ``at`` (I,) are ``g_lat``, ``g_lon`` (I,): a north step
        moves the later latitudes and, through ``1 / cos(lat)``, the later longitudes too."""
        n = steps.shape[0]
        lat, _ = positions(self.start, steps)
        lat_before = np.r_[self.start[0], lat[:-1]]
        rad = np.radians(lat_before)
        w = steps[:, 0] * _TO_DEG * np.sin(rad) / np.cos(rad) ** 2 * (np.pi / 180.0)
        cum = np.cumsum(w)  # cum[k] = sum_{i <= k} w_i
        days = np.arange(n)[None, :]
        upto = (days <= at[:, None]).astype(float)
        later = (cum[at][:, None] - cum[None, :]) * (days < at[:, None])
        by_east = g_lon[:, None] * upto * (_TO_DEG / np.cos(rad))[None, :]
        by_north = (g_lat[:, None] * upto + g_lon[:, None] * later) * _TO_DEG
        out = np.zeros((at.size, 4 * n + 4))
        out[:, 2 : 2 + 4 * n : 4] = by_east
        out[:, 3 : 2 + 4 * n : 4] = by_north
        out[:, -2] = by_east @ self.dt
        out[:, -1] = by_north @ self.dt
        return out

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        """``d residuals / d z``: the TOAs' and the recovery fix's through the positions
        (central differences in lat and lon, chained through the cumulative steps by
        :meth:`_chain`), the prior's exactly."""
        steps = self._steps(z)
        n = steps.shape[0]
        lat, lon = positions(self.start, steps)
        h = 1e-5
        g_lat = (self.predicted(lat + h, lon) - self.predicted(lat - h, lon)) / (2 * h)
        g_lon = (self.predicted(lat, lon + h) - self.predicted(lat, lon - h)) / (2 * h)
        jac_toa = -self._chain(g_lat, g_lon, self.cycle, steps) / self.sigma
        fix = []
        for k in range(2):
            up_lat = np.array(tangent_offsets(lat[-1] + h, lon[-1], *self.fix))[k]
            down_lat = np.array(tangent_offsets(lat[-1] - h, lon[-1], *self.fix))[k]
            up_lon = np.array(tangent_offsets(lat[-1], lon[-1] + h, *self.fix))[k]
            down_lon = np.array(tangent_offsets(lat[-1], lon[-1] - h, *self.fix))[k]
            g_lat_fix = np.array([(up_lat - down_lat) / (2 * h)])
            g_lon_fix = np.array([(up_lon - down_lon) / (2 * h)])
            chained = self._chain(g_lat_fix, g_lon_fix, np.array([n - 1]), steps)
            fix.append(chained[0] / _RECOVERY_KM)
        return np.vstack([jac_toa, self.prior, np.array(fix)])

    def start_at_truth(self, truth: xr.Dataset) -> np.ndarray:
        """The true ``z`` as far as the truth states it (the velocities at the launch and at
        the surfacing, which it does not, those of the first and last cycles): where Gauss-
        Newton starts, so that it finds the optimum near the truth and not a local one near
        a straight line (an eddying float strays hundreds of km from one)."""
        mu = np.array([float(truth["mean_velocity_east"]), float(truth["mean_velocity_north"])])
        velocity = np.stack([truth["velocity_east"].values, truth["velocity_north"].values], 1)
        eddy = velocity / M_PER_S - mu
        lat = np.r_[self.start[0], truth["lat"].values, self.fix[0]]
        lon = np.r_[self.start[1], truth["lon"].values, self.fix[1]]
        east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
        n = self.dt.size
        per_step = np.empty((n, 4))
        per_step[:, :2] = np.stack([east, north], 1) - mu * self.dt[:, None]
        per_step[:, 2:] = np.vstack([eddy, eddy[-1:]])
        return np.concatenate([eddy[0], per_step.ravel(), mu])

    def solve(
        self, z: np.ndarray, iterations: int = 100
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The MAP track ``(lat, lon)`` at the cycles and the velocity ``(T, 2)`` (east, north
        km/day, instantaneous) at each, by Gauss-Newton with halving from ``z``
        (:meth:`start_at_truth`)."""
        cost = np.sum(self.residuals(z) ** 2)
        for _ in range(iterations):
            r, jac = self.residuals(z), self.jacobian(z)
            step = np.linalg.solve(jac.T @ jac + 1e-9 * np.eye(z.size), -jac.T @ r)
            for _ in range(20):
                new_cost = np.sum(self.residuals(z + step) ** 2)
                if new_cost <= cost:
                    break
                step = step / 2
            if cost - new_cost < 1e-9 * max(cost, 1.0):
                z = z + step if new_cost <= cost else z
                break
            z, cost = z + step, new_cost
        lat, lon = positions(self.start, self._steps(z))
        velocity = self._u(z)[1:] + z[-2:][None, :]
        return lat[:-1], lon[:-1], velocity[:-1]


def errors(lat: np.ndarray, lon: np.ndarray, truth: xr.Dataset) -> np.ndarray:
    return great_circle_km(lat, lon, truth["lat"].values, truth["lon"].values)


def velocity_rms(velocity: np.ndarray, truth: xr.Dataset) -> float:
    """rms error (km/day, per axis) of the velocities ``(T, 2)`` (east, north km/day) at the
    cycles against the truth's instantaneous velocity there (NaN rows left out)."""
    true = np.stack([truth["velocity_east"].values, truth["velocity_north"].values], 1)
    error = velocity - true / M_PER_S
    return float(np.sqrt(np.nanmean(error**2)))


def drifting_worlds(count: int, days: tuple[int, int], seed: int) -> list[World]:
    """The first ``count`` drifting worlds (:func:`~rankmodels.tracking.worlds.draw_world`
    with lengths in ``days``) drawn from seeds ``seed, seed + 1, ...``."""
    out: list[World] = []
    while len(out) < count:
        world = draw_world(seed, days=days)
        seed += 1
        if world.trajectory == "drift":
            out.append(world)
    return out


def track_velocity(track: xr.Dataset) -> np.ndarray:
    """``(T, 2)`` (east, north km/day): the Lagrangian motion's smoothed velocity, or the
    random walk's centred differences of its positions (NaN at the ends)."""
    if "velocity_east" in track:
        v = np.stack([track.velocity_east.values, track.velocity_north.values], 1)
        return v / M_PER_S
    lat, lon = track["lat"].values, track["lon"].values
    east, north = tangent_offsets(lat[:-2], lon[:-2], lat[2:], lon[2:])
    span = (track["time"].values[2:] - track["time"].values[:-2]) / np.timedelta64(1, "D")
    v = np.full((lat.size, 2), np.nan)
    v[1:-1] = np.stack([east, north], 1) / span[:, None]
    return v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floats", type=int, default=20, help="drifting worlds")
    parser.add_argument("--days", type=int, nargs=2, default=(200, 730))
    parser.add_argument("--seed", type=int, default=0, help="first world seed")
    parser.add_argument("--motions", nargs="+", default=["lagrangian", "random-walk"])
    args = parser.parse_args()
    ratios: dict[str, list[tuple[float, float, float]]] = {m: [] for m in args.motions}
    for world in drifting_worlds(args.floats, tuple(args.days), args.seed):
        record, truth = simulate_world(world)
        oracle_problem = Oracle(record, truth, world.sigma)
        lat, lon, velocity = oracle_problem.solve(oracle_problem.start_at_truth(truth))
        oracle, oracle_v = errors(lat, lon, truth), velocity_rms(velocity, truth)
        line = (f"world {world.seed} {world.days} d sigma {world.sigma:.1f} P_D "
                f"{world.p_detect:.2f} clutter {world.clutter_rate:.2f} multipath "
                f"{world.multipath:.3f}{' mismatch' if world.geometric else ''} eddies "
                f"{world.eddy_speed:.1f} km/day tau {world.time_scale:.1f} d: oracle "
                f"{np.median(oracle):.2f} / {np.percentile(oracle, 90):.2f} km, "
                f"{oracle_v:.2f} km/day")  # fmt: skip
        for motion in args.motions:
            config = TrackConfig(calibrate=True, multipath=COMMAND_MULTIPATH, motion=motion,
                                 particles=COMMAND_PARTICLES, seed=world.seed)  # fmt: skip
            track, _ = track_float(record, config)
            err = errors(track["lat"].values, track["lon"].values, truth)
            ratio = (np.median(err) / np.median(oracle),
                     np.percentile(err, 90) / np.percentile(oracle, 90),
                     velocity_rms(track_velocity(track), truth) / oracle_v)  # fmt: skip
            ratios[motion].append(ratio)
            line += (f"; {motion} {np.median(err):.2f} / {np.percentile(err, 90):.2f} km "
                     f"({ratio[0]:.2f}x / {ratio[1]:.2f}x, velocity {ratio[2]:.2f}x)")  # fmt: skip
        print(line, flush=True)
    for motion, values in ratios.items():
        med, p90, vel = np.mean(values, axis=0)
        lo, hi = np.min(values, axis=0), np.max(values, axis=0)
        print(f"{motion}: median {med:.2f}x the oracle's on average ({lo[0]:.2f}-{hi[0]:.2f}), "
              f"p90 {p90:.2f}x ({lo[1]:.2f}-{hi[1]:.2f}), daily velocity rms {vel:.2f}x "
              f"({lo[2]:.2f}-{hi[2]:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
