"""apron.ndimage on CuPy arrays and torch CUDA tensors (run on the GPU machine; skipped without a device,
without CuPy/torch, or without apron's CUDA backend): the result is the same kind of array on the same device
and equals SciPy's result on the host copy, as tests/python_api/test_ndimage.py pins for NumPy (selection
filters bit for bit, linear filters within SPEC.md's tolerance), including the dtype conversions done on the
device (int16, int8, bool, int32, float64), strided inputs and output= arrays."""
import numpy as np
import pytest

import apron
import apron.ndimage as an
from apron_cli_references import random_array

sn = pytest.importorskip("scipy.ndimage")
pytestmark = pytest.mark.gpu

if not apron.info()["cuda_built"] or "cuda" not in apron.info()["backends"]:
    pytest.skip("apron has no usable CUDA backend here", allow_module_level=True)


SHAPE = (37, 41)


FP = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], bool)
EXACT = [  # (name, args, keywords): SciPy's bits on every dtype below
    ("median_filter", (), {"size": (3, 4)}),
    ("grey_dilation", (), {"footprint": FP, "origin": (1, -1)}),
    ("grey_opening", (), {"size": (2, 5), "mode": "constant", "cval": 1}),
    ("rank_filter", (-2,), {"footprint": FP, "mode": "wrap"}),
    ("minimum_filter", (), {"size": 4, "mode": ["nearest", "mirror"]}),
    ("morphological_gradient", (), {"size": 3}),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.int16, np.int8, np.int32, np.bool_],
                         ids=["u8", "u16", "f32", "i16", "i8", "i32", "bool"])
def test_selection_filters_on_device_arrays_equal_scipy(device_lib, dtype):
    host = random_array(SHAPE, dtype, seed=1)
    dev, back = device_lib.put(host), device_lib.back
    for name, args, kw in EXACT:
        if dtype == np.bool_ and name == "morphological_gradient":
            continue  # bool - bool is an error in NumPy/SciPy
        got = getattr(an, name)(dev, *args, **kw)
        assert type(got) is type(dev) and got.shape == dev.shape
        assert np.array_equal(back(got), getattr(sn, name)(host, *args, **kw)), (name, device_lib.name, np.dtype(dtype))


def test_volumes_on_device_arrays(device_lib):
    """A (Z, Y, X) volume on the device: z passes on the (Z, Y * X) view, plane-by-plane passes stacked on the
    device (cupy.stack / torch.stack), within SPEC.md's tolerance of SciPy."""
    host = random_array((6, 9, 11), np.float32, seed=4)
    dev, back = device_lib.put(host), device_lib.back
    for name, args, kw, wsum in (("gaussian_filter", ((1.0, 1.5, 0.8),), {"mode": "wrap"}, 1.0),
                                 ("uniform_filter", ((3, 2, 4),), {"mode": "constant", "cval": 2.0}, 1.0),
                                 ("correlate1d", ([1.0, -2.0, 0.5], 0), {"origin": 1}, 3.5), ("sobel", (0,), {}, 32.0)):
        got = getattr(an, name)(dev, *args, **kw)
        assert type(got) is type(dev) and tuple(got.shape) == host.shape, name
        expected = getattr(sn, name)(host.astype(np.float64), *args, **kw)
        assert np.abs(back(got) - expected).max() <= 1e-5 * wsum * 100 + 1e-6, name


def test_linear_filters_on_device_arrays(device_lib):
    host = random_array(SHAPE, np.float32, seed=2)
    dev, back = device_lib.put(host), device_lib.back
    for name, args, kw, wsum in (("gaussian_filter", (1.5,), {}, 1.0), ("uniform_filter", ((3, 4),), {"origin": (1, -1)}, 1.0),
                                 ("correlate", (np.arange(8.0).reshape(2, 4) - 3,), {"mode": "wrap"}, 16.0),
                                 ("sobel", (0,), {"mode": "constant", "cval": 5.0}, 8.0), ("laplace", (), {}, 8.0),
                                 ("gaussian_filter", (2.0,), {"mode": ["reflect", "constant"], "cval": np.nan}, 1.0)):
        got = back(getattr(an, name)(dev, *args, **kw))
        expected = getattr(sn, name)(host.astype(np.float64), *args, **kw)
        ok = np.isfinite(expected)
        assert np.array_equal(np.isfinite(got), ok), name
        assert np.abs(got[ok] - expected[ok]).max() <= 1e-5 * wsum * 100 + 1e-6, name
    u8 = random_array(SHAPE, np.uint8, seed=3)
    d8 = device_lib.put(u8)
    got = back(an.uniform_filter(d8, 3))
    truth = sn.correlate(u8.astype(np.float64), np.ones((3, 3))) / 9
    assert np.array_equal(got, np.clip(np.rint(truth), 0, 255).astype(np.uint8))


