#!/usr/bin/env python3
"""`apron batch` on files (issue 5's file targets): generated 8-bit PGM images listed in a GenConv job file
with padding, through a 5x5 dilation (the job runs unchanged), then the same images as PNG. The files live
in a tmpfs (/dev/shm) so the disk is not what is measured: decode and encode on the CPU cores are. apron's
own summary (images/s, Mpix/s, per-stage busy time and the bottleneck) is printed for each run.

    python3 bench/batch_files.py --apron build/tools/apron [--count 200] [--size 4096] [--png-count 64]
                                 [--dir /dev/shm/apron-batch] [--keep]
"""
import argparse
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time

import numpy as np


def make_image(args):
    i, size, pad, path, fmt = args
    rng = np.random.default_rng(i)
    # Smooth structure plus noise: compresses like a photograph in PNG, unlike pure noise.
    y, x = np.mgrid[0:size + 2 * pad, 0:size + 2 * pad]
    base = 128 + 60 * np.sin(x / (37.0 + i)) * np.cos(y / (53.0 + i))
    img = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    if fmt == "pgm":
        with open(path, "wb") as f:
            f.write(b"P5\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
            f.write(img.tobytes())
    else:
        import cv2
        cv2.imwrite(path, img)
    return path


def run(cmd, label):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    print(f"--- {label}: exit {r.returncode}, {wall:.1f} s wall (process)\n$ {' '.join(cmd)}")
    print(r.stderr.strip())
    sys.stdout.flush()
    return r.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apron", required=True)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--png-count", type=int, default=64)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--pad", type=int, default=2)
    ap.add_argument("--dir", default="/dev/shm/apron-batch")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--mpi", type=int, default=0, help="also run the job under mpirun -np N and compare the bytes")
    a = ap.parse_args()
    apron = os.path.abspath(a.apron)
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(os.path.join(a.dir, "pgm"))
    os.makedirs(os.path.join(a.dir, "png"))
    jobs = [(i, a.size, a.pad, os.path.join(a.dir, "pgm", f"img{i:04d}.pgm"), "pgm") for i in range(a.count)]
    jobs += [(i, a.size, 0, os.path.join(a.dir, "png", f"img{i:04d}.png"), "png") for i in range(a.png_count)]
    t = time.perf_counter()
    with mp.Pool(os.cpu_count()) as pool:
        paths = pool.map(make_image, jobs)
    print(f"generated {a.count} PGM ({a.size + 2 * a.pad}^2 with padding {a.pad}) and {a.png_count} PNG ({a.size}^2) "
          f"in {time.perf_counter() - t:.1f} s under {a.dir}, {os.cpu_count()} cores")
    job = os.path.join(a.dir, "job.txt")
    size = a.size + 2 * a.pad
    with open(job, "w") as f:
        f.write(f"{a.count}\n8\n{size} {size}\n{a.pad} {a.pad}\n")
        f.write("\n".join(paths[:a.count]) + "\n")
    dilate = "dilate:se=rect:5x5"
    run([apron, "batch", job, "-o", os.path.join(a.dir, "out-job"), "--op", dilate], "GenConv job file, 8-bit PGM, 5x5 dilation")
    run([apron, "batch", job, "-o", os.path.join(a.dir, "out-job-cpu"), "--op", dilate, "--backend", "cpu"],
        "the same job on the CPU backend")
    if a.mpi:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out_mpi = os.path.join(a.dir, "out-job-mpi")
        cmd = ["mpirun", "--bind-to", "none", "-np", str(a.mpi), apron, "batch", job, "-o", out_mpi, "--op", dilate]
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        print(f"--- the same job under mpirun -np {a.mpi}: exit {r.returncode}, {time.perf_counter() - t:.1f} s wall\n"
              f"$ {' '.join(cmd)}\n{r.stderr.strip()}")
        names = sorted(n for n in os.listdir(os.path.join(a.dir, "out-job")) if not n.startswith("."))
        same = all(open(os.path.join(a.dir, "out-job", n), "rb").read() == open(os.path.join(out_mpi, n), "rb").read()
                   for n in names)
        print(f"mpirun -np {a.mpi} outputs byte-identical to the single process: {same} ({len(names)} files)")
    run([apron, "batch", os.path.join(a.dir, "png"), "-o", os.path.join(a.dir, "out-png"), "--op", dilate],
        "PNG directory, 5x5 dilation")
    if not a.keep:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
