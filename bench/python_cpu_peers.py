#!/usr/bin/env python3
"""apron's CPU backend from Python against OpenCV-Python on the same NumPy arrays, in the same process: what a
Python user on a CPU runs today. Both use every core (cv2.setNumThreads, apron threads=0), both write into a
preallocated array, same border rule and mask sizes; every result is compared once before timing (integer
cases must match exactly; float ones within 1 grey level after rounding).

    PYTHONPATH=build/python python3 bench/python_cpu_peers.py [--size 4096] [--reps 5]

Prints one Markdown table (Gpix/s, best of --reps; ratio apron / OpenCV).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import apron


def gaussian_radius(sigma: float) -> int:
    return int(4 * sigma + 0.5)  # apron's (and SciPy's) default radius


def cases(cv2, mask5):
    """(name, apron call, OpenCV call, exact) over an image `img` into `out`."""
    ell7 = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))
    rect7 = np.ones((7, 7), np.uint8)
    k2 = 2 * gaussian_radius(2.0) + 1
    mirror = cv2.BORDER_REFLECT_101
    return [
        ("box 5x5", lambda i, o: apron.box(i, width=5, border="mirror", out=o),
         lambda i, o: cv2.blur(i, (5, 5), dst=o, borderType=mirror), False),
        ("gaussian sigma 2 (17x17)", lambda i, o: apron.gaussian(i, 2.0, border="mirror", out=o),
         lambda i, o: cv2.GaussianBlur(i, (k2, k2), 2.0, dst=o, borderType=mirror), False),
        ("correlate 5x5 (float mask)", lambda i, o: apron.correlate(i, mask=mask5, border="mirror", out=o),
         lambda i, o: cv2.filter2D(i, -1, mask5, dst=o, borderType=mirror), False),
        ("sobel dx 3x3", lambda i, o: apron.sobel(i, dx=1, dy=0, border="mirror", out=o),
         lambda i, o: cv2.Sobel(i, -1, 1, 0, ksize=3, dst=o, borderType=mirror), True),
        ("dilate rect 7x7", lambda i, o: apron.dilate(i, se="rect:7x7", out=o),
         lambda i, o: cv2.dilate(i, rect7, dst=o), True),
        ("dilate ellipse 7x7", lambda i, o: apron.dilate(i, se="ellipse:7x7", out=o),
         lambda i, o: cv2.dilate(i, ell7, dst=o), True),
    ]


def best(fn, img, out, reps):
    fn(img, out)
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(img, out)
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--channels", default="1,3,4")
    args = ap.parse_args()
    import cv2

    cv2.setNumThreads(-1)  # OpenCV's default pool, all cores (0 would turn its threading off)
    rng = np.random.default_rng(3)
    mask5 = rng.uniform(0, 1, (5, 5)).astype(np.float32)
    mask5 /= mask5.sum()
    print(f"apron {apron.__version__} (CPU backend, all cores) vs OpenCV-Python {cv2.__version__} "
          f"({cv2.getNumThreads()} threads), {args.size}x{args.size} u8, Gpix/s, best of {args.reps}")
    print("| case | C | apron | OpenCV | apron / OpenCV | results |")
    print("|---|--:|--:|--:|--:|---|")
    for channels in (int(c) for c in args.channels.split(",")):
        shape = (args.size, args.size) if channels == 1 else (args.size, args.size, channels)
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        a_out, c_out = np.empty_like(img), np.empty_like(img)
        for name, a_fn, c_fn, exact in cases(cv2, mask5):
            if channels == 4 and name.startswith("sobel"):
                continue
            a_fn(img, a_out)
            c_fn(img, c_out)
            diff = int(np.abs(a_out.astype(np.int16) - c_out.astype(np.int16)).max())
            agree = "equal" if diff == 0 else f"max diff {diff}"
            if exact and diff:
                agree += " (UNEXPECTED)"
            px = args.size * args.size
            ta, tc = best(a_fn, img, a_out, args.reps), best(c_fn, img, c_out, args.reps)
            print(f"| {name} | {channels} | {px / ta / 1e9:.3g} | {px / tc / 1e9:.3g} | {tc / ta:.2f}x | {agree} |",
                  flush=True)


if __name__ == "__main__":
    main()
