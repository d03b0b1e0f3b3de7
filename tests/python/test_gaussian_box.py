"""gaussian, box and unsharp against scipy.ndimage (SPEC.md "Built-in masks")."""
import math

import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import BORDERS, assert_equal_images, assert_f32_close, random_image, to_type

# (sigma, radius): radius None means the default ceil(3 sigma). SciPy's own default (truncate=4) differs,
# so the reference is always given the radius explicitly.
SIGMAS = [(0.5, None), (1.0, None), (1.5, None), (2.3, None), (1.0, 1), (0.7, 4), (3.0, 2), (0.3, None)]


def gauss_ref(img, sigma, radius, border, value=0.0):
    if isinstance(sigma, tuple):  # (sigma_y, sigma_x)
        radius = tuple(math.ceil(3 * s) if r is None else r for s, r in zip(sigma, radius))
    elif radius is None:
        radius = math.ceil(3 * sigma)
    return ndi.gaussian_filter(np.asarray(img, np.float64), sigma, mode=border, cval=value, radius=radius)


def gauss_spec(sigma, radius, border, value):
    s = f"gaussian:sigma={sigma},border={border}"
    if radius is not None:
        s += f",radius={radius}"
    if border == "constant":
        s += f",value={value}"
    return s


def test_scipy_has_radius():
    import inspect

    assert "radius" in inspect.signature(ndi.gaussian_filter).parameters, "SciPy >= 1.10 needed (radius=)"


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("sigma,radius", SIGMAS, ids=lambda v: str(v))
def test_gaussian_f32(apron, tmp_path, sigma, radius, border):
    img = random_image((23, 37), np.float32, seed=30)
    got = apron.filter(tmp_path, img, gauss_spec(sigma, radius, border, 12.5))
    exp = gauss_ref(img, sigma, radius, border, 12.5)
    assert_f32_close(got, exp, max(np.abs(img).max(), 12.5), f"gaussian sigma={sigma} radius={radius} {border}")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("sigma,radius", [(0.8, None), (1.5, None), (2.0, 3), (4.0, None)], ids=lambda v: str(v))
def test_gaussian_u8_within_one(apron, tmp_path, sigma, radius, border):
    img = random_image((23, 37), np.uint8, seed=31)
    got = apron.filter(tmp_path, img, gauss_spec(sigma, radius, border, 200))
    exp = to_type(gauss_ref(img, sigma, radius, border, 200), np.uint8)
    assert_equal_images(got, exp, f"u8 gaussian sigma={sigma} {border}", max_diff=1)


def test_gaussian_u16_within_one(apron, tmp_path):
    img = random_image((23, 37), np.uint16, seed=32)
    got = apron.filter(tmp_path, img, "gaussian:sigma=1.2,border=mirror")
    exp = to_type(gauss_ref(img, 1.2, None, "mirror"), np.uint16)
    assert_equal_images(got, exp, "u16 gaussian", max_diff=1)


@pytest.mark.parametrize("ishape", [(1, 1), (1, 9), (9, 1), (3, 2)], ids=lambda s: f"img{s[1]}x{s[0]}")
@pytest.mark.parametrize("border", BORDERS)
def test_gaussian_wider_than_image(apron, tmp_path, ishape, border):
    img = random_image(ishape, np.float32, seed=33)
    got = apron.filter(tmp_path, img, gauss_spec(2.0, None, border, 12.5))  # radius 6: 13 taps
    assert_f32_close(got, gauss_ref(img, 2.0, None, border, 12.5), max(np.abs(img).max(), 12.5), f"{ishape} {border}")


@pytest.mark.parametrize(
    "spec,sigma,radius",
    [
        ("gaussian:sigma=1,sigma_y=3", (3.0, 1.0), (None, None)),
        ("gaussian:sigma=2,sigma_y=0.5", (0.5, 2.0), (None, None)),
        ("gaussian:sigma=1,sigma_y=2,radius=2,radius_y=5", (2.0, 1.0), (5, 2)),
        ("gaussian:sigma=1.5,radius=2,radius_y=1", (1.5, 1.5), (1, 2)),
    ],
)
def test_gaussian_anisotropic(apron, tmp_path, spec, sigma, radius):
    img = random_image((23, 37), np.float32, seed=34)
    got = apron.filter(tmp_path, img, spec + ",border=nearest")
    assert_f32_close(got, gauss_ref(img, sigma, radius, "nearest"), np.abs(img).max(), spec)


