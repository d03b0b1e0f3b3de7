#!/usr/bin/env python3
"""What the Python API adds to a call: a warm pipeline on a small image, timed through apron.Pipeline.run
(array checks, output allocation, the binding, the GIL released and taken back) and through the same
apron::Pipeline::run in a C++ loop inside the extension (_apron.Pipeline.time_run), on the same buffers in
the same process. The difference is the host overhead (target: at most 20 us on 256x256).

    PYTHONPATH=build/python python3 bench/python_overhead.py                 # NumPy, CPU backend
    PYTHONPATH=build/python python3 bench/python_overhead.py --array cupy    # CuPy, CUDA backend, a stream
    PYTHONPATH=build/python python3 bench/python_overhead.py --array torch   # torch, CUDA backend, a stream

Device runs are queued on a non-default stream (the call returns once queued), so both sides time the host's
work per call; the stream is synchronised after each round.
"""
from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import apron

PIPELINES = (["box:width=3"], ["gaussian:sigma=1"], ["gaussian:sigma=2", "dilate:se=rect:3x3"])


class Host:
    backend = "cpu"

    def __init__(self, img):
        self.img, self.out = img, np.empty_like(img)
        self.ptrs = (img.ctypes.data, self.out.ctypes.data, False, 0)

    def stream(self):
        return contextlib.nullcontext()

    def sync(self):
        pass


class CupyArrays:
    backend = "cuda"

    def __init__(self, img):
        import cupy

        self.cupy = cupy
        self.s = cupy.cuda.Stream(non_blocking=True)
        self.img, self.out = cupy.asarray(img), cupy.empty_like(cupy.asarray(img))
        self.ptrs = (self.img.data.ptr, self.out.data.ptr, True, self.s.ptr)

    def stream(self):
        return self.s

    def sync(self):
        self.s.synchronize()


class TorchArrays:
    backend = "cuda"

    def __init__(self, img):
        import torch

        self.torch = torch
        self.s = torch.cuda.Stream()
        self.img = torch.from_numpy(img).cuda()
        self.out = torch.empty_like(self.img)
        self.ptrs = (self.img.data_ptr(), self.out.data_ptr(), True, self.s.cuda_stream)

    def stream(self):
        return self.torch.cuda.stream(self.s)

    def sync(self):
        self.s.synchronize()


def best_seconds(fn, arrays, iterations: int, repeats: int) -> float:
    best = float("inf")
    with arrays.stream():
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(iterations):
                fn()
            best = min(best, (time.perf_counter() - t0) / iterations)
            arrays.sync()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", choices=["numpy", "cupy", "torch"], default="numpy")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (1: steadiest timing; 0: all cores)")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()

    img = np.random.default_rng(0).integers(0, 256, (a.size, a.size), dtype=np.uint8)
    arrays = {"numpy": Host, "cupy": CupyArrays, "torch": TorchArrays}[a.array](img)
    be = arrays.backend
    threads = f", {a.threads or 'all'} CPU thread(s)" if be == "cpu" else ""
    print(f"apron {apron.__version__}, {a.size}x{a.size} u8, {a.array} arrays, {be} backend{threads}; "
          f"best of {a.repeats} x {a.iterations} calls")
    print(f"{'pipeline':40} {'C++ us':>8} {'Python us':>10} {'overhead us':>12} {'out= us':>8}")
    in_ptr, out_ptr, device, stream = arrays.ptrs
    rows = [(" | ".join(ops), apron.Pipeline(ops)) for ops in PIPELINES]
    for name, p in rows + [("apron.box(img) (the function)", None)]:
        pipe = p._pipeline if p else apron.Pipeline(["box"])._pipeline
        with arrays.stream():
            cpp = pipe.time_run(in_ptr, device, a.size, a.size, 1, 0, a.size, out_ptr, a.size, be, a.threads, stream,
                                a.iterations, a.repeats, 0 if device else -1)  # device arrays: the current device, 0
            arrays.sync()
        if p:
            py = best_seconds(lambda: p.run(arrays.img, backend=be, threads=a.threads), arrays, a.iterations, a.repeats)
            py_out = best_seconds(lambda: p.run(arrays.img, out=arrays.out, backend=be, threads=a.threads), arrays,
                                  a.iterations, a.repeats)
            extra = f"{(py_out - cpp) * 1e6:8.2f}"
        else:
            py = best_seconds(lambda: apron.box(arrays.img, backend=be, threads=a.threads), arrays, a.iterations, a.repeats)
            extra = ""
        print(f"{name:40} {cpp * 1e6:8.2f} {py * 1e6:10.2f} {(py - cpp) * 1e6:12.2f} {extra}")


if __name__ == "__main__":
    main()
