"""Greedy placement of map labels (source names) away from the track and from each other."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LABEL_FONTSIZE = 7.5
CANDIDATES: tuple[tuple[float, float, str, str], ...] = (
    # (x offset pt, y offset pt, horizontal alignment, vertical alignment), in preference order
    (7.0, 4.0, "left", "bottom"),
    (-7.0, 4.0, "right", "bottom"),
    (7.0, -4.0, "left", "top"),
    (-7.0, -4.0, "right", "top"),
    (0.0, 9.0, "center", "bottom"),
    (0.0, -9.0, "center", "top"),
)
Box = tuple[float, float, float, float]  # left, right, bottom, top


def label_box(
    anchor: np.ndarray, cand: tuple[float, float, str, str], w: float, h: float, per_pt: float
) -> Box:
    """The ``w`` x ``h`` text box of candidate ``cand`` at ``anchor`` (data units; ``per_pt``
    data units per typographic point)."""
    dx, dy, ha, va = cand
    x, y = anchor[0] + dx * per_pt, anchor[1] + dy * per_pt
    left = {"left": x, "right": x - w, "center": x - w / 2}[ha]
    bottom = {"bottom": y, "top": y - h}[va]
    return left, left + w, bottom, bottom + h


def _inside(points: np.ndarray, box: Box, margin: float = 0.0) -> np.ndarray:
    return (
        (points[:, 0] >= box[0] - margin)
        & (points[:, 0] <= box[1] + margin)
        & (points[:, 1] >= box[2] - margin)
        & (points[:, 1] <= box[3] + margin)
    )


def place_labels(
    anchors: np.ndarray,
    texts: list[str],
    obstacles: np.ndarray,
    markers: np.ndarray,
    per_pt: float,
    bounds: Box,
    *,
    avoid: Sequence[Box] = (),
    fontsize: float = LABEL_FONTSIZE,
) -> list[tuple[float, float, str, str] | None]:
    """For each anchor (``(n, 2)`` data x, y) the candidate offset whose estimated text box
    covers the fewest ``obstacles`` points (the track), ``markers`` (other than the anchor),
    already placed labels or boxes to ``avoid`` (an inset), and stays inside ``bounds`` (left,
    right, bottom, top); weights 1 / 50 / 100 / 200. The text size is estimated from
    ``fontsize``. None for NaN anchors.
    """
    placed: list[Box] = list(avoid)
    out: list[tuple[float, float, str, str] | None] = []
    obstacles = obstacles[np.isfinite(obstacles).all(axis=1)]
    markers = markers[np.isfinite(markers).all(axis=1)]
    for anchor, text in zip(anchors, texts, strict=True):
        if not np.isfinite(anchor).all():
            out.append(None)
            continue
        lines = text.split("\n")
        w = (0.56 * fontsize * max(len(line) for line in lines) + 2.0) * per_pt
        h = 1.2 * fontsize * len(lines) * per_pt
        others = markers[np.any(markers != anchor, axis=1)]
        best, best_box, best_cost = (
            CANDIDATES[0],
            label_box(anchor, CANDIDATES[0], w, h, per_pt),
            np.inf,
        )
        for cand in CANDIDATES:
            box = label_box(anchor, cand, w, h, per_pt)
            overlaps = sum(
                box[0] < p[1] and p[0] < box[1] and box[2] < p[3] and p[2] < box[3] for p in placed
            )
            outside = (
                box[0] < bounds[0] or box[1] > bounds[1] or box[2] < bounds[2] or box[3] > bounds[3]
            )
            cost = (
                _inside(obstacles, box).sum()
                + 50.0 * _inside(others, box, 6.0 * per_pt).sum()
                + 100.0 * overlaps
                + 200.0 * outside
            )
            if cost < best_cost:
                best, best_box, best_cost = cand, box, cost
        placed.append(best_box)
        out.append(best)
    return out
