# Writes logs/2-access.log: 2,000 access-log lines with random request ids, so that gzip
# leaves it large (about 70 KB) beside the two small text logs.
import random

random.seed(7)
paths = ["/api/users", "/api/orders", "/health", "/api/items/search", "/static/app.js"]
with open("logs/2-access.log", "w") as f:
    for i in range(2000):
        rid = "%032x" % random.getrandbits(128)
        f.write(
            f"10.0.{random.randrange(256)}.{random.randrange(256)} - - [25/Nov/2026:17:{i // 1200 % 60:02d}:{i // 20 % 60:02d} +0000] "
            f'"GET {random.choice(paths)}?id={rid} HTTP/1.1" 200 {random.randrange(100, 99999)} rid={rid}\n'
        )
