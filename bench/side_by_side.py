"""What the in-process side-by-side benchmarks share (cpu_vs_opencv.py, cpu_rank_vs_peers.py): their common
options and what they mean (thread counts, case selection), the alternating timing of apron's call against a
peer's, and the CSV of the rows."""
from __future__ import annotations

import csv
import os
import statistics
import time


def add_common_arguments(ap, reps, cases_help):
    """--size, --reps (default `reps`), --threads, --cases and --csv on the argparse parser `ap`."""
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--threads", default="1,0")
    ap.add_argument("--cases", default="", help=cases_help)
    ap.add_argument("--csv", default="")


def cores():
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def thread_counts(spec):
    """(count as given, threads) for each of --threads' comma-separated counts; 0 means every core."""
    for count in (int(x) for x in spec.split(",")):
        yield count, count or cores()


def selected(name, spec):
    """Whether the case `name` is one --cases names (comma-separated prefixes; none: every case)."""
    wanted = [w for w in spec.split(",") if w]
    return not wanted or any(name.startswith(w) for w in wanted)


def alternate(a_fn, p_fn, img, a_out, p_out, threads, reps):
    """`a_fn` and `p_fn` over `img` into `a_out` and `p_out` with `threads`, called in turn (a, p, a, ...) `reps`
    times so that both see the same machine state: (median of the ratios a time / p time, a's best ms, p's
    best ms)."""
    ratios, ta, tp = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        a_fn(img, a_out, threads)
        t1 = time.perf_counter()
        p_fn(img, p_out, threads)
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tp.append(t2 - t1)
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(ratios), min(ta) * 1e3, min(tp) * 1e3


def write_csv(path, rows):
    """The rows (dicts with the same keys) as CSV at `path`, with the first row's keys as the header; nothing
    without a path or rows."""
    if not path or not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
