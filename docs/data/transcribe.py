#!/usr/bin/env python3
"""Transcribes the measured Markdown tables of docs/*.md into CSVs in bench/report.py's format, for bench/plots.py.

No raw CSV of the past benchmark runs is checked in, only the merged tables; this script reads them back, cell by
cell, so that the plots can be drawn from what the docs state. docs/data/README.md says which table each file
comes from. Nothing is measured or estimated here: a value is a table's cell, converted as follows.

  - Gpix/s -> mpix_s = Gpix/s x 1000 (Mpix/s cells are kept as printed);
  - ms = side^2 / (mpix_s x 1e3), the time of one image at that rate (report.py's kernel_ms), except where a
    table prints ms (the CPU tables), which are kept; streamed images (docs/streaming.md): ms = the table's
    seconds x 1000, gbs_input = side^2 x bytes_per_pixel / (seconds x 1e9);
  - a table's '[n%]' -> roofline_pct n; the chosen path of "Masks of any size" -> algorithm "linear KxK PATH"
    (the words report.py's chosen_path reads);
  - every row carries machine, date, commit (as the doc states them; "not stated" where it does not) and source
    (the doc and section), which plots.py prints under each plot.

    python3 docs/data/transcribe.py           # rewrites docs/data/*.csv
    python3 docs/data/transcribe.py --check   # writes nothing; exits 1 naming every CSV that differs

Each section is found by its heading and its stated run (machine, date, commit): when a doc's table is replaced by
a new run, this script stops with a one-line error instead of labelling new numbers with the old run.
"""
from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data"
sys.path.insert(0, str(ROOT / "bench"))
import report  # noqa: E402  (the peers' labels and the large-mask classes, as the tables were written)
import report_user  # noqa: E402

CORE = ["impl", "op", "type", "param", "size", "ms", "mpix_s"]
PROVENANCE = ["machine", "date", "commit", "source"]
LABEL_IMPL = {v: k for k, v in report.PEER_LABELS.items()}
LABEL_IMPL["cuDNN (planar)"] = "cudnn"


class Stale(Exception):
    """A doc no longer says what this script expects (a section, a table, a stated run)."""


# ---------------------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------------------


def doc_lines(name):
    return (ROOT / "docs" / name).read_text().splitlines()


def between(lines, start, end=None):
    """The lines from the heading line `start` up to the heading line `end` (or the end)."""
    try:
        a = lines.index(start)
        b = lines.index(end, a + 1) if end else len(lines)
    except ValueError:
        raise Stale("heading %r or %r not found" % (start, end)) from None
    return lines[a:b]


def expect(lines, text, where):
    if not any(text in line for line in lines):
        raise Stale("%s no longer states %r: check the run it describes and update transcribe.py" % (where, text))


def tables(lines):
    """Every table as (the last heading above it, header cells, rows of cells)."""
    heading, i, out = "", 0, []
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(cells(lines[j]))
                j += 1
            out.append((heading, cells(line), rows))
            i = j
            continue
        i += 1
    return out


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table(lines, heading):
    found = [(h, rows) for h, head, rows in tables(lines) if h == heading]
    if len(found) != 1:
        raise Stale("table under heading %r: found %d" % (heading, len(found)))
    return [head for h, head, _ in tables(lines) if h == heading][0], found[0][1]


NUMBER = re.compile(r"^\**([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)")


def lead(cell):
    """The number a cell starts with ('305 direct [81%]' -> 305.0), None for '–' / '-' / empty."""
    m = NUMBER.match(cell.strip())
    return float(m.group(1)) if m else None


def pct(cell):
    m = re.search(r"\[([0-9.]+)%\]", cell)
    return m.group(1) if m else ""


# ---------------------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------------------


def g(x):
    """Six significant digits, never in exponent form (1024000, not 1.024e+06)."""
    return ("%f" % float("%.6g" % x)).rstrip("0").rstrip(".")


def row(impl, op, typ, param, size, mpix_s, prov, ms=None, **extra):
    """One CSV row; ms from the rate unless the table printed it."""
    r = dict(impl=impl, op=op, type=typ, param=g(param), size=size, mpix_s=g(mpix_s),
             ms=g(ms if ms is not None else size * size / (mpix_s * 1e3)))
    r.update({k: v for k, v in extra.items()})
    r.update(prov)
    return r


