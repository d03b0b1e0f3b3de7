#!/usr/bin/env python3
"""Merges apron's GPU benchmark CSV (bench_gpu --csv) with the peers' (bench/peers/) into markdown ratio tables.

    python3 bench/report.py apron.csv npp.csv peers.csv ... [--gpu NAME] [--commit SHA] [--book-csv PATH] > table.md

Every CSV starts with the header impl,op,type,param,size,ms,mpix_s; further columns are allowed (apron's rows carry
algorithm,roofline_pct,fma_peak). Rows with impl 'apron' are apron's, all others are peers. Per image size, one table
per (op, type) of apron's cases that some peer also measured: rows are the parameter (mask size k or sigma), columns
apron's Gpix/s [% of its roofline], each peer's Gpix/s, apron / best peer and apron / each peer. Matching:
  - same op, type and parameter;
  - gaussian (param sigma): CuPy's gaussian of the same sigma, and NPP's fixed-mask gaussian (op gaussian_mask,
    param = mask width) of the width closest to 2 ceil(3 sigma) + 1, always marked '~' (approximate: NPP's fixed
    masks have their own sigma, and stop at 15x15);
  - correlate_int u8: a peer's correlate_int u8, else its correlate u8 (marked '~');
  - h2h_correlate: a peer's row of another type (PyTorch's f32 against apron's u8) is used only when it has none
    of apron's type, marked '~'.
apron cases no peer measured go to 'other apron cases'; peer cases without an apron row to 'peer cases without an
apron row'. With several sizes, a size-sweep table gives apron's Mpix/s per size (and apron / best peer).

"The book chapter's cases" (only when apron's CSV has some of them) sets apron beside the Tesla C2070 figures of
the GPU convolution book chapter (--book-csv, default bench/book_chapter_c2070.csv; bench/book_chapter_c2070.md
says where they come from): one row per image size 512..4096 and mask 3x3, 5x5, 7x7 that apron measured, with
apron's kernel ms (correlate u8, column ms) against the chapter's kernel-only time (speed-up = C2070 ms / apron ms),
and apron's host-to-host Mpix/s (h2h_correlate u8) against the chapter's throughput, which counts the transfers
(ratio apron / C2070). Cells the chapter's CSV leaves empty (most of them) show '–'.

"Masks of any size" (only when apron's CSV has rows of bench_gpu --large: an op OP@PATH, correlate_rank2, or a
correlate mask wider than 31) sets, per image size and mask class (correlate f32: random float masks;
correlate_int u8: integer masks, exact; correlate_rank2 f32: rank-2 masks), the planner's choice (apron's row of
the plain op; its path read from the algorithm column) beside every path forced (rows OP@PATH: direct, separable,
low-rank, fft, tensor) and the peers (NPP, cuDNN f32, CuPy; matched as above, rank-2 masks against the peers'
correlate f32, marked '~'). Columns: k, chosen Gpix/s (path) [% of the FP32 direct roofline], each forced path's
Gpix/s, each peer's, the best peer, chosen / best peer, chosen / best forced path. Under each table the issue's
targets, pass or fail:
  - f32 (random masks), k 31..127: chosen >= 25 Gpix/s;
  - u8 integer masks, k 15..31: the tensor path (its forced row, else the chosen row when it took that path)
    >= 3x the FP32 direct roofline of that k, fma_peak / k^2 pixels/s (fma_peak: apron's CSV column fma_peak,
    else 33.5e12, the H100's);
  - every class: chosen >= the best peer at every k, >= 5x from k 31 up, and never more than 10% slower than the
    fastest forced path (time <= 1.1x, i.e. throughput ratio >= 1/1.1).
The OP@PATH and correlate_rank2 rows appear only in this section.

Rows with a `shape` column set are the cases users run (1, 3 and 4 channels, u8/u16/f32, element shapes; bench_gpu's
and bench_cpu_user's, and the peers' rows of the same cases, cpu_peers.py --user's among them): they appear only in
"Colour, types and element shapes (GPU)" and "Colour on the CPU" (bench/report_user.py says how they are joined).
"""
import argparse
import csv
import datetime
import math
import os
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_user  # noqa: E402
from report_format import fmt_rate, fmt_ratio, ratio_cells, three_digits  # noqa: E402,F401

