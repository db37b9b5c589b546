import pytest

from intervals import contains, gaps, total_length

SPANS = [(1, 3), (7, 9), (20, 25)]


@pytest.mark.parametrize("x", [1, 2, 3, 7, 8, 9, 20, 25])
def test_contains_inside(x):
    assert contains(SPANS, x)


@pytest.mark.parametrize("x", [0, 4, 6, 10, 19, 26])
def test_contains_outside(x):
    assert not contains(SPANS, x)


def test_total_length():
    assert total_length(SPANS) == 12


def test_total_length_overlap_counted_once():
    assert total_length([(1, 5), (4, 6)]) == 6


def test_gaps_between():
    assert gaps(SPANS, 1, 25) == [(4, 6), (10, 19)]


def test_gaps_before_and_after():
    assert gaps([(5, 6)], 1, 10) == [(1, 4), (7, 10)]


def test_no_gaps_when_covered():
    assert gaps([(0, 100)], 10, 20) == []
