#!/usr/bin/env python3
"""Plots of apron's benchmark CSVs (the files bench/report.py merges) as PNG files, for the docs.

    python3 bench/plots.py CSV... [-o docs/plots] [--gpu NAME] [--cpu NAME] [--date D] [--commit SHA]
                                  [--copy-gbs 2992] [--fma-peak 33.5e12]

Inputs: CSVs with the header impl,op,type,param,size,ms,mpix_s and any further columns (report.py's docstring
and bench/report_user.py say what the rows mean and how a peer's row answers apron's). A file without those seven
columns stops the run with one line naming it. Each plot is made only when its rows are there, so a partial CSV
works; the run prints the plots it wrote and those it skipped.

  masks_f32.png, masks_u8.png       Gpix/s against the mask side k (log-log): apron's chosen path (marker per
  (masks_u8_float.png,              path: direct, separable, low-rank, fft, tensor), every forced path (OP@PATH
   masks_f32_rank2.png)             rows), each peer, and the FP32 direct roofline min(bandwidth / bytes per
                                    pixel, fma_peak / k^2) dashed (bytes read + written: f32 8, u8 2). Classes:
                                    correlate f32, correlate_int u8 (exact integer masks; else correlate u8),
                                    correlate u8 with float masks and correlate_rank2 f32 when those rows exist.
  user_cases_TYPE.png               rows with a `shape` column (the cases users run): apron against the best peer
                                    per case, one panel per channel count (1, 3, 4), log y.
  morphology.png                    dilate against the element side: one channel, the rectangles of the plain
                                    rows, and every element shape of the `shape` rows; log y.
  host_to_host.png                  host to host in GB/s each way: one image (h2h_correlate) against its side,
                                    batches (op batch_h2h, one row per streams / GPUs setting) against the PCIe
                                    ceilings measured in the same run, and batches from files (op batch_files).
  cpu_vs_opencv.png                 apron's CPU backend (impl apron-cpu) against OpenCV (impl opencv), per mask
                                    side, one row of panels per machine.
  streaming.png                     an image larger than memory streamed file to file (op stream_gaussian_dilate):
                                    GB/s of input per sample type for apron-cuda, apron-cpu and libvips, with dd's
                                    copy of the same bytes (impl dd) as the storage ceiling of each type.

Ceilings: bandwidth from a `copy_gbs` column, else the largest roofline_gpix_s x bytes per pixel of the rows (the
smallest mask is memory-bound), else --copy-gbs (the H100's device copy, 2992 GB/s read + write); fma_peak from
its column, else --fma-peak (33.5e12, the H100's). Host-to-host ceilings from the columns pcie_gbs (both ways at
once, each way) and pcie_one_way_gbs, else the rows' roofline. The legend says which were used.

Provenance: every plot names the machine, date and commit of its rows: a row's own machine, date, commit columns
where it has them (docs/data/*.csv, transcribed from the docs' tables, carry them, and a `source` column naming
the table), else --gpu (default: nvidia-smi's name) or --cpu for the CPU rows (no default: name it), --date
(default today, UTC) and --commit (default git rev-parse --short HEAD).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import glob
import math
import os
import sys
import textwrap
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402  (reading and matching rows exactly as the tables do)
import report_user  # noqa: E402

DPI = 110
WIDTH = 8.0  # inches
APRON = "#0072B2"
# One colour per implementation in every plot (Okabe-Ito, readable by colour-blind readers); apron always blue.
COLOURS = {"apron": APRON, "apron-cpu": APRON, "npp": "#009E73", "cudnn": "#E69F00", "cudnn-f16": "#F0C25E",
           "cupy": "#D55E00", "torch": "#CC79A7", "opencv": "#882255"}
LABELS = dict(report.PEER_LABELS, apron="apron", npp="NPP", cudnn="cuDNN f32")
LABELS.update({"apron-cpu": "apron (CPU backend)", "opencv": "OpenCV"})
PEER_MARKERS = {"npp": "s", "cudnn": "v", "cudnn-f16": "<", "cupy": "D", "torch": "P"}
ROOF = "#444444"
PATH_MARKERS = {"direct": "o", "separable": "s", "low-rank": "D", "fft": "^", "tensor": "*"}
FORCED_STYLES = {"direct": ":", "separable": (0, (5, 2)), "low-rank": (0, (3, 1, 1, 1)), "fft": "-.",
                 "tensor": (0, (1, 1))}
SHAPE_MARKERS = {"rect": "s", "ellipse": "o", "disk": "D", "cross": "P", "random": "X"}
BYTES = {"u8": 1, "u16": 2, "f32": 4}
CPU_IMPLS = ("apron-cpu", "apron-cli", "opencv")
BATCH_OPS = ("batch_h2h", "batch_files")
STREAM_OPS = ("stream_gaussian_dilate",)  # whole images streamed file to file (docs/streaming.md), not kernels
STREAM_TOOLS = [("apron-cuda", "apron, CUDA backend", APRON), ("apron-cpu", "apron, CPU backend", "#56B4E9"),
                ("libvips", "libvips", "#999933")]
DEFAULT_COPY_GBS = 2992.0
DEFAULT_FMA_PEAK = report.DEFAULT_FMA_PEAK

# (apron op, type) -> file, title, the peers' op, peers' matches approximate, what '~' means there
MASK_CLASSES = [
    ("correlate", "f32", "masks_f32.png", "random k×k masks", "correlate", False, ""),
    ("correlate_int", "u8", "masks_u8.png", "random integer k×k masks, exact", "correlate_int", False,
     "~: the peer's float-mask correlate u8"),
    ("correlate", "u8", "masks_u8_float.png", "random float k×k masks", "correlate", False, ""),
    ("correlate_rank2", "f32", "masks_f32_rank2.png", "rank-2 k×k masks", "correlate", True,
     "~: the peer's full-rank correlate f32"),
]


class InputError(Exception):
    """An input the plots cannot use (its one-line message names the file)."""


# ---------------------------------------------------------------------------------------------------------
# inputs and provenance
# ---------------------------------------------------------------------------------------------------------


def check_header(path):
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror)) from None
    missing = [c for c in report.CORE if c not in header]
    if missing:
        raise InputError("%s: no column %s (the header must hold %s)" % (path, ", ".join(missing),
                                                                        ",".join(report.CORE)))


def load(paths):
    """The rows of every file (report.py's Row); a file without the core columns is an error, a bad row a
    warning (as report.py skips it)."""
    for p in paths:
        check_header(p)
    rows, problems = report.read_rows(paths)
    for p in problems:
        print("plots.py: " + p, file=sys.stderr)
    warn_mixed_runs(rows)
    return rows


def warn_mixed_runs(rows):
    """Two runs' rows of the same case would be plotted as one (the fastest wins, as in report.py): say so."""
    runs = defaultdict(set)
    for r in rows:
        if r.op in BATCH_OPS:  # one row per setting, not per case
            continue
        key = (r.impl, r.op, r.type, r.param, r.size, r.extra.get("channels", ""), r.extra.get("shape", ""))
        runs[key].add((r.extra.get("machine", ""), r.extra.get("date", ""), r.extra.get("commit", ""), r.source))
    mixed = [k for k, v in runs.items() if len(v) > 1]
    if mixed:
        print("plots.py: warning: %d cases have rows of several runs or files (e.g. %s); the fastest row of each is "
              "plotted" % (len(mixed), " ".join(str(x) for x in mixed[0][:5])), file=sys.stderr)


class Context:
    """The options, and the defaults for rows that do not name their run (looked up once, when needed)."""

    def __init__(self, args):
        self.args = args
        self._gpu = args.gpu
        self._commit = args.commit
        self.date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        # Not this machine's CPU: the plots are mostly drawn away from the machine that ran the benchmark.
        self.cpu = args.cpu or "CPU not named (--cpu)"

    @property
    def gpu(self):
        if self._gpu is None:
            self._gpu = report.gpu_name() or "unknown GPU"
        return self._gpu

    @property
    def commit(self):
        if self._commit is None:
            self._commit = report.git_commit() or "unknown commit"
        return self._commit

    def run_of(self, r):
        """(machine, date, commit) of a row: its own columns, else the options."""
        machine = r.extra.get("machine") or (self.cpu if r.impl in CPU_IMPLS else self.gpu)
        return machine, r.extra.get("date") or self.date, r.extra.get("commit") or self.commit


def provenance(rows, ctx):
    """The lines under a plot's title: the runs (machines, date, apron's commit and the peers' where it differs)
    and where the rows come from."""
    commits = defaultdict(lambda: (set(), set()))  # (machine, date) -> (apron's commits, the peers')
    for r in rows:
        machine, date, commit = ctx.run_of(r)
        commits[(machine, date)][0 if r.impl in ("apron", "apron-cpu", "apron-cli") else 1].add(commit)
    runs = defaultdict(list)  # the same date and commits on several machines: one line
    for (machine, date), (own, peers) in commits.items():
        own = own or peers
        runs[(date, " / ".join(sorted(own)), " / ".join(sorted(peers - own)))].append(machine)
    lines = []
    for (date, own, peers), machines in runs.items():
        if date == own == "not stated":
            lines.append("%s: date and commit not stated in the doc" % "; ".join(machines))
            continue
        lines.append("%s, %s, commit %s%s" % ("; ".join(machines), date, own, " (peers: %s)" % peers if peers else ""))
    sources = sorted({r.extra.get("source", "") for r in rows} - {""})
    if sources:
        lines.append("transcribed from docs tables: " + "; ".join(sources))
    else:
        lines.append("data: " + ", ".join(sorted({os.path.basename(r.source) for r in rows})))
    return lines


# ---------------------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------------------


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 8.5, "legend.fontsize": 6.5, "axes.labelsize": 8,
                         "xtick.labelsize": 7, "ytick.labelsize": 7})
    return plt


