"""HTML report of a tracking run: content, escaping, embedded images, well-formedness."""

from __future__ import annotations

import dataclasses
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankmodels.plots.report import track_summary_rows, tracking_report
from rankmodels.plots.track_summary import collapsed_cycles, source_table
from rankmodels.text import printable
from tests._plots_data import great_circle_km, make_float
from tests._report_check import decoded_images, external_references, tiny_png

IMAGES = {name: tiny_png(k) for k, name in enumerate(("map", "toa", "diagnostics"))}
VOID = {"meta", "img", "br", "hr", "link", "input"}


class Collector(HTMLParser):
    """Checks that tags nest properly and collects tags, attributes, headings and table rows
    (``tables[c]``: the rows of every table with class ``c``, in page order)."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.starts: list[tuple[str, dict]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.headings: list[str] = []
        self._table: list[str] | None = None
        self._heading: list[str] | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.starts.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "table":
            self._table = (dict(attrs).get("class") or "").split() or [""]
            for css_class in self._table:
                self.tables.setdefault(css_class, [])
        elif tag == "h2":
            self._heading = []
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
            for css_class in self._table:
                self.tables[css_class].append(self._row)
        elif tag == "table":
            self._table = None
        elif tag == "h2":
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


def parse(html_text: str) -> Collector:
    p = Collector()
    p.feed(html_text)
    p.close()
    assert p.stack == [], f"unclosed tags {p.stack}"
    return p


@pytest.fixture(scope="module")
def sample():
    return make_float(n_cycles=60, seed=3)


def test_report_is_well_formed_and_embeds_the_images(sample):
    _, track, _ = sample
    html_text = tracking_report(track, {"Run time (s)": 3.21}, IMAGES)
    page = parse(html_text)
    assert external_references(html_text) == []
    images = decoded_images(html_text)
    assert [png for png, _ in images] == list(IMAGES.values())  # in order, byte for byte
    assert [im.size for _, im in images] == [(20 + 10 * k, 20) for k in range(3)]
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
        tr, {"<i>key</i>": "<u>value</u>"}, {"map": IMAGES["map"], '<toa> "x"': IMAGES["toa"]}
    )
    assert "<script>" not in html_text and "<b>" not in html_text and "<u>" not in html_text
    assert "<img src=x" not in html_text and "<i>key" not in html_text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html_text
    page = parse(html_text)
    assert "".join(page.text).count(evil) >= 2  # title and heading show the id verbatim
    assert [attrs["id"] for tag, attrs in page.starts if tag == "figure"] == [
        "fig-map",
        'fig-<toa> "x"',
    ]
    assert [png for png, _ in decoded_images(html_text)] == [IMAGES["map"], IMAGES["toa"]]
    assert [r[0] for r in page.tables["sources"][1:]][0] == names[0]


@pytest.mark.parametrize(
    "page",
    [
        '<img src="map.png">',
        '<a href="https://example.org/">x</a>',
        '<link rel="stylesheet" href="style.css">',
        "<style>body { background: url('bg.png') }</style>",
        "<style>@import 'print.css';</style>",
        '<p style="background:url(http://x/y.png)">x</p>',
    ],
)
def test_the_external_reference_check_finds_each_kind(page):
    assert external_references(f"<html><body>{page}</body></html>") != []
    assert external_references('<a href="#quality">x</a><img src="data:image/png;base64,">') == []


def test_rows_are_split_into_settings_results_and_provenance(sample):
    _, track, _ = sample
    summary = {"run_time_s": 12.0, "cycles": 60, "my_extra": 1}
    page = parse(tracking_report(track, summary, IMAGES))
    assert [h for h in page.headings if h in ("Settings", "Results", "Provenance")] == [
        "Settings",
        "Results",
        "Provenance",
    ]
    settings, results, provenance = (
        [r[0] for r in page.tables[c]] for c in ("settings", "results", "provenance")
    )
    assert set(settings) == {
        "Likelihood engine",
        "Particles",
        "Seed",
        "TOA noise σ (s)",
        "Detection probability P_D",
        "Clutter rate λ (per window)",
        "Sound speed (m/s)",
        "Process noise (km per axis, 1-day step)",
        "Smoothed",
    }  # fmt: skip (the sample's attributes name no multipath model)
    assert provenance == [
        "Float", "Input file", "Simulated data", "Run time", "rankmodels version", "Created",
    ]  # fmt: skip
    assert {"Listening cycles", "Recorded arrivals", "Mean ESS", "Collapsed cycles"} <= set(results)
    assert "my_extra" in results
    # every row in exactly one table, nothing lost
    shown = settings + results + provenance
    assert len(shown) == len(set(shown)) == len(track_summary_rows(track)) + 2


def test_summary_may_be_a_mapping_or_a_dataclass(sample):
    _, track, _ = sample

    @dataclasses.dataclass(frozen=True)
    class Summary:
        cycles: int
        run_time_s: float
        collapsed_cycles: list

    as_dataclass = tracking_report(track, Summary(60, 7.25, [1, 2]), IMAGES)
    as_dict = tracking_report(
        track, {"cycles": 60, "run_time_s": 7.25, "collapsed_cycles": [1, 2]}, IMAGES
    )
    assert as_dataclass == as_dict
    assert dict(parse(as_dict).tables["provenance"])["Run time"] == "7.2 s"
    with pytest.raises(TypeError, match="mapping or a dataclass"):
        tracking_report(track, [("cycles", 60)], IMAGES)


def test_truth_comparison_matches_a_direct_computation(sample):
    _, track, truth = sample
    assert (
        "Comparison with the true track" not in parse(tracking_report(track, {}, IMAGES)).headings
    )
    page = parse(tracking_report(track, {}, IMAGES, truth=truth))
    assert "Comparison with the true track" in page.headings
    rows = dict(page.tables["truth"])
    err = great_circle_km(
        track["lat"].values, track["lon"].values, truth["lat"].values, truth["lon"].values
    )
    shown = rows["Position error of the smoothed track: median / 90th percentile / largest (km)"]
    median, p90, largest = (float(x) for x in shown.split(" / "))
    assert median == pytest.approx(np.median(err), abs=0.06)
    assert p90 == pytest.approx(np.percentile(err, 90), abs=0.06)
    assert largest == pytest.approx(err.max(), abs=0.06)
    assert "Position error of the forward filter: median / 90th percentile (km)" in rows
    true, assoc = truth["true_label"].values, track["association"].values
    heard = true >= 0
    expected = f"{100 * np.mean(assoc[heard] == true[heard]):.1f} % of {heard.sum()}"
    assert rows["True arrivals associated with their source"] == expected
    clutter = true == -1
    expected = f"{100 * np.mean(assoc[clutter] == -1):.1f} % of {clutter.sum()}"
    assert rows["Clutter arrivals called clutter"] == expected
    # a filtered-only track has no separate forward-filter row
    tr = track.copy()
    tr.attrs = {**track.attrs, "smoothed": 0}
    rows = dict(parse(tracking_report(tr, {}, IMAGES, truth=truth)).tables["truth"])
    assert not any("forward filter" in k for k in rows)
    assert any(k.startswith("Position error of the filtered track") for k in rows)


def test_truth_of_another_record_is_refused(sample):
    _, track, truth = sample
    with pytest.raises(ValueError, match="cycles"):
        tracking_report(track, {}, IMAGES, truth=truth.isel(cycle=slice(0, 10)))
    with pytest.raises(ValueError, match="true_label"):
        tracking_report(track, {}, IMAGES, truth=truth.drop_vars("true_label"))


@pytest.mark.parametrize(
    ("image", "error"),
    [
        ("map.png", TypeError),
        ("https://example.org/map.png", TypeError),
        (b"GIF89a", ValueError),
        (b"<svg onload=alert(1)>", ValueError),
    ],
)
def test_only_png_bytes_are_embedded(sample, image, error):
    _, track, _ = sample
    with pytest.raises(error, match="'map'.*PNG"):
        tracking_report(track, {}, {"map": image})


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
    html_text = tracking_report(tr, {"note": value}, {"map": IMAGES["map"]})
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


def test_two_clutter_shares_are_both_shown_and_explained(sample):
    """'Arrivals called clutter' counts most probable origins; the posterior share sums every
    arrival's clutter probability (what the clutter_excess check uses); the page says why they
    differ."""
    _, track, _ = sample
    page_text = tracking_report(track, {}, IMAGES)
    results = dict((r[0], r[1]) for r in parse(page_text).tables["results"])
    labels = track["association"].values
    recorded = labels != -2
    called = (labels[recorded] == -1).mean()
    posterior = np.nansum(track["association_posterior"].values[..., -1]) / recorded.sum()
    assert results["Arrivals called clutter"] == f"{100 * called:.1f} %"
    assert results["Clutter share by posterior probability"] == f"{100 * posterior:.1f} %"
    assert called != pytest.approx(posterior, abs=1e-3)  # the sample's two differ
    assert "most probable origin is clutter" in page_text and "clutter_excess" in page_text


def test_settings_show_the_multipath_model_and_the_calibration(sample):
    _, track, _ = sample
    tr = track.copy()
    tr.attrs = {**track.attrs, "multipath": 0.02, "multipath_delay_s": 30.0}
    settings = dict((r[0], r[1]) for r in parse(tracking_report(tr, {}, IMAGES)).tables["settings"])
    assert settings["Multipath share P_M"] == "0.02"
    assert settings["Mean multipath delay μ_D (s)"] == "30"
    # a calibrated track: the estimated multipath and what the calibration did, in the settings
    cal = tr.assign(
        sound_speed=1480.0, sound_speed_std=np.nan, clock_offset=0.0, clock_offset_std=np.nan,
        clock_drift=0.0, clock_drift_std=np.nan, multipath=0.03, multipath_std=0.004,
        multipath_delay=28.0, multipath_delay_std=3.0,
        source_offset_correction=("source", np.zeros(tr.sizes["source"])),
    )  # fmt: skip
    settings = dict(
        (r[0], r[1]) for r in parse(tracking_report(cal, {}, IMAGES)).tables["settings"]
    )
    assert settings["Multipath share P_M"].startswith("0.030 ± 0.004")
    assert settings["Mean multipath delay μ_D (s)"].startswith("28.0 ± 3.0")
    assert settings["Calibration"] == "none (the file's values)"
