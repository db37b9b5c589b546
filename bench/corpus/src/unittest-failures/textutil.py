"""Small text helpers used by the CLI."""


def slugify(title):
    out = []
    for ch in title.lower():
        if ch.isalnum():
            out.append(ch)
        elif out and out[-1] != "-":
            out.append("-")
    return "".join(out)


def wrap(text, width):
    words = text.split()
    lines, cur = [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        lines.append(cur)
    return lines


def parse_kv(line):
    key, value = line.split("=", 1)
    return key.strip(), value.strip()


def read_config(lines):
    cfg = {}
    for line in lines:
        if line.startswith("#"):
            continue
        key, value = parse_kv(line)
        cfg[key] = value
    return cfg


def initials(name):
    return "".join(part[0].upper() for part in name.split())
