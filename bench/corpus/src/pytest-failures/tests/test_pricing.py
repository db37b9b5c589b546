from inventory.pricing import order_total, parse_discount, unit_price


def test_unit_price_small_order():
    assert unit_price(2.0, 3) == 2.0


def test_unit_price_bulk():
    assert unit_price(2.0, 100) == 1.7


def test_order_total():
    lines = [{"price": 2.0, "qty": 10}, {"price": 1.0, "qty": 1}]
    assert order_total(lines) == 20.0


def test_parse_discount_legacy():
    assert parse_discount("PCT15") == 0.15


def test_parse_discount_named():
    assert parse_discount("SPRING:20") == 0.2


def test_parse_discount_without_percent():
    assert parse_discount("WELCOME") == 0.0
