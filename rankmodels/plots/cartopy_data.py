"""Offline Natural Earth data for cartopy maps.

cartopy downloads Natural Earth shapefiles on first use. There is no network at run time, so the
package ships the public-domain 110m and 50m ``coastline`` and ``land`` shapefiles under
``rankmodels/_data/cartopy/shapefiles/natural_earth/physical/`` (package data) and uses only
those.

Two ways in:

* :func:`natural_earth_feature` reads a shipped shapefile directly and returns a cartopy
  ``ShapelyFeature``. It never touches cartopy's downloader or its global config, so the maps of
  :mod:`rankmodels.plots.tracking` cannot trigger a download whatever the user's configuration.
* :func:`use_shipped_natural_earth` points ``cartopy.config["pre_existing_data_dir"]`` at the
  shipped folder, so plain cartopy calls (``ax.coastlines()``, ``cfeature.LAND``) also work offline.

Policy for the global setting (documented choice): a user who configured their own
``pre_existing_data_dir`` (through ``CARTOPY_DATA_DIR``, a cartopy site/user config or by
assignment) keeps it -- their folder may hold data sets we do not ship. Only the default (empty,
``"."``) or an already-shipped setting is replaced; calling the function again changes nothing.
Our own maps do not depend on that setting (they use :func:`natural_earth_feature`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

SHIPPED_DATA_DIR = Path(__file__).resolve().parents[1] / "_data" / "cartopy"
"""The folder laid out as cartopy's ``pre_existing_data_dir`` expects."""

SHIPPED_SCALES: tuple[str, ...] = ("110m", "50m")
SHIPPED_NAMES: tuple[str, ...] = ("coastline", "land")

# The value cartopy uses when nobody configured a pre-existing data dir: Path("") == Path(".").
_UNSET = Path("")


def shipped_shapefile(name: str, scale: str) -> Path:
    """Path of the shipped Natural Earth ``physical`` shapefile ``ne_{scale}_{name}.shp``.

    Raises ``ValueError`` for a name or scale that is not shipped (only 110m/50m coastline/land)
    and ``FileNotFoundError`` if the package data is missing from the installation.
    """
    if name not in SHIPPED_NAMES:
        raise ValueError(
            f"Natural Earth feature {name!r} is not shipped; use one of {SHIPPED_NAMES}"
        )
    if scale not in SHIPPED_SCALES:
        raise ValueError(
            f"Natural Earth scale {scale!r} is not shipped; use one of {SHIPPED_SCALES}"
        )
    path = SHIPPED_DATA_DIR / "shapefiles" / "natural_earth" / "physical" / f"ne_{scale}_{name}.shp"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: shipped Natural Earth shapefile missing (package data)")
    return path


@functools.cache
def _geometries(name: str, scale: str) -> tuple:
    """The shapely geometries of one shipped shapefile, read once per process."""
    from cartopy.io import shapereader

    return tuple(shapereader.Reader(str(shipped_shapefile(name, scale))).geometries())


def natural_earth_feature(
    name: str,
    scale: str = "50m",
    extent: tuple[float, float, float, float] | None = None,
    **kwargs,
):
    """A cartopy ``ShapelyFeature`` of the shipped ``name`` ('coastline' or 'land') at ``scale``.

    ``extent = (lon_min, lon_max, lat_min, lat_max)`` (degrees) clips the geometries to that box
    first, which keeps regional maps fast (cartopy otherwise projects every coastline of the
    world); boxes that leave [-180, 180] in longitude are split at the antimeridian.
    ``kwargs`` are the artist properties (facecolor, edgecolor, linewidth, ...). Coastlines default
    to ``facecolor='none'``. The geometries are in plate carree (lon/lat degrees).
    """
    import cartopy.crs as ccrs
    import shapely
    from cartopy.feature import ShapelyFeature

    if name == "coastline":
        kwargs.setdefault("facecolor", "none")
    geoms = np.asarray(_geometries(name, scale), dtype=object)
    if extent is not None:
        lon_min, lon_max, lat_min, lat_max = (float(v) for v in extent)
        if not (lon_min < lon_max and lat_min < lat_max):
            raise ValueError(f"extent must be (lon_min, lon_max, lat_min, lat_max), got {extent}")
        parts = []
        for shift in (-360.0, 0.0, 360.0):  # pieces of the box that wrap around the globe
            lo, hi = max(lon_min + shift, -180.0), min(lon_max + shift, 180.0)
            if lo < hi:
                parts.append(shapely.clip_by_rect(geoms, lo, lat_min, hi, lat_max))
        geoms = np.concatenate(parts) if parts else geoms[:0]
        geoms = geoms[~shapely.is_empty(geoms)]
    return ShapelyFeature(list(geoms), ccrs.PlateCarree(), **kwargs)


def use_shipped_natural_earth() -> None:
    """Point ``cartopy.config["pre_existing_data_dir"]`` at the shipped Natural Earth folder.

    Idempotent. Leaves a user's own, non-default setting alone (see the module docstring).
    """
    import cartopy

    current = cartopy.config.get("pre_existing_data_dir", _UNSET)
    current_path = Path(current) if current not in (None, "") else _UNSET
    if current_path == _UNSET or current_path.resolve() == SHIPPED_DATA_DIR:
        cartopy.config["pre_existing_data_dir"] = SHIPPED_DATA_DIR