CORE = ["impl", "op", "type", "param", "size", "ms", "mpix_s"]

PEER_LABELS = {
    "npp": "NPP",
    "cudnn": "cuDNN f32",
    "cudnn-f16": "cuDNN f16",
    "cupy": "CuPy",
    "torch": "PyTorch",
}
PEER_ORDER = ["npp", "cudnn", "cudnn-f16", "cupy", "torch"]
OP_ORDER = ["correlate", "correlate_int", "gaussian", "dilate", "erode", "h2h_correlate"]
TYPE_ORDER = ["f32", "u8"]
NPP_GAUSS_OP = "gaussian_mask"

# The book chapter's generic (non-separable) kernel table, and the cases it measures on the Tesla C2070.
BOOK_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "book_chapter_c2070.csv")
BOOK_TABLE = "tab:convoNonSepReg1"
BOOK_SIZES = [512, 1024, 2048, 4096]
BOOK_MASKS = [3, 5, 7]
BOOK_TYPE = "u8"


def label(impl):
    return PEER_LABELS.get(impl, impl)


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt_param(p):
    return "%d" % p if float(p).is_integer() else "%g" % p








class Row:
    __slots__ = ("impl", "op", "type", "param", "size", "ms", "mpix_s", "extra", "source")

    def __init__(self, d, source):
        self.impl = d["impl"].strip()
        self.op = d["op"].strip()
        self.type = d["type"].strip()
        self.param = num(d["param"])
        self.size = int(num(d["size"]))
        self.ms = num(d["ms"])
        self.mpix_s = num(d["mpix_s"])
        if self.mpix_s is None and self.ms:
            self.mpix_s = self.size * self.size / 1e6 / (self.ms / 1e3)
        self.extra = {k: (v or "").strip() for k, v in d.items() if k not in CORE and k is not None}
        self.source = source


def read_rows(paths):
    rows, problems = [], []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in CORE if c not in (reader.fieldnames or [])]
            if missing:
                problems.append("%s: no column %s, file skipped" % (path, ", ".join(missing)))
                continue
            for n, d in enumerate(reader, start=2):
                try:
                    r = Row(d, path)
                except (TypeError, ValueError, AttributeError, KeyError):
                    problems.append("%s:%d: unreadable row, skipped" % (path, n))
                    continue
                if r.param is None or r.mpix_s is None or r.mpix_s <= 0 or not r.impl or not r.op:
                    problems.append("%s:%d: incomplete row, skipped" % (path, n))
                    continue
                rows.append(r)
    return rows, problems


def index(rows):
    """(impl, op, type, param, size) -> the fastest row of that key (a repeated run keeps its best)."""
    best = {}
    for r in rows:
        key = (r.impl, r.op, r.type, r.param, r.size)
        if key not in best or r.mpix_s > best[key].mpix_s:
            best[key] = r
    return best


def gauss_width(sigma):
    return 2 * math.ceil(3 * sigma - 1e-9) + 1


