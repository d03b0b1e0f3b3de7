"""apron.ndimage on CuPy arrays and torch CUDA tensors (run on the GPU machine; skipped without a device,
without CuPy/torch, or without apron's CUDA backend): the result is the same kind of array on the same device
and equals SciPy's result on the host copy, as tests/python_api/test_ndimage.py pins for NumPy (selection
filters bit for bit, linear filters within SPEC.md's tolerance), including the dtype conversions done on the
device (int16, int8, bool, int32, float64), strided inputs and output= arrays."""
import numpy as np
import pytest

import apron
import apron.ndimage as an

sn = pytest.importorskip("scipy.ndimage")
pytestmark = pytest.mark.gpu

if not apron.info()["cuda_built"] or "cuda" not in apron.info()["backends"]:
    pytest.skip("apron has no usable CUDA backend here", allow_module_level=True)


def _cupy():
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    return cp


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


def _host(dtype, shape=(37, 41), seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-100, 100, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if info.bits <= 16 else (-(2 ** 20), 2 ** 20)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


FP = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]], bool)
EXACT = [  # (name, args, keywords): SciPy's bits on every dtype below
    ("median_filter", (), {"size": (3, 4)}),
    ("grey_dilation", (), {"footprint": FP, "origin": (1, -1)}),
    ("grey_opening", (), {"size": (2, 5), "mode": "constant", "cval": 1}),
    ("rank_filter", (-2,), {"footprint": FP, "mode": "wrap"}),
    ("minimum_filter", (), {"size": 4, "mode": ["nearest", "mirror"]}),
    ("morphological_gradient", (), {"size": 3}),
]


@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.int16, np.int8, np.int32, np.bool_],
                         ids=["u8", "u16", "f32", "i16", "i8", "i32", "bool"])
def test_selection_filters_on_device_arrays_equal_scipy(lib, dtype):
    host = _host(dtype, seed=1)
    if lib == "cupy":
        cp = _cupy()
        dev, back = cp.asarray(host), cp.asnumpy
    else:
        torch = _torch()
        dev, back = torch.from_numpy(host).cuda(), (lambda t: t.cpu().numpy())
    for name, args, kw in EXACT:
        if dtype == np.bool_ and name == "morphological_gradient":
            continue  # bool - bool is an error in NumPy/SciPy
        got = getattr(an, name)(dev, *args, **kw)
        assert type(got) is type(dev) and got.shape == dev.shape
        assert np.array_equal(back(got), getattr(sn, name)(host, *args, **kw)), (name, lib, np.dtype(dtype))


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_linear_filters_on_device_arrays(lib):
    host = _host(np.float32, seed=2)
    if lib == "cupy":
        cp = _cupy()
        dev, back = cp.asarray(host), cp.asnumpy
    else:
        torch = _torch()
        dev, back = torch.from_numpy(host).cuda(), (lambda t: t.cpu().numpy())
    for name, args, kw, wsum in (("gaussian_filter", (1.5,), {}, 1.0), ("uniform_filter", ((3, 4),), {"origin": (1, -1)}, 1.0),
                                 ("correlate", (np.arange(8.0).reshape(2, 4) - 3,), {"mode": "wrap"}, 16.0),
                                 ("sobel", (0,), {"mode": "constant", "cval": 5.0}, 8.0), ("laplace", (), {}, 8.0),
                                 ("gaussian_filter", (2.0,), {"mode": ["reflect", "constant"], "cval": np.nan}, 1.0)):
        got = back(getattr(an, name)(dev, *args, **kw))
        expected = getattr(sn, name)(host.astype(np.float64), *args, **kw)
        ok = np.isfinite(expected)
        assert np.array_equal(np.isfinite(got), ok), name
        assert np.abs(got[ok] - expected[ok]).max() <= 1e-5 * wsum * 100 + 1e-6, name
    u8 = _host(np.uint8, seed=3)
    d8 = cp.asarray(u8) if lib == "cupy" else torch.from_numpy(u8).cuda()
    got = back(an.uniform_filter(d8, 3))
    truth = sn.correlate(u8.astype(np.float64), np.ones((3, 3))) / 9
    assert np.array_equal(got, np.clip(np.rint(truth), 0, 255).astype(np.uint8))


def test_cupy_strides_outputs_and_float64():
    cp = _cupy()
    host = _host(np.uint16, (30, 40), seed=4)
    dev = cp.asarray(host)
    for view, hview in ((dev.T, host.T), (dev[:, ::3], host[:, ::3]), (cp.asfortranarray(dev), host)):
        assert np.array_equal(cp.asnumpy(an.maximum_filter(view, size=(2, 3))), sn.maximum_filter(hview, size=(2, 3)))
    out = cp.zeros((30, 40), cp.float32)
    assert an.median_filter(dev, 3, output=out) is out
    assert np.array_equal(cp.asnumpy(out), sn.median_filter(host, 3).astype(np.float32))
    f64 = _host(np.float64, seed=5)
    got = an.median_filter(cp.asarray(f64), 5)
    assert got.dtype == cp.float64
    assert np.array_equal(cp.asnumpy(got), sn.median_filter(f64, 5).astype(np.float32).astype(np.float64))
    rgb = _host(np.uint8, (20, 22, 3), seed=6)
    got = an.grey_closing(cp.asarray(rgb), size=(3, 2, 1))
    assert np.array_equal(cp.asnumpy(got), sn.grey_closing(rgb, size=(3, 2, 1)))


def test_torch_output_and_one_dimensional():
    torch = _torch()
    sig = _host(np.float32, (200,), seed=7)
    got = an.gaussian_filter1d(torch.from_numpy(sig).cuda(), 3.0)
    assert got.is_cuda and np.allclose(got.cpu().numpy(), sn.gaussian_filter1d(sig.astype(np.float64), 3.0), atol=1e-3)
    host = _host(np.int16, (25, 26), seed=8)
    out = torch.zeros((25, 26), dtype=torch.int16, device="cuda")
    assert an.grey_erosion(torch.from_numpy(host).cuda(), size=(2, 2), output=out) is out
    assert np.array_equal(out.cpu().numpy(), sn.grey_erosion(host, size=(2, 2)))
