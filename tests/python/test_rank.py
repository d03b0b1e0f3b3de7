"""Rank filters (SPEC.md "Rank"): median, percentile and rank through the CLI against scipy.ndimage's
median_filter / percentile_filter / rank_filter with the same footprint and mode, on u8 / u16 / f32, gray
and colour, every border mode, random and even footprints, windows larger than the image; the NaN rule
against a NumPy statement of it; -0 and +0 told apart."""
import numpy as np
import pytest

from conftest import BORDERS, assert_equal_images, random_image, write_mask

ndi = pytest.importorskip("scipy.ndimage")


def scipy_rank(img, footprint, rank, mode, cval=0.0):
    """scipy.ndimage.rank_filter per channel (apron filters each channel alike with the same window)."""
    if img.ndim == 2:
        return ndi.rank_filter(img, rank, footprint=footprint, mode=mode, cval=cval)
    return np.stack([ndi.rank_filter(img[..., c], rank, footprint=footprint, mode=mode, cval=cval)
                     for c in range(img.shape[2])], axis=-1)


def disk(r):
    y, x = np.mgrid[-r : r + 1, -r : r + 1]
    return (x * x + y * y <= r * r).astype(np.uint8)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("border", BORDERS)
def test_median_square_every_border_and_type(apron, tmp_path, dtype, border, backend):
    img = random_image((23, 31, 3), dtype, seed=5)
    for k in (3, 5):
        got = apron.filter(tmp_path, img, f"median:se=rect:{k}x{k},border={border},value=7", extra=["--backend", backend])
        exp = scipy_rank(img, np.ones((k, k), bool), k * k // 2, border, cval=7)
        assert_equal_images(got, exp, f"median {k}x{k} {border} {np.dtype(dtype).name}")


@pytest.mark.parametrize("seed", range(5))
def test_random_and_even_footprints_against_scipy(apron, tmp_path, seed):
    rng = np.random.default_rng(300 + seed)
    w, h = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    fp = rng.random((h, w)) < 0.6
    fp[rng.integers(h), rng.integers(w)] = True
    n = int(fp.sum())
    se = write_mask(tmp_path / "fp.se", fp.astype(np.uint8))
    img = random_image((17, 26) if seed % 2 else (17, 26, 3), [np.uint8, np.uint16, np.float32][seed % 3], seed=seed)
    border = BORDERS[seed % 5]
    for spec, rank in ((f"median:se={se}", n // 2), (f"rank:r=0,se={se}", 0), (f"rank:r=-1,se={se}", n - 1),
                       (f"percentile:p=30,se={se}", int(n * 30 / 100))):
        got = apron.filter(tmp_path, img, f"{spec},border={border}")
        assert_equal_images(got, scipy_rank(img, fp, rank, border), f"{spec} {fp.shape} {border}")


@pytest.mark.parametrize("p", [0, 12.5, 50, 99.9, 100])
def test_percentile_rule_is_scipys(apron, tmp_path, p):
    img = random_image((19, 21), np.uint16, seed=11)
    got = apron.filter(tmp_path, img, f"percentile:p={p},se=ellipse:7x5,border=mirror")
    cv2 = pytest.importorskip("cv2")  # apron's ellipse is OpenCV's getStructuringElement (SPEC.md "Morphology")
    fp = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 5)).astype(bool)
    exp = ndi.percentile_filter(img, p, footprint=fp, mode="mirror")
    assert_equal_images(got, exp, f"percentile {p}")


def test_disks_and_windows_larger_than_the_image(apron, tmp_path):
    img = random_image((9, 7, 3), np.uint8, seed=21)
    for r in (2, 7):
        got = apron.filter(tmp_path, img, f"median:se=disk:{r},border=wrap")
        assert_equal_images(got, scipy_rank(img, disk(r).astype(bool), int(disk(r).sum()) // 2, "wrap"), f"disk:{r}")
    one = random_image((1, 1), np.float32, seed=2)
    assert_equal_images(apron.filter(tmp_path, one, "median:se=rect:5x5"), one, "1x1")


def nan_rank_numpy(img, fp, rank, mode):
    """SPEC.md's NaN rule in NumPy: of the v valid samples, rank floor(rank * v / n); NaN when v = 0."""
    n = int(fp.sum())
    h, w = fp.shape
    pad = {"constant": "constant", "nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}[mode]
    cy, cx = h // 2, w // 2
    padded = np.pad(img, ((cy, h - 1 - cy), (cx, w - 1 - cx)), mode=pad)
    out = np.empty_like(img)
    ys, xs = np.nonzero(fp)
    for y in range(img.shape[0]):
        for x in range(img.shape[1]):
            window = padded[y + ys, x + xs]
            valid = np.sort(window[~np.isnan(window)])
            out[y, x] = np.nan if valid.size == 0 else valid[rank * valid.size // n]
    return out


@pytest.mark.parametrize("mode", ["reflect", "nearest", "wrap"])
def test_nan_is_a_missing_sample(apron, tmp_path, mode):
    rng = np.random.default_rng(7)
    img = rng.uniform(1, 100, size=(21, 24)).astype(np.float32)
    img[rng.random(img.shape) < 0.3] = np.nan
    img[3:12, 4:15] = np.nan  # a hole wider than the window: NaN out, never a finite stand-in
    fp = disk(2).astype(bool)
    for spec, rank in (("median:se=disk:2", 6), ("rank:r=0,se=disk:2", 0), ("rank:r=-1,se=disk:2", 12),
                       ("percentile:p=75,se=disk:2", 9)):
        got = apron.filter(tmp_path, img, f"{spec},border={mode}")
        exp = nan_rank_numpy(img, fp, rank, mode)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(exp), err_msg=spec)
        np.testing.assert_array_equal(got[~np.isnan(got)], exp[~np.isnan(exp)], err_msg=spec)
    assert np.isnan(got[7, 9])


def test_minus_zero_before_plus_zero(apron, tmp_path):
    """IEEE totalOrder: -0 < +0, so the result is one sample's bits (SPEC.md "Rank")."""
    img = np.array([[-0.0, 0.0, 0.0, -0.0, -0.0]], np.float32)
    got = apron.filter(tmp_path, img, "median:se=rect:3x1,border=nearest")
    # windows (nearest): [-0 -0 +0] [-0 +0 +0] [+0 +0 -0] [+0 -0 -0] [-0 -0 -0] -> medians -0 +0 +0 -0 -0
    np.testing.assert_array_equal(np.signbit(got[0]), [True, False, False, True, True])


def test_rank_out_of_range_is_one_line_naming_r(apron, tmp_path):
    img = random_image((5, 5), np.uint8, seed=1)
    r = apron.run("filter", write_mask(tmp_path / "x.se", np.ones((1, 1))), tmp_path / "o.pgm",
                  "--op", "rank:r=9,se=rect:3x3", check=False)
    assert r.returncode != 0
    line = r.stderr.strip()
    assert "\n" not in line and "r: 9 is outside -9..8 (the element has 9 cells)" in line, line
    assert not (tmp_path / "o.pgm").exists()
    del img


def test_streamed_bands_equal_the_whole_run(apron, tmp_path):
    img = random_image((301, 97, 3), np.uint8, seed=9)
    whole = apron.filter(tmp_path, img, "median:se=disk:4,border=mirror")
    bands = apron.filter(tmp_path, img, "median:se=disk:4,border=mirror", extra=["--stream", "on", "--band-rows", "16"])
    assert_equal_images(bands, whole, "bands")
