#!/usr/bin/env python3
"""Images larger than memory: `apron filter` streaming a generated huge image from file to file under a memory
budget, against the storage bound and libvips, in the same run.

For each pixel type: writes a random SIZE x SIZE image as binary PGM/PFM in --dir (not timed; the output is an
uncompressed tiled BigTIFF),
then times, each as a fresh process whose peak resident memory is read with wait4():
  - dd: the same bytes read and written (`dd if=in.tif of=copy bs=16M`), the storage's read+write bound;
  - apron: gaussian sigma 4 then dilate disk:5 (--ops), --memory BUDGET, for each --backends entry (a backend and
    more options, e.g. "cuda --io-threads 1"; "mpi2 cuda" runs it under mpirun -np 2, each rank with that budget);
  - libvips: the same two filters (gaussblur sigma 4 with its default precision, then morph with the disk),
    through pyvips in one lazy pass when importable, else the `vips` command with an intermediate .v file.
Prints one Markdown table: seconds, GB/s of input, % of the dd bound, peak RSS, speed-up over libvips.

    python3 bench/huge_image.py --apron build/tools/apron --size 65536 --dir /dev/shm --memory 1G
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(json.dumps({'s': time.perf_counter() - t, 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,"
    " 'rc': r.returncode, 'err': r.stderr[-400:]}))\n"
)


def run_measured(cmd, env=None):
    """(seconds, peak RSS bytes) of one command; raises on failure. Run through a small Python process of its
    own: a child's peak resident set counts the process it was forked from (Linux records the old image's
    peak at exec), which would add this script's NumPy to every row."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *map(str, cmd)], capture_output=True, text=True, env=env, check=True)
    d = json.loads(out.stdout)
    if d["rc"]:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {d['rc']}: {d['err']}")
    run_measured.last_stderr = d["err"]
    return d["s"], d["rss"]


