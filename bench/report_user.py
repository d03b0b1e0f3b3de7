"""bench/report.py's sections on the cases users run: rows whose `shape` column is set (bench_gpu's and
bench_cpu_user's user cases, and the peers' rows of the same cases; bench/user_cases.hpp gives the names).

"Colour, types and element shapes (GPU)": apron's rows (impl apron) against NPP, CuPy and cuDNN. One table per
(op, type, image size); a row per (shape, channels). Matching: same op, type, channels and shape; apron's
gaussian sigma=S also against NPP's fixed mask of width 2 ceil(3 S) + 1 (op gaussian_mask, shape "WxW", marked
'~': NPP's masks have their own sigma); correlate_int against a peer's correlate_int. cuDNN runs on planar data
(1 x C x H x W), the others on interleaved pixels. Columns: apron Gpix/s [% of the channel-scaled roofline],
apron Gsamples/s, per-sample throughput against the same case on one channel ("vs C1", the issue's target: no
more than 15 % below), for elements the same-size rectangle's share ("vs rect", target >= 50 %), each peer's
Gpix/s, apron / best peer, apron / each peer, the kernel the plan chose (describe()) and the check when it failed.

"Colour on the CPU": apron's CPU backend in process (impl apron-cpu, bench_cpu_user) against OpenCV in process
(impl opencv) and apron's CLI step time (impl apron-cli), both from bench/peers/cpu_peers.py --user. Columns:
Gpix/s of each, apron / OpenCV (target 1.5x on RGB and RGBA), CLI step time / in-process time (target <= 1.2),
the CLI output's max difference from OpenCV's.
"""
import math
from collections import defaultdict

from report_format import fmt_rate, fmt_ratio, ratio_cells

GPU_PEERS = ["npp", "cupy", "cudnn"]
GPU_LABELS = {"npp": "NPP", "cupy": "CuPy", "cudnn": "cuDNN (planar)"}
OPS = ["correlate", "correlate_int", "gaussian", "box", "sharpen", "dilate", "erode"]
TYPES = ["u8", "u16", "f32"]
CPU_APRON, CPU_CLI, CPU_PEER = "apron-cpu", "apron-cli", "opencv"
NPP_GAUSS_OP = "gaussian_mask"


def is_user_row(r):
    return bool(r.extra.get("shape", "").strip())


def channels_of(r):
    try:
        return int(float(r.extra.get("channels") or 1))
    except ValueError:
        return 1




def _pct(x):
    return "%.0f%%" % (100 * x)


def _shape_key(shape):
    """Sort: the element's kind (rect first), then its side; masks and sigmas by their number."""
    kind, _, rest = shape.partition(":")
    if not rest:
        kind, rest = "", shape
    digits = "".join(ch if ch.isdigit() or ch == "." else " " for ch in rest).split()
    n = float(digits[0]) if digits else 0.0
    if kind == "disk":
        n = 2 * n + 1
    kinds = ["rect", "ellipse", "disk", "cross", "random"]
    return (n, kinds.index(kind) if kind in kinds else -1, shape)


def _table(header, rows, align):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines)


def _index(rows):
    """(impl, op, type, channels, shape, size) -> the fastest row of that key."""
    best = {}
    for r in rows:
        key = (r.impl, r.op, r.type, channels_of(r), r.extra.get("shape", "").strip(), r.size)
        if key not in best or r.mpix_s > best[key].mpix_s:
            best[key] = r
    return best


def _gauss_width(shape):
    try:
        s = float(shape.split("=", 1)[1])
    except (IndexError, ValueError):
        return None
    return 2 * math.ceil(3 * s - 1e-9) + 1


def _match(table, impl, op, typ, c, shape, size):
    """The peer's row for apron's case: (row, approximate, note) or None."""
    r = table.get((impl, op, typ, c, shape, size))
    if r:
        return r, False, ""
    if op == "gaussian":
        w = _gauss_width(shape)
        r = table.get((impl, NPP_GAUSS_OP, typ, c, "%dx%d" % (w, w), size)) if w else None
        if r:
            return r, True, "%dx%d" % (w, w)
    return None


