#!/usr/bin/env python3
"""apron's CPU rank filters against OpenCV (cv2.medianBlur) and SciPy (scipy.ndimage.median_filter).

Both sides run in this process on the same NumPy arrays, writing into preallocated outputs (SciPy into its
`output=` array). The calls alternate (apron, peer, apron, ...) so that both see the same machine state; the
figure is the median over --reps of the ratio apron time / peer time (below 1: apron is faster), with each
side's best time. Every result is compared with the peer's before timing and must be identical:
cv2.medianBlur replicates the edge (apron border=nearest) and takes odd squares (u16 and f32 up to 5 x 5);
scipy.ndimage.median_filter with a footprint reflects (apron border=reflect, SciPy's default, the same
rank n / 2 of the footprint's n cells).

    PYTHONPATH=build/python python3 bench/cpu_rank_vs_peers.py [--size 4096] [--scipy-size 1024] [--reps 5]
        [--threads 1,0] [--cases median,scipy] [--csv FILE]

--threads: 0 means every core (apron threads=0, cv2.setNumThreads(cores); SciPy has one thread whatever).
SciPy is slow on large windows, so its cases run on --scipy-size images (and fewer repetitions).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import apron
from side_by_side import add_common_arguments, alternate, cores, selected, thread_counts, write_csv


def disk(r):
    """scikit-image's disk(r), apron's disk:R: x^2 + y^2 <= r^2."""
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return (x * x + y * y <= r * r).astype(np.uint8)


def cases(cv2, ndi):
    """(name, peer, channels, dtype, apron call, peer call, on the SciPy size) over input i into output o, threads t."""
    out = []
    for k in (3, 5, 7):
        for dtype, chans in ((np.uint8, (1, 3)), (np.uint16, (1,)), (np.float32, (1,))):
            if dtype != np.uint8 and k > 5:
                continue  # cv2.medianBlur: u16 and f32 only up to 5 x 5
            for c in chans:
                out.append((f"median {k}x{k}", "OpenCV", c, dtype,
                            lambda i, o, t, k=k: apron.median(i, se=f"rect:{k}x{k}", border="nearest", out=o, threads=t,
                                                              backend="cpu"),
                            lambda i, o, t, k=k: cv2.medianBlur(i, k, dst=o), False))
    for name, se, footprint in (("median 15x15", "rect:15x15", np.ones((15, 15), np.uint8)),
                                ("median 31x31", "rect:31x31", np.ones((31, 31), np.uint8)),
                                ("median disk:15", "disk:15", disk(15))):
        for dtype in (np.uint8, np.uint16, np.float32):
            out.append((name, "SciPy", 1, dtype,
                        lambda i, o, t, se=se: apron.median(i, se=se, border="reflect", out=o, threads=t, backend="cpu"),
                        lambda i, o, t, fp=footprint: ndi.median_filter(i, footprint=fp, mode="reflect", output=o), True))
    return out


def image(rng, size, c, dtype):
    shape = (size, size) if c == 1 else (size, size, c)
    if dtype == np.float32:
        return rng.uniform(-1, 2, shape).astype(np.float32)
    return rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_arguments(ap, 5, "comma-separated prefixes of 'name peer' (default: every case)")
    ap.add_argument("--scipy-size", type=int, default=1024)
    ap.add_argument("--scipy-reps", type=int, default=2)
    args = ap.parse_args()
    import cv2
    import scipy
    import scipy.ndimage as ndi

    rng = np.random.default_rng(3)
    rows = []
    print(f"apron {apron.__version__} CPU backend vs OpenCV {cv2.__version__} (medianBlur) and SciPy {scipy.__version__} "
          f"(ndimage.median_filter); {args.size}^2 (SciPy cases {args.scipy_size}^2), {cores()} cores, median of alternating "
          f"ratios (apron time / peer time; < 1: apron faster)")
    print("| case | peer | C | type | threads | apron ms | peer ms | apron / peer | same |")
    print("|---|---|--:|---|--:|--:|--:|--:|---|")
    for threads, n in thread_counts(args.threads):
        cv2.setNumThreads(n)
        for name, peer, c, dtype, a_fn, p_fn, small in cases(cv2, ndi):
            if not selected(f"{name} {peer}", args.cases):
                continue
            if peer == "SciPy" and threads != 1 and n == 1:
                continue
            img = image(rng, args.scipy_size if small else args.size, c, dtype)
            a_out, p_out = np.empty_like(img), np.empty_like(img)
            a_fn(img, a_out, threads)
            p_fn(img, p_out, threads)
            same = bool(np.array_equal(a_out.view(np.uint8), p_out.view(np.uint8)))
            reps = args.scipy_reps if peer == "SciPy" else args.reps
            r, a_ms, p_ms = alternate(a_fn, p_fn, img, a_out, p_out, threads, reps)
            print(f"| {name} | {peer} | {c} | {np.dtype(dtype).name} | {n} | {a_ms:.2f} | {p_ms:.2f} | "
                  f"{r:.3f} | {'yes' if same else 'NO'} |", flush=True)
            rows.append(dict(case=name, peer=peer, channels=c, type=np.dtype(dtype).name, threads=n,
                             size=args.scipy_size if small else args.size, apron_ms=a_ms, peer_ms=p_ms,
                             ratio=r, same=same))
    write_csv(args.csv, rows)
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
