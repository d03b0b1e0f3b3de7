"""Every operation through the Python API against independent references: SPEC.md's formulas in numpy
(tests/python/conftest.py), SciPy ndimage and OpenCV. Integer morphology and integer-mask correlations are
bit-exact; float results within SPEC.md's tolerance; other integer results within 1."""
import math

import numpy as np
import pytest
import scipy.ndimage as ndi

import apron
from apron_cli_references import (BORDERS, assert_equal_images, assert_f32_close, per_channel, random_image,
                                  spec_correlate, to_type)

cv2 = pytest.importorskip("cv2")

DTYPES = [np.uint8, np.uint16, np.float32]
IDS = ["u8", "u16", "f32"]


def check_linear(got, img, mask, border="reflect", value=0.0, exact=False, convolve=False, scale=1.0, delta=0.0):
    ref = per_channel(lambda c: spec_correlate(c, mask, border, value, convolve=convolve), img) * scale + delta
    if img.dtype == np.float32:
        bound = abs(scale) * np.abs(mask).sum() * max(1.0, float(np.abs(img).max())) + abs(delta)
        assert_f32_close(got, ref, bound, "linear")
    else:
        assert_equal_images(got, to_type(ref, img.dtype), "linear", max_diff=0 if exact else 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("shape", [(1, 1), (9, 13), (17, 6, 3)])
def test_correlate_numpy_mask(dtype, border, shape):
    img = random_image(shape, dtype, seed=1)
    mask = np.random.default_rng(2).integers(-3, 4, size=(3, 5)).astype(np.float64)
    got = apron.correlate(img, mask, border=border, value=7)
    assert got.dtype == img.dtype and got.shape == img.shape
    check_linear(got, img, mask, border, 7.0, exact=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("mshape", [(4, 4), (5, 2), (1, 1)])
def test_convolve_matches_scipy(dtype, mshape):
    img = random_image((11, 14), dtype, seed=3)
    mask = np.random.default_rng(4).uniform(-1, 1, size=mshape)
    got = apron.convolve(img, mask, out_type="f32")
    exp = ndi.convolve(img.astype(np.float64), mask, mode="reflect")
    assert_f32_close(got, exp, np.abs(mask).sum() * float(np.abs(img).max()), "convolve")


def test_correlate_mask_file_and_scale_delta():
    img = random_image((12, 10), np.uint8, seed=5)
    path = str(apron_cli_sample("edge3x3.kernel"))
    got = apron.correlate(img, path, scale=0.5, delta=3, border="nearest")
    rows = [l.split() for l in open(path) if l.strip() and not l.lstrip().startswith("#")]
    mask = np.array(rows[1:], dtype=np.float64)
    check_linear(got, img, mask, "nearest", scale=0.5, delta=3)


def apron_cli_sample(name):
    from conftest import REPO_ROOT

    return REPO_ROOT / "samples" / "masks" / name


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("border", BORDERS)
def test_gaussian_matches_scipy(dtype, border):
    img = random_image((15, 21, 2), dtype, seed=6)
    sigma = 1.5
    got = apron.gaussian(img, sigma, border=border)
    exp = per_channel(lambda c: ndi.gaussian_filter(c.astype(np.float64), sigma, mode=border, cval=0.0,
                                                    radius=math.ceil(3 * sigma)), img)
    if dtype == np.float32:
        assert_f32_close(got, exp, float(np.abs(img).max()), "gaussian")
    else:
        assert_equal_images(got, to_type(exp, dtype), "gaussian", max_diff=1)


def test_gaussian_anisotropic_and_radius():
    img = random_image((20, 25), np.float32, seed=7)
    got = apron.gaussian(img, 1.0, sigma_y=2.0, radius=2, radius_y=5)
    exp = ndi.gaussian_filter(img.astype(np.float64), (2.0, 1.0), mode="reflect", radius=(5, 2))
    assert_f32_close(got, exp, float(np.abs(img).max()), "gaussian sigma_y")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_box_and_separable(dtype):
    img = random_image((13, 17), dtype, seed=8)
    check_linear(apron.box(img, width=3, height=5), img, np.full((5, 3), 1 / 15))
    row, col = [1, 2, 1], [-1, 0, 1]
    check_linear(apron.separable(img, row, column=col, out_type="f32").astype(np.float32)
                 if dtype == np.float32 else apron.separable(img.astype(np.float32), "1:2:1", column="-1:0:1"),
                 img.astype(np.float32), np.outer(col, row))


def test_sharpen_emboss_laplacian_match_their_masks():
    img = random_image((14, 11), np.float32, seed=9)
    s = 0.5
    check_linear(apron.sharpen(img, strength=s), img, np.array([[0, -s, 0], [-s, 1 + 4 * s, -s], [0, -s, 0]]))
    check_linear(apron.emboss(img, delta=2), img, np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], float), delta=2)
    assert_f32_close(apron.laplacian(img), ndi.laplace(img.astype(np.float64), mode="reflect"),
                     8 * float(np.abs(img).max()), "laplace")
    check_linear(apron.laplacian(img, neighbours=8), img, np.array([[1, 1, 1], [1, -8, 1], [1, 1, 1]], float))