class Matcher:
    def __init__(self, table):
        self.table = table
        # (impl, op, type, size) -> {param: row}
        self.by_case = defaultdict(dict)
        for (impl, op, typ, param, size), r in table.items():
            if impl != "apron":
                self.by_case[(impl, op, typ, size)][param] = r
        self.peers = sorted({k[0] for k in self.by_case}, key=lambda i: (PEER_ORDER.index(i)
                                                                         if i in PEER_ORDER else 99, i))
        self.used = set()  # peer rows matched to some apron row

    def _types(self, op, typ):
        # Only host-to-host falls back on a peer's other type (PyTorch's h2h may have f32 only).
        return [typ] + ([t for t in TYPE_ORDER if t != typ] if op == "h2h_correlate" else [])

    def match(self, impl, op, typ, param, size):
        """The peer row that answers apron's case (op, typ, param, size): (row, approximate, note) or None."""
        candidates = []  # (op, type, approximate), in order of preference
        for i, t in enumerate(self._types(op, typ)):
            candidates.append((op, t, i > 0))
            if op == "correlate_int":
                candidates.append(("correlate", t, True))
        for cop, ct, approx in candidates:
            params = self.by_case.get((impl, cop, ct, size))
            if params and param in params:
                r = params[param]
                return r, approx, ("" if ct == typ else ct)
        if op == "gaussian":
            want = gauss_width(param)
            for i, t in enumerate(self._types(op, typ)):
                params = self.by_case.get((impl, NPP_GAUSS_OP, t, size))
                if not params:
                    continue
                w = min(params, key=lambda p: (abs(p - want), -p))
                r = params[w]
                note = "%sx%s" % (fmt_param(w), fmt_param(w)) + ("" if t == typ else " " + t)
                return r, True, note  # NPP's masks have their own sigma: always approximate
        return None

    def matches(self, op, typ, param, size):
        out = {}
        for impl in self.peers:
            m = self.match(impl, op, typ, param, size)
            if m:
                out[impl] = m
                r = m[0]
                self.used.add((r.impl, r.op, r.type, r.param, r.size))
        return out


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
        return out[0].strip() if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def md_table(header, rows, align=None):
    align = align or ["---"] + ["--:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines)


def case_sort_key(op, typ):
    return (OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER), op, TYPE_ORDER.index(typ)
            if typ in TYPE_ORDER else 9, typ)


def apron_cell(r):
    roof = num(r.extra.get("roofline_pct"))
    return fmt_rate(r.mpix_s) + (" [%.0f%%]" % roof if roof is not None else "")


def comparison_tables(out, table, matcher, size):
    """Appends the size's heading and tables to out (nothing when no peer answers any apron case of that size);
    returns the (op, type) of apron's cases that got a table and those that did not."""
    apron = defaultdict(dict)  # (op, type) -> {param: row}
    for (impl, op, typ, param, sz), r in table.items():
        if impl == "apron" and sz == size:
            apron[(op, typ)][param] = r
    compared, uncompared = set(), set()
    for op, typ in sorted(apron, key=lambda c: case_sort_key(*c)):
        params = apron[(op, typ)]
        found = {p: matcher.matches(op, typ, p, size) for p in sorted(params)}
        impls = [i for i in matcher.peers if any(i in m for m in found.values())]
        if not impls:
            uncompared.add((op, typ))
            continue
        if not compared:
            out.append("## %dx%d\n" % (size, size))
        compared.add((op, typ))
        pname = "sigma" if op == "gaussian" else "k"
        header = [pname, "apron Gpix/s [roofline]"] + ["%s Gpix/s" % label(i) for i in impls] + [
            "apron / best peer", "apron / each peer"]
        has_alg = any(r.extra.get("algorithm") for r in params.values())
        if has_alg:
            header.append("apron algorithm")
        body = []
        for p in sorted(params):
            a = params[p]
            m = found[p]
            cells = [fmt_param(p), apron_cell(a)]
            each = []
            for i in impls:
                if i not in m:
                    cells.append("–")
                    continue
                r, approx, note = m[i]
                mark = "~" if approx else ""
                cells.append(fmt_rate(r.mpix_s) + mark + (" (%s)" % note if note else ""))
                each.append((a.mpix_s / r.mpix_s, label(i), mark))
            cells += ratio_cells(each)
            if has_alg:
                cells.append(a.extra.get("algorithm", ""))
            body.append(cells)
        align = ["--:"] * (len(header)) if not has_alg else ["--:"] * (len(header) - 1) + ["---"]
        out.append("### %s %s, %dx%d\n" % (op, typ, size, size))
        out.append(md_table(header, body, align) + "\n")
    return compared, uncompared


