"""Volumes through the Python package (layout='zyx', 'zyxc'): 3-D filters against SciPy's N-D filters and the
ball's definition (scikit-image's morphology.ball: x^2 + y^2 + z^2 <= R^2, restated here), stacks of images as
one call of planes, and device arrays (CuPy, torch) as volumes without a copy."""
import numpy as np
import pytest
import scipy.ndimage as ndi

import apron

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]


def ball(r):
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def volume(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        return rng.uniform(-1, 2, shape).astype(np.float32)
    return rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_gaussian_with_sigma_z_on_zyx_arrays_is_scipys(mode, dtype):
    v = volume((7, 19, 23), dtype, 1)
    got = apron.gaussian(v, sigma=1.5, sigma_y=1, sigma_z=0.7, border=mode, value=3, layout="zyx")
    assert got.shape == v.shape and got.dtype == v.dtype
    ref = ndi.gaussian_filter(v.astype(np.float64), (0.7, 1, 1.5), mode=mode, cval=3, radius=(3, 3, 5))
    if dtype == np.float32:
        np.testing.assert_allclose(got, ref, atol=2e-5 * 3)
    else:
        assert np.abs(got - np.clip(np.round(ref), 0, np.iinfo(dtype).max)).max() <= 1


def test_colour_volumes_filter_each_channel_in_3d():
    v = volume((6, 11, 13, 3), np.uint16, 2)
    got = apron.box(v, width=3, height=3, depth=3, border="nearest", layout="zyxc", out_type="f32")
    for c in range(3):
        np.testing.assert_allclose(got[..., c], ndi.uniform_filter(v[..., c].astype(np.float64), 3, mode="nearest"), atol=1e-3)
    got = apron.dilate(v, se="ball:2", layout="zyxc")
    for c in range(3):
        np.testing.assert_array_equal(got[..., c], ndi.grey_dilation(v[..., c], footprint=ball(2), mode="constant", cval=0))


@pytest.mark.parametrize("r", [1, 3])
def test_ball_morphology_on_strided_and_float_volumes(r):
    v = volume((9, 14, 16), np.float32, 3)
    v[2, 3, 4] = np.nan  # a missing sample: skipped
    got = apron.erode(v, se=f"ball:{r}", border="reflect", layout="zyx")
    ref = ndi.grey_erosion(np.where(np.isnan(v), np.inf, v), footprint=ball(r), mode="reflect")
    np.testing.assert_array_equal(got, ref)
    strided = volume((18, 14, 16), np.uint8, 4)[::2]  # planes 2 apart: copied once into consecutive planes
    np.testing.assert_array_equal(apron.dilate(strided, se=f"ball:{r}", layout="zyx"),
                                  ndi.grey_dilation(strided, footprint=ball(r), mode="constant", cval=0))


def test_a_stack_of_images_is_one_call_with_the_per_image_bits():
    s = volume((5, 3, 40, 36), np.uint8, 5)
    per_image = np.stack([np.stack([apron.gaussian(s[n, c], sigma=1.2) for c in range(3)]) for n in range(5)])
    np.testing.assert_array_equal(apron.gaussian(s, sigma=1.2, layout="nchw"), per_image)
    # A step along z on a stack reads each image alone (a volume of one plane), never its neighbours.
    np.testing.assert_array_equal(apron.gaussian(s, sigma=1.2, sigma_z=2, layout="nchw"),
                                  np.stack([np.stack([apron.gaussian(s[n, c], sigma=1.2, sigma_z=2) for c in range(3)])
                                            for n in range(5)]))


def test_volume_layout_errors_name_the_parameter():
    with pytest.raises(ValueError, match="layout: 'zyx' reads a 3-D array"):
        apron.gaussian(np.zeros((4, 5), np.uint8), sigma=1, layout="zyx")
    with pytest.raises(ValueError, match="zyxc"):
        apron.gaussian(np.zeros((4, 5, 6), np.uint8), sigma=1, layout="xyz")
    with pytest.raises(ValueError, match="channels"):
        apron.gaussian(np.zeros((4, 5, 6, 7), np.uint8), sigma=1, layout="zyxc")
    with pytest.raises(ValueError, match="se"):
        apron.dilate(np.zeros((4, 5, 6), np.uint8), se="ball:500", layout="zyx")


@pytest.mark.gpu
def test_device_volumes_match_the_cpu_backend(device_lib):
    if "cuda" not in apron.info()["backends"]:
        pytest.skip("apron has no usable CUDA backend here")
    v = volume((8, 33, 29), np.uint16, 6)
    d = device_lib.put(v)
    got = device_lib.back(apron.dilate(d, se="ball:2", layout="zyx"))
    np.testing.assert_array_equal(got, apron.dilate(v, se="ball:2", layout="zyx", backend="cpu"))
    g = device_lib.back(apron.gaussian(d, sigma=2, sigma_z=1, layout="zyx"))
    assert np.abs(g.astype(np.int64) - apron.gaussian(v, sigma=2, sigma_z=1, layout="zyx", backend="cpu")).max() <= 1
