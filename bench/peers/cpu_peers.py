#!/usr/bin/env python3
"""apron's CPU backend against OpenCV's filter2D on the same machine, same run (issue 4's CPU target).

For each mask side k: a random N x N f32 image and a random k x k f32 mask (fixed seeds), correlation with the
mirror border (OpenCV's BORDER_REFLECT_101). apron runs as `apron filter --backend cpu --timing` and the time
of its correlate step is taken (planning, file reading and writing excluded; the FFT's own plans included);
OpenCV's filter2D call is timed in this process (its DFT set-up included). Both use every core. Each output is
compared with the other (max abs difference relative to the largest output magnitude).

    python3 bench/peers/cpu_peers.py --apron build/tools/apron [--size 4096] [--ks 31,63] [--reps 3]
                                     [--algo auto] [--csv FILE]

--user: the cases users run on 1, 3 and 4 interleaved channels, the same as bench/bench_cpu_user.cpp (which
times apron's CPU backend in process): OpenCV in this process (impl opencv) and apron's CLI step time
(`apron filter --backend cpu --timing`, impl apron-cli), each output compared with OpenCV's (max_diff). Rows in
bench/report.py's schema, the header of bench_cpu_user's CSV (so the two concatenate):
impl,op,type,param,size,ms,mpix_s,channels,shape,gpix_s,gsamples_s,kernel,check,threads,max_diff.
    gaussian  sigma=1, sigma=2      GaussianBlur(ksize 2 ceil(3 S) + 1, BORDER_REFLECT_101)   gaussian:sigma=S,border=mirror
    correlate 3x3, 5x5, 7x7         filter2D, the weights of user_cpu_mask(k)                 correlate:mask=FILE,border=mirror
    box       5x5                   blur                                                      box:width=5,border=mirror
    dilate    rect:9x9, rect:21x21, ellipse:9x9, ellipse:21x21   dilate, getStructuringElement   dilate:se=SHAPE
    python3 bench/peers/cpu_peers.py --user --apron build/tools/apron [--size 4096] [--types u8] [--channels 1,3,4]
                                     [--reps 3] [--csv FILE]
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


USER_CASES = [("gaussian", "sigma=1", 1), ("gaussian", "sigma=2", 2), ("correlate", "3x3", 3), ("correlate", "5x5", 5),
              ("correlate", "7x7", 7), ("box", "5x5", 5), ("dilate", "rect:9x9", 9), ("dilate", "rect:21x21", 21),
              ("dilate", "ellipse:9x9", 9), ("dilate", "ellipse:21x21", 21)]


def user_cpu_mask(k):
    """bench_cpu_user's weights: w_i = ((7 i + k) mod 11) + 1 + sqrt(i + 1) / 3 over their sum, row-major."""
    w = np.array([((7 * i + k) % 11) + 1 + np.sqrt(i + 1.0) / 3 for i in range(k * k)], dtype=np.float64)
    return (w / w.sum()).reshape(k, k)


def write_user_input(path, a):
    """PGM/PPM (8 or 16 bits), PAM for 4 channels, PFM for float (1 or 3 channels)."""
    h, w = a.shape[:2]
    c = 1 if a.ndim == 2 else a.shape[2]
    if a.dtype == np.float32:
        with open(path, "wb") as f:
            f.write(b"%s\n%d %d\n-1.0\n" % (b"Pf" if c == 1 else b"PF", w, h))
            f.write(np.ascontiguousarray(a[::-1], dtype="<f4").tobytes())
        return
    maxval = 255 if a.dtype == np.uint8 else 65535
    data = a.astype(">u2").tobytes() if a.dtype == np.uint16 else a.tobytes()
    with open(path, "wb") as f:
        if c == 4:
            f.write(b"P7\nWIDTH %d\nHEIGHT %d\nDEPTH 4\nMAXVAL %d\nENDHDR\n" % (w, h, maxval))
        else:
            f.write(b"%s\n%d %d\n%d\n" % (b"P5" if c == 1 else b"P6", w, h, maxval))
        f.write(data)


def read_user_output(cv2, path, c):
    if path.endswith(".pfm"):
        a = read_pfm(path) if c == 1 else None
        if a is None:
            a = cv2.imread(path, cv2.IMREAD_UNCHANGED)[:, :, ::-1]
        return a
    a = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if c == 3:
        a = a[:, :, ::-1]
    elif c == 4:
        a = a[:, :, [2, 1, 0, 3]]
    return a


