"""Merge and query closed integer intervals."""


def merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def contains(intervals, x):
    return any(lo <= x <= hi for lo, hi in intervals)


def total_length(intervals):
    return sum(hi - lo + 1 for lo, hi in merge(intervals))


def gaps(intervals, start, end):
    out, cur = [], start
    for lo, hi in merge(intervals):
        if lo > cur:
            out.append((cur, min(lo - 1, end)))
        cur = max(cur, hi + 1)
        if cur > end:
            break
    if cur <= end:
        out.append((cur, end))
    return out
