"""Image formats through the CLI: PGM/PPM 8/16-bit, PFM (both byte orders, 1 and 3 channels), PNG 8/16-bit
gray / gray+alpha / RGB / RGBA (read back with OpenCV, which is BGR), JPEG input. Channels are filtered one
by one with the same mask (SPEC.md "Coordinates and masks")."""
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi

cv2 = pytest.importorskip("cv2")

from conftest import (  # noqa: E402
    assert_equal_images,
    assert_f32_close,
    per_channel,
    random_image,
    read_image,
    read_pfm,
    read_png,
    read_pnm,
    to_type,
    write_mask,
    write_pfm,
    write_png,
    write_png_raw,
    write_pnm,
)

MASK = np.array([[1, -2, 0], [3, 1, -1], [0, 2, 1], [1, 0, 1]])  # 3 wide, 4 high, sum 7


def ref_int(img, dtype, border="reflect"):
    return to_type(per_channel(lambda c: ndi.correlate(c.astype(np.int64), MASK, mode=border), img), dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["u8", "u16"])
@pytest.mark.parametrize("channels", [1, 3])
def test_pnm_round_trip(apron, tmp_path, dtype, channels):
    shape = (23, 37) if channels == 1 else (23, 37, 3)
    img = random_image(shape, dtype, seed=90)
    mask = write_mask(tmp_path / "m.kernel", MASK)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask}")
    assert_equal_images(got, ref_int(img, dtype), f"{'PGM' if channels == 1 else 'PPM'} {np.dtype(dtype)}")


@pytest.mark.parametrize("op", ["gaussian:sigma=1.5", "unsharp:sigma=1,amount=1", "open:se=ellipse:5x5", "sobel:dx=1"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
def test_three_channels_equal_three_single_runs(apron, tmp_path, op, dtype):
    img = random_image((23, 37, 3), dtype, seed=91)
    together = apron.filter(tmp_path, img, op)
    for c in range(3):
        single = apron.filter(tmp_path / f"c{c}", np.ascontiguousarray(img[..., c]), op)
        assert_equal_images(together[..., c], single, f"{op}: channel {c} of 3 vs a 1-channel run")


def test_pnm_header_comments_and_small_maxval(apron, tmp_path):
    """Netpbm comments in the header; maxval 4095 reads as u16 values kept as stored."""
    vals = random_image((5, 7), np.uint16, seed=92, hi=4095)
    src = tmp_path / "in.pgm"
    src.write_bytes(b"P5\n# made by a test\n7 # width\n5\n4095\n" + vals.astype(">u2").tobytes())
    dst = tmp_path / "out.pgm"
    apron.filter_files(src, dst, "box:width=1")
    got = read_pnm(dst)
    assert_equal_images(got, vals, "maxval 4095 PGM")


def test_ascii_pgm_input(apron, tmp_path):
    vals = random_image((4, 6), np.uint8, seed=93)
    src = tmp_path / "in.pgm"
    src.write_text("P2\n6 4\n255\n" + "\n".join(" ".join(str(v) for v in row) for row in vals) + "\n")
    dst = tmp_path / "out.pgm"
    apron.filter_files(src, dst, "box:width=1")
    assert_equal_images(read_pnm(dst), vals, "P2 input")


# ---- PFM ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("little_endian", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("channels", [1, 3])
def test_pfm(apron, tmp_path, channels, little_endian):
    shape = (23, 37) if channels == 1 else (23, 37, 3)
    img = random_image(shape, np.float32, seed=94)
    src, dst = tmp_path / "in.pfm", tmp_path / "out.pfm"
    write_pfm(src, img, little_endian=little_endian)
    mask = write_mask(tmp_path / "m.kernel", MASK)
    apron.filter_files(src, dst, f"correlate:mask={mask},border=mirror")
    got = read_pfm(dst)
    exp = per_channel(lambda c: ndi.correlate(c.astype(np.float64), MASK, mode="mirror"), img)
    assert_f32_close(got, exp, np.abs(MASK).sum() * np.abs(img).max(), "PFM")
    # apron writes little-endian (negative scale), rows bottom to top: check the header and first row bytes.
    data = dst.read_bytes()
    magic = b"Pf" if channels == 1 else b"PF"
    assert data.startswith(magic), data[:16]
    header_fields = data.split(b"\n", 3)
    assert header_fields[1].split() == [b"37", b"23"], data[:32]
    assert float(header_fields[2]) < 0, f"apron must write little-endian PFM, scale {header_fields[2]!r}"
    row_bytes = got[-1].size * 4
    pixels = data[-row_bytes * 23 :]
    bottom = np.frombuffer(pixels[:row_bytes], dtype="<f4")
    np.testing.assert_array_equal(bottom, got[-1].ravel(), err_msg="first stored row must be the bottom row")


def test_pfm_identity_is_exact(apron, tmp_path):
    img = random_image((1, 9), np.float32, seed=95)
    assert_equal_images(apron.filter(tmp_path, img, "box:width=1"), img, "PFM identity")


# ---- PNG ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["8bit", "16bit"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4], ids=["gray", "gray-alpha", "rgb", "rgba"])
def test_png_round_trip(apron, tmp_path, channels, dtype):
    """PNG in, PNG out: each channel filtered like a 1-channel image; read back with OpenCV."""
    shape = (23, 37) if channels == 1 else (23, 37, channels)
    img = random_image(shape, dtype, seed=96)
    src, dst = tmp_path / "in.png", tmp_path / "out.png"
    write_png(src, img)
    mask = write_mask(tmp_path / "m.kernel", MASK)
    apron.filter_files(src, dst, f"correlate:mask={mask},border=nearest")
    got = read_png(dst)  # RGB(A) order
    exp = ref_int(img, dtype, "nearest")
    if channels == 2:  # OpenCV reads gray+alpha as 4 channels: gray, gray, gray, alpha
        assert got.shape == (23, 37, 4), got.shape
        for c in range(3):
            assert_equal_images(got[..., c], exp[..., 0], "gray+alpha: gray")
        assert_equal_images(got[..., 3], exp[..., 1], "gray+alpha: alpha")
    else:
        assert_equal_images(got, exp, f"PNG {channels} channels {np.dtype(dtype)}")


def test_png_channel_order_to_ppm_and_back(apron, tmp_path):
    """RGB order is kept across formats: PNG (OpenCV writes BGR internally) -> PPM (RGB) -> PNG."""
    img = random_image((23, 37, 3), np.uint8, seed=97)
    img[..., 0] = 250  # a red image: a BGR/RGB swap shows at once
    img[..., 2] = 5
    src = tmp_path / "in.png"
    write_png(src, img)
    ppm = tmp_path / "mid.ppm"
    apron.filter_files(src, ppm, "box:width=1")
    assert_equal_images(read_pnm(ppm), img, "PNG RGB -> PPM")
    back = tmp_path / "back.png"
    apron.filter_files(ppm, back, "box:width=1")
    assert_equal_images(read_png(back), img, "PPM -> PNG RGB")


@pytest.mark.parametrize("channels", [1, 3])
def test_png_16bit_from_pnm(apron, tmp_path, channels):
    shape = (23, 37) if channels == 1 else (23, 37, 3)
    img = random_image(shape, np.uint16, seed=98)
    src, dst = tmp_path / "in.pgm" if channels == 1 else tmp_path / "in.ppm", tmp_path / "out.png"
    write_pnm(src, img)
    apron.filter_files(src, dst, "dilate:se=cross:3x3")
    exp = per_channel(lambda c: cv2.dilate(c, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))), img)
    got = read_png(dst)
    assert got.dtype == np.uint16
    assert_equal_images(got, exp, "u16 PNM -> 16-bit PNG")


