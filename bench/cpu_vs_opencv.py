#!/usr/bin/env python3
"""apron's CPU backend against OpenCV-Python, case by case, on 1 thread and on every core (issue 30's table).

Both run in this process on the same NumPy arrays and write into preallocated outputs. The calls alternate
(apron, OpenCV, apron, ...) so that both see the same machine state, and the figure is the median over --reps
of the ratio apron time / OpenCV time (below 1: apron is faster), with each side's best time. Every result
is compared with OpenCV's once before timing: exact for integer morphology and integer masks, within one grey
level for float arithmetic (rounding of float sums may differ by one level).

    PYTHONPATH=build/python python3 bench/cpu_vs_opencv.py [--size 4096] [--reps 7] [--threads 1,0]
        [--cases tophat,box] [--csv FILE]

--threads: 0 means every core (apron threads=0, cv2.setNumThreads(cores)).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import apron
from side_by_side import add_common_arguments, alternate, cores, selected, thread_counts, write_csv


def cases(cv2):
    """(name, channels, dtype, apron call, OpenCV call, tolerance) over an input `i` into `o`, threads `t`."""
    m101 = cv2.BORDER_REFLECT_101
    rect = lambda k: np.ones((k, k), np.uint8)  # noqa: E731
    ell = lambda k: cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))  # noqa: E731
    rng = np.random.default_rng(11)
    m3 = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    m5 = rng.uniform(0, 1, (5, 5)).astype(np.float32)
    m5 /= m5.sum()
    k2 = 2 * int(4 * 2.0 + 0.5) + 1
    out = []

    def morph(name, op, cv_op, se, kernel, chans=(1, 3, 4)):
        for c in chans:
            out.append((f"{name} {se}", c, np.uint8,
                        lambda i, o, t, op=op, se=se: getattr(apron, op)(i, se=se, out=o, threads=t, backend="cpu"),
                        lambda i, o, t, cv_op=cv_op, kernel=kernel: cv2.morphologyEx(i, cv_op, kernel, dst=o),
                        0))

    for c in (1, 3, 4):
        out.append(("box 5x5", c, np.uint8,
                    lambda i, o, t: apron.box(i, width=5, border="mirror", out=o, threads=t, backend="cpu"),
                    lambda i, o, t: cv2.blur(i, (5, 5), dst=o, borderType=m101), 1))
    for c in (1, 3):
        out.append(("gaussian sigma 2", c, np.uint8,
                    lambda i, o, t: apron.gaussian(i, 2.0, radius=k2 // 2, border="mirror", out=o, threads=t, backend="cpu"),
                    lambda i, o, t: cv2.GaussianBlur(i, (k2, k2), 2.0, dst=o, borderType=m101), 2))  # OpenCV rounds its u8 kernel to 8 fraction bits
        out.append(("sobel dx 3x3", c, np.uint8,
                    lambda i, o, t: apron.sobel(i, dx=1, dy=0, border="mirror", out=o, threads=t, backend="cpu"),
                    lambda i, o, t: cv2.Sobel(i, -1, 1, 0, ksize=3, dst=o, borderType=m101), 0))
    out.append(("correlate 5x5 float mask", 1, np.uint8,
                lambda i, o, t: apron.correlate(i, m5, border="mirror", out=o, threads=t, backend="cpu"),
                lambda i, o, t: cv2.filter2D(i, -1, m5, dst=o, borderType=m101), 1))
    out.append(("correlate 3x3", 1, np.float32,
                lambda i, o, t: apron.correlate(i, m3, border="mirror", out=o, threads=t, backend="cpu"),
                lambda i, o, t: cv2.filter2D(i, -1, m3, dst=o, borderType=m101), 1e-4))
    morph("dilate", "dilate", cv2.MORPH_DILATE, "rect:5x5", rect(5))
    morph("dilate", "dilate", cv2.MORPH_DILATE, "rect:21x21", rect(21), (1, 3))
    morph("dilate", "dilate", cv2.MORPH_DILATE, "ellipse:15x15", ell(15), (1,))
    morph("open", "open", cv2.MORPH_OPEN, "rect:5x5", rect(5), (1, 3))
    morph("tophat", "tophat", cv2.MORPH_TOPHAT, "rect:5x5", rect(5), (1, 3))
    morph("blackhat", "blackhat", cv2.MORPH_BLACKHAT, "rect:5x5", rect(5), (1,))
    morph("gradient", "gradient", cv2.MORPH_GRADIENT, "rect:5x5", rect(5), (1, 3))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_arguments(ap, 7, "comma-separated name prefixes (default: every case)")
    args = ap.parse_args()
    import cv2

    rng = np.random.default_rng(3)
    rows = []
    print(f"apron {apron.__version__} CPU backend vs OpenCV {cv2.__version__}, {args.size}^2, {cores()} cores, "
          f"median of {args.reps} alternating ratios (apron time / OpenCV time; < 1: apron faster)")
    print("| case | C | type | threads | apron ms | OpenCV ms | apron / OpenCV | max diff |")
    print("|---|--:|---|--:|--:|--:|--:|--:|")
    for threads, n in thread_counts(args.threads):
        cv2.setNumThreads(n)
        for name, c, dtype, a_fn, c_fn, tol in cases(cv2):
            if not selected(name, args.cases):
                continue
            shape = (args.size, args.size) if c == 1 else (args.size, args.size, c)
            img = rng.integers(0, 256, shape, dtype=np.uint8).astype(dtype)
            a_out, c_out = np.empty_like(img), np.empty_like(img)
            a_fn(img, a_out, threads)
            c_fn(img, c_out, threads)
            diff = float(np.max(np.abs(a_out.astype(np.float64) - c_out.astype(np.float64))))
            r, a_ms, c_ms = alternate(a_fn, c_fn, img, a_out, c_out, threads, args.reps)
            flag = "" if diff <= tol else " (differs)"
            print(f"| {name} | {c} | {np.dtype(dtype).name} | {n} | {a_ms:.2f} | {c_ms:.2f} | "
                  f"{r:.2f} | {diff:g}{flag} |", flush=True)
            rows.append(dict(case=name, channels=c, type=np.dtype(dtype).name, threads=n, apron_ms=a_ms,
                             opencv_ms=c_ms, ratio=r, max_diff=diff))
    write_csv(args.csv, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
