#!/usr/bin/env python3
"""Plots of bench/multi_gpu.py's CSVs for docs/batch.md and docs/streaming.md (issue 29):

  scaling.png   speed-up over one GPU of a GPU-bound batch and of one streamed image (one process and MPI
                ranks), with the ideal line;
  files.png     batches from files in a tmpfs: the engine's Gpix/s on 1, 2 and 4 GPUs before and after the
                changes, and the share of the storage bound each reaches.

    python3 bench/plot_multi.py --before docs/data/runs/h200x4-issue29/multi-b59e27a.csv \
        --after docs/data/runs/h200x4-issue29/multi-5762006.csv --out docs/plots/issue29 --labels b59e27a,5762006
"""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gpus")]


def scaling(after, out):
    fig, ax = plt.subplots(figsize=(6, 4))
    gpus = [1, 2, 4]
    ax.plot(gpus, gpus, "k:", label="ideal")
    batch = {int(r["gpus"]): float(r["engine_s"]) for r in after if r["part"] == "gpu-batch"}
    if batch:
        ax.plot(sorted(batch), [batch[1] / batch[g] for g in sorted(batch)], "o-",
                label="batch, 127x127 direct (engine time)")
    for mode, style in (("process", "s-"), ("mpi", "^--")):
        s = {int(r["gpus"]): float(r["seconds"]) for r in after if r["part"] == "stream" and r["mode"] == mode}
        base = next((float(r["seconds"]) for r in after if r["part"] == "stream" and r["gpus"] == "1"), None)
        if s and base:
            xs = sorted(s)
            ax.plot(xs, [base / s[g] for g in xs], style, label=f"one streamed image, {'one process' if mode == 'process' else 'MPI ranks'}")
    ax.set_xlabel("GPUs (H200, one host)")
    ax.set_ylabel("speed-up over one GPU")
    ax.set_xticks(gpus)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("apron on 1, 2 and 4 GPUs")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "scaling.png"), dpi=110)


def files(before, after, out, labels):
    sets = [w for w in dict.fromkeys(r["workload"] for r in after if r["part"] == "files")]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.13
    for k, (label, data) in enumerate(((labels[0], before), (labels[1], after))):
        for j, g in enumerate(("1", "2", "4")):
            vals = []
            for w in sets:
                r = next((r for r in data if r["part"] == "files" and r["workload"] == w and r["gpus"] == g), None)
                vals.append(float(r["gpix_s"]) if r else 0)
            x = [i + (k * 3 + j - 2.5) * width for i in range(len(sets))]
            ax.bar(x, vals, width, label=f"{label}, {g} GPU{'s' if g != '1' else ''}", alpha=0.55 if k == 0 else 1)
    ax.set_xticks(range(len(sets)))
    ax.set_xticklabels(sets, rotation=20, fontsize=8)
    ax.set_ylabel("Gpix/s (engine, without set-up)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("apron batch from tmpfs")
    for k, g in enumerate(("1", "2", "4")):
        vals = []
        for w in sets:
            r = next((r for r in after if r["part"] == "files" and r["workload"] == w and r["gpus"] == g), None)
            vals.append(100 * float(r["of_bound"]) if r else 0)
        bx.bar([i + (k - 1) * 0.25 for i in range(len(sets))], vals, 0.25, label=f"{g} GPU{'s' if g != '1' else ''}")
    bx.axhline(70, color="k", ls=":", label="target 70 %")
    bx.set_xticks(range(len(sets)))
    bx.set_xticklabels(sets, rotation=20, fontsize=8)
    bx.set_ylabel("% of the storage bound (cat, same bytes)")
    bx.legend(fontsize=7)
    bx.set_title(f"share of the storage bound ({labels[1]})")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "files.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--labels", default="before,after", help="names of the two runs, e.g. their commits")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    before, after = rows(a.before), rows(a.after)
    scaling(after, a.out)
    files(before, after, a.out, a.labels.split(","))


if __name__ == "__main__":
    main()