def test_unsharp_is_input_plus_amount_times_detail():
    img = random_image((16, 16), np.float32, seed=10)
    got = apron.unsharp(img, 1.2, amount=0.7)
    blur = ndi.gaussian_filter(img.astype(np.float64), 1.2, mode="reflect", radius=4)
    assert_f32_close(got, img + 0.7 * (img - blur), 3 * float(np.abs(img).max()), "unsharp")


@pytest.mark.parametrize("ksize", [3, 5, 7])
@pytest.mark.parametrize("dx,dy", [(1, 0), (0, 1), (2, 1)])
def test_sobel_matches_opencv(ksize, dx, dy):
    img = random_image((19, 23), np.float32, seed=11)
    got = apron.sobel(img, dx=dx, dy=dy, ksize=ksize)
    exp = cv2.Sobel(img, cv2.CV_64F, dx, dy, ksize=ksize, borderType=cv2.BORDER_REFLECT)
    assert_f32_close(got, exp, 4 ** ksize * float(np.abs(img).max()), f"sobel {dx},{dy} k{ksize}")


@pytest.mark.parametrize("dx,dy", [(1, 0), (0, 1)])
def test_scharr_and_prewitt(dx, dy):
    img = random_image((12, 15), np.float32, seed=12)
    exp = cv2.Scharr(img, cv2.CV_64F, dx, dy, borderType=cv2.BORDER_REFLECT)
    assert_f32_close(apron.scharr(img, dx=dx, dy=dy), exp, 32 * float(np.abs(img).max()), "scharr")
    d, smooth = np.array([-1, 0, 1.0]), np.ones(3)
    mask = np.outer(smooth, d) if dx else np.outer(d, smooth)
    check_linear(apron.prewitt(img, dx=dx, dy=dy), img, mask)


def se_kernel(spec):
    shape, size = spec.split(":")
    if shape == "disk":
        r = int(size)
        y, x = np.mgrid[-r:r + 1, -r:r + 1]
        return (x * x + y * y <= r * r).astype(np.uint8)
    w, h = (int(v) for v in size.split("x"))
    return cv2.getStructuringElement({"rect": cv2.MORPH_RECT, "cross": cv2.MORPH_CROSS,
                                      "ellipse": cv2.MORPH_ELLIPSE}[shape], (w, h))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("se", ["rect:3x3", "cross:5x3", "ellipse:7x5", "disk:2", "rect:4x2"])
def test_dilate_erode_match_opencv(dtype, se):
    img = random_image((21, 18, 3), dtype, seed=13)
    k = se_kernel(se)
    assert_equal_images(apron.dilate(img, se=se), cv2.dilate(img, k), f"dilate {se}")
    assert_equal_images(apron.erode(img, se=se, iterations=2), cv2.erode(img, k, iterations=2), f"erode {se}")
    # the same element as a NumPy array
    assert_equal_images(apron.dilate(img, se=k), cv2.dilate(img, k), f"dilate array {se}")


@pytest.mark.parametrize("op,cv", [("open", "MORPH_OPEN"), ("close", "MORPH_CLOSE"), ("gradient", "MORPH_GRADIENT"),
                                   ("tophat", "MORPH_TOPHAT"), ("blackhat", "MORPH_BLACKHAT")])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["u8", "u16"])
def test_morphology_ex_matches_opencv(op, cv, dtype):
    img = random_image((23, 19), dtype, seed=14)
    k = se_kernel("ellipse:5x3")
    got = getattr(apron, op)(img, se="ellipse:5x3")
    assert_equal_images(got, cv2.morphologyEx(img, getattr(cv2, cv), k), op)


def test_dilate_with_border_mode():
    img = random_image((9, 9), np.uint8, seed=15)
    got = apron.dilate(img, se="rect:3x3", border="constant", value=255)
    exp = cv2.dilate(img, np.ones((3, 3), np.uint8), borderType=cv2.BORDER_CONSTANT, borderValue=255)
    assert_equal_images(got, exp, "dilate constant")