def user_main(a):
    import cv2

    cv2.setNumThreads(os.cpu_count() if a.threads <= 0 else a.threads)
    rng = np.random.default_rng(7)
    rows = []
    n = a.size
    print("cpu_peers --user: %dx%d, OpenCV %s, %d threads" % (n, n, cv2.__version__, cv2.getNumThreads()), flush=True)
    out_f = open(a.csv, "w", newline="") if a.csv else None
    fields = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "channels", "shape", "gpix_s", "gsamples_s",
              "kernel", "check", "threads", "max_diff"]
    writer = csv.DictWriter(out_f, fieldnames=fields) if out_f else None
    if writer:
        writer.writeheader()
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for typ in a.types.split(","):
            dtype = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}[typ]
            for c in [int(x) for x in a.channels.split(",")]:
                shape = (n, n) if c == 1 else (n, n, c)
                img = (rng.integers(0, 256, shape).astype(np.float32) if typ == "f32"
                       else rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype))
                cli_ok = not (typ == "f32" and c == 4)  # PFM holds 1 or 3 channels
                ext = ".pfm" if typ == "f32" else ".pgm" if c == 1 else ".ppm" if c == 3 else ".pam"
                inp = os.path.join(tmp, "in" + ext)
                if cli_ok:
                    write_user_input(inp, img)
                out_ext = ".pfm" if typ == "f32" else ".png" if c == 4 else ext
                for op, shp, param in USER_CASES:
                    if op == "gaussian":
                        ksize = 2 * int(np.ceil(3 * param - 1e-9)) + 1
                        fn = lambda: cv2.GaussianBlur(img, (ksize, ksize), param, param,
                                                      borderType=cv2.BORDER_REFLECT_101)
                        spec = "gaussian:%s,border=mirror" % shp
                    elif op == "correlate":
                        m = user_cpu_mask(param)
                        mpath = os.path.join(tmp, "m%d.kernel" % param)
                        with open(mpath, "w") as f:
                            f.write("%d %d\n" % (param, param))
                            for row in m:
                                f.write(" ".join(repr(float(v)) for v in row) + "\n")
                        kern = m.astype(np.float32) if typ != "f32" else m
                        fn = lambda: cv2.filter2D(img, -1, kern, borderType=cv2.BORDER_REFLECT_101)
                        spec = "correlate:mask=%s,border=mirror" % mpath
                    elif op == "box":
                        fn = lambda: cv2.blur(img, (param, param), borderType=cv2.BORDER_REFLECT_101)
                        spec = "box:width=%d,border=mirror" % param
                    else:
                        kind = cv2.MORPH_RECT if shp.startswith("rect") else cv2.MORPH_ELLIPSE
                        se = cv2.getStructuringElement(kind, (param, param))
                        fn = lambda: cv2.dilate(img, se)
                        spec = "dilate:se=%s" % shp
                    ref = fn()
                    times = []
                    for _ in range(a.reps):
                        t = time.perf_counter()
                        fn()
                        times.append((time.perf_counter() - t) * 1e3)
                    cm = statistics.median(times)
                    found = [("opencv", cm, "")]
                    if cli_ok:
                        out = os.path.join(tmp, "out" + out_ext)
                        cli = []
                        for _ in range(a.reps):
                            cmd = [a.apron, "filter", inp, out, "--backend", "cpu", "--timing", "--op", spec]
                            if a.threads > 0:
                                cmd += ["--threads", str(a.threads)]
                            r = subprocess.run(cmd, capture_output=True, text=True)
                            steps = [float(x.group(1)) for x in re.finditer(r"^\s*([\d.]+) ms\s+(\S.*)$", r.stderr, re.M)
                                     if not re.match(r"(read|write|total)\b", x.group(2))]
                            if r.returncode != 0 or not steps:
                                print("# apron %s %s C%d: exit %d: %s" % (spec, typ, c, r.returncode,
                                                                         r.stderr.strip()[-300:]), flush=True)
                                break
                            cli.append(steps[-1])
                        if cli:
                            got = read_user_output(cv2, out, c)
                            diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
                            found.append(("apron-cli", statistics.median(cli), "%.3g" % diff))
                    for impl, ms, diff in found:
                        row = dict(impl=impl, op=op, type=typ, param=param, size=n, ms="%.6g" % ms,
                                   mpix_s="%.6g" % (n * n / 1e3 / ms), channels=c, shape=shp,
                                   gpix_s="%.6g" % (n * n / 1e6 / ms), gsamples_s="%.6g" % (n * n * c / 1e6 / ms),
                                   kernel="", check="", threads=cv2.getNumThreads(), max_diff=diff)
                        rows.append(row)
                        if writer:
                            writer.writerow(row)
                            out_f.flush()
                    print("%-10s %-14s %-4s C%d  OpenCV %8.2f ms  apron CLI step %s  max diff %s"
                          % (op, shp, typ, c, cm, "%8.2f ms" % found[1][1] if len(found) > 1 else "-",
                             found[1][2] if len(found) > 1 else "-"), flush=True)
    if out_f:
        out_f.close()
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apron", required=True)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--ks", default="31,63")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--csv")
    ap.add_argument("--user", action="store_true", help="1, 3 and 4 channels: the cases of bench_cpu_user")
    ap.add_argument("--types", default="u8", help="--user: pixel types")
    ap.add_argument("--channels", default="1,3,4", help="--user: channel counts")
    ap.add_argument("--threads", type=int, default=0, help="--user: threads for OpenCV and apron (0: all cores)")
    ap.add_argument("--dir", default=None, help="--user: where the images go (default the system's temp)")
    a = ap.parse_args()
    if a.user:
        return user_main(a)
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
