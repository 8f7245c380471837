"""Checks that an HTML report travels alone: what it refers to outside itself, and its embedded
images decoded."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser

from matplotlib.figure import Figure
from PIL import Image

from rankmodels.plots.tracking import figure_png

_URL_ATTRS = {"src", "href", "srcset", "poster", "data", "action", "background", "xlink:href"}
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]*)", re.I)
_DATA_PNG = "data:image/png;base64,"


class _References(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.images: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self._in_style = tag == "style"
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        for name, value in attrs:
            if name in _URL_ATTRS and value is not None:
                self.urls.append(value)
            if name == "style" and value:
                self.urls += _CSS_URL.findall(value)
        if tag == "link" or tag == "script" and dict(attrs).get("src"):
            self.urls.append(f"<{tag}>")

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.urls += _CSS_URL.findall(data) + re.findall(r"@import\s+['\"]([^'\"]+)", data)


def external_references(html_text: str) -> list[str]:
    """Every URL the page refers to (attributes, inline CSS ``url()``/``@import``, ``<link>``)
    that is not a ``data:`` URI or a fragment inside the page."""
    parser = _References()
    parser.feed(html_text)
    parser.close()
    return [u for u in parser.urls if not (u.startswith("data:") or u.startswith("#"))]


def decoded_images(html_text: str) -> list[tuple[bytes, Image.Image]]:
    """``(png bytes, decoded image)`` of every ``<img src="data:image/png;base64,...">``, in page
    order; asserts that each is such a URI and decodes as a whole PNG."""
    parser = _References()
    parser.feed(html_text)
    out = []
    for url in parser.images:
        assert url.startswith(_DATA_PNG), url[:60]
        png = base64.b64decode(url[len(_DATA_PNG) :], validate=True)
        image = Image.open(io.BytesIO(png))
        assert image.format == "PNG"
        image.load()  # decodes every pixel: a truncated or corrupt PNG raises
        out.append((png, image))
    return out


def tiny_png(k: int = 0) -> bytes:
    """A small PNG, ``20 + 10 k`` by 20 pixels."""
    return figure_png(Figure(figsize=((20 + 10 * k) / 10, 2.0)), dpi=10)
