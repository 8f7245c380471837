"""Where a map's overview inset can go: a box on the map that covers nothing drawn.

Everything drawn on a map (track, truth, uncertainty band, markers, labels, scale bar) is
described as one shapely geometry in the map's projected coordinates, each piece widened by
its drawn half-width; :func:`free_box` looks for an inset box of a given aspect ratio along
the map's edges that does not meet it. Pure geometry: no matplotlib, no cartopy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry

Box = tuple[float, float, float, float]
"""left, right, bottom, top (projected map units)."""

INSET_SIZES = (0.34, 0.3, 0.26, 0.22)
"""Largest width and height of the inset as fractions of the map's, tried in this order."""
GRID = 9
"""Positions tried along each side of the map (corners included)."""


def polyline_geometry(xy: np.ndarray, half_width: float) -> BaseGeometry:
    """The polyline through the finite rows of ``xy`` ``(n, 2)``, broken at non-finite rows,
    widened by ``half_width``; a finite point without a finite neighbour becomes a disc of
    radius ``half_width``. Empty geometry when nothing is finite."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    ok = np.isfinite(xy).all(axis=1)
    pieces = []
    start = None
    for i, good in enumerate(np.r_[ok, False]):
        if good and start is None:
            start = i
        elif not good and start is not None:
            run = xy[start:i]
            shape = shapely.LineString(run) if len(run) > 1 else shapely.Point(run[0])
            pieces.append(shape.buffer(half_width))
            start = None
    return shapely.union_all(pieces) if pieces else shapely.GeometryCollection()


def points_geometry(xy: np.ndarray, radius: float) -> BaseGeometry:
    """Discs of ``radius`` around the finite rows of ``xy`` ``(n, 2)``."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    return (
        shapely.union_all(shapely.points(xy).tolist()).buffer(radius)
        if len(xy)
        else (shapely.GeometryCollection())
    )


def candidate_boxes(bounds: Box, width: float, height: float) -> list[Box]:
    """Boxes of ``width`` x ``height`` inside ``bounds`` touching its edges: the four corners
    (upper right, upper left, lower right, lower left), then :data:`GRID` - 2 positions along
    each side, nearest a corner first."""
    x0, x1, y0, y1 = bounds
    xs = np.linspace(x0, x1 - width, GRID)
    ys = np.linspace(y0, y1 - height, GRID)
    corners = [(xs[-1], ys[-1]), (xs[0], ys[-1]), (xs[-1], ys[0]), (xs[0], ys[0])]
    inner = np.r_[1 : GRID - 1]
    rank = np.minimum(inner, GRID - 1 - inner)  # steps from the nearest corner
    edges = []
    for i in inner[np.argsort(rank, kind="stable")]:
        edges += [(xs[i], ys[-1]), (xs[-1], ys[i]), (xs[0], ys[i]), (xs[i], ys[0])]
    return [(x, x + width, y, y + height) for x, y in corners + edges]


def inset_size(bounds: Box, aspect: float, size: float) -> tuple[float, float]:
    """Width and height of an inset of ``aspect`` (width / height) whose larger relative
    side is ``size`` of the map's (``bounds``)."""
    x0, x1, y0, y1 = bounds
    width = min(size * (x1 - x0), size * (y1 - y0) * aspect)
    return width, width / aspect


def free_box(
    bounds: Box,
    aspect: float,
    drawn: BaseGeometry,
    clearance: float = 0.0,
    sizes: Sequence[float] = INSET_SIZES,
) -> Box | None:
    """The first box of :func:`candidate_boxes` (sizes in the order of ``sizes``, each with
    :func:`inset_size`) that stays ``clearance`` away from ``drawn``; None when every one
    meets it."""
    for size in sizes:
        for box in candidate_boxes(bounds, *inset_size(bounds, aspect, size)):
            if not shapely.box(box[0], box[2], box[1], box[3]).buffer(clearance).intersects(drawn):
                return box
    return None


def growth(bounds: Box, aspect: float, clearance: float, size: float = INSET_SIZES[0]) -> Box:
    """How much to add to ``bounds`` (left, right, bottom, top) to make an empty strip that
    holds the inset of ``size`` of the grown map (:func:`inset_size`) with ``clearance``
    around it: on top, or on the right when that adds less of the map's area."""
    x0, x1, y0, y1 = bounds
    width, height = x1 - x0, y1 - y0
    top = right = 0.0
    for _ in range(50):  # fixed point: the inset grows with the map it is a fraction of
        top = inset_size((x0, x1, y0, y1 + top), aspect, size)[1] + 2.0 * clearance
        right = inset_size((x0, x1 + right, y0, y1), aspect, size)[0] + 2.0 * clearance
    if right / width < top / height:
        return 0.0, right, 0.0, 0.0
    return 0.0, 0.0, 0.0, top
