#!/usr/bin/env python3
"""Figures once reached are held: a benchmark run's rows against a baseline run of the same GPU model.

    python3 bench/baseline_check.py RUN.csv BASELINE.csv [--slower 0.10] [--markdown]

Both files are bench_gpu.csv files (impl,op,type,param,size,ms,mpix_s,... and, where present, channels and
shape). Rows are matched on (impl, op, type, param, size, channels, shape); when a case appears several times
(e.g. the same case under two headings), the k-th occurrence matches the k-th. Prints every matched row with its
ratio, marks those more than --slower (default 10 %) below the baseline's rate, lists the rows each side lacks,
and exits 1 when a row regressed, 0 otherwise (2 for unreadable input). Rows of the run whose planner
prediction (predicted_ms) is more than --predicted (default 25 %) off the measured time are listed too: the
planner's calibration table no longer describes this GPU there. The baseline folders live in the
steering repository's shared/baselines/<gpu>-<commit>/.
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict

KEY = ("impl", "op", "type", "param", "size", "channels", "shape")


def load(path: str) -> dict[tuple, float]:
    rows: dict[tuple, float] = {}
    seen: dict[tuple, int] = defaultdict(int)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"impl", "op", "type", "param", "size", "mpix_s"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: no column {', '.join(sorted(missing))}")
        for r in reader:
            key = tuple(r.get(k) or "" for k in KEY)
            try:
                rate = float(r["mpix_s"])
            except ValueError:
                continue  # a failed row (no rate) is not a figure
            rows[key + (seen[key],)] = rate
            seen[key] += 1
    return rows


def mispredicted(path: str, off: float) -> list[tuple[str, float, float]]:
    """(case, measured ms, predicted ms) of the rows whose prediction is more than `off` away."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                ms, predicted = float(r["ms"]), float(r.get("predicted_ms") or "nan")
            except (ValueError, KeyError):
                continue
            if predicted > 0 and not (1 - off) <= ms / predicted <= 1 + off:
                key = tuple(r.get(k) or "" for k in KEY) + (0,)
                out.append((label(key), ms, predicted))
    return out


def label(key: tuple) -> str:
    impl, op, typ, param, size, channels, shape, n = key
    text = f"{op} {typ} {shape or param} {size}^2 c{channels or 1}"
    return text + (f" #{n + 1}" if n else "") + ("" if impl == "apron" else f" ({impl})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Rows of a benchmark run slower than a baseline run.")
    ap.add_argument("run")
    ap.add_argument("baseline")
    ap.add_argument("--slower", type=float, default=0.10, help="a regression: rate below (1 - this) x baseline")
    ap.add_argument("--predicted", type=float, default=0.25, help="a misprediction: measured time off by more than this")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args(argv)
    try:
        run, base = load(args.run), load(args.baseline)
    except (OSError, ValueError) as e:
        print(f"baseline_check.py: {e}", file=sys.stderr)
        return 2
    common = [k for k in base if k in run]
    regressed = [k for k in common if run[k] < (1 - args.slower) * base[k]]
    if args.markdown:
        print(f"| case | baseline Mpix/s | this run Mpix/s | ratio | |\n|---|--:|--:|--:|---|")
        for k in common:
            flag = "**slower**" if k in regressed else ""
            print(f"| {label(k)} | {base[k]:.0f} | {run[k]:.0f} | {run[k] / base[k]:.2f} | {flag} |")
    print(f"\n{len(common)} rows matched, {len(regressed)} more than {args.slower:.0%} slower than the baseline")
    for k in regressed:
        print(f"  slower: {label(k)}: {run[k]:.0f} Mpix/s against {base[k]:.0f} ({run[k] / base[k]:.2f}x)")
    for what, keys in (("only in the baseline", [k for k in base if k not in run]),
                       ("only in this run", [k for k in run if k not in base])):
        if keys:
            print(f"{len(keys)} rows {what}: " + "; ".join(label(k) for k in keys[:12]) + (" ..." if len(keys) > 12 else ""))
    wrong = mispredicted(args.run, args.predicted)
    print(f"{len(wrong)} rows more than {args.predicted:.0%} off the planner's prediction")
    for case, ms, predicted in wrong:
        print(f"  mispredicted: {case}: {ms:.3f} ms measured, {predicted:.3f} ms predicted ({ms / predicted:.2f}x)")
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
