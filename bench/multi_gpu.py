#!/usr/bin/env python3
"""Batches from files against the storage bound, and scaling over 1, 2 and 4 GPUs (issue 29).

Everything lives in a tmpfs (/dev/shm), so the "storage" is the page cache: the bound of a set of files is
measured in the same run by `cat` reading the same files and writing the same bytes on as many streams as
apron has I/O threads. Then, on as many GPUs as the machine has (1, 2, 4):

  files    `apron batch` over PGM u8/u16 at 4096^2 and 1024^2, PNG and (where the build reads it) TIFF, and
           JPEG with the CPU decoder and with nvJPEG: seconds of the whole process, the engine's seconds
           (without set-up), Gpix/s, share of the storage bound, apron's own bottleneck line;
  gpu      a batch whose GPUs are the bound (a 127x127 float mask, --algo direct) on 1, 2, 4 GPUs;
  stream   one f32 image streamed in bands through 127x127 direct steps: one process on 1, 2, 4 GPUs and
           MPI ranks (one GPU each);
  memory   bench_batch host to host (pinned) on 1, 2, 4 GPUs.

Every output of a workload is compared byte for byte across GPU counts and ranks. Rows go to --csv, the
tables to --md.

    python3 bench/multi_gpu.py --apron build-gpu/tools/apron --bench-batch build-gpu/bench/bench_batch \
        --csv $OUT/multi.csv --md $OUT/multi.md [--parts files,gpu,stream,memory] [--quick]
"""
import argparse
import csv
import filecmp
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = "/dev/shm/apron-multi"
ROWS = []


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        return len([l for l in out.splitlines() if l.startswith("GPU ")])
    except FileNotFoundError:
        return 0


def say(text):
    print(text, flush=True)


def row(**kw):
    ROWS.append(kw)
    say("  " + ", ".join(f"{k}={v}" for k, v in kw.items()))


def smooth_noise(rng, h, w, c, dtype):
    y, x = np.mgrid[0:h, 0:w]
    top = 255 if dtype == np.uint8 else 65535
    base = 0.5 * top + 0.25 * top * np.sin(x / 37.0) * np.cos(y / 53.0)
    img = base[..., None] + rng.normal(0, 0.05 * top, (h, w, c))
    return np.clip(img, 0, top).astype(dtype)


def write_pnm(path, img):
    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 or img.shape[2] == 1 else 3
    top = 255 if img.dtype == np.uint8 else 65535
    with open(path, "wb") as f:
        f.write(b"P%d\n%d %d\n%d\n" % (5 if c == 1 else 6, w, h, top))
        f.write(img.astype(">u2").tobytes() if img.dtype == np.uint16 else img.tobytes())


def make_set(name, count, size, fmt, dtype, channels=1):
    """count files of one image each (a few distinct images, repeated: generation is not what is timed)."""
    d = os.path.join(ROOT, "in-" + name)
    if os.path.isdir(d) and len(os.listdir(d)) == count:
        return d
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rng = np.random.default_rng(29)
    distinct = [smooth_noise(rng, size, size, channels, dtype) for _ in range(4)]
    ext = {"pgm": "pgm" if channels == 1 else "ppm", "png": "png", "tif": "tif", "jpg": "jpg"}[fmt]
    first = []
    for k, img in enumerate(distinct):
        p = os.path.join(d, f"img{k:05d}.{ext}")
        if fmt == "pgm":
            write_pnm(p, img[..., 0] if channels == 1 else img)
        else:
            import cv2
            bgr = img if channels == 1 else img[..., ::-1]
            params = [cv2.IMWRITE_JPEG_QUALITY, 90] if fmt == "jpg" else []
            cv2.imwrite(p, bgr[..., 0] if channels == 1 else bgr, params)
        first.append(p)
    for k in range(len(distinct), count):
        shutil.copyfile(first[k % len(first)], os.path.join(d, f"img{k:05d}.{ext}"))
    return d