def new_figure(plt, rows, ctx, title, height, nrows=1, ncols=1, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, height), layout="constrained", squeeze=False, **kw)
    lines = [title] + [part for x in provenance(rows, ctx) for part in textwrap.wrap(x, 125)]
    fig.suptitle("\n".join(lines), fontsize=8.5)
    return fig, axes


def save(fig, outdir, name):
    """Writes the figure as a 256-colour PNG: a plot's few colours survive, and the file is a third of the size."""
    import io
    import matplotlib.pyplot as plt
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    buf.seek(0)
    path = os.path.join(outdir, name)
    # No metadata (matplotlib's version): the same data gives the same bytes.
    Image.open(buf).convert("RGB").quantize(colors=256, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


def gpix(r):
    return r.mpix_s / 1e3


def log_ticks(ax, values, axis="x", fmt="%g"):
    """Ticks at the measured values, thinned so that labels do not collide on a log axis."""
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator
    kept = []
    for v in sorted(set(values)):
        if not kept or math.log10(v) - math.log10(kept[-1]) >= 0.07:
            kept.append(v)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(kept))
    target.set_major_formatter(FixedFormatter([fmt % v for v in kept]))
    target.set_minor_locator(NullLocator())


def log_y(ax):
    ax.set_yscale("log")
    plain_log(ax)


def plain_log(ax, axis="y"):
    """Log-axis labels as plain numbers (0.1, 1, 10), and 2 and 5 between them where the axis spans little."""
    from matplotlib.ticker import FuncFormatter

    def minor(v, _):
        lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
        mantissa = round(v / 10 ** math.floor(math.log10(v)), 6)
        return "%g" % v if hi / lo < 30 and mantissa in (2, 5) else ""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
    target.set_minor_formatter(FuncFormatter(minor))


def grid(ax):
    ax.grid(True, which="major", alpha=0.3, lw=0.6)
    ax.grid(True, which="minor", alpha=0.12, lw=0.4)


def plain_rows(rows):
    """Single-channel GPU rows (no `shape` column), as report.py's comparison tables use them."""
    return [r for r in rows if not report_user.is_user_row(r) and r.impl not in CPU_IMPLS and r.op not in BATCH_OPS
            and r.op not in STREAM_OPS]


