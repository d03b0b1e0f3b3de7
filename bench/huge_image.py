#!/usr/bin/env python3
"""Images larger than memory: `apron filter` streaming a generated huge image from file to file under a memory
budget, against the storage bound and libvips, in the same run.

For each pixel type: writes a random SIZE x SIZE image as an uncompressed tiled BigTIFF in --dir (not timed),
then times, each as a fresh process whose peak resident memory is read with wait4():
  - dd: the same bytes read and written (`dd if=in.tif of=copy bs=16M`), the storage's read+write bound;
  - apron: gaussian sigma 4 then dilate disk:5 (--ops), --memory BUDGET, for each --backends entry;
  - libvips: the same two filters (gaussblur sigma 4 with its default precision, then morph with the disk),
    through pyvips in one lazy pass when importable, else the `vips` command with an intermediate .v file.
Prints one Markdown table: seconds, GB/s of input, % of the dd bound, peak RSS, speed-up over libvips.

    python3 bench/huge_image.py --apron build/tools/apron --size 65536 --dir /dev/shm --memory 1G
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


def run_measured(cmd, env=None):
    """(seconds, peak RSS bytes) of one command run as a fresh child; raises on failure."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}: {err.decode(errors='replace')[-400:]}")
    return seconds, usage.ru_maxrss * 1024


def write_tiled_tiff(path, size, dtype, tile=256, seed=1):
    """An uncompressed tiled BigTIFF of random samples, written tile row by tile row (bounded memory)."""
    import struct

    item = np.dtype(dtype).itemsize
    tiles_x = tiles_y = (size + tile - 1) // tile
    n = tiles_x * tiles_y
    tile_bytes = tile * tile * item
    # Header (16) + IFD: count (8) + 12 entries x 20 + next (8); then offsets and counts arrays, then data.
    entries = 12
    ifd = 16
    arrays = ifd + 8 + entries * 20 + 8
    offsets_at, counts_at = arrays, arrays + 8 * n
    data_at = (counts_at + 8 * n + 4095) // 4096 * 4096
    fmt = 3 if dtype == np.float32 else 1

    def entry(tag, typ, count, value):
        return struct.pack("<HHQ", tag, typ, count) + (struct.pack("<Q", value) if typ == 16 else struct.pack("<HHI", value, 0, 0) if typ == 3 else struct.pack("<Q", value))

    with open(path, "wb") as f:
        f.write(b"II" + struct.pack("<HHHQ", 43, 8, 0, ifd))
        tags = [entry(256, 16, 1, size), entry(257, 16, 1, size), entry(258, 3, 1, item * 8), entry(259, 3, 1, 1),
                entry(262, 3, 1, 1), entry(277, 3, 1, 1), entry(284, 3, 1, 1), entry(322, 3, 1, tile),
                entry(323, 3, 1, tile), entry(324, 16, n, offsets_at), entry(325, 16, n, counts_at),
                entry(339, 3, 1, fmt)]
        f.write(struct.pack("<Q", entries) + b"".join(tags) + struct.pack("<Q", 0))
        f.write((np.arange(n, dtype=np.uint64) * tile_bytes + data_at).astype("<u8").tobytes())
        f.write(np.full(n, tile_bytes, dtype="<u8").tobytes())
        f.seek(data_at)
        rng = np.random.default_rng(seed)
        for ty in range(tiles_y):
            if dtype == np.float32:
                band = rng.random((tiles_x, tile, tile), dtype=np.float32)
            else:
                band = rng.integers(0, np.iinfo(dtype).max + 1, (tiles_x, tile, tile), dtype=dtype)
            f.write(band.tobytes())


def vips_disk_mask(path, r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    m = np.where(x * x + y * y <= r * r, 255, 128)
    with open(path, "w") as f:
        f.write(f"{2 * r + 1} {2 * r + 1}\n")
        for row in m:
            f.write(" ".join(map(str, row)) + "\n")


VIPS_SCRIPT = """
import sys, pyvips
src, dst, mask, sigma = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
m = pyvips.Image.matrixload(mask)
img = pyvips.Image.new_from_file(src, access="sequential")
img.gaussblur(sigma).cast(img.format).morph(m, "dilate").tiffsave(dst, tile=True, bigtiff=True, compression="none")
"""


def vips_command(src, dst, mask, sigma, work):
    try:
        import pyvips  # noqa: F401

        return [[sys.executable, "-c", VIPS_SCRIPT, src, dst, mask, str(sigma)]]
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
            src, dst = os.path.join(work, f"in_{t}.tif"), os.path.join(work, f"out_{t}.tif")
            write_tiled_tiff(src, a.size, TYPES[t])
            gb = os.path.getsize(src) / 1e9
            rows = []
            dd_s, dd_rss = run_measured(["dd", f"if={src}", f"of={dst}", "bs=16M", "conv=fdatasync"])
            os.remove(dst)
            rows.append(("dd (read + write the same bytes)", dd_s, dd_rss))
            for b in a.backends.split(","):
                cmd = [a.apron, "filter", src, dst, "--memory", a.memory, "--backend", b]
                for op in ops:
                    cmd += ["--op", op]
                s, rss = run_measured(cmd)
                rows.append((f"apron --backend {b}", s, rss))
                os.remove(dst)
            vc = None if a.no_vips else vips_command(src, dst, mask, 4.0, work)
            if vc:
                total, peak = 0.0, 0
                for c in vc:
                    s, rss = run_measured(c, env=dict(os.environ, VIPS_CONCURRENCY=str(os.cpu_count())))
                    total, peak = total + s, max(peak, rss)
                rows.append(("libvips (" + ("pyvips" if vc[0][0] == sys.executable else "vips CLI") + ")", total, peak))
                os.remove(dst)
            vips_s = rows[-1][1] if vc else None
            for name, s, rss in rows:
                extra = f" ({vips_s / s:.2f}x libvips)" if vips_s and name.startswith("apron") else ""
                print(f"| {t} | {name}{extra} | {s:.2f} | {gb / s:.2f} | {100 * dd_s / s:.0f} % | {rss / 2**20:.0f} MiB |",
                      flush=True)
            os.remove(src)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
