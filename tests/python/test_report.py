"""bench/report.py's section "The book chapter's cases": apron's correlate / h2h_correlate u8 rows of the chapter's
sizes and masks set beside the chapter's Tesla C2070 figures; its section "Masks of any size": bench_gpu --large's
rows (the planner's choice, every path forced as OP@PATH) against the peers, with the issue's targets; and the
sections on the cases users run (rows with a `shape` column: 1, 3 and 4 channels, element shapes) on the GPU and
the CPU (bench/report_user.py).

These tests run report.py on small synthetic CSVs and need neither the apron binary nor a GPU (nor numpy).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_csv

REPO_ROOT = Path(__file__).resolve().parents[2]
REPORT = REPO_ROOT / "bench" / "report.py"
SECTION = "## The book chapter's cases"

# conftest.py skips every test when the apron binary is missing, except those with this mark.
pytestmark = pytest.mark.no_apron_binary


APRON_HEADER = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "algorithm", "roofline_pct"]
BOOK_HEADER = ["table", "variant", "image_size", "mask", "time_ms", "mpix_per_s", "includes_transfers", "note"]


def apron_row(op, typ, k, size, ms, mpix_s=None):
    if mpix_s is None:
        mpix_s = size * size / 1e6 / (ms / 1e3)
    return ["apron", op, typ, k, size, ms, mpix_s, "test", 50]


def book_row(size, k, ms="", tp="", table="tab:convoNonSepReg1"):
    return [table, "register-only non-separable (C2070)", "%dx%d" % (size, size), "%dx%d" % (k, k) if k else "",
            ms, tp, "time=no; TP=yes", "synthetic"]


@pytest.fixture
def peers_csv(tmp_path):
    return write_csv(tmp_path / "peers.csv", APRON_HEADER[:7], [
        ["npp", "correlate", "u8", 3, 4096, 0.1, ""],
        ["npp", "correlate", "u8", 3, 8192, 0.4, ""],
    ])


@pytest.fixture
def book_csv(tmp_path):
    return write_csv(tmp_path / "book.csv", BOOK_HEADER, [
        book_row(4096, 3, "4.700", "1585"),
        book_row(4096, 5, "13.05", ""),       # time known, throughput not
        book_row(4096, 7, "", "533"),         # throughput known, time not
        book_row(512, 3),                     # both unknown
        book_row(4096, 0, "", ""),            # tab:memcpy1-like row without a mask: ignored
        book_row(4096, 3, "99", "9", table="tab:convoSepSh1"),  # another table of the chapter: ignored
    ])


def run_report(tmp_path, *args) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(REPORT), *map(str, args), "--gpu", "TEST GPU", "--commit", "test"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


def book_section(out: str) -> dict[tuple[str, str], dict[str, str]]:
    """The book section's table: (image, mask) -> {column header: cell}."""
    assert out.count(SECTION) == 1, out
    lines = out.split(SECTION, 1)[1].splitlines()
    table = [l for l in lines if l.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
        rows[(cells["image"], cells["mask"])] = cells
    return rows


def test_book_section_rows_and_ratios(tmp_path, peers_csv, book_csv):
    apron = write_csv(tmp_path / "apron.csv", APRON_HEADER, [
        apron_row("correlate", "u8", 3, 4096, 0.5),
        apron_row("correlate", "u8", 3, 4096, 0.8),          # a slower repeat: the best run is kept
        apron_row("h2h_correlate", "u8", 3, 4096, 5.0, 3170),
        apron_row("correlate", "u8", 5, 4096, 1.305),
        apron_row("h2h_correlate", "u8", 5, 4096, 2.0, 8000),
        apron_row("h2h_correlate", "u8", 7, 4096, 2.0, 1066),  # no correlate 7x7 row
        apron_row("correlate", "u8", 3, 512, 0.02),
        apron_row("correlate", "u8", 9, 4096, 0.1),          # not a mask of the chapter
        apron_row("correlate", "u8", 3, 8192, 0.2),          # not a size of the chapter
        apron_row("correlate", "f32", 3, 4096, 0.05),        # not the chapter's type
    ])
    r = run_report(tmp_path, apron, peers_csv, "--book-csv", book_csv)
    rows = book_section(r.stdout)
    assert list(rows) == [("512x512", "3x3"), ("4096x4096", "3x3"), ("4096x4096", "5x5"), ("4096x4096", "7x7")]

    a = rows[("4096x4096", "3x3")]
    assert a["apron kernel ms"] == "0.500"
    assert a["C2070 kernel ms"] == "4.700"
    assert a["kernel speed-up (C2070 / apron)"] == "9.4x"
    assert a["apron h2h Mpix/s"] == "3170"
    assert a["C2070 Mpix/s (with transfers)"] == "1585"
    assert a["h2h apron / C2070"] == "2.0x"

    b = rows[("4096x4096", "5x5")]
    assert (b["apron kernel ms"], b["C2070 kernel ms"], b["kernel speed-up (C2070 / apron)"]) == ("1.30", "13.05",
                                                                                                  "10x")
    assert (b["apron h2h Mpix/s"], b["C2070 Mpix/s (with transfers)"], b["h2h apron / C2070"]) == ("8000", "–", "–")

    c = rows[("4096x4096", "7x7")]
    assert (c["apron kernel ms"], c["C2070 kernel ms"], c["kernel speed-up (C2070 / apron)"]) == ("–", "–", "–")
    assert (c["apron h2h Mpix/s"], c["C2070 Mpix/s (with transfers)"], c["h2h apron / C2070"]) == ("1066", "533",
                                                                                                  "2.0x")

    d = rows[("512x512", "3x3")]
    assert d["apron kernel ms"] == "0.0200"
    assert [d[k] for k in list(d)[3:]] == ["–"] * 5

    tail = r.stdout.split(SECTION, 1)[1]
    assert "bench/book_chapter_c2070.md" in tail and "unknown" in tail


def test_book_csv_defaults_to_the_one_next_to_report_py(tmp_path, peers_csv):
    apron = write_csv(tmp_path / "apron.csv", APRON_HEADER, [apron_row("correlate", "u8", 3, 4096, 0.5)])
    rows = book_section(run_report(tmp_path, apron, peers_csv).stdout)  # cwd is tmp_path: found via __file__
    assert rows[("4096x4096", "3x3")]["C2070 kernel ms"] == "4.700"
    assert rows[("4096x4096", "3x3")]["kernel speed-up (C2070 / apron)"] == "9.4x"


def test_missing_book_csv_leaves_the_c2070_columns_empty(tmp_path, peers_csv):
    apron = write_csv(tmp_path / "apron.csv", APRON_HEADER, [apron_row("correlate", "u8", 3, 4096, 0.5)])
    r = run_report(tmp_path, apron, peers_csv, "--book-csv", tmp_path / "nowhere.csv")
    a = book_section(r.stdout)[("4096x4096", "3x3")]
    assert (a["apron kernel ms"], a["C2070 kernel ms"], a["kernel speed-up (C2070 / apron)"]) == ("0.500", "–", "–")
    assert "nowhere.csv" in r.stderr


def test_no_book_section_without_book_rows(tmp_path, peers_csv, book_csv):
    apron = write_csv(tmp_path / "apron.csv", APRON_HEADER, [
        apron_row("correlate", "u8", 3, 8192, 0.2),
        apron_row("correlate", "u8", 9, 4096, 0.1),
        apron_row("correlate", "f32", 3, 4096, 0.05),
        apron_row("h2h_correlate", "u8", 5, 8192, 2.0),
    ])
    r = run_report(tmp_path, apron, peers_csv, "--book-csv", book_csv)
    assert "book chapter" not in r.stdout
    assert "C2070" not in r.stdout


# ---------------------------------------------------------------------------------------------------------
# "Masks of any size": bench_gpu --large's rows (OP@PATH forced paths, correlate_rank2) against the peers and
# the targets
# ---------------------------------------------------------------------------------------------------------

LARGE_SECTION = "## Masks of any size"
LARGE_HEADER = APRON_HEADER + ["fma_peak"]
SIZE = 8192
F32_TITLE = "f32, random non-separable masks (correlate)"
INT_TITLE = "u8, random integer masks, exact (correlate_int)"
RANK2_TITLE = "f32, rank-2 masks (correlate_rank2)"


def gpix_row(impl, op, typ, k, gpix, algorithm="", fma_peak=33.5e12, pct=50):
    """A row of apron's (bench_gpu --large, fma_peak column) or, impl != 'apron', a peer's at SIZE, by Gpix/s."""
    mpix_s = gpix * 1e3
    ms = SIZE * SIZE / 1e6 / mpix_s * 1e3
    if impl != "apron":
        return [impl, op, typ, k, SIZE, ms, mpix_s]
    return [impl, op, typ, k, SIZE, ms, mpix_s, algorithm, pct, fma_peak]


def label_of(k, path, exact=False):
    kind = "exact f32-acc u8->u8" if exact else "float f32-acc f32->f32"
    return "linear %dx%d %s %s border=nearest" % (k, k, path, kind)


def large_section(out: str) -> dict[str, tuple[dict[str, dict[str, str]], list[str]]]:
    """The section's tables: title (without the size) -> ({k: {column header: cell}}, target lines)."""
    assert out.count(LARGE_SECTION) == 1, out
    text = out.split(LARGE_SECTION, 1)[1].split("\n## ", 1)[0]
    tables = {}
    for part in text.split("\n### ")[1:]:
        title, body = part.split("\n", 1)
        assert title.endswith(", %dx%d" % (SIZE, SIZE)), title
        lines = [l for l in body.splitlines() if l.startswith("|")]
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = {}
        for line in lines[2:]:
            cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            rows[cells["k"]] = cells
        targets = [l for l in body.splitlines() if l.startswith("- ")]
        tables[title.rsplit(", ", 1)[0]] = (rows, targets)
    return tables


def target(targets: list[str], words: str) -> str:
    hits = [t for t in targets if words in t]
    assert len(hits) == 1, (words, targets)
    return hits[0]


@pytest.fixture
def large_peers_csv(tmp_path):
    return write_csv(tmp_path / "peers.csv", APRON_HEADER[:7], [
        gpix_row("npp", "correlate", "f32", 3, 350),
        gpix_row("npp", "correlate", "f32", 31, 4.0),
        gpix_row("npp", "correlate", "f32", 127, 0.25),
        gpix_row("cudnn", "correlate", "f32", 127, 3.0),
        gpix_row("cudnn-f16", "correlate", "f32", 127, 900),    # half precision: never the best peer here
        gpix_row("cupy", "correlate", "f32", 63, 0.5),
        gpix_row("npp", "correlate_int", "u8", 15, 16.0),
        gpix_row("cupy", "correlate", "u8", 31, 3.0),            # integer masks: approximate ('~')
    ])


def test_large_section_tables_ratios_and_failed_targets(tmp_path, large_peers_csv):
    apron = write_csv(tmp_path / "apron.csv", LARGE_HEADER, [
        gpix_row("apron", "correlate", "f32", 3, 300, label_of(3, "direct")),
        gpix_row("apron", "correlate@direct", "f32", 3, 300, label_of(3, "direct")),
        gpix_row("apron", "correlate@fft", "f32", 3, 20, label_of(3, "fft")),
        gpix_row("apron", "correlate", "f32", 31, 30, label_of(31, "fft")),
        gpix_row("apron", "correlate@direct", "f32", 31, 22, label_of(31, "direct")),
        gpix_row("apron", "correlate@fft", "f32", 31, 30, label_of(31, "fft")),
        gpix_row("apron", "correlate", "f32", 127, 20, label_of(127, "fft")),       # below 25 Gpix/s
        gpix_row("apron", "correlate@direct", "f32", 127, 1.5, label_of(127, "direct")),
        gpix_row("apron", "correlate@fft", "f32", 127, 20.5, label_of(127, "fft")),
        gpix_row("apron", "correlate_int", "u8", 15, 300, label_of(15, "tensor", True)),
        gpix_row("apron", "correlate_int@direct", "u8", 15, 90, label_of(15, "direct", True)),
        gpix_row("apron", "correlate_int@tensor", "u8", 15, 300, label_of(15, "tensor", True)),
        gpix_row("apron", "correlate_int", "u8", 31, 80, label_of(31, "tensor", True)),  # 20% below the forced
        gpix_row("apron", "correlate_int@direct", "u8", 31, 22, label_of(31, "direct", True)),
        gpix_row("apron", "correlate_int@tensor", "u8", 31, 100, label_of(31, "tensor", True)),
        gpix_row("apron", "correlate_rank2", "f32", 63, 100, "low-rank, 3 steps: " + label_of(63, "separable") +
                 " (low-rank term 1/2); ..."),
        gpix_row("apron", "correlate_rank2@direct", "f32", 63, 5, label_of(63, "direct")),
        gpix_row("apron", "correlate_rank2@low-rank", "f32", 63, 105, label_of(63, "separable")),
    ])
    r = run_report(tmp_path, apron, large_peers_csv)
    tables = large_section(r.stdout)
    assert list(tables) == [F32_TITLE, INT_TITLE, RANK2_TITLE]
    assert "fma_peak 33.5 T FMA/s (bench_gpu's ceiling)" in r.stdout

    rows, targets = tables[F32_TITLE]
    assert list(rows) == ["3", "31", "127"]
    a = rows["127"]
    assert a["apron chosen Gpix/s (path) [roofline]"] == "20.0 fft [50%]"
    assert (a["apron direct"], a["apron fft"]) == ("1.50", "20.5")
    assert "apron tensor" not in a  # no f32 row took it: no column
    assert (a["NPP Gpix/s"], a["cuDNN f32 Gpix/s"], a["CuPy Gpix/s"]) == ("0.25", "3.00", "–")
    assert a["best peer"] == "cuDNN f32 3.00"
    assert a["chosen / best peer"] == "**6.7x**"
    assert a["chosen / best apron path"] == "0.98x (fft)"
    assert rows["3"]["chosen / best peer"] == "**0.86x**"
    assert target(targets, "25.0 Gpix/s").startswith("- **FAIL**")
    assert "k 127 (20.0)" in target(targets, "25.0 Gpix/s")
    assert target(targets, "best peer at every k").startswith("- **FAIL**")
    assert "k 3 (0.86x)" in target(targets, "best peer at every k")
    assert target(targets, "5x the best peer from k 31").startswith("- **pass**")
    assert target(targets, "10% slower").startswith("- **pass**")
    assert not any("tensor path" in t for t in targets)

    rows, targets = tables[INT_TITLE]
    assert rows["31"]["apron chosen Gpix/s (path) [roofline]"] == "80.0 tensor [50%]"
    assert rows["31"]["CuPy Gpix/s"] == "3.00~"
    assert rows["31"]["best peer"] == "CuPy 3.00~"
    assert rows["31"]["chosen / best apron path"] == "0.80x (tensor) !"
    assert rows["15"]["chosen / best apron path"] == "1.0x (tensor)"
    assert rows["15"]["cuDNN f32 Gpix/s"] == "–"
    # 300 Gpix/s at 15x15 is 2.0x the FP32 roofline 33.5e12 / 225; 100 at 31x31 is 2.9x 33.5e12 / 961
    tensor = target(targets, "tensor path")
    assert tensor.startswith("- **FAIL**") and "15 (2.0x)" in tensor and "31 (2.9x)" in tensor
    slower = target(targets, "10% slower")
    assert slower.startswith("- **FAIL**") and "31 (0.80x of tensor)" in slower
    assert target(targets, "best peer at every k").startswith("- **pass**")

    rows, targets = tables[RANK2_TITLE]
    assert rows["63"]["apron chosen Gpix/s (path) [roofline]"] == "100 low-rank [50%]"
    assert (rows["63"]["apron direct"], rows["63"]["apron low-rank"]) == ("5.00", "105")
    assert rows["63"]["CuPy Gpix/s"] == "0.5~"  # a full-rank mask's time: approximate
    assert target(targets, "10% slower").startswith("- **pass**")
    assert not any("Gpix/s:" in t or "tensor path" in t for t in targets)


def test_large_targets_all_pass(tmp_path, large_peers_csv):
    rows = []
    for k in (31, 63, 127):
        rows += [gpix_row("apron", "correlate", "f32", k, 40, label_of(k, "fft")),
                 gpix_row("apron", "correlate@direct", "f32", k, 30 if k == 31 else 2, label_of(k, "direct")),
                 gpix_row("apron", "correlate@fft", "f32", k, 41, label_of(k, "fft"))]  # 2.5% faster: within 10%
    for k in (15, 31):
        rows += [gpix_row("apron", "correlate_int", "u8", k, 630, label_of(k, "tensor", True)),
                 gpix_row("apron", "correlate_int@tensor", "u8", k, 630, label_of(k, "tensor", True))]
    for r in rows:
        r[-1] = 20e12  # the CSV's FMA ceiling
    apron = write_csv(tmp_path / "apron.csv", LARGE_HEADER, rows)
    out = run_report(tmp_path, apron, large_peers_csv).stdout
    section = out.split(LARGE_SECTION, 1)[1]
    assert "**FAIL**" not in section
    tables = large_section(out)
    _, targets = tables[F32_TITLE]
    assert target(targets, "25.0 Gpix/s") == "- **pass** f32, k 31..127: chosen >= 25.0 Gpix/s: lowest 40.0 at k 31"
    # fma_peak from the CSV (20e12): 630 Gpix/s is 7.1x the roofline 20e12 / 225 at 15x15, 30x 20e12 / 961 at 31x31
    _, targets = tables[INT_TITLE]
    assert target(targets, "tensor path").startswith("- **pass**")
    assert "lowest 7.1x at k 15" in target(targets, "tensor path")
    assert "fma_peak 20.0 T FMA/s" in out
    # the only peer from 31 up for integer masks: CuPy's correlate u8 31 (3.00~)
    assert target(targets, "5x the best peer") == "- **pass** chosen >= 5x the best peer from k 31: lowest 210x at k 31"


def test_forced_rows_only_in_the_large_section(tmp_path, large_peers_csv):
    apron = write_csv(tmp_path / "apron.csv", LARGE_HEADER, [
        gpix_row("apron", "correlate", "f32", 127, 10, label_of(127, "fft")),
        gpix_row("apron", "correlate@fft", "f32", 127, 20, label_of(127, "fft")),
        gpix_row("apron", "correlate_rank2", "f32", 63, 100, "low-rank, 3 steps: ..."),
        gpix_row("apron", "dilate", "u8", 3, 500, "dilate 3x3 separable-rect u8 border=nearest"),
    ])
    out = run_report(tmp_path, apron, large_peers_csv).stdout
    before = out.split(LARGE_SECTION, 1)[0]
    assert "correlate@fft" not in out and "correlate_rank2" not in before
    assert "### correlate f32, 8192x8192" in before  # the plain op's large k still meets the peers up there
    assert "| 127 | 10.0 [50%] |" in before
    assert "## other apron cases" in before and "| dilate |" in before
    tables = large_section(out)
    rows, targets = tables[F32_TITLE]
    assert rows["127"]["apron fft"] == "20.0"
    assert rows["127"]["chosen / best apron path"] == "0.50x (fft) !"
    assert target(targets, "5x the best peer") == ("- **FAIL** chosen >= 5x the best peer from k 31: below at k 127 "
                                                   "(3.3x)")
    assert target(targets, "10% slower").startswith("- **FAIL**")
    # No rows in 31..127 besides 127; the rank-2 table has no forced rows to compare with.
    assert target(tables[RANK2_TITLE][1], "10% slower").startswith("- no data")


def test_default_fma_peak_without_the_column(tmp_path, large_peers_csv):
    rows = [gpix_row("apron", "correlate_int@tensor", "u8", 15, 450, label_of(15, "tensor", True))[:-1],
            gpix_row("apron", "correlate_int", "u8", 15, 450, label_of(15, "tensor", True))[:-1]]
    apron = write_csv(tmp_path / "apron.csv", APRON_HEADER, rows)
    out = run_report(tmp_path, apron, large_peers_csv).stdout
    assert "fma_peak 33.5 T FMA/s (not in the CSV" in out
    # 450 Gpix/s at 15x15 against 33.5e12 / 225 = 148.9 Gpix/s: 3.0x, a pass
    _, targets = large_section(out)[INT_TITLE]
    assert target(targets, "tensor path") == ("- **pass** u8 integer masks, k 15..31: the tensor path >= 3x the FP32 "
                                              "direct roofline (fma_peak / k^2): lowest 3.0x at k 15")


def test_no_large_section_without_large_rows(tmp_path, large_peers_csv):
    apron = write_csv(tmp_path / "apron.csv", LARGE_HEADER, [
        gpix_row("apron", "correlate", "f32", 3, 300, label_of(3, "direct")),
        gpix_row("apron", "correlate", "f32", 31, 22, label_of(31, "direct")),
        gpix_row("apron", "correlate_int", "u8", 15, 90, label_of(15, "direct", True)),
    ])
    out = run_report(tmp_path, apron, large_peers_csv).stdout
    assert "Masks of any size" not in out
    assert "### correlate f32, 8192x8192" in out


# The cases users run: rows with channels and shape (bench_gpu's user cases, npp_peers' and torch_cupy_peers'
# rows of the same cases; bench_cpu_user's and cpu_peers.py --user's on the CPU).
USER_HEADER = LARGE_HEADER + ["channels", "shape", "gpix_s", "gsamples_s", "roofline_gpix_s", "kernel", "check"]
PEER_USER_HEADER = APRON_HEADER[:7] + ["channels", "shape"]
GPU_USER_SECTION = "## Colour, types and element shapes (GPU)"
CPU_USER_SECTION = "## Colour on the CPU"


def user_row(op, typ, param, c, shape, gpix, pct=50, kernel="step 0: k", check="ok (max diff 0, tolerance 0)"):
    mpix = gpix * 1e3
    return ["apron", op, typ, param, SIZE, SIZE * SIZE / 1e3 / mpix, mpix, "label", pct, 33.5e12, c, shape, gpix,
            gpix * c, 2000 / c, kernel, check]


def peer_user_row(impl, op, typ, param, c, shape, gpix):
    mpix = gpix * 1e3
    return [impl, op, typ, param, SIZE, SIZE * SIZE / 1e3 / mpix, mpix, c, shape]


def tables_under(out: str, heading: str) -> dict[str, dict[tuple[str, str], dict[str, str]]]:
    """The section's tables: '### title' -> {(first cell, second cell): {column header: cell}}."""
    assert out.count(heading) == 1, out
    section = out.split(heading, 1)[1].split("\n## ", 1)[0]
    tables = {}
    for block in section.split("### ")[1:]:
        title, _, body = block.partition("\n")
        lines = [l for l in body.splitlines() if l.startswith("|")]
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = {}
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[(cells[0], cells[1])] = dict(zip(header, cells))
        tables[title.strip()] = rows
    return tables


@pytest.fixture
def user_csvs(tmp_path):
    apron = write_csv(tmp_path / "apron.csv", USER_HEADER, [
        user_row("correlate", "u8", 3, 1, "", 671)[:11] + ["", 671, 671, 2000, "", ""],  # a classic row
        user_row("correlate", "u8", 3, 1, "3x3", 800, 40),
        user_row("correlate", "u8", 3, 3, "3x3", 240, 35),
        user_row("gaussian", "u8", 2, 3, "sigma=2", 200, 30, check="MISMATCH (max diff 3, tolerance 1)"),
        user_row("dilate", "u8", 15, 1, "rect:15x15", 400),
        user_row("dilate", "u8", 15, 1, "disk:7", 100, kernel="step 0: dilate 15x15 direct"),
        user_row("dilate", "u8", 15, 4, "random:15x15", 50),
    ])
    peers = write_csv(tmp_path / "peers.csv", PEER_USER_HEADER, [
        peer_user_row("npp", "correlate", "u8", 3, 1, "", 712),  # classic: the single-channel table
        peer_user_row("npp", "correlate", "u8", 3, 1, "3x3", 700),
        peer_user_row("npp", "correlate", "u8", 3, 3, "3x3", 200),
        peer_user_row("npp", "gaussian_mask", "u8", 13, 3, "13x13", 36),
        peer_user_row("npp", "gaussian_mask", "u8", 5, 3, "5x5", 91),
        peer_user_row("cupy", "gaussian", "u8", 2, 3, "sigma=2", 12.5),
        peer_user_row("npp", "dilate", "u8", 15, 1, "disk:7", 5),
        peer_user_row("npp", "dilate", "u8", 15, 3, "disk:7", 4.3),  # apron has no RGB disk row
        peer_user_row("cudnn", "correlate", "f32", 3, 3, "3x3", 20),
    ])
    return apron, peers


def test_user_rows_have_their_own_tables(tmp_path, user_csvs):
    out = run_report(tmp_path, *user_csvs).stdout
    before = out.split(GPU_USER_SECTION, 1)[0]
    # The classic single-channel table keeps its one row; the user rows are not in it.
    assert "| 3 | 671 [50%] | 712 | **0.94x** NPP |" in before
    assert "3x3" not in before and "sigma=2" not in before and "disk:7" not in before
    tables = tables_under(out, GPU_USER_SECTION)
    corr = tables["correlate u8, 8192x8192"]
    assert corr[("3x3", "1")]["apron Gpix/s [roofline]"] == "800 [40%]"
    assert corr[("3x3", "3")]["Gsamples/s"] == "720"
    assert corr[("3x3", "3")]["vs C1"] == "90%"  # 720 samples/s against 800
    assert corr[("3x3", "3")]["NPP Gpix/s"] == "200"
    assert corr[("3x3", "3")]["apron / best peer"] == "**1.2x** NPP"
    assert corr[("3x3", "1")]["kernel"] == "step 0: k"
    gauss = tables["gaussian u8, 8192x8192"]
    row = gauss[("sigma=2", "3")]
    assert row["NPP Gpix/s"] == "36.0~ (13x13)"  # the fixed mask of the same width, approximate
    assert row["CuPy Gpix/s"] == "12.5"
    assert row["apron / each peer"] == "5.6x NPP~, 16x CuPy"
    assert "**MISMATCH (max diff 3, tolerance 1)**" in row["kernel"]
    dil = tables["dilate u8, 8192x8192"]
    assert dil[("disk:7", "1")]["vs rect"] == "25%"
    assert dil[("disk:7", "1")]["apron / best peer"] == "**20x** NPP"
    assert dil[("rect:15x15", "1")]["vs rect"] == "–"
    assert dil[("random:15x15", "4")]["vs rect"] == "–"  # no RGBA rectangle measured
    assert list(dil) == [("rect:15x15", "1"), ("disk:7", "1"), ("random:15x15", "4")]
    rest = tables["peer user cases without an apron row"]
    assert set(rest) == {("NPP", "dilate"), ("NPP", "gaussian_mask"), ("cuDNN (planar)", "correlate")}
    assert CPU_USER_SECTION not in out


def test_cpu_user_section(tmp_path):
    cpu = write_csv(tmp_path / "cpu.csv", ["impl", "op", "type", "param", "size", "ms", "mpix_s", "channels",
                                           "shape", "kernel", "check", "threads"], [
        ["apron-cpu", "gaussian", "u8", 1, 4096, 10, 1677.7, 3, "sigma=1", "step 0: x", "ok", 16],
        ["apron-cpu", "dilate", "u8", 9, 4096, 4, 4194.3, 4, "ellipse:9x9", "step 0: y", "ok", 16],
    ])
    peers = write_csv(tmp_path / "cpu_peers.csv", ["impl", "op", "type", "param", "size", "ms", "mpix_s", "channels",
                                                   "shape", "threads", "max_diff"], [
        ["opencv", "gaussian", "u8", 1, 4096, 5, 3355.4, 3, "sigma=1", 16, ""],
        ["apron-cli", "gaussian", "u8", 1, 4096, 11, 1525.2, 3, "sigma=1", 16, "1"],
        ["opencv", "dilate", "u8", 9, 4096, 8, 2097.2, 4, "ellipse:9x9", 16, ""],
    ])
    out = run_report(tmp_path, cpu, peers).stdout
    assert GPU_USER_SECTION not in out
    tables = tables_under(out, CPU_USER_SECTION)
    g = tables["gaussian u8, 4096x4096"][("sigma=1", "3")]
    assert (g["apron in process Gpix/s"], g["apron CLI Gpix/s"], g["OpenCV Gpix/s"]) == ("1.68", "1.53", "3.36")
    assert g["apron / OpenCV"] == "**0.50x**"
    assert g["CLI / in-process"] == "1.10"  # 11 ms against 10 ms
    assert g["CLI max diff vs OpenCV"] == "1"
    d = tables["dilate u8, 4096x4096"][("ellipse:9x9", "4")]
    assert d["apron / OpenCV"] == "**2.0x**" and d["apron CLI Gpix/s"] == "–" and d["CLI / in-process"] == "–"


def test_no_user_sections_without_user_rows(tmp_path, peers_csv):
    apron = write_csv(tmp_path / "apron.csv", USER_HEADER, [
        user_row("correlate", "u8", 3, 1, "", 671)[:11] + ["", 671, 671, 2000, "", ""]])
    out = run_report(tmp_path, apron, peers_csv).stdout
    assert GPU_USER_SECTION not in out and CPU_USER_SECTION not in out
    assert "### correlate u8, 8192x8192" in out
