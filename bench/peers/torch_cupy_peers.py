#!/usr/bin/env python3
"""Peer benchmark through PyTorch (cuDNN) and CuPy: the counterparts of the cases bench/bench_gpu.cpp times for
apron, timed the same way (device-resident single-channel square images, random input with a fixed seed, CUDA
events, warm-up, median of repetitions). Writes CSV in the common schema bench/report.py merges:

    impl,op,type,param,size,ms,mpix_s,channels,shape

channels and shape: the user cases' (bench/user_cases.hpp's names; below), 1 and empty on the single-channel rows.

Single-channel rows:
    cudnn      correlate      f32  k      torch conv2d, 1x1xNxN f32, random k x k weights, zero padding k//2
                                          (constant border), cudnn.allow_tf32 False, cudnn.benchmark True
    cudnn-f16  correlate      f32  k      the same in float16 (input, weights and output; listed as f32 since it
                                          stands in for the float case)
    cupy       correlate      f32/u8 k    cupyx.scipy.ndimage.correlate, float32 weights, mode 'nearest'
                                          (replicate), k <= 17 (far slower beyond; --large: k <= 63)
    cupy       gaussian       f32/u8 sigma cupyx.scipy.ndimage.gaussian_filter, truncate 3 (radius ceil(3 sigma)),
                                          mode 'nearest'
    cupy       dilate, erode  u8   k      cupyx.scipy.ndimage.grey_dilation / grey_erosion, size (k, k), 'nearest'
    torch      h2h_correlate  f32  5      pinned host tensor -> .cuda(non_blocking) -> conv2d 5x5 -> pinned host,
                                          wall clock of the whole region (one stream, no overlap)
    torch      h2h_correlate  u8   5      the same with u8 pixels on both ends, converted to f32 on the device

User cases (--cases user; 1, 3 and 4 interleaved channels, H x W x C arrays; C = 1 is a plain H x W array):
    cupy       correlate      u8/u16/f32 3x3, 5x5   cupyx.scipy.ndimage.correlate, float32 weights[..., None]
                                                     (a size-1 channel axis), mode 'nearest'
    cupy       gaussian       u8/u16/f32 sigma=S    gaussian_filter, sigma (S, S, 0), truncate 3, 'nearest'
    cupy       dilate         u8  rect/ellipse/cross/disk/random, sides 7 and 15: grey_dilation with
                                                     footprint[..., None] (the elements of bench_gpu)
    cudnn      correlate      f32 3x3, 5x5          torch conv2d(groups=C) on planar 1 x C x H x W data (another
                                                     layout than apron's interleaved pixels), zero padding
    cudnn      gaussian       f32 sigma=0.6, 2      the same with the sampled 2-D Gaussian (5x5, 13x13)
Default types as bench_gpu's: u8 for every family, u16 and f32 too for correlate and gaussian sigma 0.6 and 2;
--full: every type for every family, sides 31 and 63, erode too.

Rank cases (--cases rank; bench/rank_cases.hpp):
    cupy       median         u8  rect:3x3, 5x5, 7x7, 31x31, disk:15, 1 and 3 channels; u16 and f32 rect:3x3, 1 channel:
                                                     cupyx.scipy.ndimage.median_filter, size (k, k) (RGB: (k, k, 1)) or
                                                     the disk's footprint, mode 'reflect' (apron's default border)
CuPy's median over n > 160 cells (31x31: 961, disk:15: 709) sorts every window (shell sort in local memory): about
a thousand times slower than its 7x7, so those rows are timed on a 1024 x 1024 image (their size column says so),
one warm-up and three repetitions; Mpix/s is what compares (the kernel's time per pixel does not depend on the
image's size at these sizes).

Each section runs in its own try/except: a missing library or a failing case only drops its rows.

--large adds the masks of any size (bench_gpu --large) to the correlate cases: k = 41, 51, 63, 85, 127 for cuDNN
f32 (cuDNN f16 stays at k <= 31), and CuPy's correlate up to k = 63. A call slower than SLOW_MS (judged on the
last warm-up) is timed over SLOW_REPS repetitions.

    python3 bench/peers/torch_cupy_peers.py --sizes 8192[,4096...] --csv FILE [--reps 15] [--warmup 3] [--large]
                                            [--full] [--cases classic,user,rank]
"""
import argparse
import csv
import sys
import time