def gpu_section(out, rows):
    table = _index(rows)
    apron = defaultdict(list)  # (op, type, size) -> [(channels, shape, row)]
    for (impl, op, typ, c, shape, size), r in table.items():
        if impl == "apron":
            apron[(op, typ, size)].append((c, shape, r))
    if not apron:
        return set()
    used = set()
    out.append("## Colour, types and element shapes (GPU)\n")
    out.append("The cases users run (bench/user_cases.hpp): 1, 3 and 4 interleaved channels. Gpix/s [share of the "
               "channel-scaled roofline min(bandwidth / (2 C bytes), fma_peak / (taps C))]; *vs C1*: samples/s "
               "against the same case on one channel; *vs rect*: pixels/s against the rectangle of the same side. "
               "Ratios apron / peer, above 1x apron is faster; '~' an approximate match (NPP's fixed Gaussian "
               "mask of that width). cuDNN runs on planar data.\n")
    ordered = sorted(apron, key=lambda k: (-k[2], OPS.index(k[0]) if k[0] in OPS else 99, k[0],
                                           TYPES.index(k[1]) if k[1] in TYPES else 9, k[1]))
    for op, typ, size in ordered:
        cases = sorted(apron[(op, typ, size)], key=lambda e: (_shape_key(e[1]), e[0]))
        found = {}
        for c, shape, r in cases:
            for impl in GPU_PEERS:
                m = _match(table, impl, op, typ, c, shape, size)
                if m:
                    found[(c, shape, impl)] = m
                    p = m[0]
                    used.add((p.impl, p.op, p.type, c, p.extra.get("shape", "").strip(), p.size))
        peers = [i for i in GPU_PEERS if any(k[2] == i for k in found)]
        morph = op in ("dilate", "erode")
        header = ["shape", "C", "apron Gpix/s [roofline]", "Gsamples/s", "vs C1"] + (["vs rect"] if morph else [])
        header += ["%s Gpix/s" % GPU_LABELS[i] for i in peers]
        header += ["apron / best peer", "apron / each peer"] if peers else []
        header += ["kernel"]
        body = []
        for c, shape, r in cases:
            roof = r.extra.get("roofline_pct", "")
            try:
                roof_cell = " [%.0f%%]" % float(roof)
            except ValueError:
                roof_cell = ""
            cells = [shape, c, fmt_rate(r.mpix_s) + roof_cell, fmt_rate(r.mpix_s * c)]
            gray = table.get(("apron", op, typ, 1, shape, size))
            cells.append(_pct(r.mpix_s * c / gray.mpix_s) if gray and c != 1 else "–")
            if morph:
                side = shape.split(":", 1)[1] if ":" in shape else ""
                if shape.startswith("disk:"):
                    k = 2 * int(side) + 1
                    side = "%dx%d" % (k, k)
                rect = table.get(("apron", op, typ, c, "rect:" + side, size))
                cells.append(_pct(r.mpix_s / rect.mpix_s) if rect and not shape.startswith("rect:") else "–")
            each = []
            for impl in peers:
                m = found.get((c, shape, impl))
                if not m:
                    cells.append("–")
                    continue
                p, approx, note = m
                mark = "~" if approx else ""
                cells.append(fmt_rate(p.mpix_s) + mark + (" (%s)" % note if note else ""))
                each.append((r.mpix_s / p.mpix_s, GPU_LABELS[impl], mark))
            if peers:
                cells += ratio_cells(each)
            kernel = r.extra.get("kernel") or r.extra.get("algorithm", "")
            check = r.extra.get("check", "")
            if check and not check.startswith("ok"):
                kernel += " **%s**" % check
            cells.append(kernel)
            body.append(cells)
        align = ["---", "--:"] + ["--:"] * (len(header) - 3) + ["---"]
        out.append("### %s %s, %dx%d\n" % (op, typ, size, size))
        out.append(_table(header, body, align) + "\n")
    rest = [r for k, r in table.items() if k[0] in GPU_PEERS and k not in used]
    if rest:
        out.append("### peer user cases without an apron row\n")
        body = [[GPU_LABELS.get(r.impl, r.impl), r.op, r.type, channels_of(r), r.extra.get("shape", ""), r.size,
                 fmt_rate(r.mpix_s)] for r in sorted(rest, key=lambda r: (r.impl, r.op, r.type, channels_of(r),
                                                                          _shape_key(r.extra.get("shape", ""))))]
        out.append(_table(["peer", "op", "type", "C", "shape", "size", "Gpix/s"], body,
                          ["---", "---", "---", "--:", "---", "--:", "--:"]) + "\n")
    return used


def cpu_section(out, rows):
    table = _index(rows)
    cases = defaultdict(list)  # (op, type, size) -> [(channels, shape)]
    for (impl, op, typ, c, shape, size) in table:
        if impl in (CPU_APRON, CPU_CLI, CPU_PEER) and (c, shape) not in cases[(op, typ, size)]:
            cases[(op, typ, size)].append((c, shape))
    cases = {k: v for k, v in cases.items()
             if any((CPU_APRON, k[0], k[1], c, s, k[2]) in table or (CPU_CLI, k[0], k[1], c, s, k[2]) in table
                    for c, s in v)}
    if not cases:
        return
    out.append("## Colour on the CPU\n")
    out.append("apron's CPU backend in process (bench_cpu_user) and through the CLI (its step time, `apron filter "
               "--timing`) against OpenCV in process (bench/peers/cpu_peers.py --user), on the same cores. "
               "*CLI / in-process*: the CLI step's time over the in-process time (target <= 1.2); *apron / "
               "OpenCV*: in-process throughput ratio (target 1.5x on 3 and 4 channels).\n")
    for op, typ, size in sorted(cases, key=lambda k: (-k[2], OPS.index(k[0]) if k[0] in OPS else 99,
                                                      TYPES.index(k[1]) if k[1] in TYPES else 9)):
        body = []
        for c, shape in sorted(cases[(op, typ, size)], key=lambda e: (_shape_key(e[1]), e[0])):
            a = table.get((CPU_APRON, op, typ, c, shape, size))
            cli = table.get((CPU_CLI, op, typ, c, shape, size))
            cv = table.get((CPU_PEER, op, typ, c, shape, size))
            threads = (a or cli or cv).extra.get("threads", "")
            cells = [shape, c, threads]
            cells += [fmt_rate(r.mpix_s) if r else "–" for r in (a, cli, cv)]
            cells.append("**%s**" % fmt_ratio(a.mpix_s / cv.mpix_s) if a and cv else "–")
            cells.append("%.2f" % (a.mpix_s / cli.mpix_s) if a and cli else "–")
            cells.append(cli.extra.get("max_diff", "") if cli else "–")
            body.append(cells)
        out.append("### %s %s, %dx%d\n" % (op, typ, size, size))
        out.append(_table(["shape", "C", "threads", "apron in process Gpix/s", "apron CLI Gpix/s", "OpenCV Gpix/s",
                           "apron / OpenCV", "CLI / in-process", "CLI max diff vs OpenCV"], body,
                          ["---", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "--:"]) + "\n")


def user_sections(out, rows):
    """Appends both sections (each only when it has rows)."""
    gpu_section(out, [r for r in rows if r.impl not in (CPU_APRON, CPU_CLI, CPU_PEER)])
    cpu_section(out, [r for r in rows if r.impl in (CPU_APRON, CPU_CLI, CPU_PEER)])
