"""Files in the decoders' layouts, written from a float record by the layouts as their public
sources state them (the Coriolis Argo decoder's NEMO and trajectory readers, the Seaglider
basestation's log table), independently of rankmodels.tracking.decoders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

ORDINALS = ("1ST", "2ND", "3RD", "4TH", "5TH", "6TH")


def _six(values: np.ndarray) -> np.ndarray:
    """``(T, R)`` -> ``(T, 6)`` padded with NaN."""
    out = np.full((values.shape[0], 6), np.nan)
    out[:, : values.shape[1]] = values
    return out


def _per_cycle(record: xr.Dataset, name: str) -> np.ndarray:
    n = record.sizes["cycle"]
    return np.asarray(record[name].values, dtype=float) if name in record else np.full(n, np.nan)


def write_nemo(record: xr.Dataset, path: Path, status: np.ndarray | None = None) -> None:
    """One ``.profile`` file: a [FLOAT_IDENTIFICATION] section, then [RAFOS_VALUES_FORMAT] (one
    tab-separated name line: a sample number, the date and time in columns 2-7, the named
    columns) and [RAFOS_VALUES] (one line per cycle; NaN for a missing value)."""
    names = ["#", "year", "month", "day", "hour", "minute", "second", "status"]
    names += [f"{o}CORHEIGHT" for o in ORDINALS] + [f"{o}TRAVELTIME" for o in ORDINALS]
    names += ["pressure", "temp", "salinity"]
    toa = _six(record["toa"].values)
    cor = _six(record["correlation"].values)
    status = np.full(record.sizes["cycle"], 2) if status is None else status
    lines = ["[FLOAT_IDENTIFICATION]", "float_id\t1", "[RAFOS_VALUES_FORMAT]", "\t".join(names)]
    lines.append("[RAFOS_VALUES]")
    p, t, s = (_per_cycle(record, n) for n in ("pressure", "temperature", "salinity"))
    for i, when in enumerate(record["time"].values.astype("datetime64[s]")):
        date = str(when)
        stamp = [date[0:4], date[5:7], date[8:10], date[11:13], date[14:16], date[17:19]]
        cells = [str(i + 1), *[str(int(x)) for x in stamp], str(int(status[i]))]
        cells += [repr(float(x)) for x in (*cor[i], *toa[i], p[i], t[i], s[i])]
        lines.append("\t".join("NaN" if c == "nan" else c for c in cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_argo_aux(
    record: xr.Dataset,
    path: Path,
    status: np.ndarray | None = None,
    raw: bool = False,
    surface: list[tuple[np.datetime64, float, float]] = (),
) -> None:
    """A trajectory auxiliary file: per measurement ``JULD`` (days since 1950-01-01),
    ``RAFOS_STATUS``, six ``COR`` and ``TOA`` (or ``RAW_TOA`` counts, TOA = RAW * 0.3075 - 80),
    ``PRES``/``TEMP``/``PSAL``; ``surface`` adds measurements with a position and no RAFOS
    data (fill values 99999, as Argo writes them)."""
    n = record.sizes["cycle"]
    times = list(record["time"].values.astype("datetime64[ns]"))
    toa = _six(record["toa"].values)
    cor = _six(record["correlation"].values)
    status = np.full(n, 2.0) if status is None else np.asarray(status, dtype=float)
    lat = np.full(n, np.nan)
    lon = np.full(n, np.nan)
    for when, y, x in surface:
        times.append(np.datetime64(when, "ns"))
        toa = np.vstack([toa, np.full(6, np.nan)])
        cor = np.vstack([cor, np.full(6, np.nan)])
        status = np.append(status, np.nan)
        lat, lon = np.append(lat, y), np.append(lon, x)
    m = len(times)
    extra = {
        name: np.append(_per_cycle(record, old), np.full(m - n, np.nan))
        for name, old in (("PRES", "pressure"), ("TEMP", "temperature"), ("PSAL", "salinity"))
    }
    values = {"RAW_TOA": (toa + 80.0) / 0.3075} if raw else {"TOA": toa}
    ds = xr.Dataset(
        {
            "JULD": ("N_MEASUREMENT", np.array(times, dtype="datetime64[ns]")),
            "RAFOS_STATUS": ("N_MEASUREMENT", status),
            "COR": (("N_MEASUREMENT", "N_VALUES6"), cor),
            **{k: (("N_MEASUREMENT", "N_VALUES6"), v) for k, v in values.items()},
            **{k: ("N_MEASUREMENT", v) for k, v in extra.items()},
            "LATITUDE": ("N_MEASUREMENT", lat),
            "LONGITUDE": ("N_MEASUREMENT", lon),
        }
    )
    encoding = {
        name: {"_FillValue": 99999.0} for name in ds.data_vars if ds[name].dtype.kind == "f"
    }
    encoding["JULD"] = {"units": "days since 1950-01-01 00:00:00", "dtype": "float64"}
    ds.to_netcdf(path, engine="netcdf4", encoding=encoding)


def write_seaglider(record: xr.Dataset, path: Path, index_seconds: float) -> None:
    """A dive log: ``$KEY,value`` lines and one ``$RAFOS,src,listen_s,listen_ms,source_s,
    c1..c6,i1..i6`` line per cycle (integers; index 0 for an empty slot). The record's TOAs
    must be whole multiples of ``index_seconds`` and its correlations whole numbers."""
    lines = ["version: 66.13", "$ID,541", "$RAFOS_DEVICE,1", "$RAFOS_CORR_THRESH,60"]
    toa = np.nan_to_num(_six(record["toa"].values), nan=0.0)
    cor = np.nan_to_num(_six(record["correlation"].values), nan=0.0)
    ms = record["time"].values.astype("datetime64[ms]").astype(np.int64)
    for i in range(record.sizes["cycle"]):
        index = np.rint(toa[i] / index_seconds).astype(int)
        cells = [0, ms[i] // 1000, ms[i] % 1000, ms[i] // 1000, *cor[i].astype(int), *index]
        lines.append("$RAFOS," + ",".join(str(int(c)) for c in cells))
    lines.append("$GPS,240109,120000,-5600.0,-10500.0")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