FILTER_KS = [3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31]
LARGE_KS = [41, 51, 63, 85, 127]   # --large: masks of any size
CUPY_MAX_K = 17
CUPY_MAX_K_LARGE = 63
CUDNN_MAX_K = {"cudnn": 31, "cudnn-f16": 31}        # per impl, without --large
CUDNN_MAX_K_LARGE = {"cudnn": 127, "cudnn-f16": 31}  # --large: f32 to 127, half precision as before
SIGMAS = [1, 2, 3, 4, 8]
MORPH_KS = [3, 5, 7, 9, 15, 21, 31]
SLOW_MS = 50.0   # a call slower than this is timed over SLOW_REPS repetitions only
SLOW_REPS = 5
HEADER = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "channels", "shape"]
USER_SIGMAS = [0.6, 1, 2, 4, 8]
USER_CHANNELS = [1, 3, 4]
ELEMENT_KINDS = ["rect", "ellipse", "cross", "disk", "random"]


class Runner:
    """Times the cases and writes each row as it comes, so that a run cut short keeps what it had."""

    def __init__(self, reps, warmup, csv_file):
        self.reps = reps
        self.warmup = warmup
        self.rows = 0
        self.file = csv_file
        self.writer = csv.writer(csv_file)
        self.writer.writerow(HEADER)
        csv_file.flush()

    def add(self, impl, op, typ, param, size, ms, channels=1, shape=""):
        mpix_s = size * size / 1e6 / (ms / 1e3)
        self.writer.writerow([impl, op, typ, param, size, "%.6g" % ms, "%.6g" % mpix_s, channels, shape])
        self.file.flush()
        self.rows += 1
        print("%-10s %-14s %-4s C%d %-13s %5s %6d %9.3f ms %10.0f Mpix/s"
              % (impl, op, typ, channels, shape, param, size, ms, mpix_s), flush=True)

    def median_ms(self, fn, new_event, elapsed_ms):
        """Median of CUDA-event times of fn() after warm-up; the last warm-up's time decides the repetitions."""
        last = 0.0
        for _ in range(self.warmup):
            a, b = new_event(), new_event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            last = elapsed_ms(a, b)
        reps = SLOW_REPS if last > SLOW_MS else self.reps
        times = []
        for _ in range(reps):
            a, b = new_event(), new_event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(elapsed_ms(a, b))
        times.sort()
        return times[len(times) // 2]

    def section(self, name, body):
        t0 = time.perf_counter()
        try:
            body()
        except ImportError as e:
            print("skipped %s: %s not available (%s)" % (name, getattr(e, "name", None) or "a library", e),
                  flush=True)
        except Exception as e:  # noqa: BLE001 - a failing section only loses its own rows
            print("skipped the rest of %s: %s: %s" % (name, type(e).__name__, e), flush=True)
        print("# %s: %.1f s" % (name, time.perf_counter() - t0), flush=True)


def torch_sections(run, sizes, large=False):
    def body_conv():
        import torch
        import torch.nn.functional as F

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        if not torch.backends.cudnn.is_available():
            raise ImportError("cuDNN is not available to PyTorch", name="cudnn")

        def ev():
            return torch.cuda.Event(enable_timing=True)

        def el(a, b):
            return a.elapsed_time(b)

        gen = torch.Generator(device="cuda")
        ks = FILTER_KS + (LARGE_KS if large else [])
        max_k = CUDNN_MAX_K_LARGE if large else CUDNN_MAX_K
        for size in sizes:
            gen.manual_seed(size)
            x32 = torch.randint(0, 256, (1, 1, size, size), generator=gen, device="cuda").float()
            for impl, dtype in (("cudnn", torch.float32), ("cudnn-f16", torch.float16)):
                x = x32.to(dtype)
                for k in ks:
                    if k > max_k[impl]:
                        continue
                    gen.manual_seed(k)
                    w = (torch.randint(-3, 4, (1, 1, k, k), generator=gen, device="cuda").float() / (k * k)).to(dtype)
                    try:
                        with torch.no_grad():
                            ms = run.median_ms(lambda: F.conv2d(x, w, padding=k // 2), ev, el)
                        run.add(impl, "correlate", "f32", k, size, ms)
                    except Exception as e:  # noqa: BLE001
                        print("skipped %s correlate %d @%d: %s" % (impl, k, size, e), flush=True)
                del x
            del x32
            torch.cuda.empty_cache()

    def body_h2h():
        import torch
        import torch.nn.functional as F

        torch.backends.cudnn.allow_tf32 = False
        for size in sizes:
            g = torch.Generator().manual_seed(size)
            w = torch.randint(-3, 4, (1, 1, 5, 5), generator=g).float().div_(8).cuda()
            for typ in ("f32", "u8"):
                dtype = torch.float32 if typ == "f32" else torch.uint8
                host = torch.randint(0, 256, (1, 1, size, size), generator=g).to(dtype).pin_memory()
                out = torch.empty(host.shape, dtype=dtype, pin_memory=True)

                def once():
                    with torch.no_grad():
                        d = host.cuda(non_blocking=True)
                        y = F.conv2d(d.float() if typ == "u8" else d, w, padding=2)
                        if typ == "u8":
                            y = y.round_().clamp_(0, 255).to(torch.uint8)
                        out.copy_(y, non_blocking=True)
                        torch.cuda.current_stream().synchronize()

                for _ in range(run.warmup):
                    once()
                times = []
                for _ in range(run.reps):
                    t0 = time.perf_counter()
                    once()
                    times.append((time.perf_counter() - t0) * 1e3)
                times.sort()
                run.add("torch", "h2h_correlate", typ, 5, size, times[len(times) // 2])
                del host, out
            torch.cuda.empty_cache()

    run.section("cuDNN conv2d (PyTorch)", body_conv)
    run.section("PyTorch host-to-host 5x5", body_h2h)


def cupy_sections(run, sizes, large=False):
    def tools():
        import cupy
        import cupyx.scipy.ndimage as ndi

        def ev():
            return cupy.cuda.Event()

        def el(a, b):
            return cupy.cuda.get_elapsed_time(a, b)

        return cupy, ndi, ev, el

    def free():
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()

    def images(cupy, size):
        rs = cupy.random.RandomState(seed=size)
        x8 = rs.randint(0, 256, size=(size, size), dtype=cupy.int32).astype(cupy.uint8)
        return x8.astype(cupy.float32), x8

    def body_correlate():
        cupy, ndi, ev, el = tools()
        ks = FILTER_KS + (LARGE_KS if large else [])
        max_k = CUPY_MAX_K_LARGE if large else CUPY_MAX_K
        for size in sizes:
            x32, x8 = images(cupy, size)
            for typ, x in (("f32", x32), ("u8", x8)):
                out = cupy.empty_like(x)
                for k in ks:
                    if k > max_k:
                        continue
                    w = (cupy.random.RandomState(seed=k).randint(-3, 4, size=(k, k)).astype(cupy.float32)
                         / cupy.float32(k * k))
                    try:
                        ms = run.median_ms(lambda: ndi.correlate(x, w, output=out, mode="nearest"), ev, el)
                        run.add("cupy", "correlate", typ, k, size, ms)
                    except Exception as e:  # noqa: BLE001
                        print("skipped cupy correlate %s %d @%d: %s" % (typ, k, size, e), flush=True)
                del out
            del x32, x8
            free()

    def body_gaussian():
        cupy, ndi, ev, el = tools()
        for size in sizes:
            x32, x8 = images(cupy, size)
            for typ, x in (("f32", x32), ("u8", x8)):
                out = cupy.empty_like(x)
                for s in SIGMAS:
                    try:
                        ms = run.median_ms(
                            lambda: ndi.gaussian_filter(x, s, output=out, mode="nearest", truncate=3.0), ev, el)
                        run.add("cupy", "gaussian", typ, s, size, ms)
                    except Exception as e:  # noqa: BLE001
                        print("skipped cupy gaussian %s sigma %g @%d: %s" % (typ, s, size, e), flush=True)
                del out
            del x32, x8
            free()

    def body_morph():
        cupy, ndi, ev, el = tools()
        for size in sizes:
            x32, x8 = images(cupy, size)
            del x32
            out = cupy.empty_like(x8)
            for op, fn in (("dilate", ndi.grey_dilation), ("erode", ndi.grey_erosion)):
                for k in MORPH_KS:
                    try:
                        ms = run.median_ms(lambda: fn(x8, size=(k, k), output=out, mode="nearest"), ev, el)
                        run.add("cupy", op, "u8", k, size, ms)
                    except Exception as e:  # noqa: BLE001
                        print("skipped cupy %s %d @%d: %s" % (op, k, size, e), flush=True)
            del x8, out
            free()

    run.section("CuPy correlate", body_correlate)
    run.section("CuPy gaussian_filter", body_gaussian)
    run.section("CuPy grey_dilation / grey_erosion", body_morph)


def element(kind, k):
    """bench_gpu's elements as a k x k uint8 array: OpenCV's ellipse and cross, scikit-image's disk (k = 2R + 1),
    and the random 0/1 element (x = k; x = (1103515245 x + 12345) mod 2^31 per cell, row-major; cell =
    (x >> 16) & 1; the centre set)."""
    import numpy as np

    r = k // 2
    m = np.zeros((k, k), dtype=np.uint8)
    if kind == "rect":
        m[:] = 1
    elif kind == "cross":
        m[r, :] = 1
        m[:, r] = 1
    elif kind == "disk":
        y, x = np.mgrid[:k, :k]
        m[(x - r) ** 2 + (y - r) ** 2 <= r * r] = 1
    elif kind == "ellipse":
        inv_r2 = 1.0 / (r * r) if r else 0.0
        for y in range(k):
            dy = y - r
            dx = int(round(r * ((r * r - dy * dy) * inv_r2) ** 0.5))  # round half to even, as nearbyint
            m[y, max(r - dx, 0):min(r + dx + 1, k)] = 1
    else:
        x = k
        flat = m.reshape(-1)
        for i in range(k * k):
            x = (1103515245 * x + 12345) & 0x7FFFFFFF
            flat[i] = (x >> 16) & 1
        m[r, r] = 1
    return m


def element_name(kind, k):
    return "disk:%d" % (k // 2) if kind == "disk" else "%s:%dx%d" % (kind, k, k)


def user_types(family, full, sigma=None):
    """The types a user case runs on (bench/user_cases.hpp's default and --full)."""
    if full:
        return ["u8", "u16", "f32"]
    if family == "correlate" or (family == "gaussian" and sigma in (0.6, 2)):
        return ["u8", "u16", "f32"]
    return ["u8"]


def cupy_user_sections(run, sizes, full=False):
    def images(cupy, size, typ, c):
        rs = cupy.random.RandomState(seed=size + 7919 * c)
        shape = (size, size) if c == 1 else (size, size, c)
        if typ == "f32":
            return rs.randint(0, 256, size=shape, dtype=cupy.int32).astype(cupy.float32)
        hi = 256 if typ == "u8" else 65536
        return rs.randint(0, hi, size=shape, dtype=cupy.int32).astype(cupy.uint8 if typ == "u8" else cupy.uint16)

    def body():
        import cupy
        import cupyx.scipy.ndimage as ndi

        def ev():
            return cupy.cuda.Event()

        def el(a, b):
            return cupy.cuda.get_elapsed_time(a, b)

        sides = [7, 15] + ([31, 63] if full else [])
        for size in sizes:
            for typ in ["u8", "u16", "f32"]:
                for c in USER_CHANNELS:
                    x = images(cupy, size, typ, c)
                    out = cupy.empty_like(x)
                    for k in (3, 5):
                        if typ not in user_types("correlate", full):
                            continue
                        w = (cupy.random.RandomState(seed=k).uniform(-1, 1, size=(k, k)) / k).astype(cupy.float32)
                        w = w if c == 1 else w[..., None]
                        ms = run.median_ms(lambda: ndi.correlate(x, w, output=out, mode="nearest"), ev, el)
                        run.add("cupy", "correlate", typ, k, size, ms, c, "%dx%d" % (k, k))
                    for s in USER_SIGMAS:
                        if typ not in user_types("gaussian", full, s):
                            continue
                        sig = s if c == 1 else (s, s, 0)
                        ms = run.median_ms(lambda: ndi.gaussian_filter(x, sig, output=out, mode="nearest",
                                                                       truncate=3.0), ev, el)
                        run.add("cupy", "gaussian", typ, s, size, ms, c, "sigma=%g" % s)
                    for op, fn in (("dilate", ndi.grey_dilation), ("erode", ndi.grey_erosion)):
                        if typ not in user_types("dilate", full) or (op == "erode" and not full):
                            continue
                        for k in sides:
                            for kind in ELEMENT_KINDS:
                                fp = cupy.asarray(element(kind, k)).astype(bool)
                                fp = fp if c == 1 else fp[..., None]
                                ms = run.median_ms(lambda: fn(x, footprint=fp, output=out, mode="nearest"), ev, el)
                                run.add("cupy", op, typ, k, size, ms, c, element_name(kind, k))
                    del x, out
                    cupy.get_default_memory_pool().free_all_blocks()

    run.section("CuPy, 1/3/4 channels (user cases)", body)


def torch_user_sections(run, sizes):
    def body():
        import math

        import torch
        import torch.nn.functional as F

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True

        def ev():
            return torch.cuda.Event(enable_timing=True)

        def el(a, b):
            return a.elapsed_time(b)

        gen = torch.Generator(device="cuda")
        for size in sizes:
            for c in USER_CHANNELS:
                gen.manual_seed(size + 7919 * c)
                x = torch.randint(0, 256, (1, c, size, size), generator=gen, device="cuda").float()  # planar
                kernels = []
                for k in (3, 5):
                    gen.manual_seed(k)
                    w = (torch.rand((c, 1, k, k), generator=gen, device="cuda") * 2 - 1) / k
                    kernels.append(("correlate", k, "%dx%d" % (k, k), w))
                for s in (0.6, 2):
                    r = math.ceil(3 * s - 1e-9)
                    g = torch.exp(-torch.arange(-r, r + 1, device="cuda", dtype=torch.float32) ** 2 / (2 * s * s))
                    g = g / g.sum()
                    kernels.append(("gaussian", s, "sigma=%g" % s, torch.outer(g, g).expand(c, 1, -1, -1).contiguous()))
                for op, param, shape, w in kernels:
                    pad = w.shape[-1] // 2
                    with torch.no_grad():
                        ms = run.median_ms(lambda: F.conv2d(x, w, padding=pad, groups=c), ev, el)
                    run.add("cudnn", op, "f32", param, size, ms, c, shape)
                del x
                torch.cuda.empty_cache()

    run.section("cuDNN depthwise conv2d (PyTorch, planar), 1/3/4 channels", body)


RANK_CASES = [  # (type, channels, kind, side): bench/rank_cases.hpp
    ("u8", 1, "rect", 3), ("u8", 1, "rect", 5), ("u8", 1, "rect", 7), ("u8", 1, "rect", 31), ("u8", 1, "disk", 31),
    ("u8", 3, "rect", 3), ("u8", 3, "rect", 5), ("u8", 3, "rect", 7), ("u8", 3, "rect", 31), ("u8", 3, "disk", 31),
    ("u16", 1, "rect", 3), ("f32", 1, "rect", 3),
]
RANK_SLOW_CELLS = 160   # CuPy sorts windows of more cells (rank > 80 from either end): timed on RANK_SLOW_SIZE
RANK_SLOW_SIZE = 1024


def cupy_rank_sections(run, sizes):
    def body():
        import cupy
        import cupyx.scipy.ndimage as ndi

        def ev():
            return cupy.cuda.Event()

        def el(a, b):
            return cupy.cuda.get_elapsed_time(a, b)

        def images(size, typ, c):
            rs = cupy.random.RandomState(seed=size + 7919 * c)
            shape = (size, size) if c == 1 else (size, size, c)
            if typ == "f32":
                return rs.randint(0, 256, size=shape, dtype=cupy.int32).astype(cupy.float32)
            hi = 256 if typ == "u8" else 65536
            return rs.randint(0, hi, size=shape, dtype=cupy.int32).astype(cupy.uint8 if typ == "u8" else cupy.uint16)

        def few_ms(fn):
            """One warm-up, the median of three: for the calls that take seconds."""
            fn()
            times = []
            for _ in range(3):
                a, b = ev(), ev()
                a.record()
                fn()
                b.record()
                b.synchronize()
                times.append(el(a, b))
            return sorted(times)[1]

        for size in sizes:
            for typ, c, kind, k in RANK_CASES:
                fp = element(kind, k).astype(bool)
                slow = int(fp.sum()) > RANK_SLOW_CELLS
                n = min(size, RANK_SLOW_SIZE) if slow else size
                x = images(n, typ, c)
                out = cupy.empty_like(x)
                if kind == "rect":
                    kwargs = {"size": (k, k) if c == 1 else (k, k, 1)}
                else:
                    f = cupy.asarray(fp)
                    kwargs = {"footprint": f if c == 1 else f[..., None]}
                fn = lambda: ndi.median_filter(x, output=out, mode="reflect", **kwargs)  # noqa: E731
                ms = few_ms(fn) if slow else run.median_ms(fn, ev, el)
                run.add("cupy", "median", typ, k, n, ms, c, element_name(kind, k))
                del x, out
                cupy.get_default_memory_pool().free_all_blocks()

    run.section("CuPy median_filter (rank cases)", body)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8192", help="comma-separated image sides (square, one channel)")
    ap.add_argument("--csv", required=True, help="output CSV file")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--large", action="store_true",
                    help="masks of any size: cuDNN f32 up to 127x127, CuPy correlate up to 63x63")
    ap.add_argument("--full", action="store_true", help="the user cases' full sweep (bench_gpu --full)")
    ap.add_argument("--cases", default="classic,user,rank",
                    help="case sets: classic (one channel), user (1/3/4 channels), rank (median filters)")
    args = ap.parse_args(argv)
    case_sets = set(args.cases.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    t0 = time.perf_counter()
    with open(args.csv, "w", newline="") as f:
        run = Runner(max(1, args.reps), max(1, args.warmup), f)
        if "classic" in case_sets:
            torch_sections(run, sizes, args.large)
            cupy_sections(run, sizes, args.large)
        if "user" in case_sets:
            torch_user_sections(run, sizes)
            cupy_user_sections(run, sizes, args.full)
        if "rank" in case_sets:
            cupy_rank_sections(run, sizes)
    print("torch_cupy_peers: %d rows to %s in %.0f s" % (run.rows, args.csv, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
