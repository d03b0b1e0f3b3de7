"""The memory budget (--memory) and memory that does not grow with steps x mask area.

Peak memory is measured as the child's maximum resident set (getrusage of a fresh Python process that runs
apron once), so each assertion is about what the process really took.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from conftest import APRON_PATH, leftovers, peak_rss_of, random_image, read_pnm, write_pnm

MIB = 1 << 20


@pytest.fixture()
def small(tmp_path):
    p = tmp_path / "small.pgm"
    write_pnm(p, random_image((64, 80), np.uint8, 3))
    return p


def test_iterations_of_a_huge_element_share_one_table(apron, tmp_path, small):
    # Was 5.3 GB for 20 iterations (one 134 MB element copy per step and per plan step).
    rss, r = peak_rss_of(["filter", small, tmp_path / "o.pgm", "--backend", "cpu",
                          "--op", "dilate:se=rect:4097x4097,iterations=40"])
    assert r.returncode == 0, r.stderr
    assert rss < 700 * MIB, f"{rss / MIB:.0f} MiB"
    # A 4097-wide rectangle covers the whole 80x64 image from every pixel: the global maximum everywhere.
    img = read_pnm(small)
    assert (read_pnm(tmp_path / "o.pgm") == img.max()).all()


def test_repeated_large_masks_share_one_table(apron, tmp_path, small):
    # Was 2.65 GB for ten box:width=4097 (a 134 MB mask and its integer form per operation).
    args = ["filter", small, tmp_path / "o.pgm", "--backend", "cpu"]
    for _ in range(10):
        args += ["--op", "box:width=4097"]
    rss, r = peak_rss_of(args)
    assert r.returncode == 0, r.stderr
    assert rss < 1000 * MIB, f"{rss / MIB:.0f} MiB"


def test_a_run_over_the_budget_fails_before_reading(apron, tmp_path):
    # A PGM header promising 30000x30000 pixels, with no pixels: refused from the header, naming the bytes,
    # not "truncated" after allocating 900 MB.
    p = tmp_path / "promise.pgm"
    p.write_bytes(b"P5\n30000 30000\n255\n" + bytes(1000))
    rss, r = peak_rss_of(["filter", p, tmp_path / "o.pgm", "--op", "box:width=3", "--memory", "256M", "--stream", "off"])
    assert r.returncode == 1
    line = r.stderr.strip()
    assert "\n" not in line
    assert str(p) in line and "over the memory budget of 256 MiB" in line and "--memory" in line, line
    assert rss < 100 * MIB
    assert not (tmp_path / "o.pgm").exists() and leftovers(tmp_path) == []
    # Left to choose, apron would stream it in bands: refused as truncated from the header, before any band.
    rss, r = peak_rss_of(["filter", p, tmp_path / "o.pgm", "--op", "box:width=3", "--memory", "256M"])
    assert r.returncode == 1 and "truncated PNM file" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert rss < 100 * MIB
    assert not (tmp_path / "o.pgm").exists() and leftovers(tmp_path) == []


def test_the_budget_counts_intermediates(apron, tmp_path):
    p = tmp_path / "in.pgm"
    write_pnm(p, random_image((600, 500), np.uint8, 4))  # 300 KB u8, 1.2 MB an f32 intermediate
    ok = apron.run("filter", p, tmp_path / "a.pfm", "--out-type", "f32", "--op", "gaussian:sigma=2",
                   "--op", "sobel:dx=1", "--memory", "64M", "--backend", "cpu")
    assert ok.returncode == 0
    r = apron.run("filter", p, tmp_path / "b.pfm", "--out-type", "f32", "--op", "gaussian:sigma=2",
                  "--op", "sobel:dx=1", "--memory", "2M", "--backend", "cpu", "--stream", "off", check=False)
    assert r.returncode == 1 and "over the memory budget of 2.00 MiB" in r.stderr, r.stderr
    assert not (tmp_path / "b.pfm").exists()


@pytest.mark.parametrize("bad", ["0", "-5G", "12Q", "150%", "G", "1e30"])
def test_bad_memory_values_are_refused(apron, tmp_path, small, bad):
    r = apron.run("filter", small, tmp_path / "o.pgm", "--op", "box:width=3", "--memory", bad, check=False)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1 and "--memory" in r.stderr, r.stderr


def test_an_output_format_that_cannot_hold_the_result_is_refused_before_decoding(apron, tmp_path):
    # 4 channels cannot go to .pgm: said from the header (the pixels are never decoded, so a huge image
    # fails at once; here the file has only a header to show that nothing is read beyond it).
    p = tmp_path / "rgba.pam"
    p.write_bytes(b"P7\nWIDTH 20000\nHEIGHT 20000\nDEPTH 4\nMAXVAL 255\nENDHDR\n")
    r = apron.run("filter", p, tmp_path / "o.pgm", "--op", "box:width=3", check=False)
    assert r.returncode == 1
    assert "o.pgm" in r.stderr and "channels" in r.stderr, r.stderr


def test_16_bit_little_endian_pgm_with_byte_order_little(apron, tmp_path):
    img = random_image((9, 13), np.uint16, 8)
    le = tmp_path / "le.pgm"
    le.write_bytes(b"P5\n13 9\n65535\n" + img.astype("<u2").tobytes())
    out = tmp_path / "o.pgm"
    apron.run("filter", le, out, "--op", "box:width=1", "--byte-order", "little")
    assert (read_pnm(out) == img).all()
    # Without the option the file is read as Netpbm says (big-endian): the bytes come out swapped.
    apron.run("filter", le, out, "--op", "box:width=1")
    assert (read_pnm(out) == img.byteswap()).all()
    r = apron.run("filter", le, out, "--op", "box:width=1", "--byte-order", "middle", check=False)
    assert r.returncode != 0 and "--byte-order" in r.stderr


def test_a_long_reference_run_says_so(apron, tmp_path):
    p = tmp_path / "in.pgm"
    write_pnm(p, random_image((300, 400), np.uint8, 2))
    # 400x300 pixels with a 4097x4097 mask is 2e12 taps: hours on the reference backend. The note comes
    # before the work starts; read it, then stop the run.
    proc = subprocess.Popen([str(APRON_PATH), "filter", p, tmp_path / "o.pgm", "--backend", "reference",
                             "--op", "box:width=4097"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
    finally:
        proc.kill()
        proc.wait()
    assert line.startswith("apron: note: the reference backend computes 2.01e+12 taps"), line
    assert "about 336 minutes" in line, line  # at the measured 1e8 taps a second of masks this large
    assert "4097x4097" in line and "minutes" in line and "--backend cpu" in line, line
    assert not (tmp_path / "o.pgm").exists() and leftovers(tmp_path) == []
    quick = apron.run("filter", p, tmp_path / "o.pgm", "--backend", "reference", "--op", "box:width=3")
    assert "note" not in quick.stderr