def test_png_2_channel_written_by_own_encoder_is_read(apron, tmp_path):
    img = random_image((9, 11, 2), np.uint8, seed=99)
    src, dst = tmp_path / "ga.png", tmp_path / "ga_out.png"
    write_png_raw(src, img)
    apron.filter_files(src, dst, "box:width=1")
    got = read_png(dst)
    assert_equal_images(got[..., 0], img[..., 0], "gray")
    assert_equal_images(got[..., 3], img[..., 1], "alpha")


# ---- JPEG -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("channels", [1, 3])
def test_jpeg_input(apron, tmp_path, channels):
    """JPEG input decodes like OpenCV's decoder (libjpeg family; allow 2 levels for IDCT differences)."""
    shape = (23, 37) if channels == 1 else (23, 37, 3)
    img = random_image(shape, np.uint8, seed=100)
    src = tmp_path / "in.jpg"
    assert cv2.imwrite(str(src), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    decoded = read_png(src)  # OpenCV decode, RGB order
    dst = tmp_path / ("out.pgm" if channels == 1 else "out.ppm")
    apron.filter_files(src, dst, "box:width=1")
    got = read_pnm(dst)
    assert_equal_images(got, decoded, "JPEG decode vs OpenCV", max_diff=2)
    assert np.abs(got.astype(int) - decoded).mean() < 0.5


def test_jpeg_output_readable(apron, tmp_path):
    img = np.tile(np.linspace(0, 255, 37, dtype=np.float64), (23, 1)).astype(np.uint8)
    src, dst = tmp_path / "in.pgm", tmp_path / "out.jpg"
    write_pnm(src, img)
    apron.filter_files(src, dst, "box:width=1", extra=["--quality", "98"])
    got = read_png(dst)
    assert got.shape == img.shape
    assert np.abs(got.astype(int) - img).mean() < 2


def test_read_image_helpers_round_trip(tmp_path):
    """Our own codecs (used to check apron) agree with OpenCV on PGM/PPM."""
    for shape, dtype in [((5, 7), np.uint8), ((5, 7), np.uint16), ((5, 7, 3), np.uint8), ((5, 7, 3), np.uint16)]:
        img = random_image(shape, dtype, seed=101)
        p = tmp_path / ("a.pgm" if len(shape) == 2 else "a.ppm")
        write_pnm(p, img)
        assert_equal_images(read_image(p), img, "own PNM codec")
        assert_equal_images(read_png(p), img, "OpenCV reading our PNM")
    f = random_image((5, 7, 3), np.float32, seed=102)
    write_pfm(tmp_path / "a.pfm", f, little_endian=False)
    assert_equal_images(read_pfm(tmp_path / "a.pfm"), f, "own PFM codec")
    assert Path(tmp_path / "a.pfm").read_bytes().startswith(b"PF\n7 5\n1.0\n")
