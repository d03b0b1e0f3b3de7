"""Science TIFFs through `apron filter`: every page of a multi-page TIFF filtered and written, each as an
image of its own; the pixel size, description (OME-XML included), text, GeoTIFF and GDAL tags carried from
a TIFF into a TIFF; into PNG and JPEG what has a place there, and one line on stderr for what has not.
tifffile (independent of apron's libtiff code) writes the inputs and reads the outputs; SciPy is the
reference for the pixels. A sweep over the TIFF kinds tifffile writes checks that each is carried through
or refused in one line, never written with pages or tags silently dropped."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

tifffile = pytest.importorskip("tifffile")
PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

GEO_TAGS = [
    (33550, "d", 3, (0.5, 0.5, 0.0)),  # ModelPixelScale
    (33922, "d", 6, (0.0, 0.0, 0.0, 350807.4, 5316081.3, 0.0)),  # ModelTiepoint
    (34735, "H", 16, (1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633)),  # GeoKeyDirectory
    (34736, "d", 2, (6378137.0, 298.257223563)),  # GeoDoubleParams
    (34737, "s", 0, "WGS 84 / UTM zone 33N|"),  # GeoAsciiParams
    (42113, "s", 0, "-9999"),  # GDAL_NODATA
]


def box3(a: np.ndarray) -> np.ndarray:
    return ndimage.uniform_filter(a.astype(np.float64), 3, mode="reflect")


def one_line_error(r, *words):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def zstack(tmp_path):
    """A 5-page u16 z-stack, as tifffile writes one (a shape description on page 0)."""
    stack = np.random.default_rng(26).integers(0, 60000, (5, 23, 17), dtype=np.uint16)
    path = tmp_path / "stack.tif"
    tifffile.imwrite(path, stack, resolution=(4.0, 4.0), resolutionunit="CENTIMETER")
    return path, stack


def test_every_page_is_filtered_and_written(apron, tmp_path, zstack):
    src, stack = zstack
    dst = tmp_path / "out.tif"
    apron.filter_files(src, dst, "box:width=3,height=3", out_type="f32")
    with tifffile.TiffFile(dst) as tif:
        assert len(tif.pages) == 5
        for k, page in enumerate(tif.pages):
            np.testing.assert_allclose(page.asarray(), box3(stack[k]), rtol=1e-6, atol=1e-3)
            assert page.tags["XResolution"].value == (4, 1) and page.tags["ResolutionUnit"].value == 3


def test_pages_of_different_shapes_and_types(apron, tmp_path):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (9, 14), dtype=np.uint8)
    b = rng.random((21, 6, 3), dtype=np.float32)
    src = tmp_path / "mixed.tif"
    with tifffile.TiffWriter(src) as w:
        w.write(a)
        w.write(b, photometric="rgb")
    apron.filter_files(src, tmp_path / "o.tif", "box:width=3,height=3")
    with tifffile.TiffFile(tmp_path / "o.tif") as tif:
        assert [p.shape for p in tif.pages] == [(9, 14), (21, 6, 3)]
        assert tif.pages[0].dtype == np.uint8 and tif.pages[1].dtype == np.float32
        np.testing.assert_array_equal(tif.pages[0].asarray(), np.round(box3(a)).astype(np.uint8))
        ref = np.stack([box3(b[..., c]) for c in range(3)], -1)
        np.testing.assert_allclose(tif.pages[1].asarray(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("out", ["o.png", "o.pgm", "o.jpg", "o.pfm"])
def test_multi_page_into_a_one_image_format_is_refused(apron, tmp_path, zstack, out):
    src, _ = zstack
    r = apron.filter_files(src, tmp_path / out, "box", out_type="f32" if out == "o.pfm" else None, check=False)
    one_line_error(r, str(src), "5 pages", ".tif")
    assert not (tmp_path / out).exists()


@pytest.mark.parametrize("extra", [["--stream", "on"], ["--resume"]])
def test_multi_page_streamed_is_refused(apron, tmp_path, zstack, extra):
    src, _ = zstack
    r = apron.filter_files(src, tmp_path / "o.tif", "box", extra=extra, check=False)
    one_line_error(r, str(src), "5 pages")
    assert not (tmp_path / "o.tif").exists()


def test_multi_page_batch_item_is_refused_by_name(apron, tmp_path, zstack):
    src, _ = zstack
    (tmp_path / "in").mkdir()
    src.rename(tmp_path / "in" / "stack.tif")
    r = apron.run("batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "box", "-q", check=False)
    assert r.returncode != 0
    assert "stack.tif" in r.stderr and "5 pages" in r.stderr
    assert not (tmp_path / "out" / "stack.tif").exists()


def test_ome_tiff_keeps_its_description_unless_the_type_changes(apron, tmp_path):
    stack = np.random.default_rng(5).integers(0, 4000, (3, 16, 12), dtype=np.uint16)
    src = tmp_path / "cells.ome.tif"
    tifffile.imwrite(src, stack, ome=True, metadata={"axes": "ZYX", "PhysicalSizeX": 0.1, "PhysicalSizeY": 0.1})
    with tifffile.TiffFile(src) as tif:
        ome = tif.pages[0].description
    assert "<OME" in ome
    r = apron.filter_files(src, tmp_path / "same.ome.tif", "box:width=3,height=3")
    with tifffile.TiffFile(tmp_path / "same.ome.tif") as tif:
        assert tif.pages[0].description == ome and len(tif.pages) == 3
        assert tif.is_ome
    assert "not carried" not in r.stderr
    # As f32 the OME-XML would claim uint16 pixels: left out, and said so.
    r = apron.filter_files(src, tmp_path / "f.ome.tif", "box:width=3,height=3", out_type="f32")
    assert "OME-XML" in r.stderr and "not carried" in r.stderr
    with tifffile.TiffFile(tmp_path / "f.ome.tif") as tif:
        assert len(tif.pages) == 3
        assert "<OME" not in (tif.pages[0].description or "")


@pytest.fixture
def geotiff(tmp_path):
    dem = np.random.default_rng(11).normal(300, 20, (19, 27)).astype(np.float32)
    path = tmp_path / "dem.tif"
    tifffile.imwrite(path, dem, extratags=GEO_TAGS + [(315, "s", 0, "a surveyor"), (33432, "s", 0, "(c) apron tests")],
                     description="a DEM", software="apron test", datetime="2026:11:26 12:00:00", resolution=(2.0, 2.0),
                     metadata=None)
    return path, dem


def tag_values(path):
    with tifffile.TiffFile(path) as tif:
        return {t.code: t.value for t in tif.pages[0].tags.values()}


GEOTIFF_CARRIED = (33550, 33922, 34735, 34736, 34737, 42113, 270, 305, 306, 315, 33432, 282, 283, 296)


def assert_geotiff_tags_carried(src, dst):
    """Every carried tag of the GeoTIFF input is in the output with the same values."""
    before, after = tag_values(src), tag_values(dst)
    for code in GEOTIFF_CARRIED:
        assert code in after, code
        if isinstance(before[code], tuple) and before[code] and isinstance(before[code][0], float):
            np.testing.assert_array_equal(np.array(after[code]), np.array(before[code]))
        else:
            assert after[code] == before[code], code



def test_geotiff_tags_are_carried_into_tiff(apron, tmp_path, geotiff):
    src, dem = geotiff
    dst = tmp_path / "out.tif"
    r = apron.filter_files(src, dst, "gaussian:sigma=1")
    assert "not carried" not in r.stderr
    assert_geotiff_tags_carried(src, dst)
    with tifffile.TiffFile(dst) as tif:
        assert tif.pages[0].geotiff_tags["ModelPixelScale"] == [0.5, 0.5, 0.0]
        np.testing.assert_allclose(tif.pages[0].asarray(), ndimage.gaussian_filter(dem.astype(np.float64), 1, mode="reflect", truncate=3.0), rtol=1e-4, atol=1e-3)


def test_strip_removes_every_tag(apron, tmp_path, geotiff):
    src, _ = geotiff
    apron.filter_files(src, tmp_path / "bare.tif", "box", extra=["--metadata", "strip"])
    after = tag_values(tmp_path / "bare.tif")
    for code in (33550, 33922, 34735, 34736, 34737, 42113, 270, 305, 306, 315, 33432, 282, 283):
        assert code not in after, code


@pytest.mark.parametrize("out", ["o.png", "o.jpg", "o.pgm"])
def test_geotiff_into_other_formats_says_what_is_not_carried(apron, tmp_path, geotiff, out):
    src, dem = geotiff
    u8 = tmp_path / "dem8.tif"
    tifffile.imwrite(u8, np.clip(dem - 200, 0, 255).astype(np.uint8), extratags=GEO_TAGS, description="a DEM",
                     resolution=(300.0, 300.0), resolutionunit="INCH", metadata=None)
    r = apron.filter_files(u8, tmp_path / out, "box")
    lines = [l for l in r.stderr.splitlines() if "not carried" in l]
    assert len(lines) == 1, r.stderr
    assert "GeoTIFF" in lines[0] and str(tmp_path / out) in lines[0]
    if out == "o.png":
        with Image.open(tmp_path / out) as im:
            assert im.info.get("Description") == "a DEM"
            assert im.info["dpi"] == pytest.approx((300, 300), abs=0.01)
    if out == "o.jpg":
        with Image.open(tmp_path / out) as im:
            assert im.info.get("comment") == b"a DEM" and im.info["dpi"] == (300, 300)
    if out == "o.pgm":
        assert "resolution" in lines[0] and "description" in lines[0]


@pytest.mark.parametrize("compression", ["none", "deflate"])
def test_streamed_tiff_carries_the_tags(apron, tmp_path, geotiff, compression):
    """The tiled BigTIFF sinks write the same tags as the whole-image writer (finding 12)."""
    src, dem = geotiff
    dst = tmp_path / "s.tif"
    r = apron.filter_files(src, dst, "box:width=3,height=3",
                           extra=["--stream", "on", "--tile", "16", "--compression", compression])
    assert "not carried" not in r.stderr
    assert_geotiff_tags_carried(src, dst)
    with tifffile.TiffFile(dst) as tif:
        assert tif.pages[0].is_tiled and tif.pages[0].geotiff_tags["ProjectedCSTypeGeoKey"] == 32633
        np.testing.assert_allclose(tif.pages[0].asarray(), box3(dem), rtol=1e-5, atol=1e-3)


def test_streamed_profile_and_orientation_into_tiff(apron, tmp_path):
    """The colour profile and the orientation of a photo survive a streamed run into TIFF and PNG; into PPM
    they are said to be left out."""
    from PIL import ImageCms

    rgb = np.random.default_rng(15).integers(0, 256, (40, 33, 3), dtype=np.uint8)
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    src = tmp_path / "photo.tif"
    tifffile.imwrite(src, rgb, photometric="rgb", iccprofile=icc, extratags=[(274, "H", 1, 6)], metadata=None)
    apron.filter_files(src, tmp_path / "s.tif", "box", extra=["--stream", "on", "--tile", "16"])
    tags = tag_values(tmp_path / "s.tif")
    assert tags[34675] == icc and tags[274] == 6
    r = apron.filter_files(src, tmp_path / "s.png", "box", extra=["--stream", "on"])
    assert "not carried" not in r.stderr
    with Image.open(tmp_path / "s.png") as im:
        assert im.info.get("icc_profile") == icc and im.getexif().get(0x0112) == 6
    r = apron.filter_files(src, tmp_path / "s.ppm", "box", extra=["--stream", "on"])
    lines = [l for l in r.stderr.splitlines() if "not carried" in l]
    assert len(lines) == 1 and "colour profile" in lines[0] and "orientation" in lines[0] and "streamed" in lines[0]


def test_reduced_resolution_pages_are_refused(apron, tmp_path):
    """A pyramid: a full page and its overview (NewSubfileType 1), and one with SubIFDs."""
    rng = np.random.default_rng(2)
    full = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    src = tmp_path / "pyramid.tif"
    with tifffile.TiffWriter(src) as w:
        w.write(full)
        w.write(full[::2, ::2], subfiletype=1)
    r = apron.filter_files(src, tmp_path / "o.tif", "box", check=False)
    one_line_error(r, str(src), "reduced-resolution")
    sub = tmp_path / "subifds.tif"
    with tifffile.TiffWriter(sub) as w:
        w.write(full, subifds=1)
        w.write(full[::2, ::2], subfiletype=1)
    r = apron.filter_files(sub, tmp_path / "o2.tif", "box", check=False)
    one_line_error(r, str(sub), "SubIFD")
    assert not (tmp_path / "o.tif").exists() and not (tmp_path / "o2.tif").exists()


KINDS = [
    dict(dtype=np.uint8, shape=(3, 11, 9)),
    dict(dtype=np.uint16, shape=(2, 11, 9, 3), photometric="rgb"),
    dict(dtype=np.uint16, shape=(2, 3, 11, 9), photometric="rgb", planarconfig="separate"),
    dict(dtype=np.float32, shape=(4, 11, 9), compression="zlib"),
    dict(dtype=np.uint8, shape=(2, 32, 48), tile=(16, 16)),
    dict(dtype=np.uint8, shape=(2, 11, 9), photometric="miniswhite"),
    dict(dtype=np.int16, shape=(3, 11, 9)),
    dict(dtype=np.uint8, shape=(2, 11, 9, 4), photometric="rgb", extrasamples=["unassalpha"]),
    dict(dtype=np.uint32, shape=(2, 11, 9)),
    dict(dtype=np.float64, shape=(2, 11, 9)),
    dict(dtype=bool, shape=(2, 16, 9)),
    dict(dtype=np.uint8, shape=(2, 11, 9, 5), photometric="minisblack", planarconfig="contig"),
    dict(dtype=np.uint8, shape=(2, 11, 9), photometric="palette", colormap=np.arange(768, dtype=np.uint16).reshape(3, 256) * 85),
    dict(dtype=np.uint8, shape=(2, 16, 16, 3), photometric="rgb", compression="jpeg"),
    dict(dtype=np.uint16, shape=(2, 11, 9), compression="lzw", predictor=True),
    dict(dtype=np.float32, shape=(2, 32, 32), compression="zstd", tile=(16, 16)),
    dict(dtype=np.int8, shape=(2, 11, 9)),
    dict(dtype=np.uint16, shape=(3, 11, 9), byteorder=">"),
    dict(dtype=np.uint8, shape=(2, 11, 9), bigtiff=True),
    dict(dtype=np.uint8, shape=(2, 11, 9, 4), photometric="separated"),
]


@pytest.mark.parametrize("kind", range(len(KINDS)))
def test_sweep_of_tiff_kinds_carried_or_refused(apron, tmp_path, kind):
    k = dict(KINDS[kind])
    dtype, shape = k.pop("dtype"), k.pop("shape")
    rng = np.random.default_rng(kind)
    data = (rng.random(shape) > 0.5) if dtype is bool else rng.integers(0, 100, shape).astype(dtype)
    src = tmp_path / "in.tif"
    options = {key: k.pop(key) for key in ("byteorder", "bigtiff") if key in k}
    with tifffile.TiffWriter(src, **options) as w:
        for page in data:
            w.write(page, description="kind %d" % kind, resolution=(3.0, 3.0), extratags=GEO_TAGS[:1], metadata=None, **k)
    dst = tmp_path / "out.tif"
    r = apron.filter_files(src, dst, "dilate:se=rect:1x1", check=False)
    if r.returncode != 0:
        one_line_error(r, str(src))
        assert not dst.exists()
        return
    with tifffile.TiffFile(src) as a, tifffile.TiffFile(dst) as b:
        assert len(b.pages) == len(a.pages) == len(data)
        for pa, pb in zip(a.pages, b.pages):
            assert pb.description == pa.description
            assert pb.tags["XResolution"].value == pa.tags["XResolution"].value
            assert pb.tags[33550].value == pa.tags[33550].value
            assert pb.shape[:2] == pa.shape[-2:] or pb.shape[:2] == pa.shape[:2]


def test_batch_says_what_each_output_cannot_hold(apron, tmp_path, geotiff):
    src, dem = geotiff
    (tmp_path / "in").mkdir()
    tifffile.imwrite(tmp_path / "in" / "dem8.tif", np.clip(dem - 200, 0, 255).astype(np.uint8), extratags=GEO_TAGS,
                     metadata=None)
    r = apron.run("batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "box", "-q", "--format", "png")
    lines = [l for l in r.stderr.splitlines() if "not carried" in l]
    assert len(lines) == 1 and "GeoTIFF" in lines[0] and "dem8.png" in lines[0], r.stderr
    r = apron.run("batch", tmp_path / "in", "-o", tmp_path / "tif", "--op", "box", "-q", "--format", "tif")
    assert "not carried" not in r.stderr
    assert 33550 in tag_values(tmp_path / "tif" / "dem8.tif")


def test_png_and_jpeg_resolution_and_description_into_tiff(apron, tmp_path):
    rgb = np.random.default_rng(14).integers(0, 256, (12, 10, 3), dtype=np.uint8)
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_itxt("Description", "slide 7")
    Image.fromarray(rgb).save(tmp_path / "p.png", dpi=(254, 254), pnginfo=info)
    apron.filter_files(tmp_path / "p.png", tmp_path / "p.tif", "box")
    tags = tag_values(tmp_path / "p.tif")
    assert tags[270] == "slide 7" and tags[296] == 3  # per centimetre, as pHYs stores per metre
    assert tags[282][0] / tags[282][1] == pytest.approx(100.0)
    Image.fromarray(rgb).save(tmp_path / "j.jpg", dpi=(300, 300), comment=b"scan 3")
    apron.filter_files(tmp_path / "j.jpg", tmp_path / "j.tif", "box")
    tags = tag_values(tmp_path / "j.tif")
    assert tags[270] == "scan 3" and tags[296] == 2 and tags[282] == (300, 1)


def test_plan_of_a_multi_page_file_plans_every_page(apron, tmp_path, zstack):
    src, _ = zstack
    r = apron.run("plan", "--op", "box", "--input", src)
    assert r.stdout.count("page ") == 5 and "page 4 of 5" in r.stdout


def test_other_tags_are_named_not_dropped_silently(apron, tmp_path):
    """Tags apron does not carry (a microscope's Make and Model, a PageName, a private tag) are named on stderr."""
    src = tmp_path / "scope.tif"
    tifffile.imwrite(src, np.zeros((8, 8), np.uint8), metadata=None,
                     extratags=[(271, "s", 0, "ACME"), (272, "s", 0, "Scope 9"), (285, "s", 0, "slice"), (65000, "I", 2, (1, 2))])
    for out in ("o.tif", "o.png"):
        r = apron.filter_files(src, tmp_path / out, "box")
        lines = [l for l in r.stderr.splitlines() if "not carried" in l]
        assert len(lines) == 1, r.stderr
        for name in ("Make (271)", "Model (272)", "PageName (285)", "65000"):
            assert name in lines[0], lines[0]


def test_a_profile_png_refuses_is_said(apron, tmp_path):
    """libpng leaves out a profile that does not fit (here bytes that are no ICC profile) with a mere warning:
    the run says so rather than drop it unsaid."""
    src = tmp_path / "odd.tif"
    tifffile.imwrite(src, np.zeros((6, 5, 3), np.uint8), photometric="rgb", iccprofile=b"not a profile" * 20, metadata=None)
    r = apron.filter_files(src, tmp_path / "o.png", "box")
    lines = [l for l in r.stderr.splitlines() if "not carried" in l]
    assert len(lines) == 1 and "colour profile" in lines[0], r.stderr
    r = apron.filter_files(src, tmp_path / "o.tif", "box")
    assert "not carried" not in r.stderr and tag_values(tmp_path / "o.tif")[34675] == b"not a profile" * 20
