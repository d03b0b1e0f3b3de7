"""Band stacks through `apron filter`: a TIFF of more than 4 samples per pixel (multispectral: Sentinel-2's 13
bands), interleaved or separate, u8/u16/f32, strips or tiles, is filtered band by band and written back as one
page of the same bands, layout, sample format and tags. Each band must equal apron's result on that band alone
(a multi-page TIFF of the bands, whose pages apron filters one by one) and SciPy's where SciPy defines the
filter; a step along z is refused unless --volume asks for it; hostile headers are refused in one line.
tifffile (independent of apron's libtiff code) writes the inputs and reads the outputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from conftest import random_image

tifffile = pytest.importorskip("tifffile")

CORPUS = Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "fuzz_tiff"
GEO_TAGS = [
    (33550, "d", 3, (10.0, 10.0, 0.0)),  # ModelPixelScale
    (33922, "d", 6, (0.0, 0.0, 0.0, 600000.0, 5100000.0, 0.0)),  # ModelTiepoint
    (34735, "H", 16, (1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633)),  # GeoKeyDirectory
    (42113, "s", 0, "0"),  # GDAL_NODATA
]
DTYPES = [np.uint8, np.uint16, np.float32]


def one_line_error(r, *words):
    assert r.returncode > 0, (r.returncode, r.stdout, r.stderr)  # an error, never a signal
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def disk(r: int) -> np.ndarray:
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return x * x + y * y <= r * r


def write_bands(path, bands: np.ndarray, separate: bool, tile=None, compression=None, **kw):
    """bands: (N, H, W); written as one page of N samples, planar configuration 2 or 1."""
    data = bands if separate else np.moveaxis(bands, 0, -1)
    tifffile.imwrite(path, data, photometric="minisblack", planarconfig="separate" if separate else "contig",
                     tile=tile, compression=compression, metadata=None, **kw)


def read_bands(path):
    """The one page of `path` as (N, H, W), and the page."""
    with tifffile.TiffFile(path) as tif:
        assert len(tif.pages) == 1
        page = tif.pages[0]
        a = page.asarray()
        contig = page.planarconfig == 1
        return (np.moveaxis(a, -1, 0) if contig else a), page


def each_band_alone(apron, tmp_path, bands: np.ndarray, op: str) -> np.ndarray:
    """apron's result on every band as a gray image of its own: the bands as the pages of a TIFF."""
    src, dst = tmp_path / "pages.tif", tmp_path / "pages-out.tif"
    with tifffile.TiffWriter(src) as w:
        for b in bands:
            w.write(b, photometric="minisblack", metadata=None)
    apron.filter_files(src, dst, op)
    with tifffile.TiffFile(dst) as tif:
        return np.stack([p.asarray() for p in tif.pages])


@pytest.mark.parametrize("n", [5, 13])
@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["gaussian:sigma=1.5", "median:se=disk:2", "dilate:se=disk:2"])
def test_each_band_is_filtered_alone(apron, tmp_path, n, separate, dtype, op):
    bands = random_image((n, 23, 37), dtype, n + 3)
    src, dst = tmp_path / "in.tif", tmp_path / "out.tif"
    write_bands(src, bands, separate)
    r = apron.filter_files(src, dst, op)
    assert r.stderr == "", r.stderr
    got, page = read_bands(dst)
    assert page.samplesperpixel == n and page.planarconfig == (2 if separate else 1)
    assert got.dtype == dtype and got.shape == bands.shape
    np.testing.assert_array_equal(got, each_band_alone(apron, tmp_path, bands, op))
    if op.startswith("dilate"):  # morphology ignores what lies outside: SciPy's constant border at the minimum
        lo = np.finfo(np.float32).min if dtype == np.float32 else 0
        for b in range(n):
            np.testing.assert_array_equal(got[b], ndimage.grey_dilation(bands[b], footprint=disk(2), mode="constant", cval=lo))
    if op.startswith("median"):
        for b in range(n):
            np.testing.assert_array_equal(got[b], ndimage.median_filter(bands[b], footprint=disk(2), mode="reflect"))


@pytest.mark.parametrize("separate", [False, True])
def test_tiles_compression_and_out_type(apron, tmp_path, separate):
    bands = random_image((13, 23, 37), np.uint16, 8)
    src, dst = tmp_path / "in.tif", tmp_path / "out.tif"
    write_bands(src, bands, separate, tile=(16, 16), compression="zlib")
    apron.filter_files(src, dst, "gaussian:sigma=2", out_type="f32", extra=["--tile", "16", "--compression", "lzw"])
    got, page = read_bands(dst)
    assert page.is_tiled and page.dtype == np.float32 and page.planarconfig == (2 if separate else 1)
    ref = np.stack([ndimage.gaussian_filter(b.astype(np.float64), 2, mode="reflect", truncate=3) for b in bands])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-2)


