"""HTML report of a tracking run: content, escaping, relative images, well-formedness."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankmodels.plots.report import tracking_report
from rankmodels.plots.track_summary import collapsed_cycles, source_table
from rankmodels.text import printable
from tests._plots_data import make_float

IMAGES = {"map": "map.png", "toa": "toa.png", "diagnostics": "diagnostics.png"}
VOID = {"meta", "img", "br", "hr", "link", "input"}


class Collector(HTMLParser):
    """Checks that tags nest properly and collects tags, attributes and table rows."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.starts: list[tuple[str, dict]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.starts.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "table":
            self._table = dict(attrs).get("class", "")
            self.tables[self._table] = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()
        if tag in ("td", "th"):
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr":
            self.tables[self._table].append(self._row)
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(html_text: str) -> Collector:
    p = Collector()
    p.feed(html_text)
    p.close()
    assert p.stack == [], f"unclosed tags {p.stack}"
    return p


@pytest.fixture(scope="module")
def sample():
    return make_float(n_cycles=60, seed=3)


def test_report_is_well_formed_and_references_the_images_relatively(sample):
    _, track, _ = sample
    page = parse(tracking_report(track, {"Run time (s)": 3.21}, IMAGES))
    srcs = [attrs["src"] for tag, attrs in page.starts if tag == "img"]
    assert srcs == list(IMAGES.values())
    assert all(attrs.get("alt") for tag, attrs in page.starts if tag == "img")
    # self-contained: inline CSS, no external stylesheet or script
    tags = {tag for tag, _ in page.starts}
    assert "style" in tags and "link" not in tags and "script" not in tags
    summary = dict(page.tables["summary"])
    assert summary["Run time (s)"] == "3.21"
    assert summary["Float"] == "767"
    assert summary["Listening cycles"] == "60"
    assert summary["Particles"] == "1000"
    assert summary["Likelihood engine"] == "exact"
    assert summary["Simulated data"] == "yes"
    clutter = (track["association"].values == -1).sum() / (track["association"].values >= -1).sum()
    assert summary["Arrivals called clutter"] == f"{100 * clutter:.1f} %"
    assert float(summary["Mean ESS"]) == pytest.approx(track["ess"].values.mean(), rel=1e-3)


def test_pipeline_summary_keys_replace_rows_instead_of_duplicating(sample):
    _, track, _ = sample
    summary = {
        "cycles": 60,
        "arrivals": 7,
        "mean_ess": 123.4,
        "clutter_fraction": 0.25,
        "collapsed_cycles": [3, 17],
        "engine": "bp",
        "smoothed": True,
        "run_time_s": 53.71,
        "my_extra": "<kept>",
    }
    rows = parse(tracking_report(track, summary, IMAGES)).tables["summary"]
    labels = [r[0] for r in rows]
    assert len(labels) == len(set(labels))
    shown = dict(rows)
    assert shown["Listening cycles"] == "60" and shown["Recorded arrivals"] == "7"
    assert shown["Arrivals called clutter"] == "25.0 %"
    assert shown["Collapsed cycles"] == "2"
    assert shown["Likelihood engine"] == "bp" and shown["Smoothed"] == "yes"
    assert shown["Run time"] == "53.7 s" and shown["my_extra"] == "<kept>"


def test_per_source_table_matches_a_direct_count(sample):
    _, track, _ = sample
    page = parse(tracking_report(track, {}, IMAGES))
    rows = page.tables["sources"]
    header, body = rows[0], rows[1:]
    col = {name: k for k, name in enumerate(header)}
    labels = track["association"].values
    probs = track["association_prob"].values
    post = track["association_posterior"].values
    names = [*map(str, track["source"].values), "clutter"]
    assert [r[0] for r in body] == names
    for k, row in enumerate(body):
        idx = k if k < len(names) - 1 else -1
        mask = labels == idx
        assert int(row[col["Arrivals associated"]]) == mask.sum()
        if mask.any():
            assert float(row[col["Mean association probability"]]) == pytest.approx(
                probs[mask].mean(), abs=5e-4
            )
        expected = np.nansum(post[..., idx])
        assert float(row[col["Expected arrivals (Σ posterior)"]]) == pytest.approx(
            expected, abs=0.05
        )


