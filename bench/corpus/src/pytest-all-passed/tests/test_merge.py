import pytest

from intervals import merge


def test_empty():
    assert merge([]) == []


def test_single():
    assert merge([(1, 3)]) == [(1, 3)]


def test_overlapping():
    assert merge([(1, 5), (3, 8)]) == [(1, 8)]


def test_adjacent_are_joined():
    assert merge([(1, 2), (3, 4)]) == [(1, 4)]


def test_disjoint_sorted():
    assert merge([(10, 12), (1, 2)]) == [(1, 2), (10, 12)]


def test_nested():
    assert merge([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]


@pytest.mark.parametrize(
    "given,expected",
    [
        ([(5, 6), (1, 2)], [(1, 2), (5, 6)]),
        ([(1, 1), (1, 1)], [(1, 1)]),
        ([(0, 0), (2, 2), (1, 1)], [(0, 2)]),
        ([(-5, -1), (0, 3)], [(-5, 3)]),
        ([(1, 100), (50, 60), (99, 120)], [(1, 120)]),
    ],
)
def test_merge_table(given, expected):
    assert merge(given) == expected