def add_unique(rows, seen, r, keys):
    """Appends r unless a row of the same key is there already; the same key with another value is an error
    (one peer measurement shown in two tables must read the same)."""
    key = tuple(r.get(k, "") for k in keys)
    if key in seen:
        if seen[key]["mpix_s"] != r["mpix_s"]:
            raise Stale("%s: %s and %s Mpix/s in two tables" % (key, seen[key]["mpix_s"], r["mpix_s"]))
        return
    seen[key] = r
    rows.append(r)


# ---------------------------------------------------------------------------------------------------------
# docs/gpu-benchmark.md, "Masks of any size (issue 4)"
# ---------------------------------------------------------------------------------------------------------


def masks():
    lines = between(doc_lines("gpu-benchmark.md"), "## Masks of any size (issue 4)", "## Batches (issue 5)")
    expect(lines, "H100 80GB HBM3, 2026-11-23, commit b13b058", "gpu-benchmark.md 'Masks of any size'")
    expect(lines, "fma_peak 33.5 T FMA/s", "gpu-benchmark.md 'Masks of any size'")
    prov = dict(machine="NVIDIA H100 80GB HBM3", date="2026-11-23", commit="b13b058",
                source="docs/gpu-benchmark.md, 'Masks of any size (issue 4)'")
    rows, seen, size = [], {}, 8192
    keys = ("impl", "op", "type", "param", "size")
    for op, typ, title, _, _ in report.LARGE_CLASSES:
        head, body = table(lines, "%s, %dx%d" % (title, size, size))
        for cs in body:
            c = dict(zip(head, cs))
            k = int(c["k"])
            m = re.match(r"([0-9.]+) (\S+) \[([0-9.]+)%\]", c["apron chosen Gpix/s (path) [roofline]"])
            if not m:
                raise Stale("masks: chosen cell %r" % c["apron chosen Gpix/s (path) [roofline]"])
            add_unique(rows, seen, row("apron", op, typ, k, size, float(m.group(1)) * 1e3, prov,
                                       algorithm="linear %dx%d %s" % (k, k, m.group(2)), roofline_pct=m.group(3),
                                       fma_peak="33500000000000"), keys)
            for col in head:
                if col.startswith("apron ") and "chosen" not in col and lead(c[col]) is not None:
                    add_unique(rows, seen, row("apron", "%s@%s" % (op, col[6:]), typ, k, size,
                                               lead(c[col]) * 1e3, prov, fma_peak="33500000000000"), keys)
            for label, impl in LABEL_IMPL.items():
                cell = c.get(label + " Gpix/s")
                if cell is None or lead(cell) is None:
                    continue
                peer_op = op
                if "~" in cell:  # report.py's approximate matches: the peer's correlate of the same type
                    peer_op = "correlate"
                add_unique(rows, seen, row(impl, peer_op, typ, k, size, lead(cell) * 1e3, prov), keys)
    # Rank-2 masks are matched to the peers' full-rank correlate f32: those rows must already be there.
    return rows


# ---------------------------------------------------------------------------------------------------------
# docs/gpu-benchmark.md, "The measured tables" (the doc's opening run): morphology and host to host
# ---------------------------------------------------------------------------------------------------------


