"""16-bit floats: float16 (NumPy, CuPy, torch) and torch's bfloat16, through apron's functions, Pipeline.run and
apron.ndimage.

What is pinned (docs/python.md "16-bit floats"): the input is converted to float32 once, the pipeline runs in
float32, and a 16-bit result is the float32 result rounded once to the 16-bit type (to nearest, ties to even):
bit for bit `result32.astype(float16)`. Against SciPy computed in float64: within SPEC.md's float32 tolerance
(1e-5 * sum|w| * max|in|) plus half an ulp of the 16-bit type at the result's magnitude; against SciPy's
float64 result cast to the 16-bit type, within that tolerance plus one ulp (a rounding on each side). An
output type (out_type= / output=) of float32 or an integer type is written straight from the float32 run.
"""
import numpy as np
import pytest

import apron
import apron.ndimage as an

sn = pytest.importorskip("scipy.ndimage")

MANTISSA = {"float16": 10, "bfloat16": 7}
SMALLEST = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}


def ulp(values, name="float16"):
    """The spacing of the 16-bit type at each magnitude (its subnormal spacing near 0)."""
    mag = np.abs(np.asarray(values, np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    return np.maximum(2.0 ** (e - MANTISSA[name]), SMALLEST[name])


def assert_within(got16, ref64, l1, max_in, name="float16"):
    """got16 (a 16-bit result) against SciPy's float64 result: SPEC's float32 tolerance, then one rounding."""
    got = np.asarray(got16, np.float64)
    tol32 = 1e-5 * l1 * max_in
    bound = tol32 + 0.5 * ulp(np.abs(ref64) + tol32, name)
    assert np.all(np.abs(got - ref64) <= bound), float(np.max(np.abs(got - ref64) - bound))
    if name == "float16":  # against SciPy's result cast: a rounding on each side
        cast = ref64.astype(np.float16).astype(np.float64)
        assert np.all(np.abs(got - cast) <= tol32 + ulp(np.abs(ref64) + tol32, name))


def half_image(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 120 - 20).astype(np.float16)


MASK = np.array([[0.5, -1.0, 0.25], [2.0, 1.0, -0.75], [0.125, 0.5, 1.5]])

# (apron call, the same through SciPy in float64, sum|w|): linear filters
LINEAR = [
    pytest.param(lambda a, **k: apron.gaussian(a, 2.0, **k),
                 lambda x: sn.gaussian_filter(x, 2.0, radius=6, axes=(0, 1)), 1.0, id="gaussian"),
    pytest.param(lambda a, **k: apron.box(a, 5, 3, **k),
                 lambda x: sn.uniform_filter(x, (3, 5), axes=(0, 1)), 1.0, id="box"),
    pytest.param(lambda a, **k: apron.correlate(a, MASK, **k),
                 lambda x: sn.correlate(x, MASK[:, :, None] if x.ndim == 3 else MASK), np.abs(MASK).sum(),
                 id="correlate"),
    pytest.param(lambda a, **k: apron.box(a, 4, 4, border="constant", value=3, **k),
                 lambda x: sn.uniform_filter(x, 4, mode="constant", cval=3, axes=(0, 1)), 1.0, id="box-even-constant"),
]


@pytest.mark.parametrize("shape", [(31, 45), (20, 33, 3)])
@pytest.mark.parametrize("apron_call,scipy_call,l1", LINEAR)
def test_functions_take_float16_and_return_it(apron_call, scipy_call, l1, shape):
    a = half_image(shape, seed=1)
    got = apron_call(a)
    assert got.dtype == np.float16 and got.shape == a.shape
    # one rounding of the float32 run, bit for bit
    assert np.array_equal(got, apron_call(a.astype(np.float32)).astype(np.float16))
    assert_within(got, scipy_call(a.astype(np.float64)), l1, np.abs(a.astype(np.float64)).max())


def test_out_type_and_out():
    a = half_image((24, 30), seed=2)
    r32 = apron.gaussian(a.astype(np.float32), 1.5)
    assert apron.gaussian(a, 1.5, out_type="f32").dtype == np.float32
    assert np.array_equal(apron.gaussian(a, 1.5, out_type=np.float32), r32)
    assert np.array_equal(apron.gaussian(a, 1.5, out_type="u8"),
                          apron.gaussian(a.astype(np.float32), 1.5, out_type="u8"))
    for name in ("f16", "float16", np.float16, np.dtype("float16")):
        assert np.array_equal(apron.gaussian(a, 1.5, out_type=name), r32.astype(np.float16))
    out = np.full((24, 30), np.nan, np.float16)
    assert apron.gaussian(a, 1.5, out=out) is out and np.array_equal(out, r32.astype(np.float16))
    out32 = np.empty((24, 30), np.float32)
    assert apron.gaussian(a, 1.5, out=out32) is out32 and np.array_equal(out32, r32)
    col = np.empty((24, 30, 1), np.float16)  # (H, W) and (H, W, 1) are interchangeable, as for the other types
    assert np.array_equal(apron.gaussian(a, 1.5, out=col)[..., 0], r32.astype(np.float16))
    # a u8 image into a float16 result
    u8 = np.random.default_rng(3).integers(0, 256, (24, 30), dtype=np.uint8)
    got = apron.box(u8, 5, out_type="f16")
    assert got.dtype == np.float16 and np.array_equal(got, apron.box(u8, 5, out_type="f32").astype(np.float16))
    with pytest.raises(ValueError, match="out: dtype float32 but out_type asks for float16"):
        apron.gaussian(a, 1.5, out=out32, out_type="f16")
    with pytest.raises(ValueError, match="out: shape"):
        apron.gaussian(a, 1.5, out=np.empty((24, 31), np.float16))
    with pytest.raises(ValueError, match="overlaps"):
        apron.gaussian(a, 1.5, out=a)
    ro = np.empty((24, 30), np.float16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        apron.gaussian(a, 1.5, out=ro)
    with pytest.raises(TypeError, match="bfloat16 results"):
        apron.gaussian(a, 1.5, out_type="bf16")


def test_selections_are_exact():
    a = half_image((29, 37), seed=4)
    a[3, 4] = np.float16(65504)  # float16's largest: converted exactly
    a[5, 6] = np.float16(6e-8)   # a subnormal
    got = apron.dilate(a, "ellipse:5x5")
    assert got.dtype == np.float16
    assert np.array_equal(got, apron.dilate(a.astype(np.float32), "ellipse:5x5").astype(np.float16))
    assert np.array_equal(apron.median(a, 5), sn.median_filter(a.astype(np.float32), 5).astype(np.float16))
    assert np.array_equal(apron.dilate(a, "rect:3x3"),
                          sn.grey_dilation(a.astype(np.float32), size=3).astype(np.float16))


def test_pipelines_stacks_and_plans():
    a = half_image((18, 26, 4), seed=5)
    p = apron.Pipeline(["gaussian:sigma=1", "dilate:se=rect:3x3"])
    got = p.run(a)
    assert got.dtype == np.float16 and np.array_equal(got, p.run(a.astype(np.float32)).astype(np.float16))
    stack = half_image((3, 18, 26), seed=6)
    got = p.run(stack, layout="chw")
    assert got.dtype == np.float16
    assert np.array_equal(got, p.run(stack.astype(np.float32), layout="chw").astype(np.float16))
    out = np.empty_like(stack)
    assert p.run(stack, out=out, layout="chw") is out and np.array_equal(out, got)
    plan = apron.plan(["gaussian:sigma=2"], ((64, 64), np.float16))
    assert "f32" in plan
    assert p.describe(a) == p.describe(a.astype(np.float32))
    # the float32 copy of the input and the 16-bit result come on top of the float32 run's memory
    assert p.memory_needed(a) == p.memory_needed(a.astype(np.float32)) + 6 * a.size
    assert p.memory_needed(a, out_type="f32") == p.memory_needed(a.astype(np.float32)) + 4 * a.size


# ---- apron.ndimage --------------------------------------------------------------------------------------------

NDIMAGE_LINEAR = [
    pytest.param("gaussian_filter", (1.5,), {}, 1.0, id="gaussian_filter"),
    pytest.param("uniform_filter", (4,), {"mode": "wrap"}, 1.0, id="uniform_filter"),
    pytest.param("correlate", (MASK,), {"mode": "constant", "cval": 2.5}, np.abs(MASK).sum(), id="correlate"),
    pytest.param("sobel", (), {"axis": 0, "mode": "mirror"}, 8.0, id="sobel"),
    pytest.param("laplace", (), {"mode": "nearest"}, 8.0, id="laplace"),
    pytest.param("convolve1d", ([1.0, -0.5, 2.0],), {"axis": 1}, 3.5, id="convolve1d"),
]


@pytest.mark.parametrize("name,args,kwargs,l1", NDIMAGE_LINEAR)
def test_ndimage_float16(name, args, kwargs, l1):
    a = half_image((33, 41), seed=7)
    got = getattr(an, name)(a, *args, **kwargs)
    assert got.dtype == np.float16
    assert np.array_equal(got, getattr(an, name)(a.astype(np.float32), *args, **kwargs).astype(np.float16))
    ref = getattr(sn, name)(a.astype(np.float64), *args, **kwargs)
    assert_within(got, ref, l1, np.abs(a.astype(np.float64)).max())
    as32 = getattr(an, name)(a, *args, output=np.float32, **kwargs)
    assert as32.dtype == np.float32 and np.array_equal(as32, getattr(an, name)(a.astype(np.float32), *args, **kwargs))


def test_ndimage_float16_volumes_and_selections():
    v = half_image((9, 14, 17), seed=8)
    got = an.gaussian_filter(v, (1, 2, 2))
    assert got.dtype == np.float16
    assert_within(got, sn.gaussian_filter(v.astype(np.float64), (1, 2, 2)), 1.0, np.abs(v.astype(np.float64)).max())
    for name, kwargs in (("median_filter", {"size": 5}), ("grey_opening", {"size": (3, 4)}),
                         ("maximum_filter", {"footprint": np.eye(3, dtype=bool)})):
        a = half_image((25, 31), seed=9)
        r = getattr(an, name)(a, **kwargs)
        assert r.dtype == np.float16
        assert np.array_equal(r, getattr(sn, name)(a.astype(np.float32), **kwargs).astype(np.float16))


# ---- torch: float16 and bfloat16 ------------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_ndimage_torch_cpu_half(dtype_name):
    torch = _torch()
    a = torch.from_numpy(half_image((27, 35), seed=10).astype(np.float32)).to(getattr(torch, dtype_name))
    x64 = a.double().numpy()
    got = an.gaussian_filter(a, 2.0)
    assert isinstance(got, torch.Tensor) and got.dtype == getattr(torch, dtype_name)
    r32 = an.gaussian_filter(torch.from_numpy(a.float().numpy()), 2.0)
    assert torch.equal(got, r32.to(getattr(torch, dtype_name)))
    assert_within(got.double().numpy(), sn.gaussian_filter(x64, 2.0), 1.0, np.abs(x64).max(), dtype_name)
    med = an.median_filter(a, 3)
    assert med.dtype == a.dtype and torch.equal(med.float(), torch.from_numpy(sn.median_filter(a.float().numpy(), 3)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_torch_cuda_half(dtype_name, torch):
    dtype = getattr(torch, dtype_name)
    host = half_image((40, 52), seed=11).astype(np.float32)
    a = torch.from_numpy(host).cuda().to(dtype)
    x64 = a.double().cpu().numpy()
    got = apron.gaussian(a, 2.0)
    torch.cuda.synchronize()
    assert got.dtype == dtype and got.is_cuda
    r32 = apron.gaussian(a.float(), 2.0)
    assert torch.equal(got, r32.to(dtype))
    ref = sn.gaussian_filter(x64, 2.0, radius=6)
    assert_within(got.double().cpu().numpy(), ref, 1.0, np.abs(x64).max(), dtype_name)
    assert apron.gaussian(a, 2.0, out_type="f32").dtype == torch.float32
    out = torch.empty_like(a)
    assert apron.box(a, 5, out=out) is out and torch.equal(out, apron.box(a.float(), 5).to(dtype))
    nd = an.uniform_filter(a, 5)
    assert nd.dtype == dtype and torch.equal(nd, an.uniform_filter(a.float(), 5).to(dtype))


@pytest.mark.gpu
def test_cupy_float16(cp):
    host = half_image((40, 52, 3), seed=12)
    a = cp.asarray(host)
    got = apron.gaussian(a, 2.0)
    assert got.dtype == np.float16 and isinstance(got, cp.ndarray)
    assert np.array_equal(cp.asnumpy(got), apron.gaussian(host, 2.0))
    out = cp.empty_like(a)
    assert apron.box(a, 3, out=out) is out and np.array_equal(cp.asnumpy(out), apron.box(host, 3))


def test_the_example_in_the_docs_runs():
    """docs/python.md's 16-bit example, run as written."""
    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "python.md").read_text()
    section = text[text.index("### 16-bit floats"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    scope = {"np": np, "apron": apron}
    exec(compile(code, "docs/python.md", "exec"), scope)
    assert scope["half"].dtype == np.float16
