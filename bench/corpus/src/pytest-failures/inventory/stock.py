import warnings


class OutOfStock(Exception):
    pass


class Stock:
    def __init__(self):
        self.items = {}

    def add(self, sku, qty):
        if qty <= 0:
            raise ValueError(f"quantity must be positive, got {qty}")
        self.items[sku] = self.items.get(sku, 0) + qty

    def remove(self, sku, qty):
        have = self.items.get(sku, 0)
        if qty > have:
            raise OutOfStock(f"{sku}: want {qty}, have {have}")
        self.items[sku] = have - qty
        if self.items[sku] == 0:
            del self.items[sku]

    def snapshot(self):
        return {sku: {"qty": qty, "low": qty < 5} for sku, qty in self.items.items()}

    def total(self):
        warnings.warn("Stock.total() is deprecated, use sum(snapshot())", DeprecationWarning)
        return sum(self.items.values())