def storage_bound(src, streams):
    """GB/s of `cat` reading every file of src and writing the same bytes, on `streams` streams at once."""
    files = sorted(os.path.join(src, f) for f in os.listdir(src))
    total = sum(os.path.getsize(f) for f in files)
    out = os.path.join(ROOT, "cat-out")
    best = 0
    for _ in range(2):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        groups = [files[k::streams] for k in range(streams) if files[k::streams]]
        t = time.perf_counter()
        procs = [subprocess.Popen(["sh", "-c", 'cat "$@" > "%s/%d"' % (out, k), "cat"] + g) for k, g in enumerate(groups)]
        for p in procs:
            p.wait()
        best = max(best, 2 * total / (time.perf_counter() - t) / 1e9)  # read + written
    shutil.rmtree(out, ignore_errors=True)
    return best, total


def parse_batch(stderr):
    m = re.search(r"images done, .* in ([\d.]+) (m?s)", stderr)
    secs = float(m.group(1)) / (1000 if m and m.group(2) == "ms" else 1) if m else float("nan")
    m = re.search(r"set-up ([\d.]+) (m?s)", stderr)
    setup = float(m.group(1)) / (1000 if m and m.group(2) == "ms" else 1) if m else 0.0
    b = re.search(r"^bottleneck: (.*)$", stderr, re.M)
    m = re.search(r"the process ran ([\d.]+) (m?s) before the batch", stderr)
    before = float(m.group(1)) / (1000 if m and m.group(2) == "ms" else 1) if m else 0.0
    return secs, setup, before, b.group(1) if b else "?"


