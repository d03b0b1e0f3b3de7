#!/usr/bin/env python3
"""An image larger than the GPU's memory, streamed through the CUDA backend (docs/streaming.md).

The input is raw f32 samples, FACTOR x the GPU's memory (nvidia-smi), in a sparse file: zeros except
STRIPES bands of random rows spread over the image, so it costs no storage or time to make. `apron filter`
runs gaussian sigma 4 then dilate disk:5 on it with --backend cuda --memory BUDGET and --out-type u8 (the
u8 result, a quarter of the input, fits the machine's storage), as a fresh process whose peak resident memory
is read with wait4(). Then each stripe is checked: the same rows cut out with 64 zero rows above and below
(more than the pipeline's reach: every row further away is zero in both) and run in one band must give the same
samples as the streamed result's rows, or within 1 where the two runs' plans (made for different image heights)
round a float sum apart. Prints one Markdown table.

    python3 bench/beyond_gpu_memory.py --apron build/tools/apron --dir /dev/shm --memory 4G
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

OPS = ["--op", "gaussian:sigma=4", "--op", "dilate:se=disk:5"]
MARGIN = 64  # zero rows around a stripe in its check: beyond the pipeline's reach (12 + 5)
MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
    "parts = {}\n"
    "while p.poll() is None:\n"
    "    try:\n"
    "        for line in open(f'/proc/{p.pid}/status'):\n"
    "            k = line.split(':')[0]\n"
    "            if k in ('RssAnon', 'RssFile', 'RssShmem'): parts[k] = max(parts.get(k, 0), int(line.split()[1]) * 1024)\n"
    "    except OSError: pass\n"
    "    time.sleep(0.02)\n"
    "out, err = p.communicate()\n"
    "print(json.dumps({'s': time.perf_counter() - t, 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,"
    " 'rc': p.returncode, 'err': err[-600:], 'parts': parts}))\n"
)


def gpu_memory_bytes() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) << 20  # MiB


def measured(cmd) -> dict:
    r = subprocess.run([sys.executable, "-c", MEASURE, *map(str, cmd)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apron", required=True)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--memory", default="4G")
    ap.add_argument("--width", type=int, default=131072)
    ap.add_argument("--factor", type=float, default=1.1, help="the input's size over the GPU's memory")
    ap.add_argument("--stripes", type=int, default=4)
    ap.add_argument("--gpu-bytes", type=int, default=0, help="instead of nvidia-smi's (a trial elsewhere)")
    ap.add_argument("--backend", default="cuda")
    a = ap.parse_args()

    gpu = a.gpu_bytes or gpu_memory_bytes()
    W = a.width
    H = int(gpu * a.factor) // (4 * W) + 1
    # The output is written for real: the first directory with room for it (tmpfs may be smaller).
    need = W * H * 1.05 + (1 << 30)
    for d in (a.dir, "/tmp", os.getcwd()):
        st = os.statvfs(d)
        if st.f_bavail * st.f_frsize > need:
            a.dir = d
            break
    else:
        print(f"no directory with {need / 2**30:.1f} GiB free for the output")
        return 1
    src, dst = os.path.join(a.dir, "beyond.raw"), os.path.join(a.dir, "beyond.pgm")
    rng = np.random.default_rng(5)
    stripes = []
    with open(src, "wb") as f:
        f.truncate(4 * W * H)  # sparse: zeros cost nothing
        for k in range(a.stripes):
            y0 = (H * (2 * k + 1)) // (2 * a.stripes) - 48
            rows = rng.uniform(-50, 300, (96, W)).astype("<f4")
            f.seek(4 * W * y0)
            f.write(rows.tobytes())
            stripes.append((y0, rows))
    try:
        plan = subprocess.run([a.apron, "filter", src, dst, "--raw", f"{W}x{H}x1:f32", "--backend", a.backend, "--out-type", "u8",
                               "--memory", a.memory, "--plan", *OPS], capture_output=True, text=True).stdout
        print("\n".join(line for line in plan.splitlines() if line.startswith("streamed")))
        r = measured([a.apron, "filter", src, dst, "--raw", f"{W}x{H}x1:f32", "--backend", a.backend, "--out-type", "u8",
                      "--memory", a.memory, "--timing", *OPS])
        if r["rc"] != 0:
            print(f"apron failed ({r['rc']}): {r['err']}")
            return 1
        size = os.path.getsize(dst)
        header = size - W * H
        mismatched, differ, worst = 0, 0, 0
        with open(dst, "rb") as out:
            for k, (y0, rows) in enumerate(stripes):
                crop = os.path.join(a.dir, "crop.raw")
                block = np.zeros((96 + 2 * MARGIN, W), "<f4")
                block[MARGIN:MARGIN + 96] = rows
                block.tofile(crop)
                subprocess.run([a.apron, "filter", crop, os.path.join(a.dir, "crop.pgm"), "--raw",
                                f"{W}x{96 + 2 * MARGIN}x1:f32", "--backend", a.backend, "--out-type", "u8", "--stream", "on",
                                *OPS], check=True, capture_output=True)
                with open(os.path.join(a.dir, "crop.pgm"), "rb") as c:
                    want = c.read()[-(96 + 2 * MARGIN) * W:]
                out.seek(header + (y0 - MARGIN) * W)
                got = np.frombuffer(out.read((96 + 2 * MARGIN) * W), np.uint8).astype(int)
                d = np.abs(got - np.frombuffer(want, np.uint8).astype(int))
                differ += int(np.count_nonzero(d))
                worst = max(worst, int(d.max()))
                mismatched += worst > 1
        timing = [line for line in r["err"].splitlines() if "read" in line or "filter" in line or "writ" in line][-3:]
        gib = 4 * W * H / 2**30
        checked = len(stripes) * (96 + 2 * MARGIN) * W
        print(f"(in {a.dir})")
        print("| GPU memory | input (f32, sparse) | output (u8) | --memory | seconds | GB/s of input | peak RSS | stripes' samples off by 1 | largest difference |")
        print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        print(f"| {gpu / 2**30:.1f} GiB | {W} x {H} = {gib:.1f} GiB | {size / 2**30:.1f} GiB | {a.memory} | {r['s']:.1f} | "
              f"{4 * W * H / r['s'] / 1e9:.2f} | {r['rss'] / 2**20:.0f} MiB | {differ} of {checked} | {worst} |")
        print("\n".join(timing))
        print("largest resident parts seen: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in r["parts"].items()))
        return 1 if mismatched else 0
    finally:
        for p in (src, dst, os.path.join(a.dir, "crop.raw"), os.path.join(a.dir, "crop.pgm")):
            if os.path.exists(p):
                os.unlink(p)


if __name__ == "__main__":
    sys.exit(main())
