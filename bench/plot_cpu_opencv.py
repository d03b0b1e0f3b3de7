#!/usr/bin/env python3
"""Plot of bench/cpu_vs_opencv.py's CSV (issue 30): apron's time over OpenCV's per case against the thread
count, one line per case, with the targets (0.67: 1.5x faster; 0.83: 1.2x faster).

    python3 bench/plot_cpu_opencv.py RUN.csv --out docs/plots/cpu_opencv_threads.png [--title TEXT]
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="apron CPU backend / OpenCV 5 (time ratio, lower is faster)")
    a = ap.parse_args()
    series = defaultdict(dict)
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            series[f"{r['case']} c{r['channels']} {r['type']}"][int(r["threads"])] = float(r["ratio"])
    fig, ax = plt.subplots(figsize=(11, 6.5))
    cmap = plt.get_cmap("tab20")
    for i, (name, pts) in enumerate(sorted(series.items())):
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", ms=3, lw=1.2, color=cmap(i % 20),
                ls="-" if i < 20 else "--", label=name)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(0.67, color="green", ls=":", lw=1.2, label="target 1 thread and all: 0.67 (1.5x)")
    ax.axhline(0.83, color="orange", ls=":", lw=1.2, label="target 16 cores: 0.83 (1.2x)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    xs = sorted({x for p in series.values() for x in p})
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("threads (both libraries)")
    ax.set_ylabel("apron time / OpenCV time")
    ax.set_title(a.title, fontsize=10)
    ax.legend(fontsize=6.5, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