def test_cupy_strides_outputs_and_float64(cp):
    host = random_array((30, 40), np.uint16, seed=4)
    dev = cp.asarray(host)
    for view, hview in ((dev.T, host.T), (dev[:, ::3], host[:, ::3]), (cp.asfortranarray(dev), host)):
        assert np.array_equal(cp.asnumpy(an.maximum_filter(view, size=(2, 3))), sn.maximum_filter(hview, size=(2, 3)))
    out = cp.zeros((30, 40), cp.float32)
    assert an.median_filter(dev, 3, output=out) is out
    assert np.array_equal(cp.asnumpy(out), sn.median_filter(host, 3).astype(np.float32))
    f64 = random_array(SHAPE, np.float64, seed=5)
    got = an.median_filter(cp.asarray(f64), 5)
    assert got.dtype == cp.float64
    assert np.array_equal(cp.asnumpy(got), sn.median_filter(f64, 5).astype(np.float32).astype(np.float64))
    rgb = random_array((20, 22, 3), np.uint8, seed=6)
    got = an.grey_closing(cp.asarray(rgb), size=(3, 2, 1))
    assert np.array_equal(cp.asnumpy(got), sn.grey_closing(rgb, size=(3, 2, 1)))


def test_torch_output_and_one_dimensional(torch):
    sig = random_array((200,), np.float32, seed=7)
    got = an.gaussian_filter1d(torch.from_numpy(sig).cuda(), 3.0)
    assert got.is_cuda and np.allclose(got.cpu().numpy(), sn.gaussian_filter1d(sig.astype(np.float64), 3.0), atol=1e-3)
    host = random_array((25, 26), np.int16, seed=8)
    out = torch.zeros((25, 26), dtype=torch.int16, device="cuda")
    assert an.grey_erosion(torch.from_numpy(host).cuda(), size=(2, 2), output=out) is out
    assert np.array_equal(out.cpu().numpy(), sn.grey_erosion(host, size=(2, 2)))


BALL1 = np.array([[[0, 0, 0], [0, 1, 0], [0, 0, 0]], [[0, 1, 0], [1, 1, 1], [0, 1, 0]], [[0, 0, 0], [0, 1, 0], [0, 0, 0]]], bool)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
def test_volume_footprints_and_ranks_on_device_arrays(device_lib, dtype):
    """3-D footprints (one apron call over the whole volume: the volume's rank step, the union of plane
    elements) on a device volume: SciPy's bits, the result on the same device."""
    host = random_array((7, 10, 13), dtype, seed=6)
    dev, back = device_lib.put(host), device_lib.back
    for name, args, kw in (("median_filter", (), {"size": (3, 3, 3)}),
                           ("percentile_filter", (30,), {"footprint": BALL1, "mode": "wrap"}),
                           ("grey_dilation", (), {"footprint": BALL1, "mode": "nearest"}),
                           ("minimum_filter", (), {"footprint": BALL1[:, :2], "mode": "constant", "cval": 3})):
        got = getattr(an, name)(dev, *args, **kw)
        assert type(got) is type(dev) and tuple(got.shape) == host.shape, name
        assert np.array_equal(back(got), getattr(sn, name)(host, *args, **kw)), (name, device_lib.name, np.dtype(dtype))


def test_volume_weights_on_device_arrays(device_lib):
    """correlate / convolve with 3-D weights (even sizes, an origin, a NaN cval padded in 3-D) on a device
    volume, within SPEC.md's tolerance of SciPy."""
    host = random_array((6, 9, 11), np.float32, seed=7)
    dev, back = device_lib.put(host), device_lib.back
    w = np.random.default_rng(8).uniform(-1, 1, (2, 3, 4))
    for name, kw in (("correlate", {"mode": "reflect"}), ("convolve", {"mode": "mirror", "origin": (0, 1, -1)}),
                     ("correlate", {"mode": "constant", "cval": np.nan})):
        got = getattr(an, name)(dev, w, **kw)
        assert type(got) is type(dev) and tuple(got.shape) == host.shape, name
        expected = getattr(sn, name)(host.astype(np.float64), w, **kw)
        diff = np.abs(back(got) - expected)
        assert np.array_equal(np.isnan(back(got)), np.isnan(expected)), (name, kw)
        assert np.nanmax(diff) <= 1e-5 * np.abs(w).sum() + 1e-6, (name, kw)