def gpu_8192():
    doc = doc_lines("gpu-benchmark.md")
    expect(doc[:8], "NVIDIA H100 80GB HBM3 (the lent GPU machine), 2026-11-22, commit a53a7b3", "gpu-benchmark.md")
    expect(doc, "pinned PCIe 55.1 GB/s each way alone, 45.4 GB/s each way with both at once", "gpu-benchmark.md")
    lines = between(doc, "## The measured tables")
    prov = dict(machine="NVIDIA H100 80GB HBM3", date="2026-11-22", commit="a53a7b3",
                source="docs/gpu-benchmark.md, 'The measured tables' (the run of its opening paragraph)")
    rows, seen, size = [], {}, 8192
    keys = ("impl", "op", "type", "param", "size")
    for op in ("dilate", "erode"):
        head, body = table(lines, "%s u8, %dx%d" % (op, size, size))
        for cs in body:
            c = dict(zip(head, cs))
            k = int(c["k"])
            a = c["apron Gpix/s [roofline]"]
            add_unique(rows, seen, row("apron", op, "u8", k, size, lead(a) * 1e3, prov, roofline_pct=pct(a),
                                       algorithm=c["apron algorithm"]), keys)
            for label in ("NPP", "CuPy"):
                if lead(c[label + " Gpix/s"]) is not None:
                    add_unique(rows, seen, row(LABEL_IMPL[label], op, "u8", k, size,
                                               lead(c[label + " Gpix/s"]) * 1e3, prov), keys)
    pcie = dict(pcie_gbs="45.4", pcie_one_way_gbs="55.1")
    # apron's host-to-host rows: the size sweep (Mpix/s as printed), its roofline share where a table gives it.
    head, body = table(lines, "size sweep: apron Mpix/s per image side (apron / best peer)")
    h2h_head, h2h_body = table(lines, "h2h_correlate u8, %dx%d" % (size, size))
    h2h = {int(cs[0]): dict(zip(h2h_head, cs)) for cs in h2h_body}
    for cs in body:
        c = dict(zip(head, cs))
        if c["op"] != "h2h_correlate":
            continue
        k = int(c["param"])
        for side in head[3:]:
            if lead(c[side]) is None:
                continue
            roof = pct(h2h[k]["apron Gpix/s [roofline]"]) if int(side) == size and k in h2h else ""
            add_unique(rows, seen, row("apron", "h2h_correlate", c["type"], k, int(side), lead(c[side]), prov,
                                       roofline_pct=roof, **pcie), keys)
    for k, c in h2h.items():
        add_unique(rows, seen, row("torch", "h2h_correlate", "u8", k, size, lead(c["PyTorch Gpix/s"]) * 1e3, prov),
                   keys)
    head, body = table(lines, "peer cases without an apron row")
    for cs in body:
        c = dict(zip(head, cs))
        if c["op"] == "h2h_correlate":
            add_unique(rows, seen, row(LABEL_IMPL[c["peer"]], c["op"], c["type"], float(c["param"]),
                                       int(c["size"]), float(c["Mpix/s"]), prov, ms=float(c["ms"])), keys)
    return rows


# ---------------------------------------------------------------------------------------------------------
# docs/gpu-benchmark.md, "Measured tables (H200, 2026-11-23)": the cases users run (shape column)
# ---------------------------------------------------------------------------------------------------------


def shape_param(shape):
    """bench/user_cases.hpp's param: the mask or element side, sigma for gaussian; disk:r is 2r+1 wide."""
    if shape.startswith("sigma="):
        return float(shape[6:])
    if shape.startswith("disk:"):
        return 2 * int(shape[5:]) + 1
    return int(shape.split(":")[-1].split("x")[0])


def user_cases():
    doc = doc_lines("gpu-benchmark.md")
    lines = between(doc, "#### Measured tables (H200, 2026-11-23)", "### The CPU backend on colour (step `cpu-user`)")
    intro = between(doc, "## The cases users run: colour, types and element shapes",
                    "### Against the issue's targets (GPU)")
    expect(intro, "commit e60690c's kernels, the peers in the first call of that session", "gpu-benchmark.md")
    expect(intro, "(commit beb44fa,", "gpu-benchmark.md 'The cases users run'")
    source = "docs/gpu-benchmark.md, 'The cases users run', 'Measured tables (H200, 2026-11-23)'"
    apron_prov = dict(machine="NVIDIA H200", date="2026-11-23", commit="e60690c", source=source)
    peer_prov = dict(machine="NVIDIA H200", date="2026-11-23", commit="beb44fa", source=source)
    rows, seen = [], {}
    keys = ("impl", "op", "type", "channels", "shape", "size")
    for heading, head, body in tables(lines):
        m = re.match(r"^(\w+) (u8|u16|f32), (\d+)x\d+$", heading)
        if not m:
            raise Stale("user cases: unexpected table heading %r" % heading)
        op, typ, size = m.group(1), m.group(2), int(m.group(3))
        for cs in body:
            c = dict(zip(head, cs))
            shape, ch = c["shape"], int(c["C"])
            a = c["apron Gpix/s [roofline]"]
            add_unique(rows, seen, row("apron", op, typ, shape_param(shape), size, lead(a) * 1e3, apron_prov,
                                       roofline_pct=pct(a), channels=ch, shape=shape, kernel=c["kernel"]), keys)
            for label, impl in LABEL_IMPL.items():
                cell = c.get(label + " Gpix/s")
                if cell is None or lead(cell) is None:
                    continue
                pop, pshape = op, shape
                w = re.search(r"\((\d+)x\1\)", cell)
                if w:  # NPP's fixed Gaussian mask of that width (report_user.py's approximate match)
                    pop, pshape = report_user.NPP_GAUSS_OP, "%sx%s" % (w.group(1), w.group(1))
                add_unique(rows, seen, row(impl, pop, typ, shape_param(pshape), size, lead(cell) * 1e3, peer_prov,
                                           channels=ch, shape=pshape), keys)
    return rows


# ---------------------------------------------------------------------------------------------------------
# the CPU backend against OpenCV
# ---------------------------------------------------------------------------------------------------------


