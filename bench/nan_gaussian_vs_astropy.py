#!/usr/bin/env python3
"""A NaN-aware Gaussian (normalised convolution) with apron's CPU backend against astropy.convolution, on one f32
image with about 5 % NaN holes (scattered samples and small rectangles), in the same process.

apron:   apron.gaussian(img, sigma, nan="ignore", border="wrap")  (separable sums of the zero-filled image and of
         the validity image, then their ratio: SPEC.md "NaN and nodata in linear filters"), threads=1 and all cores.
astropy: astropy.convolution.convolve(img, K, boundary="wrap", nan_treatment="interpolate") with K the very weights
         of apron's gaussian (exp(-x^2 / (2 sigma^2)) on -ceil(3 sigma)..ceil(3 sigma), normalised, as an outer
         product), and convolve_fft with the same K for the larger sigmas.

    PYTHONPATH=build/python python3 bench/nan_gaussian_vs_astropy.py [--size 2048] [--sigmas 2 5] [--reps 5]

Prints one Markdown table: best-of times (apron after a warm-up call; astropy best of --astropy-reps), the
ratios astropy / apron, and the largest |difference| from astropy over the outputs both give (and how many
outputs only one of them leaves NaN).
"""
from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import apron


def gaussian_weights(sigma: float) -> np.ndarray:
    """apron's gaussian op weights (src/ops/ops_linear.cpp): the 2-D mask is the outer product."""
    r = int(np.ceil(3.0 * sigma))
    x = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * x * x / (sigma * sigma))
    k /= k.sum()
    return np.outer(k, k)


def holed_image(size: int, seed: int = 1) -> np.ndarray:
    """Smooth structure plus noise in [0, 1], with NaN on about 5 % of the samples: 3 % scattered, 2 % in
    rectangles of 2..8 pixels a side."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    img = (0.5 + 0.25 * np.sin(12 * x) * np.cos(9 * y) + 0.1 * rng.standard_normal((size, size))).astype(np.float32)
    img[rng.uniform(size=img.shape) < 0.03] = np.nan
    target = int(0.02 * size * size)
    covered = 0
    while covered < target:
        h, w = rng.integers(2, 9, size=2)
        y0, x0 = rng.integers(0, size - h), rng.integers(0, size - w)
        covered += h * w
        img[y0:y0 + h, x0:x0 + w] = np.nan
    return img


def best(fn, reps: int):
    out = fn()
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def timed(fn, reps: int):
    """Best of `reps` runs, none before (astropy's runs take seconds)."""
    t, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def compare(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    both = ~np.isnan(a) & ~np.isnan(b)
    return float(np.abs(a[both].astype(np.float64) - b[both]).max()), int(np.count_nonzero(np.isnan(a) != np.isnan(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--sigmas", type=float, nargs="+", default=[2.0, 5.0])
    ap.add_argument("--reps", type=int, default=5, help="apron: best of this many runs after one warm-up")
    ap.add_argument("--astropy-reps", type=int, default=2, help="astropy: best of this many runs")
    ap.add_argument("--fft-from", type=float, default=5.0, help="also time astropy's convolve_fft from this sigma on")
    args = ap.parse_args()
    from astropy.convolution import convolve, convolve_fft

    img = holed_image(args.size)
    print(f"{args.size}x{args.size} f32, {np.isnan(img).mean() * 100:.1f} % NaN, {os.cpu_count()} cores, "
          f"apron {apron.__version__ if hasattr(apron, '__version__') else ''}".rstrip())
    print()
    print("| sigma (mask) | apron 1 thread | apron all cores | astropy convolve | astropy convolve_fft | "
          "convolve / apron (1 thread, all) | convolve_fft / apron (1 thread, all) | max abs diff (convolve, fft) | "
          "NaN outputs differing |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sigma in args.sigmas:
        k = gaussian_weights(sigma)
        run = lambda threads: apron.gaussian(img, sigma, nan="ignore", border="wrap", backend="cpu", threads=threads)
        t1, a1 = best(lambda: run(1), args.reps)
        tn, an = best(lambda: run(0), args.reps)
        assert a1.tobytes() == an.tobytes(), "threads change the bits"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tc, c = timed(lambda: convolve(img, k, boundary="wrap", nan_treatment="interpolate"), args.astropy_reps)
            tf, f = (timed(lambda: convolve_fft(img, k, boundary="wrap", nan_treatment="interpolate"), args.astropy_reps)
                     if sigma >= args.fft_from else (float("nan"), None))
        dc, nc = compare(a1, c)
        df, nf = compare(a1, f) if f is not None else (float("nan"), 0)
        fft_cells = ((f"{tf:.2f} s", f"{tf / t1:.0f}x, {tf / tn:.0f}x", f"{df:.1e}") if f is not None
                     else ("-", "-", "-"))
        print(f"| {sigma:g} ({k.shape[1]}x{k.shape[0]}) | {t1 * 1e3:.1f} ms | {tn * 1e3:.1f} ms | {tc:.2f} s | "
              f"{fft_cells[0]} | {tc / t1:.0f}x, {tc / tn:.0f}x | {fft_cells[1]} | {dc:.1e}, {fft_cells[2]} | {nc}, {nf} |")


if __name__ == "__main__":
    main()
