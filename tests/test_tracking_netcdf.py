"""write_netcdf: the same NetCDF4 file as xarray's to_netcdf, without importing dask.distributed."""

from __future__ import annotations

import subprocess
import sys

import netCDF4
import numpy as np
import pytest
import xarray as xr

from rankmodels.tracking.netcdf import write_netcdf
from rankmodels.tracking.records import compressed_encoding


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(3)
    time = np.datetime64("2009-01-23T00:00") + np.arange(5) * np.timedelta64(1, "D")
    ds = xr.Dataset(
        {
            "lat": ("cycle", rng.normal(-58, 1, 5), {"units": "degrees_north"}),
            "toa": (("cycle", "rank"), np.where(rng.random((5, 4)) < 0.2, np.nan, 1.5)),
            "association": (("cycle", "rank"), rng.integers(-2, 12, (5, 4)).astype(np.int16)),
            "source_lat": ("source", [-59.9, -56.0, -58.1]),
            "launch_time": ((), np.datetime64("2009-01-22T12:00", "ns")),
            "message": ("check", np.array(["passed", "failed: 3 > 2"])),
        },
        coords={"time": ("cycle", time), "source": ("source", ["US1-1", "US1-2", "US1-3"])},
        attrs={"float_id": "767", "particles": np.int64(10_000), "sigma": 5.0},
    )
    return ds


def _describe(path) -> dict:
    """Per variable: dtype, dimensions, filters and attributes as the netCDF4 library sees them."""
    with netCDF4.Dataset(path) as nc:
        out = {"__global__": {k: str(nc.getncattr(k)) for k in nc.ncattrs()}}
        for name, var in nc.variables.items():
            attrs = {k: str(var.getncattr(k)) for k in var.ncattrs()}
            out[name] = (str(var.dtype), var.dimensions, var.filters(), attrs)
        return out


@pytest.mark.parametrize("compress", [True, False])
def test_write_netcdf_writes_what_to_netcdf_writes(tmp_path, compress):
    ds = _dataset()
    encoding = compressed_encoding(ds) if compress else None
    ours, xarrays = tmp_path / "ours.nc", tmp_path / "xarray.nc"
    write_netcdf(ds, ours, encoding)
    ds.to_netcdf(xarrays, engine="netcdf4", encoding=encoding)
    assert _describe(ours) == _describe(xarrays)
    with xr.open_dataset(ours) as a, xr.open_dataset(xarrays) as b:
        xr.testing.assert_identical(a, b)
        xr.testing.assert_identical(a, ds)
    assert _describe(ours)["toa"][2]["zlib"] is compress


def test_write_netcdf_replaces_an_existing_file(tmp_path):
    path = tmp_path / "x.nc"
    write_netcdf(_dataset(), path)
    smaller = _dataset().isel(cycle=slice(0, 2))
    write_netcdf(smaller, path)
    with xr.open_dataset(path) as back:
        assert back.sizes["cycle"] == 2


def test_write_netcdf_does_not_import_dask_distributed(tmp_path):
    code = (
        "import sys, xarray as xr\n"
        "from rankmodels.tracking.netcdf import write_netcdf\n"
        f"write_netcdf(xr.Dataset({{'a': ('x', [1.0, 2.0])}}), {str(tmp_path / 'a.nc')!r})\n"
        "print('distributed' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