def other_apron_table(out, rows):
    if not rows:
        return
    out.append("## other apron cases (no peer measured them)\n")
    body = []
    for r in sorted(rows, key=lambda r: (r.size, case_sort_key(r.op, r.type), r.param)):
        roof = num(r.extra.get("roofline_pct"))
        body.append([r.op, r.type, fmt_param(r.param), r.size, "%.3f" % r.ms, "%.0f" % r.mpix_s,
                     "%.0f%%" % roof if roof is not None else "–", r.extra.get("algorithm", "")])
    out.append(md_table(["op", "type", "param", "size", "ms", "Mpix/s", "roofline", "algorithm"], body,
                        ["---", "---", "--:", "--:", "--:", "--:", "--:", "---"]) + "\n")


def peer_only_table(out, table, matcher):
    rows = [r for k, r in table.items() if k[0] != "apron" and k not in matcher.used]
    if not rows:
        return
    out.append("## peer cases without an apron row\n")
    body = [[label(r.impl), r.op, r.type, fmt_param(r.param), r.size, "%.3f" % r.ms, "%.0f" % r.mpix_s]
            for r in sorted(rows, key=lambda r: (r.size, case_sort_key(r.op, r.type), r.impl, r.param))]
    out.append(md_table(["peer", "op", "type", "param", "size", "ms", "Mpix/s"], body,
                        ["---", "---", "---", "--:", "--:", "--:", "--:"]) + "\n")


def size_sweep_table(out, table, matcher, sizes):
    cases = sorted({(op, typ, param) for (impl, op, typ, param, sz) in table if impl == "apron"},
                   key=lambda c: (case_sort_key(c[0], c[1]), c[2]))
    body = []
    for op, typ, param in cases:
        cells = [op, typ, fmt_param(param)]
        for size in sizes:
            r = table.get(("apron", op, typ, param, size))
            if r is None:
                cells.append("–")
                continue
            m = matcher.matches(op, typ, param, size)
            cell = "%.0f" % r.mpix_s
            if m:
                ratio = min(r.mpix_s / x[0].mpix_s for x in m.values())
                cell += " (%s)" % fmt_ratio(ratio)
            cells.append(cell)
        body.append(cells)
    out.append("## size sweep: apron Mpix/s per image side (apron / best peer)\n")
    out.append(md_table(["op", "type", "param"] + ["%d" % s for s in sizes], body,
                        ["---", "---", "--:"] + ["--:"] * len(sizes)) + "\n")


def square_side(s):
    """'4096x4096' -> 4096; None for an empty or non-square cell."""
    parts = (s or "").strip().lower().split("x")
    if len(parts) != 2 or parts[0] != parts[1] or not parts[0].isdigit():
        return None
    return int(parts[0])


def read_book(path):
    """The chapter's C2070 cells of BOOK_TABLE: (size, mask width) -> (kernel ms, Mpix/s with transfers), each the
    text as printed in the CSV, or None where the cell is empty. {} (and a note on stderr) when it cannot be read."""
    cells = {}
    try:
        with open(path, newline="") as f:
            for d in csv.DictReader(f):
                size, k = square_side(d.get("image_size")), square_side(d.get("mask"))
                if (d.get("table") or "").strip() != BOOK_TABLE or size is None or k is None:
                    continue
                cells[(size, k)] = tuple((d.get(c) or "").strip() if num(d.get(c)) else None
                                         for c in ("time_ms", "mpix_per_s"))
    except OSError as e:
        print("report.py: %s: %s, the book chapter's C2070 columns left empty" % (path, e.strerror), file=sys.stderr)
    return cells


def fmt_ms(ms):
    """Milliseconds with about three significant digits (trailing zeros kept: 0.0500)."""
    return three_digits(ms, "%#.3g")


