"""Number formats and ratio cells the benchmark reports share (report.py, report_user.py)."""


def three_digits(v, below_one="%.3g"):
    """v with about three significant digits (below 1: the given format)."""
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return below_one % v


def fmt_rate(mpix_s):
    """Gpix/s with about three significant digits."""
    return three_digits(mpix_s / 1e3)


def fmt_ratio(r):
    if r >= 10:
        return "%.0fx" % r
    return "%.2fx" % r if r < 1 else "%.1fx" % r


def ratio_cells(each):
    """The two ratio cells of a row from (apron / peer, peer label, mark) triples: the best peer in bold, then
    every peer; dashes when there is none."""
    if not each:
        return ["–", "–"]
    ratio, who, mark = min(each, key=lambda e: e[0])
    return ["**%s** %s%s" % (fmt_ratio(ratio), who, mark), ", ".join("%s %s%s" % (fmt_ratio(x), w, mk) for x, w, mk in each)]