def busiest_size(keys):
    """The image side with the most rows (ties: the larger), from (..., size) keys."""
    count = defaultdict(int)
    for k in keys:
        count[k[-1]] += 1
    return max(count, key=lambda s: (count[s], s)) if count else None


# ---------------------------------------------------------------------------------------------------------
# a. masks of any size
# ---------------------------------------------------------------------------------------------------------


def ceilings(apron_rows, typ, ctx):
    """(bytes per pixel, bandwidth GB/s, its origin, fma_peak FMA/s, its origin) for the FP32 direct roofline."""
    bpp = 2 * BYTES.get(typ, 4)
    cols = [report.num(r.extra.get("copy_gbs")) for r in apron_rows]
    roofs = [report.num(r.extra.get("roofline_gpix_s")) for r in apron_rows]
    if any(cols):
        bw, bw_from = max(c for c in cols if c), "the CSV"
    elif any(roofs):
        bw, bw_from = max(x for x in roofs if x) * bpp, "the CSV's roofline"
    else:
        bw, bw_from = ctx.args.copy_gbs, "--copy-gbs (not in the CSV)"
    peaks = [report.num(r.extra.get("fma_peak")) for r in apron_rows]
    if any(peaks):
        fma, fma_from = max(p for p in peaks if p), "the CSV"
    else:
        fma, fma_from = ctx.args.fma_peak, "--fma-peak (not in the CSV)"
    return bpp, bw, bw_from, fma, fma_from


def mask_series(table, op, typ, size):
    """apron's chosen rows {k: row} and forced ones {path: {k: row}} of one class and size."""
    chosen, forced = {}, defaultdict(dict)
    for (impl, rop, rtyp, k, sz), r in table.items():
        base, path = report.split_op(rop)
        if impl == "apron" and base == op and rtyp == typ and sz == size:
            (forced[path] if path else chosen)[k] = r
    return chosen, forced


def draw_roofline(ax, np, ks, bpp, bw, bw_from, fma, fma_from):
    dense = np.geomspace(min(ks), max(ks), 200)
    roof = np.minimum(bw * 1e9 / bpp, fma / dense ** 2) / 1e9
    ax.plot(dense, roof, color=ROOF, ls="--", lw=1.2, zorder=2,
            label="FP32 direct roofline: min(%.0f GB/s ÷ %d B, %.1f T FMA/s ÷ k²)\n"
                  "(bandwidth from %s, FMA peak from %s)" % (bw, bpp, fma / 1e12, bw_from, fma_from))


def draw_chosen(ax, chosen):
    ks = sorted(chosen)
    ax.plot(ks, [gpix(chosen[k]) for k in ks], color=APRON, lw=2.4, zorder=6, label="apron, the planner's choice")
    by_path = defaultdict(list)
    for k in ks:
        by_path[report.chosen_path(chosen[k])].append(k)
    for path in sorted(by_path, key=lambda p: list(PATH_MARKERS).index(p) if p in PATH_MARKERS else 9):
        pk = by_path[path]
        ax.plot(pk, [gpix(chosen[k]) for k in pk], ls="none", marker=PATH_MARKERS.get(path, "."), ms=8 if
                path == "tensor" else 6, color=APRON, mec="white", mew=0.8, zorder=7, label="   chosen: %s" % path)


def draw_forced(ax, forced):
    for path in sorted(forced, key=lambda p: list(PATH_MARKERS).index(p) if p in PATH_MARKERS else 9):
        ks = sorted(forced[path])
        ax.plot(ks, [gpix(forced[path][k]) for k in ks], color=APRON, alpha=0.5, lw=1,
                ls=FORCED_STYLES.get(path, ":"), marker=PATH_MARKERS.get(path, "."), ms=3, zorder=4,
                label="apron, %s forced" % path)


def peer_points(matcher, peer_op, typ, size, ks, always_approx):
    """{peer: [(k, row, approximate)]} as report.py matches them (cuDNN f16 left out, as there: half precision)."""
    out = {}
    for impl in matcher.peers:
        if impl == "cudnn-f16":
            continue
        pts = [(k, matcher.match(impl, peer_op, typ, k, size)) for k in ks]
        pts = [(k, m[0], m[1] or always_approx) for k, m in pts if m]
        if pts:
            out[impl] = pts
    return out


def draw_peers(ax, peers, approx_note):
    for impl, pts in peers.items():
        approx = any(a for _, _, a in pts)
        colour = COLOURS.get(impl, "grey")
        ax.plot([k for k, _, _ in pts], [gpix(r) for _, r, _ in pts], color=colour, lw=1.5,
                marker=PEER_MARKERS.get(impl, "o"), ms=4, mfc="none" if approx else colour, zorder=5,
                label=LABELS.get(impl, impl) + ("  (%s)" % approx_note if approx and approx_note else ""))


def best_peer(peers):
    """{k: the fastest peer's Mpix/s}."""
    best = {}
    for pts in peers.values():
        for k, r, _ in pts:
            best[k] = max(best.get(k, 0), r.mpix_s)
    return best


def mask_plots(rows, ctx, outdir, plt):
    import numpy as np
    table = report.index(plain_rows(rows))
    matcher = report.Matcher(table)
    have_int_u8 = any(k[0] == "apron" and report.split_op(k[1])[0] == "correlate_int" and k[2] == "u8"
                      for k in table)
    written = []
    for op, typ, name, what, peer_op, always_approx, approx_note in MASK_CLASSES:
        if name == "masks_u8_float.png" and not have_int_u8:
            name = "masks_u8.png"  # no exact-integer rows: the float-mask u8 class is the u8 plot
        size = busiest_size([k for k in table if k[0] == "apron" and report.split_op(k[1])[0] == op
                             and k[2] == typ])
        if size is None:
            continue
        chosen, forced = mask_series(table, op, typ, size)
        ks = sorted(set(chosen) | {k for f in forced.values() for k in f})
        if len(ks) < 2:
            continue
        peers = peer_points(matcher, peer_op, typ, size, ks, always_approx)
        own = list(chosen.values()) + [r for f in forced.values() for r in f.values()]
        used = own + [r for pts in peers.values() for _, r, _ in pts]
        fig, axes = new_figure(plt, used, ctx, "apron %s %s: %s, %d×%d, one channel, kernel time"
                               % (op, typ, what, size, size), 5.6)
        ax = axes[0][0]
        draw_roofline(ax, np, ks, *ceilings(own, typ, ctx))
        draw_forced(ax, forced)
        draw_peers(ax, peers, approx_note)
        if chosen:
            draw_chosen(ax, chosen)
            annotate_lead(ax, chosen, best_peer(peers))
        ax.set_xscale("log")
        log_y(ax)
        log_ticks(ax, ks)
        ax.set_xlabel("mask side k (a k × k mask; log scale)")
        ax.set_ylabel("throughput, Gpix/s (log scale)")
        grid(ax)
        mask_legend(ax)
        written.append(save(fig, outdir, name))
    return written