def kernel_ms(r):
    return r.ms if r.ms else r.size * r.size / 1e3 / r.mpix_s


def book_table(out, table, book):
    """Appends "The book chapter's cases" when apron measured some of them (correlate or h2h_correlate u8 of the
    chapter's sizes and masks)."""
    cases = [(size, k) for size in BOOK_SIZES for k in BOOK_MASKS
             if any(("apron", op, BOOK_TYPE, k, size) in table for op in ("correlate", "h2h_correlate"))]
    if not cases:
        return
    body = []
    for size, k in cases:
        kern = table.get(("apron", "correlate", BOOK_TYPE, k, size))
        h2h = table.get(("apron", "h2h_correlate", BOOK_TYPE, k, size))
        book_ms, book_tp = book.get((size, k), (None, None))
        cells = ["%dx%d" % (size, size), "%dx%d" % (k, k)]
        cells.append(fmt_ms(kernel_ms(kern)) if kern else "–")
        cells.append(book_ms or "–")
        cells.append(fmt_ratio(num(book_ms) / kernel_ms(kern)) if kern and book_ms else "–")
        cells.append("%.0f" % h2h.mpix_s if h2h else "–")
        cells.append(book_tp or "–")
        cells.append(fmt_ratio(h2h.mpix_s / num(book_tp)) if h2h and book_tp else "–")
        body.append(cells)
    out.append("## The book chapter's cases\n")
    out.append("The generic (non-separable) kernel of the GPU convolution book chapter (G. Perrot, *Designing "
               "Scientific Applications on GPUs*, ch. 4, table %s), %s images: apron's kernel time (correlate) "
               "against the chapter's kernel-only time, apron's host-to-host throughput (h2h_correlate) against "
               "the chapter's, which counts the transfers. Above 1x apron is faster.\n" % (BOOK_TABLE, BOOK_TYPE))
    out.append(md_table(["image", "mask", "apron kernel ms", "C2070 kernel ms", "kernel speed-up (C2070 / apron)",
                         "apron h2h Mpix/s", "C2070 Mpix/s (with transfers)", "h2h apron / C2070"], body,
                        ["---", "---"] + ["--:"] * 6) + "\n")
    out.append("C2070 numbers: as printed in the book chapter; most cells are unknown ('–'), see "
               "bench/book_chapter_c2070.md (which also explains why the 4096x4096 5x5 Mpix/s looks like a copy "
               "slip).\n")


# "Masks of any size": bench_gpu --large's rows.
LARGE_CLASSES = [  # (apron op, type, title, the peers' op for it, peer matches always approximate)
    ("correlate", "f32", "f32, random non-separable masks (correlate)", "correlate", False),
    ("correlate_int", "u8", "u8, random integer masks, exact (correlate_int)", "correlate_int", False),
    ("correlate_rank2", "f32", "f32, rank-2 masks (correlate_rank2)", "correlate", True),
]
LARGE_OPS = {c[0] for c in LARGE_CLASSES}
LARGE_MIN_K = 32  # a correlate mask from this width is a large-mask case
PATH_ORDER = ["direct", "separable", "low-rank", "fft", "tensor"]
LARGE_PEERS = ["npp", "cudnn", "cupy"]
DEFAULT_FMA_PEAK = 33.5e12  # H100 SXM: 132 SMs x 128 FP32 lanes x 1.98 GHz
F32_TARGET = (31, 127, 25e3)  # k range, Mpix/s
TENSOR_TARGET = (15, 31, 3.0)  # k range, multiple of the FP32 direct roofline
PEER_FACTOR = (31, 5.0)  # from this k, chosen >= this multiple of the best peer
PLANNER_SLACK = 1.10  # the chosen path's time within this factor of the fastest forced path's


def split_op(op):
    """'correlate@fft' -> ('correlate', 'fft'); 'correlate' -> ('correlate', None)."""
    base, sep, path = op.partition("@")
    return base, (path if sep else None)