# ---- box ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("w,h", [(3, 3), (4, 2), (1, 5), (2, 2), (6, 6)], ids=lambda v: str(v))
def test_box_u8_exact(apron, tmp_path, w, h, border):
    """box on integer images: integer weights over one divisor, so exactly the rounded mean."""
    img = random_image((23, 37), np.uint8, seed=35)
    spec = f"box:width={w},height={h},border={border}" + (",value=50" if border == "constant" else "")
    got = apron.filter(tmp_path, img, spec)
    exp = ndi.correlate(img.astype(np.float64), np.ones((h, w)), mode=border, cval=50) / (w * h)
    assert_equal_images(got, to_type(exp, np.uint8), spec)


@pytest.mark.parametrize("border", ["reflect", "wrap", "constant"])
@pytest.mark.parametrize("w,h", [(3, None), (5, 4), (15, 15)], ids=lambda v: str(v))
def test_box_f32(apron, tmp_path, w, h, border):
    img = random_image((13, 11), np.float32, seed=36)  # 15x15 is larger than the image
    spec = f"box:width={w},border={border}" + (f",height={h}" if h else "")
    got = apron.filter(tmp_path, img, spec)
    hh = h or w
    exp = ndi.correlate(img.astype(np.float64), np.full((hh, w), 1.0 / (w * hh)), mode=border)
    assert_f32_close(got, exp, np.abs(img).max(), spec)


def test_box_u16_exact(apron, tmp_path):
    img = random_image((23, 37), np.uint16, seed=37)
    got = apron.filter(tmp_path, img, "box:width=4,height=3,border=mirror")
    exp = ndi.correlate(img.astype(np.float64), np.ones((3, 4)), mode="mirror") / 12
    assert_equal_images(got, to_type(exp, np.uint16), "box 4x3 u16")


# ---- unsharp --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma,amount,border", [(1.5, 0.7, "reflect"), (1.0, 2.0, "wrap"), (0.8, 1.0, "mirror")])
def test_unsharp_f32(apron, tmp_path, sigma, amount, border):
    """in + amount * (in - gaussian(in))."""
    img = random_image((23, 37), np.float32, seed=38)
    got = apron.filter(tmp_path, img, f"unsharp:sigma={sigma},amount={amount},border={border}")
    x = img.astype(np.float64)
    exp = x + amount * (x - gauss_ref(img, sigma, None, border))
    assert_f32_close(got, exp, (1 + 2 * amount) * np.abs(img).max(), "unsharp")


def test_unsharp_scale_delta_f32(apron, tmp_path):
    img = random_image((23, 37), np.float32, seed=39)
    got = apron.filter(tmp_path, img, "unsharp:sigma=1,amount=0.5,scale=2,delta=-3")
    x = img.astype(np.float64)
    exp = 2 * (x + 0.5 * (x - gauss_ref(img, 1.0, None, "reflect"))) - 3
    assert_f32_close(got, exp, 2 * 2 * np.abs(img).max() + 3, "unsharp scale/delta")


@pytest.mark.parametrize("sigma,amount", [(1.0, 1.0), (2.0, 0.5)])
def test_unsharp_u8_within_one(apron, tmp_path, sigma, amount):
    img = random_image((23, 37), np.uint8, seed=40)
    got = apron.filter(tmp_path, img, f"unsharp:sigma={sigma},amount={amount}")
    x = img.astype(np.float64)
    exp = to_type(x + amount * (x - gauss_ref(img, sigma, None, "reflect")), np.uint8)
    assert_equal_images(got, exp, "u8 unsharp", max_diff=1)