def mask_legend(ax):
    """apron's choice first, then its forced paths, the peers, the roofline."""
    def rank(label):
        for i, start in enumerate(("apron, the planner", "   chosen", "apron, ", "FP32 direct roofline")):
            if label.startswith(start):
                return i if i < 3 else 4
        return 3
    pairs = sorted(zip(*ax.get_legend_handles_labels()), key=lambda e: rank(e[1]))
    ax.legend([h for h, _ in pairs], [l for _, l in pairs], loc="lower left", ncol=2, framealpha=0.9)


def annotate_lead(ax, chosen, best):
    """apron / best peer at the largest k both have: the number the plot is about."""
    ks = [k for k in sorted(chosen) if k in best]
    if not ks:
        return
    k = ks[-1]
    ratio = chosen[k].mpix_s / best[k]
    ax.annotate("%s the best peer" % report.fmt_ratio(ratio), (k, gpix(chosen[k])), xytext=(-8, 10),
                textcoords="offset points", ha="right", fontsize=7.5, color=APRON, weight="bold",
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85), zorder=8)


# ---------------------------------------------------------------------------------------------------------
# b. the cases users run (shape column)
# ---------------------------------------------------------------------------------------------------------


def user_pairs(table, cases, typ, c, size):
    """[(case index, apron row, best peer, its row, approximate)] of one channel count; peer None where no peer
    measured the case."""
    out = []
    for i, (op, shape) in enumerate(cases):
        a = table.get(("apron", op, typ, c, shape, size))
        if a is None:
            continue
        found = [(impl, report_user._match(table, impl, op, typ, c, shape, size)) for impl in report_user.GPU_PEERS]
        found = [(impl, m) for impl, m in found if m]
        if found:
            impl, (p, approx, _) = max(found, key=lambda e: e[1][0].mpix_s)
            out.append((i, a, impl, p, approx))
        else:
            out.append((i, a, None, None, False))
    return out


def user_case_plots(rows, ctx, outdir, plt):
    table = report_user._index([r for r in rows if report_user.is_user_row(r) and r.impl not in CPU_IMPLS])
    written = []
    for typ in report_user.TYPES:
        keys = [k for k in table if k[0] == "apron" and k[2] == typ]
        size = busiest_size(keys)
        if size is None:
            continue
        keys = [k for k in keys if k[5] == size]
        cases = sorted({(k[1], k[4]) for k in keys},
                       key=lambda c: (report_user.OPS.index(c[0]) if c[0] in report_user.OPS else 99, c[0],
                                      report_user._shape_key(c[1])))
        panels = [(c, user_pairs(table, cases, typ, c, size)) for c in sorted({k[3] for k in keys})]
        used = [row for _, pairs in panels for e in pairs for row in (e[1], e[3]) if row is not None]
        fig, axes = new_figure(plt, used, ctx, "apron %s against the best peer: the cases users run, %d×%d, "
                               "interleaved channels, kernel time" % (typ, size, size),
                               1.4 + 1.9 * len(panels), nrows=len(panels), sharex=True)
        for ax, (c, pairs) in zip(axes[:, 0], panels):
            draw_user_panel(ax, pairs, len(cases))
            ax.set_ylabel("%d channel%s: Gpix/s (log)" % (c, "s" * (c > 1)))
        bottom = axes[-1][0]
        bottom.set_xticks(range(len(cases)))
        bottom.set_xticklabels(["%s %s" % c for c in cases], rotation=55, ha="right", fontsize=6.5)
        user_legend(axes[0][0], {e[2] for _, pairs in panels for e in pairs if e[2]})
        written.append(save(fig, outdir, "user_cases_%s.png" % typ))
    return written


def draw_user_panel(ax, pairs, n):
    """apron's bar and the best peer's per case, apron / best peer above them."""
    for i, a, impl, p, approx in pairs:
        ax.bar(i - 0.2, gpix(a), 0.38, color=APRON, zorder=3)
        if p is None:
            continue
        ax.bar(i + 0.2, gpix(p), 0.38, color=COLOURS.get(impl, "grey"), hatch="////" if approx else None,
               edgecolor="white" if approx else None, lw=0, zorder=3)
        ax.text(i, max(gpix(a), gpix(p)) * 1.15, report.fmt_ratio(a.mpix_s / p.mpix_s), ha="center", va="bottom",
                fontsize=6, rotation=90)
    log_y(ax)
    values = [gpix(r) for e in pairs for r in (e[1], e[3]) if r is not None]
    # Bars on a log axis start at its bottom: a decade under the lowest keeps the shortest bar visible.
    ax.set_ylim(10 ** math.floor(math.log10(min(values)) - 0.3), max(values) * 8)  # and room for ratios, legend
    ax.set_xlim(-0.7, n - 0.3)
    grid(ax)


def user_legend(ax, peers_seen):
    from matplotlib.patches import Patch
    handles = [Patch(color=APRON, label="apron")]
    handles += [Patch(color=COLOURS.get(i, "grey"), label="best peer: %s" % report_user.GPU_LABELS.get(i, i))
                for i in report_user.GPU_PEERS if i in peers_seen]
    handles.append(Patch(facecolor="#999999", hatch="////", edgecolor="white",
                         label="~ approximate (NPP's fixed Gaussian mask)"))
    handles.append(Patch(color="none", label="number: apron / best peer"))
    ax.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=6, framealpha=0.9)