def large_only(key):
    """Rows that only the 'Masks of any size' section shows: forced paths and rank-2 masks."""
    impl, op = key[0], key[1]
    return impl == "apron" and ("@" in op or op == "correlate_rank2")


def has_large_rows(table):
    return any(k[0] == "apron" and (large_only(k) or (split_op(k[1])[0] in LARGE_OPS and k[3] >= LARGE_MIN_K))
               for k in table)


def chosen_path(r):
    """The path of apron's automatic row, read from its algorithm column (the plan's step label)."""
    alg = r.extra.get("algorithm", "")
    if alg.startswith("low-rank") or "(low-rank" in alg:
        return "low-rank"
    words = alg.split()
    if len(words) >= 3 and words[0] == "linear":
        return words[2]
    return "?"


def fma_peak_of(table):
    """(FMA/s, where it comes from): apron's fma_peak column, else the default."""
    peaks = [num(r.extra.get("fma_peak")) for k, r in table.items() if k[0] == "apron"]
    peaks = [p for p in peaks if p and p > 0]
    if peaks:
        return max(peaks), "bench_gpu's ceiling"
    return DEFAULT_FMA_PEAK, "not in the CSV: the H100's"


def target_line(text, items, want):
    """One of the issue's targets as a list item: '**pass**', '**FAIL**' or 'no data', what it asks, and the
    measurements that miss it (else the lowest). items: (k, value, value as shown); a value passes at >= want."""
    if not items:
        return "- no data: %s" % text
    bad = [(k, shown) for k, v, shown in items if not v >= want]
    if bad:
        return "- **FAIL** %s: below at k %s" % (text, ", ".join("%s (%s)" % (fmt_param(k), shown) for k, shown in bad))
    k, _, shown = min(items, key=lambda e: e[1])
    return "- **pass** %s: lowest %s at k %s" % (text, shown, fmt_param(k))


def large_targets(cls, rows, fma_peak):
    """The issue's targets for one class's table; rows: k -> dict(chosen, forced, best_peer, best_forced)."""
    op, typ = cls[0], cls[1]
    rows = sorted(rows.items())
    lines = []
    if (op, typ) == ("correlate", "f32"):
        lo, hi, want = F32_TARGET
        items = [(k, r["chosen"].mpix_s, fmt_rate(r["chosen"].mpix_s)) for k, r in rows
                 if lo <= k <= hi and r["chosen"]]
        lines.append(target_line("f32, k %d..%d: chosen >= %s Gpix/s" % (lo, hi, fmt_rate(want)), items, want))
    if (op, typ) == ("correlate_int", "u8"):
        lo, hi, factor = TENSOR_TARGET
        items = []
        for k, r in rows:
            c = r["chosen"]
            t = r["forced"].get("tensor") or (c if c and chosen_path(c) == "tensor" else None)
            if lo <= k <= hi and t:
                x = t.mpix_s * 1e6 / (fma_peak / (k * k))
                items.append((k, x, "%.1fx" % x))
        lines.append(target_line("u8 integer masks, k %d..%d: the tensor path >= %gx the FP32 direct roofline "
                                 "(fma_peak / k^2)" % (lo, hi, factor), items, factor))
    # Every class: against the peers, and against apron's own fastest path.
    vs_peer = [(k, r["chosen"].mpix_s / r["best_peer"][1].mpix_s) for k, r in rows if r["chosen"] and r["best_peer"]]
    lines.append(target_line("chosen >= the best peer at every k", [(k, x, fmt_ratio(x)) for k, x in vs_peer], 1.0))
    k0, factor = PEER_FACTOR
    lines.append(target_line("chosen >= %gx the best peer from k %d" % (factor, k0),
                             [(k, x, fmt_ratio(x)) for k, x in vs_peer if k >= k0], factor))
    vs_best = [(k, r["chosen"].mpix_s / r["best_forced"][1].mpix_s, r["best_forced"][0]) for k, r in rows
               if r["chosen"] and r["best_forced"]]
    lines.append(target_line("chosen never more than %d%% slower than the fastest forced path"
                             % round((PLANNER_SLACK - 1) * 100),
                             [(k, x, "%s of %s" % (fmt_ratio(x), p)) for k, x, p in vs_best], 1 / PLANNER_SLACK))
    return lines


