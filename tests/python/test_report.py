"""bench/report.py's section "The book chapter's cases": apron's correlate / h2h_correlate u8 rows of the chapter's
sizes and masks set beside the chapter's Tesla C2070 figures.

These tests run report.py on small synthetic CSVs and need neither the apron binary nor a GPU (nor numpy).
"""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
REPORT = REPO_ROOT / "bench" / "report.py"
SECTION = "## The book chapter's cases"

# conftest.py skips every test when the apron binary is missing, except those with this mark.
pytestmark = pytest.mark.no_apron_binary


APRON_HEADER = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "algorithm", "roofline_pct"]
BOOK_HEADER = ["table", "variant", "image_size", "mask", "time_ms", "mpix_per_s", "includes_transfers", "note"]


def write_csv(path: Path, header, rows) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


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
