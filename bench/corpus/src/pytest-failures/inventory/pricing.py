import warnings


def unit_price(base, qty):
    if qty >= 100:
        return round(base * 0.85, 2)
    if qty >= 10:
        return round(base * 0.95, 2)
    return base


def order_total(lines):
    total = 0.0
    for line in lines:
        total += unit_price(line["price"], line["qty"]) * line["qty"]
    return round(total, 2)


def parse_discount(code):
    if code.startswith("PCT"):
        warnings.warn(f"legacy discount code {code!r}", UserWarning)
        return int(code[3:]) / 100
    name, pct = code.split(":")
    return int(pct) / 100
