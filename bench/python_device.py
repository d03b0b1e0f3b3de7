#!/usr/bin/env python3
"""Device arrays through the Python API at full size: 8192x8192 CuPy arrays and torch CUDA tensors filtered by
apron (out= given, the caller's stream), timed by CUDA events on that stream, against

- the same case through apron's C++ benchmark (bench_gpu --cases user, kernel time by CUDA events), run here
  as a subprocess: the Python API should be within 5 % of it;
- what Python users run today on the same arrays: cupyx.scipy.ndimage (correlate, gaussian_filter,
  grey_dilation), torch (conv2d depthwise for correlate and the Gaussian, max_pool2d for a rectangle
  dilation) and kornia (filter2d, gaussian_blur2d, morphology.dilation) where it is importable.

    PYTHONPATH=build/python python3 bench/python_device.py --bench-gpu build/bench/bench_gpu

Prints one Markdown table (Gpix/s; ratios apron-in-Python / C++ and apron / peer).
"""
from __future__ import annotations

import argparse
import csv
import os
import subprocess
import tempfile

import numpy as np

import apron

# (name, apron op, its keywords, bench_gpu --op/--shape, channels)
CASES = [
    ("gaussian sigma 2", "gaussian", {"sigma": 2.0, "border": "nearest"}, ("gaussian", "sigma=2"), 1),
    ("gaussian sigma 2", "gaussian", {"sigma": 2.0, "border": "nearest"}, ("gaussian", "sigma=2"), 3),
    ("correlate 5x5", "correlate", {"border": "nearest"}, ("correlate", "5x5"), 1),
    ("correlate 5x5", "correlate", {"border": "nearest"}, ("correlate", "5x5"), 3),
    ("correlate 5x5", "correlate", {"border": "nearest"}, ("correlate", "5x5"), 4),
    ("dilate rect 7x7", "dilate", {"se": "rect:7x7"}, ("dilate", "rect:7x7"), 1),
    ("dilate disk:7", "dilate", {"se": "disk:7"}, ("dilate", "disk:7"), 1),
    ("dilate disk:7", "dilate", {"se": "disk:7"}, ("dilate", "disk:7"), 3),
]


def timed(fn, stream_sync, event_pair, reps):
    fn()
    stream_sync()
    start, stop = event_pair()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return start, stop


def cupy_side(name, op, kw, channels, size, reps, mask):
    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    rng = cp.random.default_rng(7)
    shape = (size, size) if channels == 1 else (size, size, channels)
    img = rng.integers(0, 256, shape, dtype=cp.uint8)
    out = cp.empty_like(img)
    fn = getattr(apron, op)
    kwargs = dict(kw)
    if op == "correlate":
        kwargs["mask"] = mask
    stream = cp.cuda.Stream(non_blocking=True)

    def run_apron():
        fn(img, out=out, **kwargs)

    def rate(call):
        with stream:
            call()
            stream.synchronize()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            for _ in range(reps):
                call()
            stop.record(stream)
            stop.synchronize()
        ms = cp.cuda.get_elapsed_time(start, stop) / reps
        return size * size / (ms * 1e-3) / 1e9

    peer = None
    sig = (2.0, 2.0) if channels == 1 else (2.0, 2.0, 0.0)
    if op == "gaussian":
        peer = lambda: ndi.gaussian_filter(img, sig, mode="nearest", output=out)
    elif op == "correlate":
        m = cp.asarray(mask if channels == 1 else mask[:, :, None])
        peer = lambda: ndi.correlate(img, m, mode="nearest", output=out)
    elif op == "dilate":
        fp = apron_element(kw["se"])
        fp = cp.asarray(fp if channels == 1 else fp[:, :, None])
        peer = lambda: ndi.grey_dilation(img, footprint=fp, output=out)
    return rate(run_apron), (rate(peer) if peer else None)


