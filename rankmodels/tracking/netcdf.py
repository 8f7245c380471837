"""Write an in-memory dataset as NetCDF4 without xarray's dask scheduler probe.

``xarray.Dataset.to_netcdf`` asks dask which scheduler is active before every write (to
decide on closing files between dask writes and on a distributed lock), and that question
imports ``dask.distributed`` with tornado and some 150 other modules: about 0.25 s on the
first write of a process, more than compressing and writing a 10,000-particle track.
:func:`write_netcdf` hands the dataset to xarray's netCDF4 store directly, under xarray's
own netCDF4 lock, which is what ``to_netcdf`` does for numpy-backed data (the same CF
encoding, the same file). Datasets holding dask arrays go through ``to_netcdf``.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping

import xarray as xr
from xarray.backends import NetCDF4DataStore

__all__ = ["write_netcdf"]


def write_netcdf(
    ds: xr.Dataset,
    path: str | os.PathLike[str],
    encoding: Mapping[Hashable, Mapping[str, object]] | None = None,
) -> None:
    """Write ``ds`` to ``path`` as NetCDF4 (netCDF4 library) with per-variable ``encoding``
    (as ``to_netcdf``'s), replacing any file there."""
    if any(v.chunks is not None for v in ds.variables.values()):
        ds.to_netcdf(os.fspath(path), engine="netcdf4", encoding=dict(encoding or {}))
        return
    # xarray's process-wide lock around the netCDF4/HDF5 library, which is not thread-safe
    from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK

    store = NetCDF4DataStore.open(os.fspath(path), mode="w", lock=NETCDF4_PYTHON_LOCK)
    try:
        ds.dump_to_store(store, encoding=dict(encoding or {}))
    finally:
        store.close()
