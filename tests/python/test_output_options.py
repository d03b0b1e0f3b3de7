"""Output options are honoured by every writer or refused in one line (issue 26, item 4): --compression and
--tile shape a whole-image TIFF as they shape a streamed one, and options of another format (--quality for a
PNG, --compression or --tile for a PGM) are refused rather than ignored. An existing directory as output is
named as such. TIFF tags are read with tifffile and pixels with Pillow (libtiff), independently of apron."""
from __future__ import annotations

import io

import numpy as np
import pytest
import tifffile
from PIL import Image

from conftest import random_image, write_pnm
from test_stream import needs_tiff  # noqa: F401 (a fixture)

CODES = {"none": 1, "deflate": 8, "zstd": 50000, "lzw": 5}


def filter_whole(apron, src, out, *extra, check=True):
    return apron.run("filter", src, out, "--op", "box:width=1", "--stream", "off", *extra, check=check)


@pytest.mark.parametrize("codec", list(CODES))
@pytest.mark.parametrize("tile", [None, 16, 32])
def test_whole_image_tiff_takes_compression_and_tile(apron, tmp_path, codec, tile, needs_tiff):
    img = random_image((45, 37), np.uint8, seed=5 + len(codec))
    write_pnm(tmp_path / "in.pgm", img)
    out = tmp_path / "out.tif"
    extra = ["--compression", codec] + (["--tile", str(tile)] if tile else [])
    r = filter_whole(apron, tmp_path / "in.pgm", out, *extra, check=False)
    if r.returncode != 0 and f"has no {codec} codec" in r.stderr:
        pytest.skip(f"this libtiff has no {codec}")
    assert r.returncode == 0, r.stderr
    with tifffile.TiffFile(out) as t:
        page = t.pages[0]
        assert page.compression == CODES[codec]
        assert page.is_tiled == bool(tile)
        if tile:
            assert (page.tilewidth, page.tilelength) == (tile, tile)
    got = np.asarray(Image.open(io.BytesIO(out.read_bytes())))
    assert got.shape == img.shape and np.array_equal(got, img)


def test_whole_image_tiff_default_is_deflate_strips(apron, tmp_path, needs_tiff):
    img = random_image((20, 30), np.uint16, seed=8)
    write_pnm(tmp_path / "in.pgm", img)
    filter_whole(apron, tmp_path / "in.pgm", tmp_path / "out.tif")
    with tifffile.TiffFile(tmp_path / "out.tif") as t:
        assert t.pages[0].compression == CODES["deflate"] and not t.pages[0].is_tiled
        assert np.array_equal(t.asarray(), img)


@pytest.mark.parametrize("out, extra, message", [
    ("o.png", ["--quality", "80"], "--quality: {out} is not a JPEG file"),
    ("o.tif", ["--quality", "80"], "--quality: {out} is not a JPEG file"),
    ("o.pgm", ["--compression", "zstd"], "--compression: {out} is not a TIFF file"),
    ("o.png", ["--compression", "none"], "--compression: {out} is not a TIFF file"),
    ("o.pgm", ["--tile", "64"], "--tile: {out} is not a TIFF file"),
])
@pytest.mark.parametrize("stream", ["on", "off"])
def test_an_option_of_another_format_is_refused(apron, tmp_path, out, extra, message, stream):
    write_pnm(tmp_path / "in.pgm", random_image((10, 12), np.uint8, seed=1))
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / out, "--op", "box", "--stream", stream, *extra, check=False)
    assert r.returncode != 0 and message.format(out=tmp_path / out) in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / out).exists()


def test_quality_is_taken_for_jpeg(apron, tmp_path):
    write_pnm(tmp_path / "in.pgm", random_image((16, 16), np.uint8, seed=2))
    low, high = tmp_path / "low.jpg", tmp_path / "high.jpg"
    filter_whole(apron, tmp_path / "in.pgm", low, "--quality", "10")
    filter_whole(apron, tmp_path / "in.pgm", high, "--quality", "100")
    assert low.stat().st_size < high.stat().st_size


@pytest.mark.parametrize("stream", ["on", "off"])
@pytest.mark.parametrize("slash", ["", "/"])
def test_an_existing_directory_as_output_is_named(apron, tmp_path, stream, slash):
    write_pnm(tmp_path / "in.pgm", random_image((10, 12), np.uint8, seed=3))
    (tmp_path / "outdir").mkdir()
    out = str(tmp_path / "outdir") + slash
    r = apron.run("filter", tmp_path / "in.pgm", out, "--op", "box", "--stream", stream, check=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"{out}: is a directory; give a file name such as {tmp_path / 'outdir'}/name.png" in r.stderr, r.stderr
    assert list((tmp_path / "outdir").iterdir()) == []


def test_a_directory_named_like_an_image_is_named_too(apron, tmp_path):
    write_pnm(tmp_path / "in.pgm", random_image((10, 12), np.uint8, seed=4))
    (tmp_path / "looks.png").mkdir()
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "looks.png", "--op", "box", check=False)
    assert r.returncode == 1 and "looks.png: is a directory; give a file name such as" in r.stderr, r.stderr


def test_batch_refuses_quality_for_another_format(apron, tmp_path):
    (tmp_path / "in").mkdir()
    write_pnm(tmp_path / "in" / "a.pgm", random_image((10, 12), np.uint8, seed=5))
    r = apron.run("batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "box", "--format", "png", "--quality", "80",
                  check=False)
    assert r.returncode != 0 and "--quality: --format png is not JPEG" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    ok = apron.run("batch", tmp_path / "in", "-o", tmp_path / "jpg", "--op", "box", "--format", "jpg", "--quality", "80", "-q")
    assert ok.returncode == 0 and (tmp_path / "jpg" / "a.jpg").exists()