def torch_side(name, op, kw, channels, size, reps, mask):
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(7)
    shape = (size, size) if channels == 1 else (size, size, channels)
    img = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda", generator=g)
    out = torch.empty_like(img)
    fn = getattr(apron, op)
    kwargs = dict(kw)
    if op == "correlate":
        kwargs["mask"] = mask
    stream = torch.cuda.Stream()

    def rate(call):
        with torch.cuda.stream(stream):
            call()
            stream.synchronize()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            for _ in range(reps):
                call()
            stop.record(stream)
            stop.synchronize()
        ms = start.elapsed_time(stop) / reps
        return size * size / (ms * 1e-3) / 1e9

    apron_rate = rate(lambda: fn(img, out=out, **kwargs))
    # What a torch user writes: float planar NCHW, depthwise conv2d / max_pool2d, back to u8 interleaved.
    planar = img.reshape(size, size, channels).permute(2, 0, 1)[None].float()
    peer = None
    if op in ("gaussian", "correlate"):
        k = gaussian_mask(2.0) if op == "gaussian" else mask
        w = torch.tensor(k, dtype=torch.float32, device="cuda")[None, None].repeat(channels, 1, 1, 1)
        r = k.shape[0] // 2

        def peer():
            x = F.pad(planar, (r, r, r, r), mode="replicate")
            y = F.conv2d(x, w, groups=channels).round_().clamp_(0, 255).to(torch.uint8)
            out.copy_(y[0].permute(1, 2, 0).reshape(out.shape))
    elif op == "dilate" and kw["se"].startswith("rect"):
        def peer():
            y = F.max_pool2d(planar, 7, stride=1, padding=3).to(torch.uint8)
            out.copy_(y[0].permute(1, 2, 0).reshape(out.shape))
    kornia_rate = None
    try:
        import kornia
    except ImportError:
        kornia = None
    if kornia is not None:
        # kornia works on float NCHW too; the conversions are part of what its user pays, as for torch.
        if op in ("gaussian", "correlate"):
            k = gaussian_mask(2.0) if op == "gaussian" else mask
            kern = torch.tensor(k, dtype=torch.float32, device="cuda")[None]
            if op == "gaussian":
                side = k.shape[0]
                kf = lambda x: kornia.filters.gaussian_blur2d(x, (side, side), (2.0, 2.0), border_type="replicate")
            else:
                kf = lambda x: kornia.filters.filter2d(x, kern, border_type="replicate")
        else:
            el = torch.tensor(apron_element(kw["se"]).astype(np.float32), device="cuda")
            kf = lambda x: kornia.morphology.dilation(x, el, border_type="geodesic")

        def kpeer():
            y = kf(planar).round_().clamp_(0, 255).to(torch.uint8)
            out.copy_(y[0].permute(1, 2, 0).reshape(out.shape))

        try:
            kornia_rate = rate(kpeer)
        except torch.OutOfMemoryError:  # kornia's dilation unfolds the element: 8192x8192x3 by 15x15 needs 169 GiB
            kornia_rate = "OOM"
            torch.cuda.empty_cache()
    return apron_rate, (rate(peer) if peer else None), kornia_rate


def gaussian_mask(sigma):
    r = int(4 * sigma + 0.5)
    x = np.arange(-r, r + 1)
    g = np.exp(-0.5 * (x / sigma) ** 2)
    g /= g.sum()
    return np.outer(g, g).astype(np.float32)


def apron_element(se):
    kind, arg = se.split(":")
    if kind == "rect":
        w, h = map(int, arg.split("x"))
        return np.ones((h, w), bool)
    r = int(arg)
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return x * x + y * y <= r * r


def cpp_rate(bench, op, shape, channels):
    """Gpix/s of the same case through apron's C++ benchmark (u8, 8192x8192)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "b.csv")
        subprocess.run([bench, "--cases", "user", "--op", op, "--shape", shape, "--channels", str(channels),
                        "--type", "u8", "--csv", path], check=True, capture_output=True, timeout=120)
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r.get("impl", "apron") == "apron"]
    return float(rows[0]["gpix_s"]) if rows else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-gpu", default="build/bench/bench_gpu")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    mask = np.random.default_rng(5).uniform(-1, 1, (5, 5)).astype(np.float32)
    print("| case | C | C++ bench_gpu | apron CuPy | apron torch | CuPy / C++ | torch / C++ | cupyx.scipy.ndimage | "
          "torch (planar f32) | kornia | apron / cupyx | apron / torch | apron / kornia |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, op, kw, (bop, bshape), channels in CASES:
        cpp = cpp_rate(args.bench_gpu, bop, bshape, channels) if os.path.exists(args.bench_gpu) else None
        a_cp, p_cp = cupy_side(name, op, kw, channels, args.size, args.reps, mask)
        a_t, p_t, k_t = torch_side(name, op, kw, channels, args.size, args.reps, mask)
        f = lambda v: "–" if v is None else v if isinstance(v, str) else f"{v:.3g}"
        r = lambda a, b: "–" if a is None or b is None or isinstance(b, str) else f"{a / b:.2f}x"
        print(f"| {name} | {channels} | {f(cpp)} | {f(a_cp)} | {f(a_t)} | {r(a_cp, cpp)} | {r(a_t, cpp)} | "
              f"{f(p_cp)} | {f(p_t)} | {f(k_t)} | {r(a_cp, p_cp)} | {r(a_t, p_t)} | {r(a_t, k_t)} |", flush=True)


if __name__ == "__main__":
    main()
