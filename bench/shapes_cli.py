#!/usr/bin/env python3
"""The shapes users feed, through the apron command line on the CUDA backend: 1, 3 and 4 channels, u8, u16 and
f32, rectangles, disks and ellipses, correlate and Gaussian. Each op runs twice in one pipeline and the second
step's time from --timing is reported (the first pays for module loading), so the figure is the step's kernel
time with the image already on the device. Prints a Markdown table of Gpix/s.

    python3 bench/shapes_cli.py --apron build-gpu/tools/apron [--size 8192] [--dir /dev/shm/apron-shapes]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

OPS = [
    ("correlate 3x3 float", "correlate:mask={mask3}"),
    ("correlate 5x5 float", "correlate:mask={mask5}"),
    ("gaussian sigma 2", "gaussian:sigma=2"),
    ("dilate rect 7x7", "dilate:se=rect:7x7"),
    ("dilate ellipse 5x5", "dilate:se=ellipse:5x5"),
    ("dilate disk:7 (15x15)", "dilate:se=disk:7"),
]


def write_input(path: Path, a: np.ndarray) -> None:
    h, w = a.shape[:2]
    c = 1 if a.ndim == 2 else a.shape[2]
    if a.dtype == np.float32:
        path.write_bytes(f"{'Pf' if c == 1 else 'PF'}\n{w} {h}\n-1\n".encode() + a[::-1].astype("<f4").tobytes())
        return
    maxval = 255 if a.dtype == np.uint8 else 65535
    data = a.astype(">u2").tobytes() if a.dtype == np.uint16 else a.tobytes()
    if c in (1, 3):
        path.write_bytes(f"{'P5' if c == 1 else 'P6'}\n{w} {h}\n{maxval}\n".encode() + data)
    else:
        path.write_bytes(f"P7\nWIDTH {w}\nHEIGHT {h}\nDEPTH {c}\nMAXVAL {maxval}\nENDHDR\n".encode() + data)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apron", required=True)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--dir", default="/dev/shm/apron-shapes")
    ap.add_argument("--backend", default="cuda")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(12)
    # Weights written in full (17 digits): six decimals would be integers over 10^6, an exact plan with
    # 64-bit sums rather than the float path these rows are about.
    for k in (3, 5):
        rows = "\n".join(" ".join(repr(float(v)) for v in r) for r in rng.random((k, k)))
        (d / f"m{k}.txt").write_text(f"{k} {k}\n{rows}\n")
    n = args.size
    cases = [("u8", 1), ("u8", 3), ("u8", 4), ("u16", 1), ("u16", 3), ("f32", 1), ("f32", 3)]
    print(f"| op | " + " | ".join(f"{t} C{c}" for t, c in cases) + " |")
    print("|---|" + "--:|" * len(cases))
    inputs = {}
    for t, c in cases:
        dtype = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}[t]
        shape = (n, n) if c == 1 else (n, n, c)
        a = rng.random(shape, dtype=np.float32) if t == "f32" else rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype)
        ext = ".pfm" if t == "f32" else ".pgm" if c == 1 else ".ppm" if c == 3 else ".pam"
        inputs[(t, c)] = d / f"in_{t}_{c}{ext}"
        write_input(inputs[(t, c)], a)
        del a
    for name, op in OPS:
        op = op.format(mask3=d / "m3.txt", mask5=d / "m5.txt")
        row = []
        for t, c in cases:
            src = inputs[(t, c)]
            out = d / ("out" + (".png" if c == 4 else src.suffix if src.suffix != ".pam" else ".png"))
            r = subprocess.run([args.apron, "filter", src, out, "--backend", args.backend, "--timing", "--op", op, "--op", op],
                               capture_output=True, text=True, timeout=300)
            steps = [float(m.group(1)) for m in re.finditer(r"^\s*([\d.]+) ms\s+\S+.*\[", r.stderr, re.M)]
            if r.returncode != 0 or len(steps) < 2:
                row.append("err")
                print(f"# {name} {t} C{c}: exit {r.returncode}: {r.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            row.append(f"{n * n / (steps[-1] * 1e-3) / 1e9:.1f}")
        print(f"| {name} | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