def cpu_case(case):
    """A table's case name -> (op, param, shape in bench/user_cases.hpp's words)."""
    m = re.match(r"^(correlate|filter2D|blur) (\d+)x\d+$", case)
    if m:
        op = {"filter2D": "correlate", "blur": "box"}.get(m.group(1), m.group(1))
        return op, int(m.group(2)), "%sx%s" % (m.group(2), m.group(2))
    m = re.match(r"^(?:gaussian s=|GaussianBlur sigma )([0-9.]+)", case)
    if m:
        return "gaussian", float(m.group(1)), "sigma=%g" % float(m.group(1))
    m = re.match(r"^dilate (rect|ellipse) (\d+)x\d+$", case)
    if m:
        return "dilate", int(m.group(2)), "%s:%sx%s" % (m.group(1), m.group(2), m.group(2))
    raise Stale("CPU table: unknown case %r" % case)


def cpu_single_channel():
    lines = doc_lines("cpu-benchmark.md")
    expect(lines, "Date: 2026-11-22, commit 68135eb", "cpu-benchmark.md")
    expect(lines, "**2 vCPUs**", "cpu-benchmark.md")
    expect(lines, "OpenCV 4.6.0", "cpu-benchmark.md")
    prov = dict(machine="2-vCPU Xeon (Sapphire Rapids) VM, OpenCV 4.6.0", date="2026-11-22", commit="68135eb",
                source="docs/cpu-benchmark.md, 'Results'")
    head, body = table(between(lines, "## Results", "## The issue's targets"), "Results")
    rows, size = [], 4096
    for cs in body:
        c = dict(zip(head, cs))
        op, param, shape = cpu_case(c["case"])
        common = dict(channels=1, shape=shape, threads=2, max_diff=c["max diff"])
        rows.append(row("apron-cpu", op, c["type"], param, size, float(c["apron Mpx/s"]), prov,
                        ms=float(c["apron ms"]), algorithm=c["apron algorithm"], **common))
        rows.append(row("opencv", op, c["type"], param, size, float(c["OpenCV Mpx/s"]), prov,
                        ms=float(c["OpenCV ms"]), **common))
    return rows


def cpu_colour():
    lines = between(doc_lines("gpu-benchmark.md"), "### The CPU backend on colour (step `cpu-user`)",
                    "## The measured tables")
    expect(lines, "Measured on the 2-core build machine (4096 x 4096 u8, wall ms", "gpu-benchmark.md CPU colour")
    prov = dict(machine="2-core shared build VM", date="not stated", commit="not stated",
                source="docs/gpu-benchmark.md, 'The CPU backend on colour (step cpu-user)'")
    head, body = table(lines, "The CPU backend on colour (step `cpu-user`)")
    rows, size = [], 4096
    for cs in body:
        c = dict(zip(head, cs))
        op, param, shape = cpu_case(c["case"])
        for name, ch in (("RGB", 3), ("RGBA", 4)):
            for impl, col in (("apron-cpu", name + " apron"), ("opencv", name + " OpenCV")):
                ms = float(c[col])
                rows.append(row(impl, op, "u8", param, size, size * size / (ms * 1e3), prov, ms=ms, channels=ch,
                                shape=shape, threads=2))
    return rows


# ---------------------------------------------------------------------------------------------------------
# docs/batch.md, "Measured": batches host to host and from files
# ---------------------------------------------------------------------------------------------------------


def batch():
    lines = between(doc_lines("batch.md"), "## Measured (lent GPUs; `scripts/gpu-run.sh` step `batch`)")
    expect(lines, "1000 generated 4096x4096 u8 images, 5x5 binomial filter", "batch.md 'Measured'")
    source = "docs/batch.md, 'Measured'"
    rows, size = [], 4096
    head, body = tables(lines)[0][1:]
    for cs in body:
        c = dict(zip(head, cs))
        label = c["machine"]
        gpus = 2 if "2 GPUs" in label else 1
        machine = "NVIDIA H100" if label.startswith("H100") else "2x NVIDIA H200 host"
        images_s = float(c["images/s"])
        extra = dict(run="%s, %d stream%s" % (label, int(c["streams"]), "s" * (int(c["streams"]) > 1)),
                     streams=int(c["streams"]), gpus=gpus, images_s=c["images/s"],
                     gbs_each_way=g(lead(c["GB/s each way"])), pcie_gbs=g(lead(c["ceiling both ways at once"])))
        if machine == "NVIDIA H100":
            extra["pcie_one_way_gbs"] = "55"  # the table's "% of 55 GB/s": the H100's, measured one way alone
        rows.append(row("apron", "batch_h2h", "u8", 5, size, images_s * size * size / 1e6,
                        dict(machine=machine, date="not stated", commit="not stated", source=source), **extra))
    head, body = tables(lines)[1][1:]
    for cs in body:
        c = dict(zip(head, cs))
        run = c["run"]
        side = 4100 if "PGM" in run else 4096  # the PGM job's images are 4100x4100 with 2 pixels of padding
        machine = ("NVIDIA H100" if "H100" in run else "2x NVIDIA H200 host" if "H200" in run
                   else "32-core host (not named)")
        rows.append(row("apron", "batch_files", "u8", 5, side, float(c["Mpix/s"]),
                        dict(machine=machine, date="not stated", commit="not stated", source=source),
                        run=run.replace("`", ""), images_s=c["images/s"], bottleneck=c["bottleneck (summary)"]))
    return rows


