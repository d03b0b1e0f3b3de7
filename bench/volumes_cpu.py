#!/usr/bin/env python3
"""Volumes on the CPU backend against scipy.ndimage on the same machine (issue 32's CPU target).

apron runs `apron filter --raw WxHxDx1:TYPE` on a raw volume in /dev/shm and reports its filtering time
(`--timing`: the bands' filtering, not reading and writing); SciPy runs the same filter on the array in memory
(one thread: SciPy has no threads). Every apron result is checked against SciPy's before its time counts:
bit-identical for morphology, within one unit for the u16 Gaussian (SciPy rounds each 1-D pass to u16, apron
once; apron's radius ceil(3 sigma) is given to SciPy).

    python3 bench/volumes_cpu.py [--apron build/tools/apron] [--csv out.csv] [--depth 128]
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.ndimage as ndi

ROOT = Path(__file__).resolve().parents[1]


def ball(r):
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def apron_ms(apron, src, dst, layout, op, threads):
    args = [apron, "filter", src, dst, "--raw", layout, "--backend", "cpu", "--threads", str(threads), "--op", op,
            "--memory", "16G", "--timing"]
    best = None
    for _ in range(3):
        r = subprocess.run(args, capture_output=True, text=True, check=True)
        m = re.search(r"([\d.]+) ms filtering", r.stdout + r.stderr)
        if not m:
            sys.exit(f"no filtering time in: {r.stdout}{r.stderr}")
        best = min(best or 1e30, float(m.group(1)))
    return best


def scipy_ms(fn):
    best, out = None, None
    for _ in range(2):
        t = time.perf_counter()
        out = fn()
        best = min(best or 1e30, (time.perf_counter() - t) * 1e3)
    return best, out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--apron", default=str(ROOT / "build" / "tools" / "apron"))
    p.add_argument("--csv", default="")
    p.add_argument("--depth", type=int, default=128)
    p.add_argument("--side", type=int, default=512)
    a = p.parse_args()
    shape = (a.depth, a.side, a.side)
    rng = np.random.default_rng(7)
    cases = [
        ("gaussian sigma (2,2,1) u16", np.uint16, "gaussian:sigma=2,sigma_z=1",
         lambda v: ndi.gaussian_filter(v, sigma=(1, 2, 2), radius=(3, 6, 6)), 1),
        ("gaussian sigma (2,2,1) f32", np.float32, "gaussian:sigma=2,sigma_z=1",
         lambda v: ndi.gaussian_filter(v, sigma=(1, 2, 2), radius=(3, 6, 6)), 1e-4),
        ("dilate ball:5 u8", np.uint8, "dilate:se=ball:5",
         lambda v: ndi.grey_dilation(v, footprint=ball(5), mode="constant", cval=0), 0),
        ("dilate rect 5x5x5 u16", np.uint16, "dilate:se=rect:5x5x5",
         lambda v: ndi.grey_dilation(v, size=(5, 5, 5), mode="constant", cval=0), 0),
        ("box 5x5x5 f32", np.float32, "box:width=5,depth=5",
         lambda v: ndi.uniform_filter(v, size=5), 1e-4),
    ]
    rows = []
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=shm) as d:
        for name, dtype, op, ref_fn, tol in cases:
            v = (rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype) if dtype != np.float32
                 else rng.random(shape, dtype=np.float32))
            src, dst = os.path.join(d, "in.raw"), os.path.join(d, "out.raw")
            v.tofile(src)
            layout = f"{shape[2]}x{shape[1]}x{shape[0]}x1:{ {np.uint8: 'u8', np.uint16: 'u16', np.float32: 'f32'}[dtype] }"
            layout = layout.replace(" ", "")
            s_ms, ref = scipy_ms(lambda: ref_fn(v))
            if "gaussian" in name and dtype != np.float32:  # SciPy rounds each pass to u16: checked against one rounding
                ref = np.clip(np.round(ref_fn(v.astype(np.float64))), 0, np.iinfo(dtype).max)
            times = {}
            for threads in (1, os.cpu_count() or 1):
                times[threads] = apron_ms(a.apron, src, dst, layout, op, threads)
                got = np.fromfile(dst, dtype=dtype).reshape(shape)
                err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
                if err > (tol if dtype == np.float32 else max(tol, 1 if "gaussian" in name else 0)):
                    sys.exit(f"{name}: apron differs from SciPy by {err}")
            t1, tn = times[1], times[os.cpu_count() or 1]
            rows.append([name, f"{shape[2]}x{shape[1]}x{shape[0]}", f"{s_ms:.1f}", f"{t1:.1f}", f"{tn:.1f}",
                         f"{s_ms / t1:.2f}", f"{s_ms / tn:.2f}"])
            print(f"{name:32s} scipy {s_ms:9.1f} ms  apron 1 thread {t1:8.1f} ms ({s_ms / t1:5.2f}x)  "
                  f"{os.cpu_count()} threads {tn:8.1f} ms ({s_ms / tn:5.2f}x)", flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["case", "volume", "scipy_ms", "apron_1t_ms", "apron_all_ms", "speedup_1t", "speedup_all"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