def write_netpbm(path, size, dtype, seed=1, band=256):
    """A random SIZE x SIZE image as binary PGM (u8, u16 big-endian) or PFM (f32), written band by band
    (bounded memory). Netpbm rather than TIFF: every apron build reads it by rows (libtiff is optional) and
    libvips reads it too."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        if dtype == np.float32:
            f.write(f"Pf\n{size} {size}\n-1\n".encode())
        else:
            f.write(f"P5\n{size} {size}\n{np.iinfo(dtype).max}\n".encode())
        for y in range(0, size, band):
            rows = min(band, size - y)
            if dtype == np.float32:
                f.write(rng.random((rows, size), dtype=np.float32).astype("<f4").tobytes())
            else:
                f.write(rng.integers(0, np.iinfo(dtype).max + 1, (rows, size), dtype=dtype).astype(np.dtype(dtype).newbyteorder(">")).tobytes())


def vips_disk_mask(path, r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    m = np.where(x * x + y * y <= r * r, 255, 128)
    with open(path, "w") as f:
        f.write(f"{2 * r + 1} {2 * r + 1}\n")
        for row in m:
            f.write(" ".join(map(str, row)) + "\n")


# The input is read as raw samples after the Netpbm header (vips' rawload, in every libvips build; the pip
# one has no Netpbm loader). 16-bit samples then read byte-swapped: the same work, other values.
VIPS_SCRIPT = """
import sys, pyvips
src, dst, mask, sigma, size, fmt, offset = sys.argv[1:8]
m = pyvips.Image.matrixload(mask)
img = pyvips.Image.rawload(src, int(size), int(size), 1, offset=int(offset), format=fmt)
img.gaussblur(float(sigma)).cast(img.format).morph(m, "dilate").tiffsave(dst, tile=True, bigtiff=True, compression="none")
"""


def vips_command(src, dst, mask, sigma, work, size, dtype):
    try:
        import pyvips  # noqa: F401  (importable: the one-pass script below can run)

        with open(src, "rb") as f:
            head = f.read(64)
        offset = len(b"\n".join(head.split(b"\n")[:3])) + 1
        fmt = {np.uint8: "uchar", np.uint16: "ushort", np.float32: "float"}[dtype]
        return [[sys.executable, "-c", VIPS_SCRIPT, src, dst, mask, str(sigma), str(size), fmt, str(offset)]]
    except Exception:
        if not shutil.which("vips"):
            return None
        mid = os.path.join(work, "mid.v")
        return [["vips", "gaussblur", src, mid, str(sigma)], ["vips", "morph", mid, dst + "[tile,bigtiff]", mask, "dilate"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apron", default="build/tools/apron")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--types", default="u8")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go (tmpfs or disk)")
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--backends", default="auto,cpu")
    ap.add_argument("--ops", default="gaussian:sigma=4,dilate:se=disk:5",
                    help="comma-separated; each op is NAME:key=value (one parameter each here)")
    ap.add_argument("--no-vips", action="store_true")
    a = ap.parse_args()
    ops = []
    for item in a.ops.split(","):
        if "=" in item and ":" not in item.split("=")[0] and ops:
            ops[-1] += "," + item
        else:
            ops.append(item)
    work = tempfile.mkdtemp(dir=a.dir, prefix="apron-huge-")
    print(f"{a.size}x{a.size}, {' then '.join(ops)}, --memory {a.memory}, files in {a.dir}")
    print("| type | tool | seconds | input GB/s | % of dd bound | peak RSS |")
    print("|---|---|--:|--:|--:|--:|")
    try:
        mask = os.path.join(work, "disk5.mat")
        vips_disk_mask(mask, 5)
        for t in a.types.split(","):
            ext = ".pfm" if t == "f32" else ".pgm"
            src, dst = os.path.join(work, f"in_{t}{ext}"), os.path.join(work, f"out_{t}.tif")
            write_netpbm(src, a.size, TYPES[t])
            gb = os.path.getsize(src) / 1e9
            rows = []
            dd_s, dd_rss = run_measured(["dd", f"if={src}", f"of={dst}", "bs=16M", "conv=fdatasync"])
            os.remove(dst)
            rows.append(("dd (read + write the same bytes)", dd_s, dd_rss))
            stages = []
            for entry in a.backends.split(","):
                # "cuda --io-threads 1": a backend and more options; "mpi2 cuda": under mpirun -np 2.
                words = entry.split()
                launcher = []
                if words[0].startswith("mpi"):
                    launcher = ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", words[0][3:]]
                    words = words[1:]
                b, *extra = words
                cmd = [*launcher, a.apron, "filter", src, dst, "--memory", a.memory, "--backend", b, "--timing", *extra]
                for op in ops:
                    cmd += ["--op", op]
                s, rss = run_measured(cmd)
                rows.append((f"apron --backend {entry}", s, rss))
                stages += [f"{t} {entry}: {line.strip()}" for line in run_measured.last_stderr.splitlines() if "busy" in line]
                os.remove(dst)
            vc = None if a.no_vips else vips_command(src, dst, mask, 4.0, work, a.size, TYPES[t])
            if vc:
                total, peak = 0.0, 0
                try:
                    for c in vc:
                        s, rss = run_measured(c, env=dict(os.environ, VIPS_CONCURRENCY=str(os.cpu_count())))
                        total, peak = total + s, max(peak, rss)
                    rows.append(("libvips (" + ("pyvips" if vc[0][0] == sys.executable else "vips CLI") + ")", total, peak))
                except RuntimeError as e:
                    print(f"libvips failed: {str(e)[-300:]}", flush=True)
                    vc = None
                if os.path.exists(dst):
                    os.remove(dst)
            vips_s = rows[-1][1] if vc else None
            for name, s, rss in rows:
                extra = f" ({vips_s / s:.2f}x libvips)" if vips_s and name.startswith("apron") else ""
                print(f"| {t} | {name}{extra} | {s:.2f} | {gb / s:.2f} | {100 * dd_s / s:.0f} % | {rss / 2**20:.0f} MiB |",
                      flush=True)
            for line in stages:
                print(line, flush=True)
            os.remove(src)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