def test_tags_are_carried(apron, tmp_path):
    bands = random_image((13, 23, 37), np.uint16, 2)
    src, dst = tmp_path / "s2.tif", tmp_path / "out.tif"
    write_bands(src, bands, True, extratags=GEO_TAGS, description="Sentinel-2 L2A", resolution=(4.0, 4.0),
                resolutionunit="CENTIMETER", software="apron test")
    r = apron.filter_files(src, dst, "box:width=3,height=3")
    assert "not carried" not in r.stderr
    with tifffile.TiffFile(src) as a, tifffile.TiffFile(dst) as b:
        before, after = a.pages[0].tags, b.pages[0].tags
        for code in (33550, 33922, 34735, 42113, 270, 282, 283, 296, 305):
            assert code in after, code
            np.testing.assert_array_equal(np.array(after[code].value), np.array(before[code].value), err_msg=str(code))
        assert after[338].value == before[338].value  # ExtraSamples: 12 unspecified
        assert b.pages[0].photometric == a.pages[0].photometric
    # Into FITS: a cube of the bands; the TIFF tags are said to be left out, in one line.
    fits = tmp_path / "out.fits"
    r = apron.filter_files(src, fits, "box:width=3,height=3")
    assert fits.is_file()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "not carried" in lines[0] and "GeoTIFF" in lines[0], r.stderr


def test_steps_along_z_are_refused_unless_volume(apron, tmp_path):
    bands = random_image((5, 9, 11), np.uint8, 4)
    src, dst = tmp_path / "in.tif", tmp_path / "out.tif"
    write_bands(src, bands, False)
    for op in ["gaussian:sigma=1,sigma_z=1", "box:width=3,depth=3", "dilate:se=ball:1", "erode:se=rect:3x3x3",
               "sobel:dx=0,dz=1"]:
        r = apron.filter_files(src, dst, op, check=False)
        one_line_error(r, f"--op {op}", "steps along z", "5 bands", "--volume")
        assert not dst.exists()
    # --volume: the bands are the planes of a volume, and a step along z reads across them.
    apron.filter_files(src, dst, "dilate:se=ball:1", extra=["--volume"])
    got, page = read_bands(dst)
    assert page.samplesperpixel == 5 and page.planarconfig == 1
    z, y, x = np.mgrid[-1:2, -1:2, -1:2]
    np.testing.assert_array_equal(got, ndimage.grey_dilation(bands, footprint=x * x + y * y + z * z <= 1, mode="constant", cval=0))


def test_pages_of_bands(apron, tmp_path):
    a, b = random_image((5, 9, 11), np.uint16, 1), random_image((6, 9, 11), np.uint16, 2)
    src = tmp_path / "two.tif"
    with tifffile.TiffWriter(src) as w:
        w.write(np.moveaxis(a, 0, -1), photometric="minisblack", planarconfig="contig", metadata=None)
        w.write(b, photometric="minisblack", planarconfig="separate", metadata=None)
    # --page picks one page, a band stack as any other.
    apron.filter_files(src, tmp_path / "p1.tif", "box:width=3,height=3", extra=["--page", "1"])
    got, page = read_bands(tmp_path / "p1.tif")
    assert page.samplesperpixel == 6 and page.planarconfig == 2
    ref = np.stack([ndimage.uniform_filter(v.astype(np.float64), 3, mode="reflect") for v in b])
    assert np.abs(got.astype(np.float64) - np.round(ref)).max() <= 1
    # Without it every page would be an image: refused in one line, naming the page.
    r = apron.filter_files(src, tmp_path / "all.tif", "box", check=False)
    one_line_error(r, str(src), "page 0", "5 samples per pixel", "--page")


def test_refusals(apron, tmp_path):
    bands = random_image((13, 9, 11), np.uint8, 6)
    src = tmp_path / "in.tif"
    write_bands(src, bands, False)
    one_line_error(apron.filter_files(src, tmp_path / "o.png", "box", check=False), "13 bands", ".tif")
    one_line_error(apron.filter_files(src, tmp_path / "o.tif", "box", extra=["--stream", "on"], check=False), "13 bands", "whole")
    one_line_error(apron.filter_files(src, tmp_path / "o.tif", "box", extra=["--memory", "1K"], check=False), str(src), "--memory")
    one_line_error(apron.filter_files(src, tmp_path / "o.tif", "box", extra=["--max-pixels", "1000"], check=False), "13 bands",
                   "--max-pixels")
    assert not (tmp_path / "o.tif").exists() and not (tmp_path / "o.png").exists()
    r = apron.run("filter", src, tmp_path / "o.tif", "--op", "gaussian:sigma=1", "--plan")
    assert "band stack: the 13 bands" in r.stdout and "13 planes" in r.stdout


@pytest.mark.parametrize("name", ["regress-bands-spp0.tif", "regress-bands-spp70000.tif", "regress-bands-short-strip.tif",
                                  "regress-bands-missing-strips.tif"])
def test_hostile_headers(apron, tmp_path, name):
    one_line_error(apron.filter_files(CORPUS / name, tmp_path / "o.tif", "median:se=disk:2", check=False), name)
    assert not (tmp_path / "o.tif").exists()
