"""FITS through `apron filter`: files written by astropy (an independent FITS reader and writer) give, pixel for
pixel, what the same samples give from a PFM or PGM file (our own codecs in conftest.py); the header's cards
(OBJECT, DATE-OBS, the WCS, HISTORY, long strings) come out as astropy reads them; a cube's planes are pages,
each filtered on its own and written back as a cube, or one picked with --page; what apron does not read
(64-bit floats, 32-bit integers, scaled samples) is refused in one line that names the file, and leaves no
output behind."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import leftovers, random_image, read_image, write_image

fits = pytest.importorskip("astropy.io.fits")


@pytest.fixture(autouse=True)
def _fits_built(apron):
    if "fits" not in apron.run("info").stdout.split("image formats:")[-1].split("\n")[0]:
        pytest.skip("this apron is built without cfitsio")


def one_line_error(r, *words):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def fits_data(path):
    with fits.open(path) as hdus:
        hdus.verify("exception")  # a standard-conforming file, as astropy judges it
        return hdus[0].data.copy(), hdus[0].header.copy()


def with_nan(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a[3, 5] = np.nan
    a[10:12, 20:23] = np.nan
    return a


OPS = ["gaussian:sigma=2", "dilate:se=disk:2", "median:se=rect:3x3", "sobel:dx=1"]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("op", OPS)
def test_filtered_as_the_same_samples_from_pfm_or_pgm(apron, tmp_path, dtype, op):
    a = random_image((29, 41), dtype, seed=11)
    if dtype == np.float32 and op != "sobel:dx=1":
        a = with_nan(a)
    fits.PrimaryHDU(a).writeto(tmp_path / "in.fits")  # astropy: uint16 as BITPIX 16 with BZERO 32768
    ext = ".pfm" if dtype == np.float32 else ".pgm"
    write_image(tmp_path / f"in{ext}", a)
    out_type = ["--out-type", "f32"] if op.startswith("sobel") else []
    apron.run("filter", tmp_path / "in.fits", tmp_path / "out.fits", "--op", op, *out_type)
    apron.run("filter", tmp_path / f"in{ext}", tmp_path / "ref.pfm" if out_type or dtype == np.float32 else tmp_path / f"ref{ext}",
              "--op", op, *out_type)
    got, header = fits_data(tmp_path / "out.fits")
    ref = read_image(tmp_path / "ref.pfm" if out_type or dtype == np.float32 else tmp_path / f"ref{ext}")
    assert got.dtype == ref.dtype.newbyteorder(">") or got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got, ref)  # NaN where NaN, rows in the file's order
    assert header["BITPIX"] == {np.uint8: 8, np.uint16: 16, np.float32: -32}[np.float32 if out_type else dtype]


def test_signed_16_bit_is_read_as_exact_f32(apron, tmp_path):
    a = np.random.default_rng(4).integers(-32768, 32767, (23, 19), endpoint=True).astype(np.int16)
    fits.PrimaryHDU(a).writeto(tmp_path / "in.fits")
    write_image(tmp_path / "in.pfm", a.astype(np.float32))
    apron.run("filter", tmp_path / "in.fits", tmp_path / "same.fits", "--op", "box:width=1")
    got, header = fits_data(tmp_path / "same.fits")
    assert header["BITPIX"] == -32
    np.testing.assert_array_equal(got, a.astype(np.float32))
    apron.run("filter", tmp_path / "in.fits", tmp_path / "out.fits", "--op", "gaussian:sigma=1.5")
    apron.run("filter", tmp_path / "in.pfm", tmp_path / "ref.pfm", "--op", "gaussian:sigma=1.5")
    np.testing.assert_array_equal(fits_data(tmp_path / "out.fits")[0], read_image(tmp_path / "ref.pfm"))


def test_nan_and_infinities_are_kept(apron, tmp_path):
    a = random_image((8, 9), np.float32, seed=2)
    a[0, 0], a[1, 1], a[2, 2] = np.nan, np.inf, -np.inf
    fits.PrimaryHDU(a).writeto(tmp_path / "in.fits")
    apron.run("filter", tmp_path / "in.fits", tmp_path / "out.fits", "--op", "box:width=1")
    np.testing.assert_array_equal(fits_data(tmp_path / "out.fits")[0], a)


def wcs_header(a: np.ndarray):
    h = fits.PrimaryHDU(a).header
    h["OBJECT"] = "NGC 1300"
    h["DATE-OBS"] = "2024-01-02T03:04:05.5"
    h["TELESCOP"] = "apron-test"
    h["EXPTIME"] = (120.5, "seconds")
    for k, v in {"CTYPE1": "RA---TAN", "CTYPE2": "DEC--TAN", "CRPIX1": 15.5, "CRPIX2": 12.0, "CRVAL1": 49.95,
                 "CRVAL2": -19.41, "CDELT1": -0.000277, "CDELT2": 0.000277, "CUNIT1": "deg", "CUNIT2": "deg"}.items():
        h[k] = v
    h["LONGSTR"] = "a long string value " * 8  # written as CONTINUE cards
    h["HISTORY"] = "bias subtracted"
    h["HISTORY"] = "flat fielded"
    h["COMMENT"] = "written by astropy for apron's tests"
    return h


CARRIED = ["OBJECT", "DATE-OBS", "TELESCOP", "EXPTIME", "CTYPE1", "CTYPE2", "CRPIX1", "CRPIX2", "CRVAL1", "CRVAL2",
           "CDELT1", "CDELT2", "CUNIT1", "CUNIT2", "LONGSTR"]


@pytest.mark.parametrize("dtype", [np.uint16, np.float32])
def test_header_cards_are_carried_as_astropy_reads_them(apron, tmp_path, dtype):
    a = random_image((24, 31), dtype, seed=5)
    fits.PrimaryHDU(a, header=wcs_header(a)).writeto(tmp_path / "in.fits")
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "out.fits", "--op", "gaussian:sigma=2")
    assert r.stderr == ""  # nothing left out
    _, before = fits_data(tmp_path / "in.fits")
    _, after = fits_data(tmp_path / "out.fits")
    for key in CARRIED:
        assert after[key] == before[key], key
    assert after.comments["EXPTIME"] == "seconds"
    assert list(after["HISTORY"]) == ["bias subtracted", "flat fielded"]
    assert "written by astropy for apron's tests" in list(after["COMMENT"])
    from astropy.wcs import WCS

    w0, w1 = WCS(before), WCS(after)
    np.testing.assert_array_equal(w1.wcs.crpix, w0.wcs.crpix)
    np.testing.assert_array_equal(w1.wcs.crval, w0.wcs.crval)
    assert list(w1.wcs.ctype) == list(w0.wcs.ctype)
    np.testing.assert_allclose(w1.pixel_to_world_values(3, 4), w0.pixel_to_world_values(3, 4))
    # Another output type: the cards still go (BLANK would not, it marks integers).
    apron.run("filter", tmp_path / "in.fits", tmp_path / "f.fits", "--op", "gaussian:sigma=2", "--out-type", "f32")
    assert fits_data(tmp_path / "f.fits")[1]["OBJECT"] == "NGC 1300"
    # --metadata strip: structural cards only.
    apron.run("filter", tmp_path / "in.fits", tmp_path / "s.fits", "--op", "box", "--metadata", "strip")
    assert "OBJECT" not in fits_data(tmp_path / "s.fits")[1]


def test_a_fits_header_into_another_format_is_said(apron, tmp_path):
    a = random_image((12, 10), np.uint16, seed=6)
    fits.PrimaryHDU(a, header=wcs_header(a)).writeto(tmp_path / "in.fits")
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "out.png", "--op", "box")
    line = r.stderr.strip()
    assert "\n" not in line and "out.png: the FITS header (" in line and "OBJECT" in line, line
    assert line.endswith("not carried: PNG has no place for it; write .fits to keep it"), line
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "out.tif", "--op", "box")
    assert "TIFF has no place for it; write .fits to keep it" in r.stderr
    # A TIFF's metadata into FITS: what FITS has no place for is said too, and its own cards are structural.
    import tifffile

    tifffile.imwrite(tmp_path / "t.tif", a, resolution=(4.0, 4.0), resolutionunit="CENTIMETER", description="a scan")
    r = apron.run("filter", tmp_path / "t.tif", tmp_path / "t.fits", "--op", "box")
    assert "t.fits: the resolution (4 x 4 pixels per cm)" in r.stderr and "FITS has no place for them" in r.stderr, r.stderr
    got, header = fits_data(tmp_path / "t.fits")
    assert got.dtype.kind == "u" and got.shape == a.shape
    assert "OBJECT" not in header and header["NAXIS"] == 2


def test_blank_is_kept_with_the_integers_and_left_out_of_floats(apron, tmp_path):
    a = random_image((10, 12), np.uint16, seed=7)
    h = fits.PrimaryHDU(a).header
    h["BLANK"] = -32768  # stored units: the sample 0 once BZERO is added
    fits.PrimaryHDU(a, header=h).writeto(tmp_path / "in.fits")
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "u16.fits", "--op", "box")
    assert r.stderr == ""
    assert fits_data(tmp_path / "u16.fits")[1]["BLANK"] == -32768
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "f32.fits", "--op", "box", "--out-type", "f32")
    assert "the BLANK card (BLANK = -32768" in r.stderr and "f32" in r.stderr, r.stderr
    assert "BLANK" not in fits_data(tmp_path / "f32.fits")[1]


@pytest.fixture
def cube(tmp_path):
    c = random_image((4, 20, 30), np.float32, seed=8)
    c[1, 5, 6] = np.nan
    h = fits.PrimaryHDU(c).header
    h["OBJECT"] = "a cube"
    h["CTYPE3"] = "FREQ"
    path = tmp_path / "cube.fits"
    fits.PrimaryHDU(c, header=h).writeto(path)
    return path, c


def test_cube_planes_are_filtered_one_by_one_into_a_cube(apron, tmp_path, cube):
    path, c = cube
    r = apron.run("filter", path, tmp_path / "out.fits", "--op", "gaussian:sigma=1.5")
    assert r.stderr == ""
    got, header = fits_data(tmp_path / "out.fits")
    assert got.shape == c.shape and header["NAXIS"] == 3
    assert header["OBJECT"] == "a cube" and header["CTYPE3"] == "FREQ"
    for p in range(c.shape[0]):
        write_image(tmp_path / f"p{p}.pfm", c[p])
        apron.run("filter", tmp_path / f"p{p}.pfm", tmp_path / f"r{p}.pfm", "--op", "gaussian:sigma=1.5")
        np.testing.assert_array_equal(got[p], read_image(tmp_path / f"r{p}.pfm"), err_msg=f"plane {p}")


def test_page_picks_one_plane(apron, tmp_path, cube):
    path, c = cube
    apron.run("filter", path, tmp_path / "p2.fits", "--op", "dilate:se=rect:3x3", "--page", "2")
    got, header = fits_data(tmp_path / "p2.fits")
    assert got.shape == c.shape[1:] and header["NAXIS"] == 2 and header["OBJECT"] == "a cube"
    write_image(tmp_path / "p2.pfm", c[2])
    apron.run("filter", tmp_path / "p2.pfm", tmp_path / "r2.pfm", "--op", "dilate:se=rect:3x3")
    np.testing.assert_array_equal(got, read_image(tmp_path / "r2.pfm"))
    # One plane into a one-image format, with the header said once.
    r = apron.run("filter", path, tmp_path / "p1.pfm", "--op", "box:width=1", "--page", "1")
    np.testing.assert_array_equal(read_image(tmp_path / "p1.pfm"), c[1])
    assert r.stderr.count("the FITS header") == 1
    r = apron.run("filter", path, tmp_path / "p4.fits", "--op", "box", "--page", "4", check=False)
    one_line_error(r, str(path), "no page 4 (the FITS file has 4 planes)")
    assert not (tmp_path / "p4.fits").exists()


def test_a_cube_into_one_image_format_is_refused(apron, tmp_path, cube):
    path, _ = cube
    r = apron.run("filter", path, tmp_path / "o.png", "--op", "box", check=False)
    one_line_error(r, "o.png", str(path), "a FITS cube of 4 planes", "--page")
    r = apron.run("filter", path, tmp_path / "o.tif", "--op", "box", "--stream", "on", check=False)
    one_line_error(r, "a FITS cube of 4 planes", "streamed run filters one image")
    assert not (tmp_path / "o.png").exists() and not (tmp_path / "o.tif").exists()
    assert leftovers(tmp_path) == []


def test_a_cube_into_a_multi_page_tiff_says_the_header_once(apron, tmp_path, cube):
    import tifffile

    path, c = cube
    r = apron.run("filter", path, tmp_path / "o.tif", "--op", "box:width=1")
    assert r.stderr.count("the FITS header") == 1, r.stderr
    with tifffile.TiffFile(tmp_path / "o.tif") as tif:
        assert len(tif.pages) == 4
        for p, page in enumerate(tif.pages):
            np.testing.assert_array_equal(page.asarray(), c[p])


def test_a_multi_page_tiff_into_a_fits_cube(apron, tmp_path):
    import tifffile

    stack = random_image((3, 9, 11), np.uint16, seed=9)
    tifffile.imwrite(tmp_path / "s.tif", stack, photometric="minisblack")  # 3 pages, not planar RGB
    apron.run("filter", tmp_path / "s.tif", tmp_path / "s.fits", "--op", "box:width=1")
    got, header = fits_data(tmp_path / "s.fits")
    np.testing.assert_array_equal(got, stack)
    assert header["BZERO"] == 32768
    # Pages of different shapes cannot be one cube: refused before anything is filtered.
    with tifffile.TiffWriter(tmp_path / "m.tif") as w:
        w.write(stack[0])
        w.write(stack[1, :5])
    r = apron.run("filter", tmp_path / "m.tif", tmp_path / "m.fits", "--op", "box", check=False)
    one_line_error(r, "m.fits", "a FITS cube holds planes of one size and type", "write .tif")
    assert not (tmp_path / "m.fits").exists()


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: fits.PrimaryHDU(np.zeros((6, 5), np.float64)), ["BITPIX -64", "f64 to f32 would lose precision"]),
        (lambda: fits.PrimaryHDU(np.zeros((6, 5), np.int32)), ["BITPIX 32"]),
        (lambda: fits.PrimaryHDU(np.zeros((6, 5), np.int64)), ["BITPIX 64"]),
        (lambda: fits.PrimaryHDU(np.zeros((2, 3, 6, 5), np.float32)), ["NAXIS 4"]),
        (lambda: fits.PrimaryHDU(np.zeros(7, np.uint8)), ["NAXIS 1"]),
        (lambda: fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns([fits.Column("a", "J", array=[1])])]),
         ["binary table"]),
    ],
    ids=["f64", "i32", "i64", "naxis4", "naxis1", "table"],
)
def test_what_apron_does_not_read_is_refused_in_one_line(apron, tmp_path, make, words):
    src = tmp_path / "in.fits"
    make().writeto(src)
    r = apron.run("filter", src, tmp_path / "out.fits", "--op", "gaussian:sigma=2", check=False)
    one_line_error(r, str(src), *words)
    assert not (tmp_path / "out.fits").exists()
    assert leftovers(tmp_path) == []


def test_scaled_samples_are_refused(apron, tmp_path):
    hdu = fits.PrimaryHDU(np.linspace(0, 10, 30, dtype=np.float32).reshape(5, 6))
    hdu.scale("int16", bscale=0.01, bzero=100)
    hdu.writeto(tmp_path / "in.fits")
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "out.fits", "--op", "box", check=False)
    one_line_error(r, "in.fits", "scaled samples", "BSCALE 0.01")
    assert not (tmp_path / "out.fits").exists()


def test_bad_files_are_one_line_errors(apron, tmp_path):
    src = tmp_path / "bad.fits"
    good = tmp_path / "good.fits"
    fits.PrimaryHDU(random_image((40, 50), np.float32, seed=1)).writeto(good)
    data = good.read_bytes()
    for name, content in {"truncated": data[: 2880 + 1000], "garbage": b"SIMPLE  = nonsense" + bytes(100),
                          "no-end": data[:2880].replace(b"END     ", b"XND     ") + data[2880:]}.items():
        src.write_bytes(content)
        r = apron.run("filter", src, tmp_path / "o.fits", "--op", "box", check=False)
        one_line_error(r, str(src))
        assert not (tmp_path / "o.fits").exists(), name


@pytest.mark.parametrize(
    "dtype, compression, kw",
    [
        (np.int16, "RICE_1", {}),
        (np.uint16, "RICE_1", {}),
        (np.uint8, "RICE_1", {}),
        (np.int16, "GZIP_1", {}),
        (np.float32, "GZIP_2", {"quantize_level": 0.0}),  # lossless floats
        (np.float32, "RICE_1", {"quantize_level": 16.0}),  # quantized and dithered (32-bit Rice)
    ],
    ids=["i16-rice", "u16-rice", "u8-rice", "i16-gzip", "f32-gzip2", "f32-rice-quantized"],
)
def test_tile_compressed_images_are_read(apron, tmp_path, dtype, compression, kw):
    rng = np.random.default_rng(12)
    if dtype == np.float32:
        a = rng.normal(100, 10, (33, 47)).astype(np.float32)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (33, 47), endpoint=True).astype(dtype)
    comp = fits.CompImageHDU(a, compression_type=compression, tile_shape=(8, 47), **kw)
    comp.header["OBJECT"] = "compressed"
    fits.HDUList([fits.PrimaryHDU(), comp]).writeto(tmp_path / "c.fits")
    with fits.open(tmp_path / "c.fits") as hdus:
        stored = hdus[1].data.copy()  # what astropy decompresses
    apron.run("filter", tmp_path / "c.fits", tmp_path / "o.fits", "--op", "box:width=1")
    got, header = fits_data(tmp_path / "o.fits")
    np.testing.assert_array_equal(got, stored.astype(np.float32) if dtype == np.int16 else stored)
    assert header["OBJECT"] == "compressed"
    # Streamed: decoded whole, then handed out by rows (the same result).
    apron.run("filter", tmp_path / "c.fits", tmp_path / "s.tif", "--op", "box:width=1", "--stream", "on")
    import tifffile

    np.testing.assert_array_equal(tifffile.imread(tmp_path / "s.tif"), got)


def test_compression_cfitsio_cannot_bound_is_refused(apron, tmp_path):
    a = np.random.default_rng(13).integers(0, 1000, (16, 16)).astype(np.int16)
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(a, compression_type="HCOMPRESS_1")]).writeto(tmp_path / "h.fits")
    r = apron.run("filter", tmp_path / "h.fits", tmp_path / "o.fits", "--op", "box", check=False)
    one_line_error(r, "h.fits", "HCOMPRESS_1", "funpack")
    assert not (tmp_path / "o.fits").exists()


def test_a_damaged_rice_tile_is_refused_not_read_past(apron, tmp_path):
    a = np.random.default_rng(14).integers(-3000, 3000, (6, 8)).astype(np.int16)
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(a, compression_type="RICE_1")]).writeto(tmp_path / "c.fits")
    data = bytearray((tmp_path / "c.fits").read_bytes())
    with fits.open(tmp_path / "c.fits", disable_image_compression=True) as hdus:
        table_start = hdus[1]._data_offset
    # The last tile's descriptor (length, heap offset): cut its length to one byte.
    last = table_start + 8 * 5
    data[last:last + 4] = (1).to_bytes(4, "big")
    (tmp_path / "d.fits").write_bytes(bytes(data))
    r = apron.run("filter", tmp_path / "d.fits", tmp_path / "o.fits", "--op", "box", check=False)
    one_line_error(r, "d.fits", "Rice-compressed tile 6")
    assert not (tmp_path / "o.fits").exists()


def test_image_extension_after_an_empty_primary_hdu(apron, tmp_path):
    a = random_image((9, 13), np.uint8, seed=13)
    ext = fits.ImageHDU(a, name="SCI")
    ext.header["OBJECT"] = "in the extension"
    fits.HDUList([fits.PrimaryHDU(), ext]).writeto(tmp_path / "e.fits")
    apron.run("filter", tmp_path / "e.fits", tmp_path / "o.fits", "--op", "box:width=1")
    got, header = fits_data(tmp_path / "o.fits")
    np.testing.assert_array_equal(got, a)
    assert header["OBJECT"] == "in the extension" and header["EXTNAME"] == "SCI"


def test_streamed_fits_input_gives_the_whole_image_result(apron, tmp_path):
    a = random_image((300, 200), np.float32, seed=14)
    fits.PrimaryHDU(a).writeto(tmp_path / "in.fits")
    apron.run("filter", tmp_path / "in.fits", tmp_path / "whole.pfm", "--op", "gaussian:sigma=3")
    apron.run("filter", tmp_path / "in.fits", tmp_path / "bands.pfm", "--op", "gaussian:sigma=3", "--stream", "on",
              "--band-rows", "37")
    np.testing.assert_array_equal(read_image(tmp_path / "bands.pfm"), read_image(tmp_path / "whole.pfm"))
    # A FITS output is written whole only: a streamed run says so in one line and leaves nothing.
    r = apron.run("filter", tmp_path / "in.fits", tmp_path / "o.fits", "--op", "box", "--stream", "on", check=False)
    one_line_error(r, "o.fits")
    assert not (tmp_path / "o.fits").exists()


def test_batch_keeps_fits_as_fits(apron, tmp_path):
    (tmp_path / "in").mkdir()
    for k in range(2):
        fits.PrimaryHDU(random_image((10, 12), np.uint16, seed=20 + k)).writeto(tmp_path / "in" / f"f{k}.fits")
    apron.run("batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "box:width=1", "--quiet")
    for k in range(2):
        got, _ = fits_data(tmp_path / "out" / f"f{k}.fits")
        np.testing.assert_array_equal(got, fits_data(tmp_path / "in" / f"f{k}.fits")[0])


@pytest.mark.parametrize(
    "dtype, compression",
    [(np.float32, None), (np.uint16, None), (np.int16, None), (np.int16, "RICE_1"), (np.float32, "GZIP_2")],
    ids=["f32", "u16-bzero", "i16", "i16-rice", "f32-gzip2"],
)
def test_a_cube_as_one_volume_is_its_samples(apron, tmp_path, dtype, compression):
    # --volume reads the cube in one pass (read_volume): filtered across its planes, the same bytes as the
    # cube's samples given as raw (astropy's reading of them), and the header carried into the FITS output.
    rng = np.random.default_rng(21)
    if dtype == np.float32:
        c = rng.normal(100, 10, (7, 13, 11)).astype(np.float32)
        c[2, 4, 5] = np.nan
        c[6, 12, :] = np.nan
    else:
        info = np.iinfo(dtype)
        c = rng.integers(info.min, info.max, (7, 13, 11), endpoint=True).astype(dtype)
    if compression:
        kw = {"quantize_level": 0.0} if dtype == np.float32 else {}
        hdu = fits.CompImageHDU(c, compression_type=compression, tile_shape=(2, 5, 11), **kw)
        hdu.header["OBJECT"] = "a cube"
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(tmp_path / "c.fits")
    else:
        hdu = fits.PrimaryHDU(c)
        hdu.header["OBJECT"] = "a cube"
        hdu.writeto(tmp_path / "c.fits")
    with fits.open(tmp_path / "c.fits") as hdus:
        stored = hdus[-1].data.astype(np.float32 if dtype == np.int16 else dtype)  # signed 16-bit reads as f32
    stored.tofile(tmp_path / "c.raw")
    op = ["--op", "gaussian:sigma=1,sigma_z=1", "--backend", "cpu"]
    r = apron.run("filter", tmp_path / "c.fits", tmp_path / "o.fits", "--volume", *op)
    assert r.stderr == "", r.stderr
    kind = {np.float32: "f32", np.uint16: "u16"}[stored.dtype.type]
    apron.run("filter", tmp_path / "c.raw", tmp_path / "o.raw", "--raw", f"11x13x7x1:{kind}", *op)
    got, header = fits_data(tmp_path / "o.fits")
    assert got.shape == c.shape and header["NAXIS"] == 3 and header["OBJECT"] == "a cube"
    want = np.fromfile(tmp_path / "o.raw", dtype=stored.dtype).reshape(c.shape)
    np.testing.assert_array_equal(got, want)
