#!/usr/bin/env python3
"""apron.ndimage against dask-image on a chunked 3-D volume, on a dask.distributed LocalCluster.

A uint16 volume (default 256 x 1024 x 1024, 512 MiB) in chunks of 64 x 512 x 512 is made on the workers and kept
there (persist), then smoothed by a Gaussian of sigma (1, 2, 2) (SciPy's kernel, truncate 4: radius 4, 8, 8) by
apron.ndimage.gaussian_filter and by dask_image.ndfilters.gaussian_filter (SciPy's on each block). Each is timed
as what a user waits for: building the graph and .compute() of the result into the client (best of --reps),
and also as .persist() on the workers (no transfer to the client). apron's result is then checked bit for bit
against apron's whole-array NumPy run of the same volume; dask-image's is SciPy's, whose u16 passes truncate
(docs/python.md), so its largest difference from apron's is printed.

    PYTHONPATH=build/python python3 bench/dask_vs_dask_image.py [--shape 256 1024 1024] [--chunks 64 512 512]
        [--sigma 1 2 2] [--workers 2] [--threads-per-worker 1] [--reps 3] [--csv dask_vs_dask_image.csv]

Prints a Markdown table and writes the CSV. Each worker is a process; apron uses every core in each call
(threads=0), SciPy one. --cupy moves the persisted volume's chunks to the GPU (CuPy arrays on the workers): apron
then filters each block on the GPU (CUDA backend) and dask-image dispatches to cupyx.scipy.ndimage; the
whole-array reference is apron's run of the whole volume on the GPU. Keep the workers few there: each opens
its own CUDA context on the one device.
"""
from __future__ import annotations

import argparse
import csv
import gc
import os
import platform
import subprocess
import sys
import time

import numpy as np


def best_of(reps, fn, settle):
    """The best time of `reps` calls of fn (whose result is kept from the last); `settle()` between calls, not
    timed, lets the scheduler forget the previous call's keys (the same graph would otherwise find them held)."""
    times = []
    result = None
    for _ in range(reps):
        result = None
        settle()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, result


