"""A photo's colour profile and Exif orientation survive `apron filter` and `apron batch` (--metadata keep, the
default) and are left out with --metadata strip, checked with Pillow, a reader independent of apron's. The
pixels are filtered as stored: never turned by the orientation (SciPy on the stored pixels is the reference)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import ndimage

from conftest import read_png

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageCms  # noqa: E402

ORIENTATION = 0x0112
MAKE = 0x010F


@functools.cache
def srgb_profile() -> bytes:
    """One profile for the session: each new one holds its creation time."""
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def write_photo(path, rgb: np.ndarray, orientation: int, icc: bytes, **save):
    """A camera-like file: Exif with the orientation and a maker, and a colour profile."""
    im = Image.fromarray(rgb)
    exif = im.getexif()
    exif[ORIENTATION] = orientation
    exif[MAKE] = "apron test camera"
    im.save(path, exif=exif, icc_profile=icc, **save)


@pytest.fixture
def photo(tmp_path):
    rgb = np.random.default_rng(7).integers(0, 256, (31, 45, 3), dtype=np.uint8)
    path = tmp_path / "photo.png"
    write_photo(path, rgb, 6, srgb_profile())
    return path, rgb


@pytest.mark.parametrize("out", ["o.jpg", "o.png", "o.tif"])
def test_filter_keeps_profile_and_orientation(apron, tmp_path, photo, out):
    src, rgb = photo
    dst = tmp_path / out
    apron.filter_files(src, dst, "gaussian:sigma=1")
    with Image.open(dst) as im:
        assert im.info.get("icc_profile") == srgb_profile()
        assert im.getexif().get(ORIENTATION) == 6
        # The pixels keep the stored layout: 45 wide, 31 tall, not turned by the orientation. (Pillow turns
        # a TIFF's size by its orientation tag; the tags themselves say what is stored.)
        size = (im.tag_v2[256], im.tag_v2[257]) if out == "o.tif" else im.size
        assert size == (45, 31)
        if out != "o.tif":  # a TIFF carries the orientation as its own tag, not the camera's Exif
            assert im.getexif().get(MAKE) == "apron test camera"


def test_pixels_are_filtered_as_stored(apron, tmp_path, photo):
    src, rgb = photo
    apron.filter_files(src, tmp_path / "o.png", "box:width=3,height=3")
    ref = np.stack([ndimage.uniform_filter(rgb[..., c].astype(np.float64), 3, mode="reflect") for c in range(3)], -1)
    np.testing.assert_array_equal(read_png(tmp_path / "o.png"), np.round(ref).astype(np.uint8))


def test_jpeg_photo_to_jpeg_and_strip(apron, tmp_path):
    rgb = np.random.default_rng(8).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    src = tmp_path / "camera.jpg"
    write_photo(src, rgb, 8, srgb_profile(), quality=90)
    apron.filter_files(src, tmp_path / "kept.jpg", "sharpen:strength=0.5")
    with Image.open(tmp_path / "kept.jpg") as im:
        assert im.getexif().get(ORIENTATION) == 8
        assert im.info.get("icc_profile") == srgb_profile()
    apron.filter_files(src, tmp_path / "bare.jpg", "sharpen:strength=0.5", extra=["--metadata", "strip"])
    with Image.open(tmp_path / "bare.jpg") as im:
        assert ORIENTATION not in im.getexif()
        assert not im.info.get("icc_profile")
    r = apron.filter_files(src, tmp_path / "x.jpg", "sharpen", extra=["--metadata", "drop"], check=False)
    assert r.returncode != 0 and "--metadata" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.jpg").exists()


def test_batch_keeps_each_inputs_metadata(apron, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    rng = np.random.default_rng(9)
    for i, orientation in enumerate([3, 6, 1]):
        write_photo(inputs / f"p{i}.png", rng.integers(0, 256, (9, 13, 3), dtype=np.uint8), orientation, srgb_profile())
    Image.fromarray(rng.integers(0, 256, (9, 13), dtype=np.uint8)).save(inputs / "plain.png")
    apron.run("batch", inputs, "-o", tmp_path / "out", "--op", "box:width=3,height=3", "-q", "--format", "jpg")
    for i, orientation in enumerate([3, 6, 1]):
        with Image.open(tmp_path / "out" / f"p{i}.jpg") as im:
            assert im.getexif().get(ORIENTATION) == orientation, f"p{i}"
            assert im.info.get("icc_profile") == srgb_profile()
    with Image.open(tmp_path / "out" / "plain.jpg") as im:
        assert ORIENTATION not in im.getexif() and not im.info.get("icc_profile")
    apron.run("batch", inputs, "-o", tmp_path / "bare", "--op", "box:width=3,height=3", "-q", "--metadata", "strip")
    with Image.open(tmp_path / "bare" / "p1.png") as im:
        assert ORIENTATION not in im.getexif() and not im.info.get("icc_profile")


@pytest.mark.parametrize("orientation", range(1, 9))
def test_auto_orient_turns_pixels_as_pillow_does(apron, tmp_path, orientation):
    from PIL import ImageOps

    rgb = np.random.default_rng(10 + orientation).integers(0, 256, (13, 22, 3), dtype=np.uint8)
    src = tmp_path / "p.png"
    write_photo(src, rgb, orientation, srgb_profile())
    apron.filter_files(src, tmp_path / "o.png", "box:width=3,height=3", extra=["--auto-orient"])
    with Image.open(src) as im:
        upright = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    ref = np.stack([ndimage.uniform_filter(upright[..., c].astype(np.float64), 3, mode="reflect") for c in range(3)], -1)
    np.testing.assert_array_equal(read_png(tmp_path / "o.png"), np.round(ref).astype(np.uint8))
    with Image.open(tmp_path / "o.png") as out:
        assert out.getexif().get(ORIENTATION) == 1  # marked upright, so a viewer does not turn it again
        assert out.getexif().get(MAKE) == "apron test camera" and out.info.get("icc_profile") == srgb_profile()


def test_auto_orient_needs_a_whole_image_run(apron, tmp_path, photo):
    src, _ = photo
    r = apron.filter_files(src, tmp_path / "o.png", "box", extra=["--auto-orient", "--stream", "on"], check=False)
    assert r.returncode != 0 and "--auto-orient" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.png").exists()


def test_batch_auto_orient(apron, tmp_path, photo):
    src, rgb = photo  # orientation 6: a quarter turn clockwise
    (tmp_path / "in").mkdir()
    src.rename(tmp_path / "in" / "p.png")
    apron.run("batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "dilate:se=rect:1x1", "-q", "--auto-orient")
    np.testing.assert_array_equal(read_png(tmp_path / "out" / "p.png"), np.rot90(rgb, k=-1))
    with Image.open(tmp_path / "out" / "p.png") as out:
        assert out.getexif().get(ORIENTATION) == 1


# --- Exif read as Pillow reads it (finding 10, 11): PNG eXIf chunks written by hand, wherever and however
# many; orientation entries of other counts and types; out-of-range values.
import struct  # noqa: E402
import zlib  # noqa: E402


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _exif(orientation: int, type_: int = 3, count: int = 1, little: bool = True) -> bytes:
    e = "<" if little else ">"
    if type_ == 3:
        value = struct.pack(e + "H", orientation) + (struct.pack(e + "H", 3) if count == 2 else b"\0\0")
    else:
        value = struct.pack(e + "I", orientation)
    return ((b"II" if little else b"MM") + struct.pack(e + "HI", 42, 8) + struct.pack(e + "H", 1)
            + struct.pack(e + "HHI", ORIENTATION, type_, count) + value + b"\0\0\0\0")


def _png_with_exif(path, gray: np.ndarray, before=(), after=()):
    h, w = gray.shape
    raw = b"".join(b"\0" + gray[y].tobytes() for y in range(h))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + b"".join(_chunk(b"eXIf", e) for e in before) + _chunk(b"IDAT", zlib.compress(raw))
                     + b"".join(_chunk(b"eXIf", e) for e in after) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("case", ["after_idat", "two_chunks", "before_and_after", "count_2", "long", "long_big_endian"])
def test_auto_orient_agrees_with_pillow(apron, tmp_path, case):
    from PIL import ImageOps

    gray = np.random.default_rng(12).integers(0, 256, (64, 48), dtype=np.uint8)
    before, after = {
        "after_idat": ([], [_exif(6)]),
        "two_chunks": ([_exif(6), _exif(3)], []),
        "before_and_after": ([_exif(6)], [_exif(8)]),
        "count_2": ([_exif(6, 3, 2)], []),
        "long": ([_exif(6, 4)], []),
        "long_big_endian": ([_exif(8, 4, 1, little=False)], []),
    }[case]
    src = tmp_path / "p.png"
    _png_with_exif(src, gray, before, after)
    apron.filter_files(src, tmp_path / "o.png", "dilate:se=rect:1x1", extra=["--auto-orient"])
    with Image.open(src) as im:
        ref = np.asarray(ImageOps.exif_transpose(im))
    np.testing.assert_array_equal(read_png(tmp_path / "o.png"), ref)


@pytest.mark.parametrize("bad", [0, 9, 255, 65535])
@pytest.mark.parametrize("out", ["o.png", "o.jpg"])  # a TIFF output already wrote only 1..8 as its own tag
def test_out_of_range_orientation_is_not_copied(apron, tmp_path, bad, out):
    gray = np.random.default_rng(13).integers(0, 256, (9, 7), dtype=np.uint8)
    src = tmp_path / "p.png"
    _png_with_exif(src, gray, [_exif(bad)])
    apron.filter_files(src, tmp_path / out, "box")
    with Image.open(tmp_path / out) as im:
        assert im.getexif().get(ORIENTATION, 1) == 1
    r = apron.filter_files(src, tmp_path / "turned.png", "box", extra=["--auto-orient"])
    np.testing.assert_array_equal(read_png(tmp_path / "turned.png").shape, gray.shape)


def test_large_png_exif_is_read_quickly(apron, tmp_path):
    """20 MB of Exif (a big maker note): read in one read, not a pread per byte (that took 46 s)."""
    gray = np.zeros((4, 4), dtype=np.uint8)
    src = tmp_path / "p.png"
    _png_with_exif(src, gray, [_exif(6) + b"\xab" * (20 << 20)])
    apron.filter_files(src, tmp_path / "o.png", "box", extra=["--auto-orient"])
    with Image.open(tmp_path / "o.png") as im:
        assert im.getexif().get(ORIENTATION) == 1
