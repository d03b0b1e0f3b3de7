#!/usr/bin/env python3
"""`apron filter` file to file on one large image against `dd` copying the same bytes and libvips (issue 30).

A SIZE^2 u8 PGM is written to --dir (a tmpfs by default). For each op, apron runs on the CPU backend with the
default path (`--stream auto`), the whole-image path (`--stream off`) and bands (`--stream on`); each run is a
fresh process, its wall time and peak resident memory (wait4's ru_maxrss) taken. `dd` copies the file to an
output in the same directory (bs=8M) for the storage figure; `vips` runs the same ops where it is installed.
Figures are the best of --reps, runs of each tool alternating. All apron outputs must be byte-identical.

    python3 bench/file_to_file.py --apron build/tools/apron [--size 16384] [--reps 5] [--dir /dev/shm]
        [--threads 0] [--md FILE]
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import time

import numpy as np

OPS = {  # name: (apron --op, vips command after "vips" with IN OUT placeholders and mask files, or None)
    # gaussblur's default --min-ampl (0.2) cuts the mask at 4 samples for sigma 2, as a user runs it; apron's
    # radius is 4 sigma. conv with an integer mask and morph are exact, as apron's box and dilate.
    "gaussian sigma 2": ("gaussian:sigma=2", ["gaussblur", "IN", "OUT", "2"]),
    "box 5x5": ("box:width=5", ["conv", "IN", "OUT", "BOX5"]),
    "dilate rect 9x9": ("dilate:se=rect:9x9", ["morph", "IN", "OUT", "RECT9", "dilate"]),
}


def timed(cmd, env=None):
    """Wall seconds and peak RSS (MiB) of one process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.strip()[-400:]}")
    return wall, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apron", required=True)
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--md", default="")
    a = ap.parse_args()
    src = os.path.join(a.dir, f"f2f-{a.size}.pgm")
    if not os.path.exists(src):
        rng = np.random.default_rng(9)
        with open(src, "wb") as f:
            f.write(b"P5\n%d %d\n255\n" % (a.size, a.size))
            for y in range(0, a.size, 1024):
                f.write(rng.integers(0, 256, (min(1024, a.size - y), a.size), dtype=np.uint8).tobytes())
    mib = os.path.getsize(src) / 2**20
    vips = shutil.which("vips")
    masks = {"BOX5": os.path.join(a.dir, "f2f-box5.mat"), "RECT9": os.path.join(a.dir, "f2f-rect9.mat")}
    with open(masks["BOX5"], "w") as f:  # width height scale offset, then the rows
        f.write("5 5 25 0\n" + "1 1 1 1 1\n" * 5)
    with open(masks["RECT9"], "w") as f:
        f.write("9 9\n" + ("255 " * 9 + "\n") * 9)
    out = os.path.join(a.dir, "f2f-out")
    lines = [f"`apron filter` file to file, {a.size}^2 u8 PGM ({mib:.0f} MiB) in {a.dir}, {os.cpu_count()} cores, "
             f"best of {a.reps} (peak RSS of that run); dd copies the same file (bs=8M)", "",
             "| op | tool | path | seconds | of dd's speed | peak MiB | identical |", "|---|---|---|--:|--:|--:|---|"]
    dd = min(timed(["dd", f"if={src}", f"of={out}.dd", "bs=8M", "status=none"])[0] for _ in range(a.reps))
    lines.append(f"| copy | dd | - | {dd:.3f} | 100 % | - | - |")
    for name, (op, vips_cmd) in OPS.items():
        paths = {"auto": "auto", "whole": "off", "bands": "on"}
        best = {k: (1e9, 0.0) for k in paths}
        vbest = (1e9, 0.0)
        for _ in range(a.reps):
            for k, mode in paths.items():
                cmd = [a.apron, "filter", src, f"{out}.{k}.pgm", "--op", op, "--backend", "cpu", "--stream", mode,
                       "--threads", str(a.threads)]
                r = timed(cmd)
                best[k] = min(best[k], r)
            if vips and vips_cmd:
                args = [src if x == "IN" else f"{out}.vips.pgm" if x == "OUT" else masks.get(x, x) for x in vips_cmd]
                r = timed(["vips"] + args)
                vbest = min(vbest, r)
        same = all(filecmp.cmp(f"{out}.auto.pgm", f"{out}.{k}.pgm", shallow=False) for k in ("whole", "bands"))
        for k in paths:
            s, rss = best[k]
            lines.append(f"| {name} | apron | {k} | {s:.3f} | {dd / s * 100:.0f} % | {rss:.0f} | {same} |")
        if vips and vips_cmd:
            lines.append(f"| {name} | vips | - | {vbest[0]:.3f} | {dd / vbest[0] * 100:.0f} % | {vbest[1]:.0f} | "
                         f"apron default {vbest[0] / best['auto'][0]:.1f}x faster |")
        elif not vips:
            lines.append(f"| {name} | vips | not installed | | | | |")
    for f in os.listdir(a.dir):
        if f.startswith("f2f-out") or f.endswith(".mat"):
            os.unlink(os.path.join(a.dir, f))
    text = "\n".join(lines)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