# ---------------------------------------------------------------------------------------------------------
# c. morphology
# ---------------------------------------------------------------------------------------------------------


def memory_roof(apron_rows):
    """The memory roof in Gpix/s of (memory-bound) morphology rows: roofline_gpix_s, else from the row with the
    largest roofline share (its rounding matters least); (None, None) when the rows have neither."""
    roofs = [report.num(r.extra.get("roofline_gpix_s")) for r in apron_rows]
    if any(roofs):
        return max(x for x in roofs if x), "CSV"
    shares = [(report.num(r.extra.get("roofline_pct")), r) for r in apron_rows]
    shares = [(p, r) for p, r in shares if p]
    if not shares:
        return None, None
    p, r = max(shares, key=lambda e: e[0])
    return gpix(r) * 100 / p, "≈, from the rows'\nroofline share"


def draw_memory_roof(ax, apron_rows):
    roof, origin = memory_roof(apron_rows)
    if roof:
        ax.axhline(roof, color=ROOF, ls="--", lw=1.1, label="memory roof %.0f Gpix/s\n(%s)" % (roof, origin))


def pick_type(keys, at):
    """u8 where there is u8, else the first type (keys' element `at`)."""
    types = [k[at] for k in keys]
    return "u8" if "u8" in types else (types[0] if types else None)


def rect_data(rows):
    """One channel, plain dilate rows (rectangles) of the busiest size: lines {impl: [(k, row)]}, or None."""
    table = report.index(plain_rows(rows))
    keys = [k for k in table if k[0] == "apron" and k[1] == "dilate"]
    typ = pick_type(keys, 2)
    size = busiest_size([k for k in keys if k[2] == typ])
    apron = {k[3]: table[k] for k in keys if k[4] == size and k[2] == typ}
    if len(apron) < 2:
        return None
    matcher = report.Matcher(table)
    lines = {"apron": sorted(apron.items())}
    for impl in matcher.peers:
        pts = [(k, matcher.match(impl, "dilate", typ, k, size)) for k in sorted(apron)]
        pts = [(k, m[0]) for k, m in pts if m]
        if pts:
            lines[impl] = pts
    return dict(typ=typ, size=size, lines=lines)


def shape_kind(shape):
    return shape.split(":", 1)[0] if ":" in shape else "rect"


def shape_data(rows):
    """One channel, dilate rows with a `shape` column: lines {(impl, element kind): [(side, row)]}, or None."""
    table = report_user._index([r for r in rows if report_user.is_user_row(r) and r.impl not in CPU_IMPLS])
    keys = [k for k in table if k[0] == "apron" and k[1] == "dilate" and k[3] == 1]
    typ = pick_type(keys, 2)
    size = busiest_size([k for k in keys if k[2] == typ])
    keys = sorted((k for k in keys if k[5] == size and k[2] == typ), key=lambda k: report_user._shape_key(k[4]))
    if not keys:
        return None
    lines = defaultdict(list)
    for k in keys:
        a = table[k]
        lines[("apron", shape_kind(k[4]))].append((a.param, a))
        for impl in report_user.GPU_PEERS:
            m = report_user._match(table, impl, "dilate", typ, 1, k[4], size)
            if m:
                lines[(impl, shape_kind(k[4]))].append((a.param, m[0]))
    return dict(typ=typ, size=size, lines=lines)


def machine_of(rows):
    return rows[0].extra.get("machine") or "this run's GPU"


def draw_rect(ax, d):
    apron = [r for _, r in d["lines"]["apron"]]
    draw_memory_roof(ax, apron)
    for impl, pts in sorted(d["lines"].items(), key=lambda e: e[0] == "apron"):
        ax.plot([k for k, _ in pts], [gpix(r) for _, r in pts], color=COLOURS.get(impl, "grey"),
                lw=2.4 if impl == "apron" else 1.5, marker="s" if impl == "apron" else PEER_MARKERS.get(impl, "o"),
                ms=5 if impl == "apron" else 4, zorder=5 if impl == "apron" else 3, label=LABELS.get(impl, impl))
    ax.set_title("rectangles k × k, %s, %d×%d, one channel\n(%s)" % (d["typ"], d["size"], d["size"],
                                                                    machine_of(apron)))
    log_ticks(ax, [k for k, _ in d["lines"]["apron"]])
    pairs = sorted(zip(*ax.get_legend_handles_labels()), key=lambda e: e[1] != "apron")
    ax.legend([h for h, _ in pairs], [l for _, l in pairs], loc="lower left", framealpha=0.9)


def draw_shapes(ax, d):
    from matplotlib.lines import Line2D
    apron = [r for (impl, _), pts in d["lines"].items() if impl == "apron" for _, r in pts]
    draw_memory_roof(ax, apron)
    for (impl, kind), pts in sorted(d["lines"].items(), key=lambda e: e[0][0] == "apron"):
        main = impl == "apron"
        ax.plot([x for x, _ in pts], [gpix(r) for _, r in pts], color=COLOURS.get(impl, "grey"), lw=2.2 if main
                else 1, alpha=1 if main else 0.8, marker=SHAPE_MARKERS.get(kind, "o"), ms=6 if main else 4,
                zorder=5 if main else 3)
    impls = [i for i in ["apron"] + report_user.GPU_PEERS if any(k[0] == i for k in d["lines"])]
    kinds = sorted({k[1] for k in d["lines"]}, key=lambda s: list(SHAPE_MARKERS).index(s) if s in SHAPE_MARKERS
                   else 9)
    handles = ax.get_legend_handles_labels()[0]
    handles += [Line2D([], [], color=COLOURS.get(i, "grey"), lw=2, label=LABELS.get(i, i)) for i in impls]
    handles += [Line2D([], [], color="black", ls="none", marker=SHAPE_MARKERS.get(k, "o"), label=k) for k in kinds]
    ax.legend(handles=handles, loc="lower left", ncol=2, framealpha=0.9)
    ax.set_title("element shapes, %s, %d×%d, one channel\n(%s)" % (d["typ"], d["size"], d["size"],
                                                                  machine_of(apron)))
    log_ticks(ax, [x for pts in d["lines"].values() for x, _ in pts])


