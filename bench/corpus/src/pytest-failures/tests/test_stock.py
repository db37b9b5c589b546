import pytest

from inventory.stock import OutOfStock, Stock


@pytest.fixture
def stock():
    s = Stock()
    s.add("apple", 10)
    s.add("pear", 3)
    return s


def test_add_accumulates(stock):
    stock.add("apple", 5)
    assert stock.items["apple"] == 15


def test_add_rejects_zero(stock):
    with pytest.raises(ValueError):
        stock.add("apple", 0)


def test_remove_to_zero_deletes(stock):
    stock.remove("pear", 3)
    assert "pear" not in stock.items


def test_remove_too_many(stock):
    with pytest.raises(OutOfStock):
        stock.remove("pear", 4)


def test_snapshot(stock):
    stock.add("plum", 4)
    assert stock.snapshot() == {
        "apple": {"qty": 10, "low": False},
        "pear": {"qty": 3, "low": True},
        "plum": {"qty": 4, "low": False},
    }


def test_total_counts_everything(stock):
    assert stock.total() == 13