def tree_digest(d):
    h = hashlib.sha256()
    for f in sorted(os.listdir(d)):
        if f.startswith("."):
            continue
        with open(os.path.join(d, f), "rb") as fh:
            h.update(f.encode() + hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def run_batch(apron, src, ops, gpus, extra=(), label=""):
    out = os.path.join(ROOT, "out")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [apron, "batch", src, "-o", out] + list(extra)
    if gpu_count():
        cmd += ["--devices", ",".join(map(str, range(gpus)))]
    for op in ops:
        cmd += ["--op", op]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        say(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
        return None
    secs, setup, before, bound = parse_batch(r.stderr)
    say(f"--- {label} on {gpus} GPU(s): process {wall:.2f} s (before the batch {before:.2f} s, batch {secs:.2f} s, "
        f"after it {wall - before - secs:.2f} s)\n{r.stderr.strip()}")
    return wall, secs, setup, bound, tree_digest(out)


def part_files(a, gpus_list, io_threads):
    say("== batches from files against the storage bound")
    ops = ["gaussian:sigma=8", "dilate:se=disk:9"]
    sets = [("pgm-u8-4096", a.count_large, 4096, "pgm", np.uint8, 1),
            ("pgm-u16-4096", a.count_large // 2, 4096, "pgm", np.uint16, 1),
            ("pgm-u8-1024", a.count_small, 1024, "pgm", np.uint8, 1),
            ("png-u8-4096", a.count_png, 4096, "png", np.uint8, 1),
            ("png-u16-1024", a.count_small // 4, 1024, "png", np.uint16, 1)]
    if a.tiff:
        sets += [("tif-u8-4096", a.count_large // 2, 4096, "tif", np.uint8, 1),
                 ("tif-u16-1024", a.count_small // 4, 1024, "tif", np.uint16, 1)]
    for name, count, size, fmt, dtype, ch in sets:
        if a.sets and name not in a.sets.split(","):
            continue
        src = make_set(name, count, size, fmt, dtype, ch)
        bound, total = storage_bound(src, io_threads)
        pix = count * size * size
        say(f"-- {name}: {count} files, {total / 1e9:.2f} GB; storage bound (cat, {io_threads} streams) {bound:.1f} GB/s")
        digests = set()
        for g in gpus_list:
            got = run_batch(a.apron, src, ops, g, label=name)
            if not got:
                continue
            wall, secs, setup, bottleneck, digest = got
            digests.add(digest)
            engine = secs - setup
            moved = 2 * total  # the files read and about as many bytes written
            row(part="files", workload=name, gpus=g, mode="process", seconds=round(wall, 3), engine_s=round(engine, 3),
                setup_s=round(setup, 3), gpix_s=round(pix / engine / 1e9, 2), gpix_s_process=round(pix / wall / 1e9, 2),
                storage_gb_s=round(bound, 1), of_bound=round(moved / engine / 1e9 / bound, 3),
                of_bound_process=round(moved / wall / 1e9 / bound, 3), bottleneck=bottleneck)
        row(part="files", workload=name, identical=len(digests) == 1)


def part_jpeg(a, gpus_list):
    say("== JPEG batches: CPU decoder against nvJPEG")
    src = make_set("jpg-rgb-4096", a.count_jpeg, 4096, "jpg", np.uint8, 3)
    pix = a.count_jpeg * 4096 * 4096
    for decoder in ("cpu", "gpu"):
        for g in gpus_list[:1] + gpus_list[-1:] if len(gpus_list) > 1 else gpus_list:
            got = run_batch(a.apron, src, ["box:width=3"], g, extra=["--jpeg-decode", decoder, "--format", "ppm"],
                            label=f"jpeg {decoder}")
            if not got:
                continue
            wall, secs, setup, bottleneck, digest = got
            row(part="jpeg", workload="jpg-rgb-4096", decoder=decoder, gpus=g, seconds=round(wall, 3),
                engine_s=round(secs - setup, 3), gpix_s=round(pix / (secs - setup) / 1e9, 2), bottleneck=bottleneck,
                digest=digest)


def kernel_file(side, path):
    rng = np.random.default_rng(side)
    k = rng.random((side, side))
    k /= k.sum()
    with open(path, "w") as f:
        f.write(f"{side} {side}\n")
        for r in k:
            f.write(" ".join(f"{v:.9g}" for v in r) + "\n")
    return path


def part_gpu(a, gpus_list):
    say("== a batch whose GPUs are the bound")
    src = make_set("pgm-u8-4096-gpu", a.count_gpu, 4096, "pgm", np.uint8, 1)
    mask = kernel_file(127, os.path.join(ROOT, "k127.txt"))
    digests, base = set(), None
    for g in gpus_list:
        got = run_batch(a.apron, src, [f"correlate:mask={mask}"], g, extra=["--algo", "direct"], label="127x127 direct")
        if not got:
            continue
        wall, secs, setup, bottleneck, digest = got
        digests.add(digest)
        engine = secs - setup
        base = base or engine
        row(part="gpu-batch", workload="pgm-u8-4096 127x127 direct", gpus=g, seconds=round(wall, 3),
            engine_s=round(engine, 3), scaling=round(base / engine, 2), bottleneck=bottleneck)
    row(part="gpu-batch", identical=len(digests) == 1)


def part_stream(a, gpus_list):
    say("== one image streamed in bands, GPU-bound")
    size = a.stream_size
    src = os.path.join(ROOT, f"big-{size}.pfm")
    if not os.path.exists(src):
        rng = np.random.default_rng(7)
        with open(src, "wb") as f:
            f.write(b"Pf\n%d %d\n-1.0\n" % (size, size))
            for y in range(0, size, 1024):
                f.write(rng.random((min(1024, size - y), size), dtype=np.float32).astype("<f4").tobytes())
    mask = kernel_file(127, os.path.join(ROOT, "k127.txt"))
    ops = []
    for _ in range(a.stream_steps):
        ops += ["--op", f"correlate:mask={mask}"]
    base, digests = None, {}
    runs = [(g, "process") for g in gpus_list] + [(g, "mpi") for g in gpus_list if g > 1 and shutil.which("mpirun")]
    for g, mode in runs:
        out = os.path.join(ROOT, f"big-out-{g}-{mode}.pfm")
        cmd = [a.apron, "filter", src, out, "--algo", "direct", "--stream", "on", "--memory", a.stream_memory, "--timing"] + ops
        env = dict(os.environ)
        if mode == "process":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, range(g)))
        else:
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(g)] + cmd
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        say(f"--- {mode} on {g} GPU(s): {wall:.2f} s, exit {r.returncode}\n{r.stderr.strip()[-1500:]}")
        if r.returncode != 0:
            continue
        base = base or wall
        digests[(g, mode)] = out
        row(part="stream", workload=f"{size}^2 f32 {a.stream_steps} x 127x127 direct", gpus=g, mode=mode,
            seconds=round(wall, 2), scaling=round(base / wall, 2))
    outs = list(digests.values())
    same = all(filecmp.cmp(outs[0], o, shallow=False) for o in outs[1:]) if outs else False
    row(part="stream", identical=same)
    for o in outs:
        os.remove(o)


def part_memory(a, gpus_list):
    say("== bench_batch host to host (pinned)")
    for g in gpus_list:
        r = subprocess.run([a.bench_batch, "--count", "600", "--streams", "4", "--devices", ",".join(map(str, range(g)))],
                           capture_output=True, text=True)
        say(r.stdout.strip()[-1200:] + r.stderr.strip()[-600:])
        m = re.findall(r"^\d+\s+\d+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", r.stdout, re.M)
        row(part="memory", gpus=g, img_s=m[-1][0] if m else "?", gb_s_up=m[-1][1] if m else "?",
            gb_s_down=m[-1][2] if m else "?")


def write_md(path):
    with open(path, "w") as f:
        for part in sorted({r["part"] for r in ROWS}):
            rows = [r for r in ROWS if r["part"] == part]
            keys = []
            for r in rows:
                keys += [k for k in r if k not in keys and k != "part"]
            f.write(f"\n### {part}\n\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apron", required=True)
    ap.add_argument("--bench-batch")
    ap.add_argument("--parts", default="files,jpeg,gpu,stream,memory")
    ap.add_argument("--gpus", default="", help="GPU counts, e.g. 1,2,4 (default: 1, 2, 4 up to the machine's)")
    ap.add_argument("--count-large", type=int, default=96)
    ap.add_argument("--count-small", type=int, default=1200)
    ap.add_argument("--count-png", type=int, default=32)
    ap.add_argument("--count-gpu", type=int, default=48)
    ap.add_argument("--count-jpeg", type=int, default=64)
    ap.add_argument("--sets", default="", help="file sets to run (default: all), e.g. pgm-u8-4096,pgm-u8-1024")
    ap.add_argument("--stream-size", type=int, default=16384)
    ap.add_argument("--stream-steps", type=int, default=2)
    ap.add_argument("--stream-memory", default="8G")
    ap.add_argument("--tiff", action="store_true", help="the build reads TIFF")
    ap.add_argument("--csv")
    ap.add_argument("--md")
    a = ap.parse_args()
    n = gpu_count()
    gpus_list = [int(g) for g in a.gpus.split(",")] if a.gpus else [g for g in (1, 2, 4) if g <= max(1, n)]
    io_threads = min(64, os.cpu_count() or 1)
    os.makedirs(ROOT, exist_ok=True)
    say(f"{n} GPUs, {os.cpu_count()} cores; GPU counts {gpus_list}")
    parts = a.parts.split(",")
    try:
        for name, fn in (("files", lambda: part_files(a, gpus_list, io_threads)), ("jpeg", lambda: part_jpeg(a, gpus_list)),
                         ("gpu", lambda: part_gpu(a, gpus_list)), ("stream", lambda: part_stream(a, gpus_list)),
                         ("memory", lambda: part_memory(a, gpus_list))):
            if name in parts and (name != "memory" or a.bench_batch):
                t = time.perf_counter()
                fn()
                say(f"({name}: {time.perf_counter() - t:.0f} s)")
    finally:
        if a.csv:
            keys = []
            for r in ROWS:
                keys += [k for k in r if k not in keys]
            with open(a.csv, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=keys)
                w.writeheader()
                w.writerows(ROWS)
        if a.md:
            write_md(a.md)


if __name__ == "__main__":
    sys.exit(main())
