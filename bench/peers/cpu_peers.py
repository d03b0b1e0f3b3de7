#!/usr/bin/env python3
"""apron's CPU backend against OpenCV's filter2D on the same machine, same run (issue 4's CPU target).

For each mask side k: a random N x N f32 image and a random k x k f32 mask (fixed seeds), correlation with the
mirror border (OpenCV's BORDER_REFLECT_101). apron runs as `apron filter --backend cpu --timing` and the time
of its correlate step is taken (planning, file reading and writing excluded; the FFT's own plans included);
OpenCV's filter2D call is timed in this process (its DFT set-up included). Both use every core. Each output is
compared with the other (max abs difference relative to the largest output magnitude).

    python3 bench/peers/cpu_peers.py --apron build/tools/apron [--size 4096] [--ks 31,63] [--reps 3]
                                     [--algo auto] [--csv FILE]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_pfm(path, a):
    h, w = a.shape
    with open(path, "wb") as f:
        f.write(b"Pf\n%d %d\n-1.0\n" % (w, h))
        f.write(np.ascontiguousarray(a[::-1], dtype="<f4").tobytes())


def read_pfm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n", 3)
    w, h = map(int, parts[1].split())
    scale = float(parts[2])
    dtype = "<f4" if scale < 0 else ">f4"
    return np.frombuffer(parts[3], dtype=dtype, count=w * h).reshape(h, w)[::-1].astype(np.float32)


def write_mask(path, m):
    with open(path, "w") as f:
        f.write("%d %d\n" % (m.shape[1], m.shape[0]))
        for row in m:
            f.write(" ".join("%.9g" % v for v in row) + "\n")


def apron_step_ms(apron, inp, mask, out, algo):
    cmd = [apron, "filter", inp, out, "--backend", "cpu", "--timing", "--algo", algo,
           "--op", "correlate:mask=%s,border=mirror" % mask]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    for line in r.stderr.splitlines():
        m = re.match(r"\s*([0-9.]+) ms\s+(.*)", line)
        if m and "correlate" in m.group(2):
            return float(m.group(1)), m.group(2).strip()
    raise RuntimeError("no correlate stage in: " + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apron", required=True)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--ks", default="31,63")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--csv")
    a = ap.parse_args()
    import cv2

    rng = np.random.default_rng(7)
    img = rng.random((a.size, a.size), dtype=np.float32)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.pfm")
        write_pfm(inp, img)
        for k in [int(x) for x in a.ks.split(",")]:
            mask = (rng.random((k, k), dtype=np.float32) - 0.5).astype(np.float32)
            mpath, out = os.path.join(tmp, "m%d.kernel" % k), os.path.join(tmp, "out%d.pfm" % k)
            write_mask(mpath, mask)
            apron_ms, stage = [], ""
            for _ in range(a.reps):
                ms, stage = apron_step_ms(a.apron, inp, mpath, out, a.algo)
                apron_ms.append(ms)
            ref = None
            cv_ms = []
            for _ in range(a.reps):
                t = time.perf_counter()
                ref = cv2.filter2D(img, -1, mask, borderType=cv2.BORDER_REFLECT_101)
                cv_ms.append((time.perf_counter() - t) * 1e3)
            got = read_pfm(out)
            diff = float(np.max(np.abs(got - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
            am, cm = statistics.median(apron_ms), statistics.median(cv_ms)
            row = dict(k=k, size=a.size, threads=os.cpu_count(), cv_threads=cv2.getNumThreads(),
                       apron_ms=round(am, 2), opencv_ms=round(cm, 2), speedup=round(cm / am, 2),
                       rel_diff=f"{diff:.2e}", apron_stage=stage, opencv=cv2.__version__)
            rows.append(row)
            print(f"cpu f32 {a.size}^2 k={k}: apron {am:8.1f} ms ({stage})  OpenCV filter2D {cm:8.1f} ms "
                  f"({cv2.getNumThreads()} threads)  {cm / am:5.1f}x  rel diff {diff:.1e}", flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
