"""The bulk ballot writers (votes CSV, PrefLib, ABIF) write exactly the text of a plain
per-ballot writer (``csv.writer`` row by row, ``str.join`` per group), for any profile:
ties, unranked candidates, names that need CSV quoting, non-ASCII names, fractional and
huge counts, and blocks that split the ballots anywhere."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.aggregation import Profile, write_abif, write_preflib, write_votes_csv
from rankmodels.aggregation.ballot_text import LineFormat, ballot_lines, count_texts


def _count(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(float(w))


def _dropped(groups: list[list[int]]) -> list[list[int]]:
    return groups[:-1] if len(groups) > 1 and len(groups[-1]) > 1 else groups


def oracle_votes_csv(profile: Profile) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["ranking", "count"])
    for groups, w in zip(profile.weak_orders(), profile.weights, strict=True):
        text = ">".join("=".join(profile.candidates[x] for x in g) for g in groups)
        writer.writerow([text, _count(w)])
    return out.getvalue()


def oracle_preflib_lines(profile: Profile) -> list[str]:
    ballots = profile.weak_orders()
    lines = []
    for j in sorted(range(len(ballots)), key=lambda j: -profile.weights[j]):
        cells = [
            str(g[0] + 1) if len(g) == 1 else "{" + ",".join(str(x + 1) for x in g) + "}"
            for g in _dropped(ballots[j])
        ]
        lines.append(f"{int(profile.weights[j])}: {','.join(cells)}")
    return lines


def oracle_preflib_kind(profile: Profile) -> str:
    ballots = profile.weak_orders()
    bottom_only = all(len(b) > 1 and all(len(g) == 1 for g in b[:-1]) for b in ballots)
    return "soc" if profile.is_strict else ("soi" if bottom_only else "toi")


def oracle_abif_lines(profile: Profile) -> list[str]:
    return [
        f"{int(w)}:" + ">".join("=".join(profile.candidates[x] for x in g) for g in _dropped(b))
        for b, w in zip(profile.weak_orders(), profile.weights, strict=True)
    ]


names = st.text(alphabet='abcXY _-."é\r', min_size=1, max_size=5).map(str.strip).filter(bool)


@st.composite
def profiles(draw, integer: bool = False) -> Profile:
    cands = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    n = len(cands)
    ballots = []
    for _ in range(draw(st.integers(1, 8))):
        perm = draw(st.permutations(range(n)))
        keep = draw(st.integers(1, n))
        cuts = [k for k in range(1, keep) if draw(st.booleans())]
        ballots.append([list(perm[a:b]) for a, b in zip([0, *cuts], [*cuts, keep], strict=True)])
    counts = st.integers(1, 10**6) if integer else st.one_of(
        st.integers(1, 10**6), st.floats(1e-3, 1e3), st.sampled_from([2.0**60, 1e20])
    )  # fmt: skip
    weights = draw(st.lists(counts, min_size=len(ballots), max_size=len(ballots)))
    return Profile.from_weak_orders(ballots, weights, cands)


@given(profiles(), st.sampled_from([1, 3, 1 << 16]))
@settings(max_examples=200, deadline=None)
def test_votes_csv_is_what_csv_writer_writes(profile, chunk):
    lines = "".join(ballot_lines(profile, _csv_format(profile), chunk=chunk))
    assert "ranking,count\n" + lines == oracle_votes_csv(profile)
    out = io.StringIO()
    write_votes_csv(profile, out)
    assert out.getvalue() == oracle_votes_csv(profile)


def _csv_format(profile: Profile) -> LineFormat:
    """The votes CSV's line format, as ``write_votes_csv`` builds it."""
    quote = '"' if any('"' in c for c in profile.candidates) else ""
    tokens = [c.replace('"', '""') for c in profile.candidates]
    return LineFormat(tokens, False, ",", ">", "=", body_open=quote, body_close=quote)


@given(profiles(integer=True))
@settings(max_examples=200, deadline=None)
def test_preflib_and_abif_lines_are_the_per_ballot_ones(profile):
    out = io.StringIO()
    kind = write_preflib(profile, out)
    assert kind == oracle_preflib_kind(profile)
    body = [line for line in out.getvalue().split("\n")[:-1] if not line.startswith("#")]
    assert body == oracle_preflib_lines(profile)
    fmt = LineFormat(profile.candidates, True, ":", ">", "=", drop_unranked=True)
    assert "".join(ballot_lines(profile, fmt)).split("\n")[:-1] == oracle_abif_lines(profile)


def test_abif_writes_the_ballot_lines_after_the_candidates():
    profile = Profile.from_weak_orders([[[1], [0, 2]], [[2, 1, 0]], [[0], [1], [2]]], [3, 1, 2])
    out = io.StringIO()
    write_abif(profile, out)
    lines = out.getvalue().splitlines()
    assert lines[-4].startswith("=2:") and sorted(lines[-3:]) == ["1:0=1=2", "2:0>1>2", "3:1"]


def test_count_texts_whole_fractional_and_huge():
    weights = np.array([1.0, 10.0, 999.0, 1234567890123.0, 0.5, 2.0**60, 1e20])
    buf, off = count_texts(weights)
    texts = [buf[a:b].tobytes().decode() for a, b in zip(off[:-1], off[1:], strict=True)]
    assert texts == [_count(w) for w in weights]
    buf, off = count_texts(np.array([7.0, 100.0, 1.0]))  # the compiled digits alone
    assert buf.tobytes() == b"71001" and off.tolist() == [0, 1, 4, 5]


def test_fractional_counts_are_refused_before_anything_is_written():
    profile = Profile.from_orders([[0, 1], [1, 0]], [2, 0.5])
    for writer, message in ((write_preflib, "PrefLib"), (write_abif, "ABIF")):
        out = io.StringIO()
        with pytest.raises(ValueError, match=message):
            writer(profile, out)
        assert out.getvalue() == ""
