"""Streamed outputs written in order: compressed tiled BigTIFF (--compression deflate/zstd/lzw) and PNG, and
PNG inputs read by rows. Each streamed result equals the whole-image run (--stream off); --compression is
checked and refused in one line; an in-order output cannot be resumed and an interrupted run leaves neither a
partial file nor a journal.

TIFF results are compared as raw samples through a streamed identity, as in test_stream.py (no TIFF reader
is needed here); PNG results are read with OpenCV, independently of apron."""
from __future__ import annotations

import signal
import struct
import subprocess
import time
import zlib

import numpy as np
import pytest

from conftest import RUN_TIMEOUT_S, random_image, read_png, write_png, write_pnm
from test_stream import DTYPES, needs_tiff, streamed_raw, whole_raw, write_tiff  # noqa: F401 (a fixture)

CODECS = {"deflate": 8, "zstd": 50000, "lzw": 5}


def run(apron, *args, check=True):
    return apron.run("filter", *args, check=check)


def tiff_compression_tag(path) -> int:
    """Tag 259 of a little-endian BigTIFF's first directory."""
    data = path.read_bytes()
    assert data[:4] == b"II+\0", "not a little-endian BigTIFF"
    at = struct.unpack_from("<Q", data, 8)[0]
    for k in range(struct.unpack_from("<Q", data, at)[0]):
        tag, _, _, value = struct.unpack_from("<HHQQ", data, at + 8 + 20 * k)
        if tag == 259:
            return value & 0xFFFF
    raise AssertionError("no compression tag")


def apron_files(directory):
    return sorted(p.name for p in directory.iterdir() if "apron-" in p.name)


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("type_name", ["u8", "u16", "f32"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_compressed_tiff_equals_the_whole_run(apron, tmp_path, codec, type_name, channels, needs_tiff):
    img = random_image((45, 37) if channels == 1 else (45, 37, channels), DTYPES[type_name], seed=channels * 3 + len(codec))
    src = tmp_path / "in.tif"
    write_tiff(src, img)
    ops = ["gaussian:sigma=1.5,border=reflect", "dilate:se=disk:2"]
    out = tmp_path / "out.tif"
    r = run(apron, src, out, "--stream", "on", "--band-rows", "7", "--tile", "16", "--compression", codec,
            *[a for op in ops for a in ("--op", op)], check=False)
    if r.returncode != 0 and f"has no {codec} codec" in r.stderr:
        pytest.skip(f"this libtiff has no {codec}")
    assert r.returncode == 0, r.stderr
    assert tiff_compression_tag(out) == CODECS[codec]
    assert streamed_raw(apron, tmp_path, out, ["box:width=1"], name="back") == whole_raw(apron, tmp_path, src, ops)
    assert apron_files(tmp_path) == []  # no partial file, no journal


def test_compressed_tiff_as_streamed_input_in_bands_that_cut_its_tiles(apron, tmp_path, needs_tiff):
    img = random_image((70, 53, 3), np.uint16, seed=4)
    write_tiff(tmp_path / "in.tif", img)
    run(apron, tmp_path / "in.tif", tmp_path / "z.tif", "--op", "box:width=1", "--stream", "on", "--tile", "32",
        "--compression", "deflate")
    got = streamed_raw(apron, tmp_path, tmp_path / "z.tif", ["erode:se=disk:3"], ["--band-rows", "5"], "c")
    assert got == whole_raw(apron, tmp_path, tmp_path / "in.tif", ["erode:se=disk:3"])


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_palette_png(path, indices: np.ndarray, palette: np.ndarray, alphas: bytes = b""):
    """A 4-bit palette PNG (two pixels a byte), with a tRNS chunk when `alphas` is given."""
    h, w = indices.shape
    padded = np.zeros((h, w + (w & 1)), np.uint8)
    padded[:, :w] = indices
    packed = (padded[:, 0::2] << 4) | padded[:, 1::2]
    raw = b"".join(b"\x00" + packed[y].tobytes() for y in range(h))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 4, 3, 0, 0, 0)) +
                     png_chunk(b"PLTE", palette.astype(np.uint8).tobytes()) +
                     (png_chunk(b"tRNS", alphas) if alphas else b"") + png_chunk(b"IDAT", zlib.compress(raw)) +
                     png_chunk(b"IEND", b""))


def assert_png_streamed_equals_whole(apron, tmp_path, src, ops, band_rows=5):
    args = [a for op in ops for a in ("--op", op)]
    run(apron, src, tmp_path / "whole.png", "--stream", "off", *args)
    run(apron, src, tmp_path / "streamed.png", "--stream", "on", "--band-rows", str(band_rows), *args)
    whole, streamed = read_png(tmp_path / "whole.png"), read_png(tmp_path / "streamed.png")
    assert whole.dtype == streamed.dtype and whole.shape == streamed.shape
    assert np.array_equal(whole, streamed)
    assert apron_files(tmp_path) == []


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_in_png_out_equals_the_whole_run(apron, tmp_path, dtype, channels):
    img = random_image((37, 29) if channels == 1 else (37, 29, channels), dtype, seed=channels)
    write_png(tmp_path / "in.png", img)
    assert_png_streamed_equals_whole(apron, tmp_path, tmp_path / "in.png", ["gaussian:sigma=2,border=mirror", "erode:se=rect:3x5"])


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (13, 1), (2, 3, 3)])
def test_tiny_png_images(apron, tmp_path, shape):
    img = random_image(shape, np.uint8, seed=sum(shape))
    write_png(tmp_path / "in.png", img)
    assert_png_streamed_equals_whole(apron, tmp_path, tmp_path / "in.png", ["box:width=3,border=wrap"], band_rows=1)