def morphology_plot(rows, ctx, outdir, plt):
    panels = [(draw, d) for draw, d in ((draw_rect, rect_data(rows)), (draw_shapes, shape_data(rows))) if d]
    if not panels:
        return []
    used = [r for _, d in panels for pts in d["lines"].values() for _, r in pts]
    fig, axes = new_figure(plt, used, ctx, "apron dilate: throughput against the structuring element's side, "
                           "kernel time", 4.9, ncols=len(panels))
    for ax, (draw, d) in zip(axes[0], panels):
        ax.set_xscale("log")
        log_y(ax)
        draw(ax, d)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo / 12, hi)  # room for the legend below the lines
        ax.set_xlabel("element side (k × k; disk:r is 2r+1 wide; log scale)")
        ax.set_ylabel("throughput, Gpix/s (log scale)")
        grid(ax)
    return [save(fig, outdir, "morphology.png")]


# ---------------------------------------------------------------------------------------------------------
# d. host to host and batches
# ---------------------------------------------------------------------------------------------------------


def gb_each_way(r):
    """GB/s each way: the row's gbs_each_way, else pixels/s x bytes per pixel (one channel)."""
    given = report.num(r.extra.get("gbs_each_way"))
    return given if given else r.mpix_s * BYTES.get(r.type, 1) / 1e3


def h2h_ceilings(r):
    """(both ways at once, one way alone), GB/s each way, of a host-to-host row where known (else None)."""
    both = report.num(r.extra.get("pcie_gbs"))
    if not both:
        roof = report.num(r.extra.get("roofline_gpix_s"))
        share = report.num(r.extra.get("roofline_pct"))
        if roof:
            both = roof * BYTES.get(r.type, 1)
        elif share:
            both = gb_each_way(r) * 100 / share
    return both, report.num(r.extra.get("pcie_one_way_gbs"))


def h2h_rows(rows):
    return [r for r in plain_rows(rows) if r.op == "h2h_correlate"]


def draw_h2h(ax, h2h):
    apron = [r for r in report.index(h2h).values() if r.impl == "apron"]
    both = [c for c in (h2h_ceilings(r)[0] for r in apron) if c]
    one = [c for c in (h2h_ceilings(r)[1] for r in apron) if c]
    if both:
        ax.axhline(max(both), color=ROOF, ls="--", lw=1.1, label="PCIe pinned, both ways at once: %.1f GB/s each way"
                   % max(both))
    if one:
        ax.axhline(max(one), color=ROOF, ls=":", lw=1.1, label="PCIe pinned, one way alone: %.1f GB/s" % max(one))
    series = defaultdict(dict)  # (type, k) -> {side: row}
    for r in apron:
        series[(r.type, r.param)][r.size] = r
    for i, ((typ, k), pts) in enumerate(sorted(series.items())):
        sides = sorted(pts)
        ax.plot(sides, [gb_each_way(pts[s]) for s in sides], color=APRON, lw=2 if i == 0 else 1.2,
                ls=["-", "--", "-.", ":"][i % 4], marker="os^v"[i % 4], ms=4,
                label="apron, %s, %s×%s filter" % (typ, report.fmt_param(k), report.fmt_param(k)))
    for r in sorted((r for r in h2h if r.impl != "apron"), key=lambda r: (r.impl, r.type)):
        ax.plot([r.size], [gb_each_way(r)], ls="none", color=COLOURS.get(r.impl, "grey"),
                marker="P" if r.type == "u8" else "X", ms=7, label="%s, %s, %s×%s" % (
                    LABELS.get(r.impl, r.impl), r.type, report.fmt_param(r.param), report.fmt_param(r.param)))
    ax.set_xscale("log", base=2)
    log_ticks(ax, [r.size for r in apron], fmt="%d")
    ax.set_xlabel("image side (a square image, one channel; log scale)")
    ax.set_ylabel("GB/s each way")
    ax.set_title("one pinned image host to host: upload, filter, download (%s)" % machine_of(apron))
    ax.legend(loc="upper left", framealpha=0.9)
    grid(ax)


def batch_label(r):
    run = r.extra.get("run")
    if run:
        return run
    gpus = r.extra.get("gpus", "?")
    return "%s GPU%s, %s streams" % (gpus, "" if gpus == "1" else "s", r.extra.get("streams", "?"))


def draw_batch(ax, batch):
    xs = list(range(len(batch)))
    ax.bar(xs, [gb_each_way(r) for r in batch], 0.6, color=APRON, zorder=3, label="apron batch, GB/s each way")
    labelled = set()
    for x, r in zip(xs, batch):
        both, one = h2h_ceilings(r)
        for value, style, lw, label in ((both, "-", 2, "PCIe ceiling, both ways at once, same run"),
                                        (one, ":", 1.2, "PCIe, one way alone")):
            if value:
                ax.hlines(value, x - 0.42, x + 0.42, color=ROOF, lw=lw, ls=style, zorder=4,
                          label=None if label in labelled else label)
                labelled.add(label)
        if both:
            ax.text(x, gb_each_way(r) / 2, "%.0f%%\nof it" % (100 * gb_each_way(r) / both), ha="center",
                    color="white", fontsize=7, zorder=5)
    ax.set_xticks(xs)
    ax.set_xticklabels([textwrap.fill(batch_label(r), 20) for r in batch], fontsize=6.5)
    ax.set_ylabel("GB/s each way")
    top = max(max([gb_each_way(r)] + [c for c in h2h_ceilings(r) if c]) for r in batch)
    ax.set_ylim(0, top * 1.3)
    r0 = batch[0]
    ax.set_title("batches of %d×%d %s images from pinned memory, %s×%s filter: streams per GPU and GPUs"
                 % (r0.size, r0.size, r0.type, report.fmt_param(r0.param), report.fmt_param(r0.param)))
    ax.legend(loc="upper left", framealpha=0.9)
    grid(ax)


