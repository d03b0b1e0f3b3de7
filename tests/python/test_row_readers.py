"""The row readers of a streamed run apply the whole-image readers' checks (issue 26, findings 14, 17, 21c): PNM
samples over the maxval, a TIFF whose tile-offset array is shorter than its tiles, and damaged JPEG data inside a
TIFF are refused in one line naming the file, by both readers; nothing is written."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import tifffile
from PIL import Image

from conftest import random_image
from test_stream import needs_tiff  # noqa: F401 (a fixture)


def pnm_bytes(kind: str, maxval: int, a: np.ndarray) -> bytes:
    h, w = a.shape[:2]
    data = a.astype(">u2").tobytes() if maxval > 255 else a.astype(np.uint8).tobytes()
    return f"{kind}\n{w} {h}\n{maxval}\n".encode() + data


def both_readers(apron, src, out):
    """The whole-image run and the streamed one (in small bands): their results."""
    return [apron.run("filter", src, out, "--op", "box:width=1", "--stream", stream, *extra, check=False)
            for stream, extra in (("off", []), ("on", ["--band-rows", "3"]))]


def assert_refused(results, src, message, out):
    for r in results:
        assert r.returncode == 1 and str(src) in r.stderr and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("kind, channels, maxval, bad", [
    ("P5", 1, 100, 200), ("P6", 3, 15, 16), ("P5", 1, 1000, 4000), ("P6", 3, 4095, 65535)])
def test_pnm_samples_over_the_maxval(apron, tmp_path, kind, channels, maxval, bad):
    shape = (11, 7) if channels == 1 else (11, 7, 3)
    img = random_image(shape, np.uint16, seed=maxval, lo=0, hi=maxval)
    img[9, 5] = bad  # late in the image: in a band after the first
    src, out = tmp_path / ("in.pgm" if channels == 1 else "in.ppm"), tmp_path / "out.pgm"
    src.write_bytes(pnm_bytes(kind, maxval, img))
    assert_refused(both_readers(apron, src, out), src, f"sample value {bad} at pixel (5, 9) is larger than the maxval {maxval}", out)


def test_pnm_samples_at_the_maxval_are_read(apron, tmp_path):
    img = random_image((11, 7), np.uint16, seed=3, lo=0, hi=100)
    img[9, 5] = 100
    src = tmp_path / "in.pgm"
    src.write_bytes(pnm_bytes("P5", 100, img))
    for r in both_readers(apron, src, tmp_path / "out.pgm"):
        assert r.returncode == 0, r.stderr


def ifd_entries(data: bytes):
    """(tag, type, count, position of the entry) of a little-endian classic TIFF's first directory."""
    at = struct.unpack_from("<I", data, 4)[0]
    for k in range(struct.unpack_from("<H", data, at)[0]):
        pos = at + 2 + 12 * k
        tag, typ, count = struct.unpack_from("<HHI", data, pos)
        yield tag, typ, count, pos


def test_a_tile_offset_array_shorter_than_the_tiles(apron, tmp_path, needs_tiff):
    img = random_image((40, 40), np.uint8, seed=9)
    src = tmp_path / "short.tif"
    tifffile.imwrite(src, img, tile=(16, 16))  # 3 x 3 tiles
    data = bytearray(src.read_bytes())
    for tag, _, count, pos in ifd_entries(data):
        if tag == 324:  # TileOffsets: 9 -> 4; TileByteCounts stays at 9
            assert count == 9
            struct.pack_into("<I", data, pos + 4, 4)
    src.write_bytes(bytes(data))
    out = tmp_path / "out.pgm"
    assert_refused(both_readers(apron, src, out), src, "tile", out)


def jpeg_tiff(img: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="TIFF", compression="jpeg", quality=90)
    return buf.getvalue()


def test_damaged_jpeg_data_inside_a_tiff(apron, tmp_path, needs_tiff):
    rng = np.random.default_rng(11)
    img = (rng.random((48, 64, 3)) * 255).astype(np.uint8)
    good = jpeg_tiff(img)
    (tmp_path / "good.tif").write_bytes(good)
    for r in both_readers(apron, tmp_path / "good.tif", tmp_path / "good.ppm"):
        assert r.returncode == 0, r.stderr
    # The strip's entropy-coded data cut short: libjpeg pads it with zeros and warns.
    data = bytearray(good)
    with tifffile.TiffFile(io.BytesIO(good)) as t:
        offset, count = t.pages[0].dataoffsets[0], t.pages[0].databytecounts[0]
    for tag, _, n, pos in ifd_entries(data):
        if tag == 279 and n == 1:  # StripByteCounts
            struct.pack_into("<I", data, pos + 8, count // 2)
    assert offset > 0
    src, out = tmp_path / "cut.tif", tmp_path / "cut.ppm"
    src.write_bytes(bytes(data))
    assert_refused(both_readers(apron, src, out), src, "JPEG", out)