def version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", type=int, nargs=3, default=[256, 1024, 1024])
    ap.add_argument("--chunks", type=int, nargs=3, default=[64, 512, 512])
    ap.add_argument("--sigma", type=float, nargs=3, default=[1.0, 2.0, 2.0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads-per-worker", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--csv", default="dask_vs_dask_image.csv")
    ap.add_argument("--cupy", action="store_true", help="CuPy chunks on the GPU (apron's CUDA backend against cupyx)")
    args = ap.parse_args()

    import dask
    import dask.array as da
    import dask_image
    import dask_image.ndfilters
    import distributed
    import scipy

    import apron
    import apron.ndimage as andi

    shape, chunks, sigma = tuple(args.shape), tuple(args.chunks), tuple(args.sigma)
    print(f"volume {shape} uint16 ({np.prod(shape) * 2 / 2**20:.0f} MiB), chunks {chunks} "
          f"({'CuPy on the GPU' if args.cupy else 'NumPy'}), gaussian sigma {sigma}; "
          f"LocalCluster {args.workers} workers x {args.threads_per_worker} thread(s), processes; "
          f"{os.cpu_count()} cores; best of {args.reps}", flush=True)
    rows = []
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                                       processes=True, dashboard_address=None, silence_logs=40)
    with cluster, distributed.Client(cluster) as client:
        vol = da.random.default_rng(2027).integers(0, 60000, size=shape, chunks=chunks, dtype=np.uint16)
        if args.cupy:
            import cupy

            vol = vol.map_blocks(cupy.asarray, meta=cupy.empty((0, 0, 0), dtype=np.uint16))
        vol = vol.persist()
        distributed.wait(vol)
        impls = {
            "apron.ndimage": lambda: andi.gaussian_filter(vol, sigma),
            "dask_image.ndfilters": lambda: dask_image.ndfilters.gaussian_filter(vol, sigma),
        }
        results = {}

        def settle():
            gc.collect()
            time.sleep(1.0)
            held = sum(len(keys) for keys in client.has_what().values())
            if held != vol.npartitions:
                print(f"  (the workers hold {held} keys, {vol.npartitions} expected)", flush=True)

        for name, make in impls.items():
            make().compute()  # warm: the workers import the library, apron's first plan
            t_compute, all_compute, results[name] = best_of(args.reps, lambda: make().compute(), settle)
            kept = []

            def persisted():
                kept.clear()
                r = make().persist()
                distributed.wait(r)
                kept.append(r)

            def release():
                if kept:
                    client.cancel(kept[0])
                kept.clear()
                settle()

            t_persist, all_persist, _ = best_of(args.reps, persisted, release)
            release()
            rows.append({"impl": name, "compute_s": t_compute, "persist_s": t_persist,
                         "compute_all_s": " ".join(f"{t:.3f}" for t in all_compute),
                         "persist_all_s": " ".join(f"{t:.3f}" for t in all_persist)})
            print(f"  {name}: compute {t_compute:.3f} s (runs {rows[-1]['compute_all_s']}), persist {t_persist:.3f} s",
                  flush=True)
        whole_input = vol.compute()
    t0 = time.perf_counter()
    whole = andi.gaussian_filter(whole_input, sigma)
    if args.cupy:  # the device's result, then every array on the host for the comparisons
        import cupy

        cupy.cuda.Device().synchronize()
        t_whole = time.perf_counter() - t0
        whole = cupy.asnumpy(whole)
        results = {k: cupy.asnumpy(v) for k, v in results.items()}
    else:
        t_whole = time.perf_counter() - t0
    identical = bool(np.array_equal(results["apron.ndimage"], whole))
    diff = np.abs(results["dask_image.ndfilters"].astype(np.int32) - whole.astype(np.int32))
    peer_diff = int(diff.max())
    base, base_persist = rows[1]["compute_s"], rows[1]["persist_s"]
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    for r in rows:
        r.update({"shape": "x".join(map(str, shape)), "chunks": "x".join(map(str, chunks)),
                  "chunks_on": "gpu (cupy)" if args.cupy else "host (numpy)",
                  "sigma": " ".join(f"{s:g}" for s in sigma), "dtype": "uint16", "workers": args.workers,
                  "threads_per_worker": args.threads_per_worker, "reps": args.reps,
                  "compute_vs_dask_image": base / r["compute_s"],
                  "persist_vs_dask_image": base_persist / r["persist_s"],
                  "bit_identical_to_whole_array_apron": identical if r["impl"] == "apron.ndimage" else "",
                  "max_abs_diff_to_apron": 0 if r["impl"] == "apron.ndimage" else peer_diff,
                  "machine": machine, "commit": commit(),
                  "versions": f"apron {apron.__version__}, dask {dask.__version__}, "
                              f"distributed {distributed.__version__}, dask-image {version('dask-image')}, "
                              f"zarr {version('zarr')}, scipy {scipy.__version__}, numpy {np.__version__}, "
                              f"python {sys.version.split()[0]}"})
    print()
    print(f"| implementation | .compute() s (best of {args.reps}) | vs dask-image | .persist() s | vs dask-image | result |")
    print("|---|--:|--:|--:|--:|---|")
    for r in rows:
        if r["impl"] == "apron.ndimage":
            note = "bit-identical to the whole-array apron run" if identical else "DIFFERS from the whole-array apron run"
        else:
            note = f"SciPy's per-pass truncation: up to {peer_diff} from apron's"
        print(f"| {r['impl']} | {r['compute_s']:.3f} | {r['compute_vs_dask_image']:.2f}x | {r['persist_s']:.3f} | "
              f"{r['persist_vs_dask_image']:.2f}x | {note} |")
    where = "on the GPU" if args.cupy else "on the host"
    print(f"\nwhole-array apron.ndimage.gaussian_filter in this process, {where}: {t_whole:.3f} s")
    print(f"versions: {rows[0]['versions']}; commit {rows[0]['commit']}")
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.csv}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
