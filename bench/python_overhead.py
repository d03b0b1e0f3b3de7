#!/usr/bin/env python3
"""What the Python API adds to a call: a warm pipeline on a small image, timed through apron.Pipeline.run
(array checks, output allocation, the binding, the GIL released and taken back) and through the same
apron::Pipeline::run in a C++ loop inside the extension (_apron.Pipeline.time_run), on the same buffers in
the same process. The difference is the overhead (target: at most 20 us on 256x256, CPU backend).

    PYTHONPATH=build/python python3 bench/python_overhead.py [--size 256] [--threads 1]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import apron


def python_seconds(fn, iterations: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - t0) / iterations)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (1: steadiest timing; 0: all cores)")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()

    img = np.random.default_rng(0).integers(0, 256, (a.size, a.size), dtype=np.uint8)
    out = np.empty_like(img)
    print(f"apron {apron.__version__}, {a.size}x{a.size} u8, CPU backend, {a.threads or 'all'} thread(s); best of {a.repeats} x {a.iterations} calls")
    print(f"{'pipeline':36} {'C++ us':>8} {'Python us':>10} {'overhead us':>12} {'(out=) us':>10}")
    for ops in (["box:width=3"], ["gaussian:sigma=1"], ["gaussian:sigma=2", "dilate:se=rect:3x3"]):
        p = apron.Pipeline(ops)
        cpp = p._pipeline.time_run(img.ctypes.data, a.size, a.size, 1, 0, a.size, out.ctypes.data, a.size, a.threads,
                                   a.iterations, a.repeats)
        py = python_seconds(lambda: p.run(img, backend="cpu", threads=a.threads), a.iterations, a.repeats)
        py_out = python_seconds(lambda: p.run(img, out=out, backend="cpu", threads=a.threads), a.iterations, a.repeats)
        print(f"{' | '.join(ops):36} {cpp * 1e6:8.2f} {py * 1e6:10.2f} {(py - cpp) * 1e6:12.2f} {(py_out - cpp) * 1e6:10.2f}")
    f = apron.box
    cpp = apron.Pipeline(["box"])._pipeline.time_run(img.ctypes.data, a.size, a.size, 1, 0, a.size, out.ctypes.data,
                                                      a.size, a.threads, a.iterations, a.repeats)
    py = python_seconds(lambda: f(img, backend="cpu", threads=a.threads), a.iterations, a.repeats)
    print(f"{'apron.box(img) (function, cached)':36} {cpp * 1e6:8.2f} {py * 1e6:10.2f} {(py - cpp) * 1e6:12.2f}")


if __name__ == "__main__":
    main()
