"""Sync customer records from the nightly export into the warehouse."""
import logging
import sys

log = logging.getLogger("sync")

BAD = {9137: "qty", 10402: "email", 11876: "qty"}


def fetch_record(n):
    rec = {"id": n, "email": f"user{n}@example.com", "qty": str(n % 17)}
    if BAD.get(n) == "qty":
        rec["qty"] = "??"
    if BAD.get(n) == "email":
        del rec["email"]
    return rec


def normalize(rec):
    return {"id": rec["id"], "email": rec["email"].lower(), "qty": int(rec["qty"])}


def write_batch(batch_no, rows):
    log.info("batch %05d: wrote %d rows", batch_no, len(rows))


def main():
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    failed = []
    total = 20000
    print(f"sync: {total} records to process")
    log.info("starting sync of %d records", total)
    for n in range(1, total + 1):
        try:
            row = normalize(fetch_record(n))
        except Exception:
            log.exception("record %d could not be normalized", n)
            failed.append(n)
            continue
        write_batch(n, [row])
    log.info("processed %d records, %d failed", total, len(failed))
    print(f"synced {total - len(failed)}/{total} records")
    if failed:
        log.critical("%d records failed (ids %s), giving up", len(failed), ", ".join(map(str, failed)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
