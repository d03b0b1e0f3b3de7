#!/usr/bin/env python3
"""Volumes and tensor batches on the GPU against the peers installed there (issue 32's GPU targets).

Cases, each on device arrays (no transfers timed), CUDA events around `--reps` calls on one stream after a
warm-up, every apron result checked against the peer's once before timing:
- 3-D Gaussian sigma (x, y, z) = (2, 2, 1) on a 1024 x 1024 x 256 u16 volume (and f32), against
  cupyx.scipy.ndimage.gaussian_filter (same radii); apron's rate also as a share of the memory roof, the
  device-to-device copy of the same bytes measured in the same run (bytes read + written);
- dilation by ball:5 (scikit-image's ball: x^2 + y^2 + z^2 <= 25) on a u8 volume, against cupyx's
  grey_dilation with that footprint (bit-identical);
- dilation by a 5x5x5 box on u16, and a 5x5x5 box filter on f32;
- a batch of 64 x 3 x 512 x 512 f32 torch tensors through a Gaussian sigma 2 in one call (layout='nchw'),
  against kornia.filters.gaussian_blur2d and a grouped torch conv2d (separable, the way kornia computes it);
- pyclesperanto and cuCIM where importable (reported as absent otherwise).

    python3 bench/volumes_gpu.py [--reps 10] [--depth 256] [--side 1024]
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import apron


def ball(r):
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def events_ms(cp, fn, reps):
    stream = cp.cuda.get_current_stream()
    fn()
    stream.synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(reps):
        fn()
    stop.record(stream)
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / reps


def copy_gbs(cp, nbytes, reps):
    a = cp.empty(nbytes, dtype=cp.uint8)
    b = cp.empty_like(a)
    ms = events_ms(cp, lambda: cp.copyto(b, a), reps)
    return 2 * nbytes / (ms * 1e-3) / 1e9


def row(name, voxels, ms, peers, nbytes=None, roof=None):
    rate = voxels / (ms * 1e-3) / 1e9
    text = f"| {name} | {ms:.3f} | {rate:.2f} |"
    for peer, pms in peers:
        text += f" {peer} {pms:.3f} ms ({pms / ms:.1f}x) |" if pms else f" {peer}: absent |"
    if nbytes and roof:
        text += f" {100 * nbytes / (ms * 1e-3) / 1e9 / roof:.0f} % of the copy roof |"
    print(text, flush=True)


def volumes(cp, a):
    import cupyx.scipy.ndimage as ndi

    shape = (a.depth, a.side, a.side)
    rng = cp.random.default_rng(7)
    voxels = math.prod(shape)
    roof = copy_gbs(cp, voxels * 2, a.reps)
    print(f"device copy: {roof:.0f} GB/s (bytes read + written)\n")
    print("| case | apron ms | Gvox/s | peers (time, apron's speed-up) | roof |\n|---|---|---|---|---|")
    for dtype in (cp.uint16, cp.float32):
        v = rng.integers(0, 65536, shape, dtype=cp.uint16).astype(dtype)
        out, ref = cp.empty_like(v), cp.empty_like(v)
        run = lambda: apron.gaussian(v, sigma=2, sigma_z=1, border="nearest", layout="zyx", out=out)
        # truncate 3: radii ceil(3 sigma) = (3, 6, 6), apron's
        peer = lambda: ndi.gaussian_filter(v, (1, 2, 2), mode="nearest", truncate=3.0, output=ref)
        run()
        # cupyx rounds each 1-D pass to u16, apron once: checked against one rounding of the f64 result
        exact = ndi.gaussian_filter(v.astype(cp.float64), (1, 2, 2), mode="nearest", truncate=3.0)
        if dtype == cp.uint16:
            exact = cp.clip(cp.rint(exact), 0, 65535)
        err = float(cp.abs(out.astype(cp.float64) - exact).max())
        del exact
        if err > (1 if dtype == cp.uint16 else 1e-6 * 65536):
            sys.exit(f"gaussian {dtype}: apron differs from cupyx by {err}")
        name = f"gaussian (2,2,1) {np.dtype(dtype).name} {a.side}x{a.side}x{a.depth}"
        row(name, voxels, events_ms(cp, run, a.reps), [("cupyx", events_ms(cp, peer, max(2, a.reps // 4)))],
            2 * v.nbytes, roof)
        del v, out, ref
    if a.only == "gaussian":
        return
    small = (min(a.depth, 128), min(a.side, 512), min(a.side, 512))
    v = rng.integers(0, 256, small, dtype=cp.uint8)
    out, ref = cp.empty_like(v), cp.empty_like(v)
    fp = cp.asarray(ball(5))
    run = lambda: apron.dilate(v, se="ball:5", layout="zyx", out=out)
    peer = lambda: ndi.grey_dilation(v, footprint=fp, mode="constant", cval=0, output=ref)
    run(), peer()
    if not bool((out == ref).all()):
        sys.exit("dilate ball:5: apron differs from cupyx")
    row(f"dilate ball:5 u8 {small[2]}x{small[1]}x{small[0]}", math.prod(small), events_ms(cp, run, a.reps),
        [("cupyx", events_ms(cp, peer, 2))], 2 * v.nbytes, roof)
    v = rng.integers(0, 65536, small, dtype=cp.uint16)
    out, ref = cp.empty_like(v), cp.empty_like(v)
    run = lambda: apron.dilate(v, se="rect:5x5x5", layout="zyx", out=out)
    peer = lambda: ndi.grey_dilation(v, size=(5, 5, 5), mode="constant", cval=0, output=ref)
    run(), peer()
    if not bool((out == ref).all()):
        sys.exit("dilate rect 5x5x5: apron differs from cupyx")
    row(f"dilate rect 5x5x5 u16 {small[2]}x{small[1]}x{small[0]}", math.prod(small), events_ms(cp, run, a.reps),
        [("cupyx", events_ms(cp, peer, 4))], 2 * v.nbytes, roof)
    v = rng.random(small, dtype=cp.float32)
    out, ref = cp.empty_like(v), cp.empty_like(v)
    run = lambda: apron.box(v, width=5, depth=5, border="reflect", layout="zyx", out=out)
    peer = lambda: ndi.uniform_filter(v, 5, mode="reflect", output=ref)
    run(), peer()
    err = float(cp.abs(out - ref).max())
    if err > 1e-5:
        sys.exit(f"box 5x5x5: apron differs from cupyx by {err}")
    row(f"box 5x5x5 f32 {small[2]}x{small[1]}x{small[0]}", math.prod(small), events_ms(cp, run, a.reps),
        [("cupyx", events_ms(cp, peer, 4))], 8 * math.prod(small), roof)
    for lib in ("pyclesperanto", "cucim"):
        try:
            __import__(lib)
            print(f"\n{lib}: importable (not timed here)")
        except ImportError:
            print(f"\n{lib}: not installed on this machine")


def batch(cp, a):
    import torch
    import torch.nn.functional as F

    n, c, h, w = a.batch, 3, 512, 512
    torch.manual_seed(7)
    x = torch.rand((n, c, h, w), device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    radius = 6  # ceil(3 sigma): apron's Gaussian, and the window kornia is given
    t = torch.arange(-radius, radius + 1, device="cuda", dtype=torch.float32)
    g = torch.exp(-t * t / 8)
    g = g / g.sum()
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

    def torch_sep():
        p = F.pad(x, (radius, radius, radius, radius), mode="replicate")
        p = F.conv2d(p.reshape(n * c, 1, h + 2 * radius, w + 2 * radius), g.view(1, 1, 1, -1))
        return F.conv2d(p, g.view(1, 1, -1, 1)).reshape(n, c, h, w)

    with stream:
        run = lambda: apron.gaussian(x, sigma=2, border="nearest", layout="nchw", out=y)
        run()
        ref = torch_sep()
        err = float((y - ref).abs().max())
        if err > 1e-4:
            sys.exit(f"batch gaussian: apron differs from torch by {err}")
        peers = [("torch conv2d", events_ms(cp, torch_sep, a.reps))]
        try:
            import kornia

            kf = lambda: kornia.filters.gaussian_blur2d(x, (2 * radius + 1, 2 * radius + 1), (2.0, 2.0),
                                                        border_type="replicate")
            err = float((kf() - y).abs().max())
            if err > 1e-4:
                sys.exit(f"batch gaussian: kornia differs from apron by {err}")
            peers.append((f"kornia {kornia.__version__}", events_ms(cp, kf, a.reps)))
        except ImportError:
            peers.append(("kornia", None))
        try:
            import cvcuda  # noqa: F401
            peers.append(("CV-CUDA: importable, not timed", None))
        except ImportError:
            peers.append(("CV-CUDA", None))
        print(f"\nbatch {n}x{c}x{h}x{w} f32 gaussian sigma 2, one call (layout='nchw')\n")
        print("| case | apron ms | Gpix/s | peers |\n|---|---|---|---|")
        row(f"gaussian sigma 2 {n}x{c}x{h}x{w} f32", n * c * h * w, events_ms(cp, run, a.reps), peers)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--depth", type=int, default=256)
    p.add_argument("--side", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--only", choices=["gaussian"], help="the volume Gaussians alone (a variant's run)")
    a = p.parse_args()
    import cupy as cp

    volumes(cp, a)
    if not a.only:
        batch(cp, a)


if __name__ == "__main__":
    main()
