"""Build a small sales report from a JSON export."""
import json
import sys

EXPORT = [
    {"region": "north", "units": "12", "price": "4.50", "meta": '{"rep": "ann", "q": 1}'},
    {"region": "south", "units": "7", "price": "3.25", "meta": '{"rep": "bob", "q": 1}'},
    {"region": "east", "units": "9", "price": "5.00", "meta": "{'rep': 'cid', 'q': 2}"},
    {"region": "west", "units": "3", "price": "2.75", "meta": '{"rep": "dee", "q": 2}'},
]


def load_meta(raw):
    meta = json.loads(raw)
    return meta["rep"], int(meta["q"])


def parse_row(row):
    units = int(row["units"])
    price = float(row["price"])
    rep, quarter = load_meta(row["meta"])
    return row["region"], rep, quarter, units * price


def summarize(rows):
    totals = {}
    for row in rows:
        region, rep, quarter, amount = parse_row(row)
        key = (quarter, region)
        totals[key] = totals.get(key, 0.0) + amount
    return totals


def main():
    print("loading sales export")
    print(f"loaded {len(EXPORT)} rows")
    totals = summarize(EXPORT)
    for (quarter, region), amount in sorted(totals.items()):
        print(f"Q{quarter} {region:>6}: {amount:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
