from inventory.pricing import order_total
from inventory.stock import Stock


def test_restock_report():
    s = Stock()
    s.add("apple", 2)
    low = sorted(sku for sku, info in s.snapshot().items() if info["low"])
    assert low == ["apple"]


def test_empty_order_is_free():
    assert order_total([]) == 0.0


def test_total_order_value():
    lines = [{"price": 3.0, "qty": 12}, {"price": 0.5, "qty": 4}]
    total = order_total(lines)
    assert total == 38.2, f"order total off by {total - 38.2:.2f}"