def large_mask_section(out, table, matcher):
    """Appends "Masks of any size" when apron's CSV has bench_gpu --large's rows."""
    if not has_large_rows(table):
        return
    fma_peak, peak_source = fma_peak_of(table)
    out.append("## Masks of any size\n")
    out.append("bench_gpu --large: random masks k x k. *chosen*: the planner's choice, Gpix/s, its path and "
               "[its share of the FP32 direct roofline min(bandwidth / bytes, fma_peak / k^2)]; *apron PATH*: that "
               "path forced (--algo; '–' where it cannot run the case, a path that ran no case has no column); "
               "peers as above ('~': approximate, a peer's correlate u8 for integer masks, a full-rank mask for "
               "rank-2; cuDNN f16 is left out, half precision); ratios chosen / other, above 1x the choice is "
               "faster; '!' marks a choice more than %d%% slower than the fastest forced path. fma_peak %.1f T "
               "FMA/s (%s).\n"
               % (round((PLANNER_SLACK - 1) * 100), fma_peak / 1e12, peak_source))
    sizes = sorted({k[4] for k in table if k[0] == "apron" and split_op(k[1])[0] in LARGE_OPS}, reverse=True)
    for size in sizes:
        for cls in LARGE_CLASSES:
            op, typ, title, peer_op, always_approx = cls
            chosen, forced = {}, defaultdict(dict)  # k -> row; k -> {path: row}
            for (impl, rop, rtyp, param, sz), r in table.items():
                base, path = split_op(rop)
                if impl != "apron" or base != op or rtyp != typ or sz != size:
                    continue
                if path:
                    forced[param][path] = r
                else:
                    chosen[param] = r
            ks = sorted(set(chosen) | set(forced))
            # Small masks of the plain ops belong to the comparison tables unless --large measured them.
            if not forced and op != "correlate_rank2" and not any(k >= LARGE_MIN_K for k in ks):
                continue
            if not ks:
                continue
            paths = [p for p in PATH_ORDER if any(p in f for f in forced.values())]
            paths += sorted({p for f in forced.values() for p in f} - set(paths))
            header = ["k", "apron chosen Gpix/s (path) [roofline]"] + ["apron %s" % p for p in paths] + [
                "%s Gpix/s" % label(i) for i in LARGE_PEERS] + [
                "best peer", "chosen / best peer", "chosen / best apron path"]
            body, rows = [], {}
            for k in ks:
                c = chosen.get(k)
                f = forced.get(k, {})
                peers = {}
                for impl in LARGE_PEERS:
                    m = matcher.match(impl, peer_op, typ, k, size)
                    if m:
                        peers[impl] = (m[0], m[1] or always_approx)
                best_peer = max(((i, r) for i, (r, _) in peers.items()), key=lambda e: e[1].mpix_s, default=None)
                best_forced = max(f.items(), key=lambda e: e[1].mpix_s, default=None)
                rows[k] = {"chosen": c, "forced": f, "best_peer": best_peer, "best_forced": best_forced}
                cells = [fmt_param(k)]
                if c:
                    roof = num(c.extra.get("roofline_pct"))
                    cells.append("%s %s%s" % (fmt_rate(c.mpix_s), chosen_path(c),
                                              " [%.0f%%]" % roof if roof is not None else ""))
                else:
                    cells.append("–")
                cells += [fmt_rate(f[p].mpix_s) if p in f else "–" for p in paths]
                for impl in LARGE_PEERS:
                    if impl in peers:
                        r, approx = peers[impl]
                        cells.append(fmt_rate(r.mpix_s) + ("~" if approx else ""))
                    else:
                        cells.append("–")
                if best_peer:
                    mark = "~" if peers[best_peer[0]][1] else ""
                    cells.append("%s %s%s" % (label(best_peer[0]), fmt_rate(best_peer[1].mpix_s), mark))
                    cells.append("**%s**" % fmt_ratio(c.mpix_s / best_peer[1].mpix_s) if c else "–")
                else:
                    cells += ["–", "–"]
                if c and best_forced:
                    ratio = c.mpix_s / best_forced[1].mpix_s
                    cells.append("%s (%s)%s" % (fmt_ratio(ratio), best_forced[0],
                                                " !" if not ratio >= 1 / PLANNER_SLACK else ""))
                else:
                    cells.append("–")
                body.append(cells)
            out.append("### %s, %dx%d\n" % (title, size, size))
            out.append(md_table(header, body, ["--:", "---"] + ["--:"] * (len(header) - 2)) + "\n")
            out.append("Targets:\n\n" + "\n".join(large_targets(cls, rows, fma_peak)) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Merge apron's and the peers' benchmark CSVs into markdown tables.")
    ap.add_argument("csv", nargs="+", help="CSV files (impl,op,type,param,size,ms,mpix_s[,...])")
    ap.add_argument("--gpu", help="GPU name for the header (default: nvidia-smi's, where there is one)")
    ap.add_argument("--commit", help="apron commit for the header (default: git rev-parse --short HEAD)")
    ap.add_argument("--book-csv", default=BOOK_CSV,
                    help="the book chapter's Tesla C2070 figures (default: book_chapter_c2070.csv next to report.py)")
    args = ap.parse_args(argv)

    rows, problems = read_rows(args.csv)
    for p in problems:
        print("report.py: " + p, file=sys.stderr)
    user_rows = [r for r in rows if report_user.is_user_row(r)]
    rows = [r for r in rows if not report_user.is_user_row(r)]
    table = index(rows)
    matcher = Matcher(table)

    out = []
    gpu = args.gpu or gpu_name() or "unknown GPU"
    commit = args.commit or git_commit() or "unknown commit"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out.append("# apron against its peers: %s, %s, commit %s\n" % (gpu, date, commit))
    out.append("Inputs: %s. Throughput in Gpix/s (single-channel square images, kernel time by CUDA events, "
               "median after warm-up; h2h rows are host-to-host wall time). [n%%]: apron's share of its roofline. "
               "Ratios are apron / peer: above 1x apron is faster. '~': an approximate match (NPP's gaussian has "
               "fixed masks of its own sigma up to 15x15, the width used shown; or a peer case of another type or op). Borders: apron "
               "and NPP replicate, CuPy 'nearest' (replicate), cuDNN zero padding. cuDNN f16 computes in "
               "half precision.\n" % ", ".join(os.path.basename(p) for p in args.csv))
    if not table and not user_rows:
        out.append("No rows.\n")
        print("\n".join(out))
        return 1

    # Forced paths and rank-2 masks are only in "Masks of any size".
    full = table
    table = {k: r for k, r in full.items() if not large_only(k)}
    compared = set()
    for size in sorted({k[4] for k in table if k[0] == "apron"}, reverse=True):
        compared |= comparison_tables(out, table, matcher, size)[0]
    # apron's cases (op, type) that no peer measured at any size; the others' sizes without a peer are in the
    # size sweep
    other_apron_table(out, [r for k, r in table.items() if k[0] == "apron" and (k[1], k[2]) not in compared])
    peer_only_table(out, table, matcher)
    apron_sizes = sorted({k[4] for k in table if k[0] == "apron"})
    if len(apron_sizes) > 1:
        size_sweep_table(out, table, matcher, apron_sizes)
    large_mask_section(out, full, matcher)
    report_user.user_sections(out, user_rows)
    book_table(out, table, read_book(args.book_csv))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