def draw_files(ax, files):
    ys = list(range(len(files)))
    ax.barh(ys, [gpix(r) for r in files], 0.6, color=APRON, zorder=3)
    for y, r in zip(ys, files):
        if r.extra.get("bottleneck"):
            ax.text(gpix(r) * 1.02 + 0.02, y, "bottleneck: " + r.extra["bottleneck"], va="center", fontsize=6.5)
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.shorten(batch_label(r), 60) for r in files], fontsize=6.5)
    ax.invert_yaxis()
    ax.set_xlim(0, max(gpix(r) for r in files) * 2.0)
    ax.set_xlabel("Gpix/s: images read, filtered and written (no storage ceiling in the data)")
    ax.set_title("batches from image files: processes, ranks, formats")
    grid(ax)


def host_to_host_plot(rows, ctx, outdir, plt):
    apron = [r for r in rows if r.impl == "apron"]
    parts = [(draw_h2h, h2h_rows(rows), 3.4), (draw_batch, [r for r in apron if r.op == "batch_h2h"], 3.2),
             (draw_files, [r for r in apron if r.op == "batch_files"], 2.4)]
    parts = [p for p in parts if any(r.impl == "apron" for r in p[1])]
    if not parts:
        return []
    fig, axes = new_figure(plt, [r for _, rs, _ in parts for r in rs], ctx, "apron host to host: one image and "
                           "batches, against the PCIe ceilings", 1.0 + sum(h for _, _, h in parts),
                           nrows=len(parts), gridspec_kw={"height_ratios": [h for _, _, h in parts]})
    for ax, (draw, rs, _) in zip(axes[:, 0], parts):
        draw(ax, rs)
    return [save(fig, outdir, "host_to_host.png")]


# ---------------------------------------------------------------------------------------------------------
# e. the CPU backend against OpenCV
# ---------------------------------------------------------------------------------------------------------

CPU_FAMILIES = [("correlate", ("correlate", "correlate_int", "box", "sharpen"), "linear masks (filter2D, blur)",
                 "mask side k"),
                ("gaussian", ("gaussian",), "Gaussian (GaussianBlur)", "sigma"),
                ("dilate", ("dilate", "erode"), "dilate (cv::dilate)", "element side k")]
SERIES_MARKERS = "osD^vP*X<>"


def cpu_series(r):
    """The line a CPU row belongs to: type, channels, and the op or element kind where they differ."""
    parts = [r.type, "C%d" % report_user.channels_of(r)]
    if r.op in ("box", "sharpen", "correlate_int", "erode"):
        parts.append(r.op)
    kind = shape_kind(r.extra.get("shape", "")) if r.op in ("dilate", "erode") else ""
    if kind and kind != "rect":
        parts.append(kind)
    return " ".join(parts)


def cpu_plot(rows, ctx, outdir, plt):
    cpu = [r for r in rows if r.impl in ("apron-cpu", "opencv") and r.op not in STREAM_OPS]
    if not any(r.impl == "apron-cpu" for r in cpu):
        return []
    by_machine = defaultdict(list)
    for r in cpu:
        by_machine[ctx.run_of(r)[0]].append(r)
    families = [f for f in CPU_FAMILIES if any(r.op in f[1] for r in cpu)]
    fig, axes = new_figure(plt, cpu, ctx, "apron's CPU backend against OpenCV: the same machine and process, "
                           "wall time, all cores", 1.0 + 3.0 * len(by_machine), nrows=len(by_machine),
                           ncols=len(families))
    machines = sorted(by_machine.items(), key=lambda e: -len(e[1]))
    for row_axes, (machine, mrows) in zip(axes, machines):
        for ax, family in zip(row_axes, families):
            cpu_panel(ax, mrows, family)
        size = mrows[0].size
        row_axes[0].set_ylabel("%s\n%d×%d, Gpix/s (log)" % (textwrap.fill(machine, 30), size, size), fontsize=7)
    return [save(fig, outdir, "cpu_vs_opencv.png")]


def cpu_panel(ax, rows, family):
    from matplotlib.lines import Line2D
    _, ops, title, xlabel = family
    best = {}
    for r in rows:
        if r.op in ops:
            key = (r.impl, cpu_series(r), r.param)
            if key not in best or r.mpix_s > best[key].mpix_s:
                best[key] = r
    series = sorted({k[1] for k in best})
    for i, s in enumerate(series):
        for impl, ls in (("apron-cpu", "-"), ("opencv", "--")):
            pts = sorted((k[2], r) for k, r in best.items() if k[0] == impl and k[1] == s)
            if pts:
                ax.plot([p for p, _ in pts], [gpix(r) for _, r in pts], color=COLOURS[impl], ls=ls,
                        lw=1.8 if impl == "apron-cpu" else 1.2, marker=SERIES_MARKERS[i % len(SERIES_MARKERS)],
                        ms=4)
    handles = [Line2D([], [], color=COLOURS["apron-cpu"], lw=1.8, label="apron"),
               Line2D([], [], color=COLOURS["opencv"], ls="--", lw=1.2, label="OpenCV")]
    handles += [Line2D([], [], color="black", ls="none", marker=SERIES_MARKERS[i % len(SERIES_MARKERS)], ms=4,
                       label=s) for i, s in enumerate(series)]
    ax.legend(handles=handles, fontsize=5.5, loc="best", framealpha=0.85)
    ax.set_title(title)
    log_y(ax)
    if best:
        ax.set_xscale("log")
        log_ticks(ax, [k[2] for k in best])
    ax.set_xlabel(xlabel + " (log scale)")
    grid(ax)


# ---------------------------------------------------------------------------------------------------------
# f. images larger than memory, streamed file to file, against the storage ceiling
# ---------------------------------------------------------------------------------------------------------


def gbs_input(r):
    """GB/s of input bytes: the row's gbs_input, else pixels/s x bytes per pixel (one channel)."""
    given = report.num(r.extra.get("gbs_input"))
    if given:
        return given
    bpp = report.num(r.extra.get("bytes_per_pixel")) or BYTES.get(r.type, 1)
    return r.mpix_s * bpp / 1e3