@pytest.mark.parametrize("alphas", [b"", bytes([0, 90, 255, 17])])
def test_palette_png_is_expanded_as_the_whole_image_reader_does(apron, tmp_path, alphas):
    rng = np.random.default_rng(3)
    write_palette_png(tmp_path / "in.png", rng.integers(0, 16, (31, 27), dtype=np.uint8),
                      rng.integers(0, 256, (16, 3)), alphas)
    assert_png_streamed_equals_whole(apron, tmp_path, tmp_path / "in.png", ["gaussian:sigma=1"], band_rows=4)


def test_png_input_to_raw_output_by_rows(apron, tmp_path):
    """A PNG read by rows in bands whose halos overlap, written as raw samples: the whole run's pixels."""
    img = random_image((120, 64, 3), np.uint16, seed=12)
    write_png(tmp_path / "in.png", img)
    ops = ["--op", "gaussian:sigma=3", "--op", "dilate:se=disk:2"]
    run(apron, tmp_path / "in.png", tmp_path / "s.raw", "--stream", "on", "--band-rows", "9", *ops)
    run(apron, tmp_path / "in.png", tmp_path / "w.ppm", "--stream", "off", *ops)
    run(apron, tmp_path / "w.ppm", tmp_path / "w.raw", "--stream", "on", "--op", "box:width=1")
    assert (tmp_path / "s.raw").read_bytes() == (tmp_path / "w.raw").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--compression", "brotli"], "--compression: 'brotli' is not none, deflate, zstd or lzw"),
    (["--compression", "zstd", "--op", "box"], "is not a TIFF file"),
])
def test_bad_compression_is_refused_in_one_line(apron, tmp_path, args, message):
    img = random_image((10, 10), np.uint8, seed=1)
    write_pnm(tmp_path / "in.pgm", img)
    out = tmp_path / ("out.tif" if "brotli" in args else "out.png")
    for stream in ("on", "off"):
        r = apron.run("filter", tmp_path / "in.pgm", out, "--op", "box", "--stream", stream, *args, check=False)
        assert r.returncode != 0 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists() and apron_files(tmp_path) == []


def test_a_compressed_output_cannot_be_resumed(apron, tmp_path, needs_tiff):
    write_pnm(tmp_path / "in.pgm", random_image((30, 20), np.uint8, seed=2))
    for out, extra in (("o.tif", ["--compression", "lzw"]), ("o.png", [])):
        r = apron.run("filter", tmp_path / "in.pgm", tmp_path / out, "--op", "box", "--resume", *extra, check=False)
        assert r.returncode == 1 and "--resume" in r.stderr and out in r.stderr and "written in order" in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1
        assert not (tmp_path / out).exists() and apron_files(tmp_path) == []


def test_a_stale_journal_is_removed_by_an_in_order_run(apron, tmp_path, needs_tiff):
    write_pnm(tmp_path / "in.pgm", random_image((30, 20), np.uint8, seed=2))
    (tmp_path / ".o.tif.apron-journal").write_text("apron-stream 1 an earlier uncompressed run\nband 0\n")
    (tmp_path / ".o.tif.apron-partial").write_bytes(b"\0" * 64)
    run(apron, tmp_path / "in.pgm", tmp_path / "o.tif", "--op", "box", "--stream", "on", "--compression", "deflate")
    assert apron_files(tmp_path) == [] and tiff_compression_tag(tmp_path / "o.tif") == 8


@pytest.mark.parametrize("out, extra", [("o.tif", ["--compression", "deflate", "--tile", "16"]), ("o.png", [])])
def test_an_interrupted_in_order_run_leaves_no_partial_file_and_no_journal(apron, tmp_path, out, extra, needs_tiff):
    img = random_image((1500, 1200), np.uint16, seed=8)
    write_pnm(tmp_path / "in.pgm", img)
    cmd = [str(apron.path), "filter", str(tmp_path / "in.pgm"), str(tmp_path / out), "--op", "gaussian:sigma=8",
           "--op", "dilate:se=disk:6", "--stream", "on", "--band-rows", "16", "--threads", "1", "--algo", "direct", *extra]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    partial = tmp_path / f".{out}.apron-partial"
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and not (partial.exists() and partial.stat().st_size > 0):
        time.sleep(0.005)
    interrupted = p.poll() is None
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=RUN_TIMEOUT_S)
    if interrupted:
        assert p.returncode != 0 and not (tmp_path / out).exists()
    assert apron_files(tmp_path) == []


def test_a_full_disk_while_compressing_is_named_and_leaves_nothing(apron, tmp_path, needs_tiff):
    import resource

    write_pnm(tmp_path / "in.pgm", random_image((300, 300), np.uint8, seed=6))

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    for out, extra in (("o.tif", ["--compression", "lzw", "--tile", "16"]), ("o.png", [])):
        p = subprocess.run([str(apron.path), "filter", str(tmp_path / "in.pgm"), str(tmp_path / out), "--op", "box",
                            "--stream", "on", "--band-rows", "16", *extra], capture_output=True, text=True,
                           preexec_fn=small_files, timeout=RUN_TIMEOUT_S)
        assert p.returncode == 1 and out in p.stderr and "File too large" in p.stderr and p.stderr.count("\n") == 1, p.stderr
        assert not (tmp_path / out).exists() and apron_files(tmp_path) == []