def test_everything_inserted_is_escaped(sample):
    _, track, _ = sample
    tr = track.copy(deep=True)
    evil = '<script>alert("x")</script>'
    tr.attrs["float_id"] = evil
    tr.attrs["engine"] = "<b>bp</b>"
    names = list(map(str, tr["source"].values))
    names[0] = "<img src=x onerror=alert(1)>"
    tr = tr.assign_coords(source=names, candidate=[*names, "clutter"])
    html_text = tracking_report(
        tr, {"<i>key</i>": "<u>value</u>"}, {"map": 'we"ird <map>.png', "<toa>": "toa.png"}
    )
    assert "<script>" not in html_text and "<b>" not in html_text and "<u>" not in html_text
    assert "<img src=x" not in html_text and "<i>key" not in html_text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html_text
    page = parse(html_text)
    assert "".join(page.text).count(evil) >= 2  # title and heading show the id verbatim
    srcs = [attrs["src"] for tag, attrs in page.starts if tag == "img"]
    assert srcs == ["we%22ird%20%3Cmap%3E.png", "toa.png"]
    assert [r[0] for r in page.tables["sources"][1:]][0] == names[0]


@pytest.mark.parametrize(
    "path", ["/tmp/map.png", "file:///etc/passwd", "https://example.org/map.png", "javascript:x"]
)
def test_non_relative_image_paths_are_refused(sample, path):
    _, track, _ = sample
    with pytest.raises(ValueError, match="relative"):
        tracking_report(track, {}, {"map": path})


def test_collapse_note_lists_the_collapsed_cycles(sample):
    _, track, _ = sample
    calm = tracking_report(track, {}, IMAGES)
    assert "did not collapse" in calm and 'class="note"' not in calm
    tr = track.copy(deep=True)
    tr["ess"][4] = 1.0
    tr["loglik"][9] = -np.inf
    page = tracking_report(tr, {}, IMAGES)
    assert collapsed_cycles(tr).sum() == 2
    note = re.search(r'<p class="note">(.*?)</p>', page, re.S).group(1)
    days = [str(np.datetime_as_string(tr["time"].values[c], unit="D")) for c in (4, 9)]
    assert "2 cycles" in note and all(d in note for d in days)
    assert dict(parse(page).tables["summary"])["Collapsed cycles"] == "2"
    # the filter's own flag takes precedence over the ESS rule
    tr["collapsed"] = ("cycle", np.arange(tr.sizes["cycle"]) == 30)
    note = re.search(r'<p class="note">(.*?)</p>', tracking_report(tr, {}, IMAGES), re.S).group(1)
    assert "1 cycle " in note and "flagged by the filter" in note


def test_simulated_badge_only_for_simulated_runs(sample):
    _, track, _ = sample
    assert "simulated data</span>" in tracking_report(track, {}, IMAGES)
    tr = track.copy()
    tr.attrs = {**track.attrs, "simulated": 0}
    html_text = tracking_report(tr, {}, IMAGES)
    assert "simulated data</span>" not in html_text
    assert dict(parse(html_text).tables["summary"])["Simulated data"] == "no"


def test_source_table_rejects_foreign_association_codes(sample):
    _, track, _ = sample
    tr = track.copy(deep=True)
    tr["association"][2, 1] = -3
    with pytest.raises(ValueError, match="-3"):
        source_table(tr)


_FUZZ_TRACK = make_float(n_cycles=8, seed=5)[1]
_REPORT_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "span", "p", "h2", "table", "tr",
    "th", "td", "figure", "img", "figcaption", "footer",
}  # fmt: skip


_HTML_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Characters HTML forbids in a document (C0 controls other than tab/LF/CR, DEL, C1)."""


@settings(max_examples=60, deadline=None)
@given(float_id=st.text(max_size=30), source=st.text(min_size=1, max_size=20), value=st.text())
@example(float_id="\x00", source="\x00", value="\x00")  # issue 13: the NUL reached the HTML
@example(float_id="a\x00b\x7f", source="\x00x\x1b[31m", value="\x85\x9f\x0c")
def test_arbitrary_strings_never_become_markup(float_id, source, value):
    tr = _FUZZ_TRACK.copy()
    tr.attrs = {**_FUZZ_TRACK.attrs, "float_id": float_id}
    names = [source, *map(str, tr["source"].values[1:])]
    tr = tr.assign_coords(source=names, candidate=[*names, "clutter"])
    html_text = tracking_report(tr, {"note": value}, {"map": "map.png"})
    assert not _HTML_CONTROLS.search(html_text)
    html_text.encode("utf-8")  # no lone surrogates either
    page = parse(html_text)
    assert {tag for tag, _ in page.starts} <= _REPORT_TAGS
    assert sum(tag == "img" for tag, _ in page.starts) == 1
    summary = dict(page.tables["summary"])
    assert summary["note"] == printable(value).strip()
    assert summary["Float"] == printable(float_id).strip()
    stored = str(tr["source"].values[0])  # numpy's fixed-width strings drop trailing NULs
    assert page.tables["sources"][1][0] == printable(stored).strip()