def streaming_plot(rows, ctx, outdir, plt):
    stream = [r for r in rows if r.op in STREAM_OPS]
    if not any(r.impl.startswith("apron") for r in stream):
        return []
    best = {}  # (type, impl) -> the fastest row
    for r in stream:
        k = (r.type, r.impl)
        if k not in best or r.mpix_s > best[k].mpix_s:
            best[k] = r
    types = sorted({t for t, _ in best}, key=lambda t: (BYTES.get(t, 9), t))
    tools = [t for t in STREAM_TOOLS if any((typ, t[0]) in best for typ in types)]
    r0 = next(iter(best.values()))
    pipeline = r0.extra.get("pipeline") or report.fmt_param(r0.param)
    memory = r0.extra.get("memory")
    fig, axes = new_figure(plt, list(best.values()), ctx, "a %d×%d image streamed file to file (%s%s), against "
                           "dd's copy of the same bytes" % (r0.size, r0.size, pipeline,
                                                            ", --memory " + memory if memory else ""), 4.6)
    ax = axes[0][0]
    width = 0.8 / max(len(tools), 1)
    top = 0.0
    for i, typ in enumerate(types):
        for j, (impl, label, colour) in enumerate(tools):
            r = best.get((typ, impl))
            if not r:
                continue
            x, v = i + (j - (len(tools) - 1) / 2) * width, gbs_input(r)
            ax.bar(x, v, width * 0.92, color=colour, zorder=3, label=label if i == 0 else None)
            pct = report.num(r.extra.get("pct_of_dd"))
            ax.text(x, v + 0.03, "%.2f" % v + ("\n%.0f%%" % pct if pct else ""), ha="center", va="bottom",
                    fontsize=6.5, zorder=5)
            top = max(top, v)
        dd = best.get((typ, "dd"))
        if dd:
            ax.hlines(gbs_input(dd), i - 0.46, i + 0.46, color=ROOF, lw=1.6, ls="--", zorder=4,
                      label="dd's copy of the same bytes (the storage ceiling)\n(% above a bar: of dd's rate)"
                      if i == 0 else None)
            ax.text(i + 0.46, gbs_input(dd) - 0.03, "dd %.2f" % gbs_input(dd), ha="right", va="top", fontsize=6.5,
                    color=ROOF, zorder=5)
            top = max(top, gbs_input(dd))
    ax.set_xticks(range(len(types)))
    labels = []
    for typ in types:
        r = next(r for (t, _), r in best.items() if t == typ)
        gib = r.extra.get("input_gib")
        labels.append("%s%s" % (typ, " (%s GiB)" % gib if gib else ""))
    ax.set_xticklabels(labels)
    ax.set_xlabel("sample type (input size)")
    ax.set_ylabel("GB/s of input (10⁹ bytes of the input file per second, whole run)")
    ax.set_ylim(0, top * 1.3)
    ax.legend(loc="upper left", framealpha=0.9)
    ax.grid(True, axis="y", alpha=0.3, lw=0.6)
    return [save(fig, outdir, "streaming.png")]


# ---------------------------------------------------------------------------------------------------------


PLOTS = [("masks_*.png", mask_plots, "no single-channel correlate / correlate_int / correlate_rank2 rows of apron"),
         ("user_cases_*.png", user_case_plots, "no rows with a shape column (GPU)"),
         ("morphology.png", morphology_plot, "no dilate rows of apron"),
         ("host_to_host.png", host_to_host_plot, "no h2h_correlate, batch_h2h or batch_files rows of apron"),
         ("cpu_vs_opencv.png", cpu_plot, "no apron-cpu rows"),
         ("streaming.png", streaming_plot, "no stream_gaussian_dilate rows of apron")]


def main(argv=None):
    ap = argparse.ArgumentParser(description="PNG plots of apron's benchmark CSVs (the files report.py takes).")
    ap.add_argument("csv", nargs="*", help="CSV files (impl,op,type,param,size,ms,mpix_s[,...]); default: the "
                    "docs' tables, docs/data/*.csv")
    ap.add_argument("-o", "--out", default=os.path.join(os.path.dirname(HERE), "docs", "plots"),
                    help="output folder (default docs/plots)")
    ap.add_argument("--gpu", help="GPU of rows without a machine column (default: nvidia-smi's name)")
    ap.add_argument("--cpu", help="machine of apron-cpu / opencv rows without a machine column (e.g. gpu-run.sh's "
                    "cpu.csv: the GPU machine's CPU)")
    ap.add_argument("--date", help="date of rows without a date column (default: today, UTC)")
    ap.add_argument("--commit", help="apron commit of rows without a commit column (default: git's HEAD)")
    ap.add_argument("--copy-gbs", type=float, default=DEFAULT_COPY_GBS,
                    help="device copy bandwidth, GB/s read + write, where the CSV has none (default: the H100's)")
    ap.add_argument("--fma-peak", type=float, default=DEFAULT_FMA_PEAK,
                    help="FP32 FMA/s where the CSV has no fma_peak (default 33.5e12, the H100's)")
    args = ap.parse_args(argv)
    if not args.csv:
        # With no CSV the docs' own tables are drawn again, so the command the README shows works as written.
        data = os.path.join(os.path.dirname(HERE), "docs", "data")
        args.csv = sorted(glob.glob(os.path.join(data, "*.csv")))
        if not args.csv:
            print("plots.py: no CSV given and none in %s" % os.path.relpath(data), file=sys.stderr)
            return 2
        print("no CSV given: drawing the docs' tables (%s/*.csv)" % os.path.relpath(data))
    try:
        rows = load(args.csv)
    except InputError as e:
        print("plots.py: %s" % e, file=sys.stderr)
        return 2
    try:
        plt = pyplot()
    except ImportError:
        print("plots.py: matplotlib is missing (python3 -m pip install matplotlib)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    ctx = Context(args)
    written = 0
    for name, make, why in PLOTS:
        paths = make(rows, ctx, args.out, plt)
        for p in paths:
            print("wrote %s (%d KB)" % (os.path.relpath(p), (os.path.getsize(p) + 512) // 1024))
        if not paths:
            print("skipped %s: %s" % (name, why))
        written += len(paths)
    if not written:
        print("plots.py: no plot has data in %s" % ", ".join(args.csv), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