# ---------------------------------------------------------------------------------------------------------
# docs/streaming.md, "On the GPU machine": a 65536^2 image streamed from and to files, against dd's copy
# ---------------------------------------------------------------------------------------------------------

STREAM_TOOLS = {"dd": "dd", "apron, CUDA": "apron-cuda", "apron, CPU": "apron-cpu", "libvips": "libvips"}


def streaming():
    heading = "## On the GPU machine (H200 node, 16 cores, files in tmpfs, 2026-11-24, commit cc51f72)"
    lines = between(doc_lines("streaming.md"), heading, "## Larger than the GPU's memory (H100, 79.6 GiB, files in "
                                                        "tmpfs, 2026-11-25)")
    where = "streaming.md 'On the GPU machine'"
    expect(lines, "a generated 65536 x 65536 image through gaussian", where)
    expect(lines, "sigma 4 then dilate disk:5 with `--memory 1G`", where)
    prov = dict(machine="H200 node, 16 cores, files in tmpfs", date="2026-11-24", commit="cc51f72",
                source="docs/streaming.md, 'On the GPU machine'")
    head, body = tables(lines)[0][1:]
    if head[:3] != ["type (size)", "tool", "seconds"]:
        raise Stale("%s: the first table's header is %s" % (where, " | ".join(head)))
    rows, size, typ = [], 65536, None
    for cs in body:
        c = dict(zip(head, cs))
        if c["type (size)"]:
            typ = c["type (size)"].split()[0]
        tool = c["tool"]
        if tool not in STREAM_TOOLS or typ not in ("u8", "u16", "f32"):
            raise Stale("%s: unknown row %s / %s" % (where, typ, tool))
        seconds = float(c["seconds"])
        bpp = {"u8": 1, "u16": 2, "f32": 4}[typ]
        rows.append(row(STREAM_TOOLS[tool], "stream_gaussian_dilate", typ, 4, size, size * size / (seconds * 1e6),
                        prov, ms=seconds * 1000, pipeline="gaussian sigma 4, dilate disk:5", memory="1G",
                        bytes_per_pixel=bpp, input_gib=size * size * bpp // 2 ** 30, seconds=c["seconds"],
                        gbs_input=g(round(size * size * bpp / seconds / 1e9, 3)),
                        pct_of_dd=g(lead(c["% of the dd bound"])),
                        peak_rss_mib=g(lead(c["peak RSS"]))))
    return rows


FILES = {
    "masks.csv": masks,
    "gpu_h100_8192.csv": gpu_8192,
    "user_cases_h200.csv": user_cases,
    "cpu_single_channel.csv": cpu_single_channel,
    "cpu_colour.csv": cpu_colour,
    "batch.csv": batch,
    "streaming.csv": streaming,
}


def render(rows):
    extra = []
    for r in rows:
        extra += [k for k in r if k not in CORE and k not in PROVENANCE and k not in extra]
    f = io.StringIO()
    w = csv.DictWriter(f, fieldnames=CORE + extra + PROVENANCE, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return f.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Transcribe the docs' benchmark tables into docs/data/*.csv.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every CSV that differs")
    args = ap.parse_args(argv)
    stale = []
    for name, make in FILES.items():
        try:
            text = render(make())
        except Stale as e:
            print("transcribe.py: %s: %s" % (name, e), file=sys.stderr)
            return 1
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print("wrote %s (%d rows)" % (path.relative_to(ROOT), text.count("\n") - 1))
    if stale:
        print("transcribe.py: stale: %s; run python3 docs/data/transcribe.py" % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
