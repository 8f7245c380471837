"""LETOR reader (with fuzzing), its limits, the writer, and the shipped synthetic sample."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.errors import InputError
from rankmodels.ltr import letor
from rankmodels.ltr.letor import (
    LetorData,
    LetorOrderWarning,
    format_letor,
    parse_letor,
    read_letor,
)
from rankmodels.ltr.synthetic import SAMPLE, sample_text, synthetic_letor

SAMPLE_TEXT = """# a comment line
2 qid:10 1:0.5 3:1.0 # docid = a
0 qid:10 2:0.25
1 qid:7 1:1 2:2 3:3

0 qid:10 1:-1.5
"""


def test_parse_sample_sparse_and_non_contiguous():
    with pytest.warns(LetorOrderWarning, match=r"f\.txt: qid 10 comes back on line 6 .* line 2"):
        d = parse_letor(SAMPLE_TEXT, "f.txt")
    assert list(d.qids) == ["10", "7"]
    np.testing.assert_array_equal(d.lengths, [3, 1])
    assert d.features.shape == (2, 3, 3)
    np.testing.assert_array_equal(d.features[0], [[0.5, 0, 1.0], [0, 0.25, 0], [-1.5, 0, 0]])
    np.testing.assert_array_equal(d.relevance, [[2, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(d.features[1, 0], [1, 2, 3])
    np.testing.assert_array_equal(d.mask, [[True, True, True], [True, False, False]])
    sub = d.subset(np.array([1]))
    assert sub.features.shape == (1, 1, 3)


def test_ungrouped_qids_are_grouped_stably_and_said_so():
    grouped = "1 qid:a 1:1\n0 qid:a 1:2\n2 qid:b 1:3\n0 qid:c 1:4\n"
    scattered = "1 qid:a 1:1\n2 qid:b 1:3\n0 qid:a 1:2\n0 qid:c 1:4\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # contiguous queries: no warning
        want = parse_letor(grouped)
    with pytest.warns(LetorOrderWarning, match="qid a comes back on line 3.*1 such return"):
        got = parse_letor(scattered)
    for field in ("features", "relevance", "lengths", "qids"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x qid:1 1:0", "label"),
        ("-1 qid:1 1:0", "non-negative"),
        ("101 qid:1 1:0", "up to 100"),
        ("inf qid:1 1:0", "up to 100"),
        ("1 qid:1 2:1e101", r"magnitude <= 1e\+100"),
        ("1 q:1 1:0", "qid"),
        ("1 qid:1 0:3", "feature"),
        ("1 qid:1 2:abc", "feature"),
        ("1 qid:1 2:1 2:3", "twice"),
        ("1", "expected"),
        ("1 qid:1 100000000:0.5", "feature index 100000000 exceeds 10000"),
        ("# nothing", "no documents"),
    ],
)
def test_bad_lines_name_the_line(text, message):
    with pytest.raises(InputError, match=message) as err:
        parse_letor("1 qid:1 1:0\n" + text if message != "no documents" else text, "f.txt")
    assert str(err.value).startswith("f.txt")
    if message != "no documents":
        assert "line 2" in str(err.value)


def test_feature_count_limits_are_stated_and_enforced(monkeypatch):
    edge = parse_letor(f"1 qid:1 {letor.MAX_FEATURES}:1.5\n0 qid:1 1:1\n")
    assert edge.features.shape == (1, 2, letor.MAX_FEATURES)
    assert edge.features[0, 0, -1] == 1.5
    with pytest.raises(InputError, match=f"exceeds {letor.MAX_FEATURES}"):
        parse_letor(f"1 qid:1 {letor.MAX_FEATURES + 1}:1.5\n")
    # the padded array: 2 queries x 3 documents x 4 features x 8 bytes = 192 bytes
    text = "1 qid:1 4:1\n0 qid:1 1:1\n0 qid:1 1:1\n1 qid:2 1:1\n"
    monkeypatch.setattr(letor, "MAX_DENSE_BYTES", 191)
    with pytest.raises(InputError, match=r"f\.txt: the padded feature array \(2 queries x 3 "):
        parse_letor(text, "f.txt")
    monkeypatch.setattr(letor, "MAX_DENSE_BYTES", 192)
    assert parse_letor(text).features.shape == (2, 3, 4)


def test_n_features_pads_a_sparse_file():
    d = parse_letor("1 qid:1 2:1\n0 qid:1 1:3\n", n_features=5)
    assert d.features.shape == (1, 2, 5)
    np.testing.assert_array_equal(d.features[0], [[0, 1, 0, 0, 0], [3, 0, 0, 0, 0]])
    assert parse_letor("1 qid:1 4:1\n", n_features=2).features.shape == (1, 1, 4)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .:#qid-\nabe", max_size=200))
def test_fuzz_reader_returns_data_or_input_error(text):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LetorOrderWarning)
            d = parse_letor(text)
    except InputError:
        return
    assert isinstance(d, LetorData)
    assert d.lengths.sum() >= 1 and np.all(d.relevance >= 0)


def test_real_mq2008_fold(shared_data):
    path = shared_data / "letor" / "mq2008-fold1-test" / "test.txt"
    d = read_letor(path)
    n_lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    assert d.lengths.shape == (156,) and d.features.shape[2] == 46
    assert d.lengths.sum() == n_lines
    assert set(np.unique(d.relevance)) <= {0.0, 1.0, 2.0}


def test_format_letor_round_trips(rng):
    data, _ = synthetic_letor(n_queries=7, n_features=4, docs=(1, 6), seed=rng)
    back = parse_letor(format_letor(data))
    assert list(back.qids) == list(data.qids)
    np.testing.assert_array_equal(back.lengths, data.lengths)
    np.testing.assert_array_equal(back.relevance, data.relevance)
    np.testing.assert_allclose(back.features, data.features, rtol=1e-5, atol=1e-6)


def test_synthetic_labels_follow_the_linear_truth(rng):
    data, w_true = synthetic_letor(n_queries=50, n_features=3, docs=(10, 10), noise=0.0, seed=rng)
    utility = data.features @ w_true
    assert np.linalg.norm(w_true) == pytest.approx(1.0)
    # noise 0: labels are the 60 % / 85 % utility quantiles exactly, so they sort utilities
    for label in (0, 1):
        assert utility[data.relevance == label].max() < utility[data.relevance == label + 1].min()
    assert np.mean(data.relevance == 0) == pytest.approx(0.6, abs=0.01)
    assert np.mean(data.relevance == 2) == pytest.approx(0.15, abs=0.01)
    with pytest.raises(ValueError, match="docs"):
        synthetic_letor(docs=(5, 3))


def test_shipped_sample_is_the_generator_output(repo_data):
    path = repo_data / "letor-sample.txt"
    assert path.read_text(encoding="utf-8") == sample_text()
    data = read_letor(path)
    assert data.lengths.shape == (SAMPLE["n_queries"],)
    assert data.features.shape[2] == SAMPLE["n_features"]
    # some queries have no relevant document (the NDCG convention matters) and most do
    assert 0 < np.sum(data.relevance.max(axis=1) == 0) < SAMPLE["n_queries"] // 4
