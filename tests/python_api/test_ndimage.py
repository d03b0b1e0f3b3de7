"""apron.ndimage against scipy.ndimage: the same calls through both on random arrays (fixed seeds).

What is pinned (docs/python.md "apron.ndimage"):
- signatures: SciPy 1.17's, parameter for parameter (names, order, kinds, defaults);
- selection filters (minimum, maximum, rank, median, percentile, the grey morphology): SciPy's bits on
  integer images (uint8, uint16, int8, int16, int32, uint32, bool) and float32; float64 is computed in
  float32, so the result is SciPy's rounded to float32 (rounding is monotone: it commutes with min, max and
  rank), every mode, odd shapes, even and asymmetric footprints, origins, windows larger than the image;
- linear filters on floats within SPEC.md's 1e-5 relative to sum|w| * max|in|;
- linear filters on integers: apron is the correctly rounded result (round half to even, saturate) exactly
  where the sum is exact (integer weights, means) and within 1 elsewhere (SPEC.md), while SciPy truncates
  toward zero and wraps around in each 1-D pass: that documented difference is asserted as such;
- arrays: 1-D signals, (H, W, C) images filtered per channel only when SciPy's call would, any strides,
  output= arrays and dtypes, in place; refusals (volumes, non-flat structures, order != 0) are clear errors;
- (Z, Y, X) volumes (a last axis longer than 4) through the separable filters, every axis filtered as SciPy.
"""
import inspect
import itertools
import warnings

import numpy as np
import pytest

import apron
import apron.ndimage as an
from apron_cli_references import NP_PAD_MODE, random_array

sn = pytest.importorskip("scipy.ndimage")

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
PLAIN = {"grid-mirror": "reflect", "grid-constant": "constant", "grid-wrap": "wrap"}
SHAPES = [(1, 1), (1, 9), (7, 5), (64, 65)]


def image(shape, dtype, seed):
    """random_array with 32-bit integers in a span within 2**24 (apron's exact range), away from zero."""
    base = 1_000_000_000 if np.dtype(dtype).kind == "u" else -1_000_000_000
    return random_array(shape, dtype, seed, wide=(base, base + 2 ** 20 - 1))


def cval_for(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return -7.25
    if dtype == np.bool_:
        return 1
    return {1: 3, 2: 300}.get(dtype.itemsize, 1_000_000_123 if dtype.kind == "u" else -1_000_000_123)


def both(name, *args, **kwargs):
    """(apron's result, SciPy's result), or the exception each raised."""
    out = []
    for module in (an, sn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(getattr(module, name)(*args, **kwargs))
            except Exception as e:  # compared by type below
                out.append(e)
    return out


def rint_saturate(x, dtype):
    """SPEC.md's conversion: round half to even, then saturate (NaN -> 0)."""
    dtype = np.dtype(dtype)
    y = np.rint(np.nan_to_num(np.asarray(x, np.float64)))
    if dtype == np.bool_:
        return y >= 1
    info = np.iinfo(dtype)
    return np.clip(y, info.min, info.max).astype(dtype)


# ---- signatures ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", an.__all__)
def test_signature_is_scipys(name):
    ours, theirs = inspect.signature(getattr(an, name)), inspect.signature(getattr(sn, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()], (str(ours), str(theirs))


def test_module_imports():
    import importlib

    assert importlib.import_module("apron.ndimage") is an
    from apron import ndimage

    assert ndimage is an and apron.ndimage is an
    for name in an.__all__:
        assert callable(getattr(an, name)) and getattr(an, name).__doc__


# ---- selection filters: exact ---------------------------------------------------------------------------------

SELECTION = ["minimum_filter", "maximum_filter", "grey_erosion", "grey_dilation", "grey_opening", "grey_closing",
             "white_tophat", "black_tophat", "morphological_gradient", "median_filter", "percentile_filter",
             "rank_filter"]
_rng = np.random.default_rng(90)
ASYM = _rng.random((3, 4)) > 0.45
ASYM[0, 0] = ASYM[2, 3] = True
BIG = _rng.random((9, 11)) > 0.5
BIG[4, 5] = True
WINDOWS = [  # (keywords, the window's shape for the origins)
    ({"size": 3}, (3, 3)),
    ({"size": (2, 4)}, (2, 4)),
    ({"footprint": ASYM}, (3, 4)),
    ({"footprint": np.array([[1, 0], [1, 1]], bool)}, (2, 2)),
    ({"size": (1, 5)}, (1, 5)),
    ({"footprint": BIG}, (9, 11)),  # larger than most of the shapes
]


def _extra_args(name, n_cells):
    if name == "percentile_filter":
        return (30,)
    if name == "rank_filter":
        return (-2 if n_cells > 1 else 0,)
    return ()


def _selection_cases():
    """Every mode and window on 7x5; the other shapes with the modes taken in turn; origins at both ends."""
    cases = []
    for i, (mode, (window, wshape)) in enumerate(itertools.product(MODES, WINDOWS)):
        origin = 0 if i % 2 else (-(wshape[0] // 2), (wshape[1] - 1) // 2)
        cases.append(((7, 5), mode, window, wshape, origin))
    for j, (shape, (window, wshape)) in enumerate(itertools.product([(1, 1), (1, 9), (64, 65)], WINDOWS)):
        origin = 0 if j % 3 else ((wshape[0] - 1) // 2, -(wshape[1] // 2))
        cases.append((shape, MODES[j % len(MODES)], window, wshape, origin))
    return cases


SELECTION_CASES = _selection_cases()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, np.int16, np.int8, np.int32,
                                   np.uint32, np.bool_],
                         ids=["u8", "u16", "f32", "f64", "i16", "i8", "i32", "u32", "bool"])
@pytest.mark.parametrize("name", SELECTION)
def test_selection_filters_equal_scipy(name, dtype):
    for k, (shape, mode, window, wshape, origin) in enumerate(SELECTION_CASES):
        x = image(shape, dtype, seed=100 + k)
        n_cells = int(np.count_nonzero(window["footprint"])) if "footprint" in window else int(np.prod(wshape))
        args = (x, *_extra_args(name, n_cells))
        kw = dict(window, mode=mode, cval=cval_for(dtype), origin=origin)
        what = f"{name}{args[1:]} {shape} {np.dtype(dtype)} mode={mode} {kw}"
        got, expected = both(name, *args, **kw)
        if isinstance(expected, Exception):  # e.g. bool - bool in SciPy's black_tophat: the same error
            assert isinstance(got, type(expected)), (what, got, expected)
            continue
        assert not isinstance(got, Exception), (what, got)
        assert got.dtype == expected.dtype and got.shape == expected.shape, what
        if dtype != np.float64:
            assert np.array_equal(got, expected), what
        elif name in ("white_tophat", "black_tophat", "morphological_gradient"):  # a float64 difference of
            tol = 2.0 ** -23 * float(np.abs(x).max()) * 2  # float32-rounded selections
            assert np.abs(got - expected).max() <= tol, what
        else:  # float64 computed in float32: SciPy's result rounded to float32, exactly
            assert np.array_equal(got, expected.astype(np.float32).astype(np.float64)), what


def _window_reference(x, footprint, centre, mode, cval, rank):
    """The rank-th sample of each window, read through the border mode with np.pad (independent of SciPy)."""
    fh, fw = footprint.shape
    cy, cx = centre
    kw = {"constant_values": cval} if mode == "constant" else {}
    P = np.pad(x, ((fh, fh), (fw, fw)), mode=NP_PAD_MODE[mode], **kw)
    h, w = x.shape
    stack = [P[fh + j - cy: fh + j - cy + h, fw + i - cx: fw + i - cx + w] for j, i in np.argwhere(footprint)]
    return np.sort(np.stack(stack), axis=0)[rank]


@pytest.mark.parametrize("mode", ["reflect", "constant", "nearest", "mirror", "wrap"])
def test_windows_far_larger_than_the_image(mode):
    """Windows of many times the image's side (the border extension repeats): an independent np.pad
    reference. SciPy 1.17's median_filter disagrees with it (and with apron) in reflect mode for some of these
    (e.g. x of 6x1, size=70), so SciPy is compared only for the minimum and maximum there."""
    rng = np.random.default_rng(91)
    for shape, size in (((6, 1), (70, 1)), ((7, 5), (30, 40)), ((1, 3), (5, 21)), ((2, 2), (9, 9))):
        x = rng.integers(0, 256, shape).astype(np.uint8)
        fp = np.ones(size, bool)
        n = fp.sum()
        centre = (size[0] // 2, size[1] // 2)
        for name, rank, args in (("median_filter", n // 2, ()), ("rank_filter", 3, (3,)), ("minimum_filter", 0, ()),
                                 ("maximum_filter", n - 1, ())):
            got = getattr(an, name)(x, *args, size=size, mode=mode, cval=17)
            ref = _window_reference(x, fp, centre, mode, 17, rank)
            assert np.array_equal(got, ref), (name, shape, size, mode)
            if name in ("minimum_filter", "maximum_filter") or mode != "reflect":
                assert np.array_equal(got, getattr(sn, name)(x, *args, size=size, mode=mode, cval=17)), (name, mode)


def test_grey_dilation_reflects_the_footprint_as_scipy():
    """SciPy's grey_dilation reflects the footprint and shifts even sizes' origin; apron's own dilate (OpenCV)
    does not: apron.ndimage maps one onto the other."""
    x = image((20, 23), np.uint8, seed=92)
    fp = np.array([[1, 1, 0, 0], [0, 0, 0, 1]], bool)
    for origin in [0, (0, -2), (-1, 1)]:
        got = an.grey_dilation(x, footprint=fp, origin=origin)
        assert np.array_equal(got, sn.grey_dilation(x, footprint=fp, origin=origin)), origin
    assert not np.array_equal(an.grey_dilation(x, footprint=fp), apron.dilate(x, se=fp.astype(float), border="reflect"))
    assert np.array_equal(an.maximum_filter(x, footprint=fp), apron.dilate(x, se=fp.astype(float), border="reflect"))


def test_structure_only_flat():
    x = image((12, 13), np.uint8, seed=93)
    for fn in ("grey_dilation", "grey_erosion", "grey_opening", "grey_closing", "white_tophat", "black_tophat",
               "morphological_gradient"):
        assert np.array_equal(getattr(an, fn)(x, structure=np.zeros((2, 3))),
                              getattr(sn, fn)(x, structure=np.zeros((2, 3)))), fn
        with pytest.raises(ValueError, match=rf"^{fn}\(\): structure: a non-flat structuring element"):
            getattr(an, fn)(x, structure=np.ones((3, 3)))
    fp = np.array([[0, 1, 1]], bool)
    assert np.array_equal(an.grey_dilation(x, footprint=fp, structure=np.zeros((1, 3))),
                          sn.grey_dilation(x, footprint=fp, structure=np.zeros((1, 3))))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_wide_integers_exact_within_a_span_of_2_24(dtype):
    """32- and 64-bit integers: offset by the minimum into uint16 or float32, exact; a wider span is refused."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(94)
    top = info.max if info.bits == 32 else 2 ** 50  # SciPy's rank filters go through doubles: exact below 2**53
    for span in (200, 70_000, 2 ** 24):
        x = (top - span + rng.integers(0, span, (9, 11), endpoint=True)).astype(dtype)
        # SciPy takes cval as a C double: exact for 32-bit values only
        kw = {"mode": "constant", "cval": int(x.min())} if info.bits == 32 else {"mode": "nearest"}
        for name, args in (("median_filter", ()), ("grey_opening", ()), ("rank_filter", (1,))):
            got, expected = both(name, x, *args, size=(3, 2), **kw)
            assert got.dtype == dtype and np.array_equal(got, expected), (name, span)
    x = np.array([[info.min, info.max], [0, 1]], dtype)
    with pytest.raises(ValueError, match=r"^median_filter\(\): .* span .* at most 2\*\*24"):
        an.median_filter(x, 3)
    with pytest.raises(ValueError, match="at most 2\\*\\*24"):  # cval counts in the span
        an.minimum_filter(np.full((4, 4), info.max, dtype), 3, mode="constant", cval=info.max - 2 ** 25)


def test_cval_of_integer_images():
    """SciPy casts cval to the image's type (toward zero) for selection filters; out of range is refused."""
    x = image((8, 9), np.uint8, seed=95)
    for cval in (2.7, -0.5, 255.9, 0):
        for name in ("minimum_filter", "maximum_filter", "median_filter"):
            got, expected = both(name, x, size=3, mode="constant", cval=cval)
            assert np.array_equal(got, expected), (name, cval)
    for cval in (-1, 256, float("nan")):
        with pytest.raises(ValueError, match=r"^minimum_filter\(\): cval"):
            an.minimum_filter(x, 3, mode="constant", cval=cval)
    # linear filters read a fractional cval as it is (computed in float32 then)
    got, expected = both("uniform_filter", x, 3, output=np.float32, mode="constant", cval=2.7)
    assert np.allclose(got, expected, atol=1e-4)


def test_float_nan_cval_and_infinite_values():
    """cval NaN / inf (apron's border value must be finite: the image is padded instead); zero weights and
    unset cells added for origins are exact no-ops for inf and NaN samples."""
    x = image((10, 12), np.float32, seed=96)
    assert np.array_equal(an.maximum_filter(x, footprint=ASYM, mode="constant", cval=np.inf),
                          sn.maximum_filter(x, footprint=ASYM, mode="constant", cval=np.inf))
    assert np.array_equal(an.rank_filter(x, 2, size=(2, 3), mode="constant", cval=-np.inf, origin=(0, 1)),
                          sn.rank_filter(x, 2, size=(2, 3), mode="constant", cval=-np.inf, origin=(0, 1)))
    w = np.array([[0.0, 1.0, 2.0], [0.5, 0.0, 0.25]])
    got, expected = both("correlate", x, w, mode="constant", cval=np.nan, origin=(0, -1))
    assert np.array_equal(np.isnan(got), np.isnan(expected)) and np.allclose(got, expected, atol=1e-3, equal_nan=True)
    y = x.copy()
    y[4, 5], y[7, 2] = np.inf, np.nan
    for origin in [(0, 1), (-1, -1), (0, -1)]:
        got, expected = both("correlate", y, w, origin=origin)
        assert np.array_equal(np.isnan(got), np.isnan(expected)), origin
        assert np.array_equal(np.isinf(got), np.isinf(expected)), origin
        assert np.allclose(got, expected, atol=1e-3, equal_nan=True)
        got, expected = both("maximum_filter", np.nan_to_num(y, nan=0), footprint=ASYM, origin=origin)
        assert np.array_equal(got, expected), origin


# ---- linear filters on floats -----------------------------------------------------------------------------------

def _assert_close(got, expected, bound, what):
    """SPEC.md: within 1e-5 relative to sum|w| * max|in| (float32 results; float64 computed in float32)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    err = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    tol = 1e-5 * bound + 1e-6
    assert err.max() <= tol, f"{what}: error {err.max():.3g} > {tol:.3g}"


def _linear_calls(rng):
    """(name, args, keywords, sum|w|) for every linear function, with even and asymmetric masks and origins."""
    calls = []
    for wshape, origin in (((3, 3), 0), ((2, 4), (0, -2)), ((1, 5), (0, 2)), ((4, 1), (-2, 0)), ((9, 11), (3, -4))):
        w = rng.uniform(-1, 1, wshape)
        for name in ("correlate", "convolve"):
            calls.append((name, (w,), {"origin": origin}, np.abs(w).sum()))
    for weights, axis, origin in (([0.5, -1.0, 2.0], 0, 1), ([1.0, 2.0, 3.0, 4.0], -1, -2), ([3.0], 1, 0)):
        for name in ("correlate1d", "convolve1d"):
            calls.append((name, (weights, axis), {"origin": origin}, np.abs(weights).sum()))
    for sigma, kw in ((0.8, {}), ((2.5, 1.0), {}), ((1.5, 0.0), {}), (1.2, {"truncate": 2.0}),
                      (3.0, {"radius": 2}), ((0.5, 2.0), {"radius": (1, 4)})):
        calls.append(("gaussian_filter", (sigma,), kw, 1.0))
    calls.append(("gaussian_filter1d", (1.7, 0), {}, 1.0))
    calls.append(("gaussian_filter1d", (0.9,), {"truncate": 3.0}, 1.0))
    for size, origin in ((3, 0), ((2, 5), (0, -2)), ((4, 1), (1, 0)), (9, (-4, 4))):
        calls.append(("uniform_filter", (size,), {"origin": origin}, 1.0))
    calls.append(("uniform_filter1d", (4, 0), {"origin": -1}, 1.0))
    calls.append(("uniform_filter1d", (7,), {}, 1.0))
    for name in ("sobel", "prewitt"):
        calls += [(name, (0,), {}, 8.0), (name, (-1,), {}, 8.0)]
    calls.append(("laplace", (), {}, 8.0))
    return calls


LINEAR = _linear_calls(np.random.default_rng(97))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES, ids=["1x1", "1x9", "7x5", "64x65"])
def test_linear_filters_on_floats_within_spec(shape, dtype):
    modes = MODES if shape != (64, 65) else ["reflect", "grid-constant", "wrap"]
    _expect_linear_calls_within_spec(image(shape, dtype, seed=98), LINEAR, modes)


def _expect_linear_calls_within_spec(x, calls, modes):
    """Each (name, args, keywords, sum|w|) call in every mode, against SciPy's in float64 (cval -7.25)."""
    bound_in = float(np.abs(x).max())
    for (name, args, kw, wsum), mode in itertools.product(calls, modes):
        what = f"{name}{args} {kw} {x.shape} {x.dtype} mode={mode}"
        got = getattr(an, name)(x, *args, mode=mode, cval=-7.25, **kw)
        expected = getattr(sn, name)(x.astype(np.float64), *args, mode=mode, cval=-7.25, **kw).astype(x.dtype)
        _assert_close(got, expected, wsum * max(bound_in, 7.25), what)


def test_gaussian_follows_scipy_not_apron_default_radius():
    """apron.ndimage.gaussian_filter: truncate=4.0 (radius int(4 sigma + 0.5)); apron.gaussian: ceil(3 sigma)."""
    x = np.zeros((41, 41), np.float32)
    x[20, 20] = 1
    got = an.gaussian_filter(x, 2.0)
    assert got[20, 12] > 0 and got[20, 11] == 0  # radius 8
    own = apron.gaussian(x, 2.0)
    assert own[20, 14] > 0 and own[20, 13] == 0  # radius 6
    assert np.allclose(apron.gaussian(x, 2.0, radius=8), got, atol=1e-7)
    assert "ceil(3 sigma)" in apron.gaussian.__doc__ and "truncate=4.0" in apron.gaussian.__doc__
    assert "truncate=4.0" in an.gaussian_filter.__doc__ and "ceil(3 sigma)" in an.gaussian_filter.__doc__


def test_gaussian_order_refused_clearly():
    x = image((9, 9), np.float32, seed=99)
    for call in (lambda: an.gaussian_filter(x, 2, order=1), lambda: an.gaussian_filter(x, 2, order=(0, 2)),
                 lambda: an.gaussian_filter1d(x, 2, order=1), lambda: an.gaussian_filter(x, 2, 1)):
        with pytest.raises(NotImplementedError, match=r"order=.*order=0\) only"):
            call()
    assert np.allclose(an.gaussian_filter(x, 2, order=(0, 0)), sn.gaussian_filter(x, 2), atol=1e-4)


def test_per_axis_modes_run_as_scipy_passes():
    """A sequence of modes (one per axis): each axis its own pass in SciPy's order, as SciPy."""
    x = image((11, 13), np.float32, seed=100)
    for name, args, kw in (("gaussian_filter", (2.0,), {}), ("uniform_filter", (4,), {"origin": (1, -1)}),
                           ("minimum_filter", ((3, 4),), {}), ("maximum_filter", (), {"size": (2, 5)}),
                           ("sobel", (0,), {}), ("prewitt", (1,), {}), ("laplace", (), {})):
        for modes in (["constant", "wrap"], ["nearest", "mirror"], ["reflect", "constant"]):
            got, expected = both(name, x, *args, mode=modes, cval=3.5, **kw)
            _assert_close(got, expected, 8 * 100, f"{name} {modes}")
    # SciPy's sobel and prewitt pad the derivative with cval before smoothing: the same here
    got, expected = both("sobel", x, 1, mode="constant", cval=50.0)
    _assert_close(got, expected, 8 * 100, "sobel constant cval")
    with pytest.raises(RuntimeError, match="sequence of modes"):
        an.median_filter(x, 3, mode=["reflect", "wrap"])
    with pytest.raises(RuntimeError, match="sequence of modes"):
        an.correlate(x, np.ones((3, 3)), mode=["reflect", "wrap"])


def test_uniform_filter_with_infinities_is_correlates_result():
    """Documented difference: SciPy's uniform_filter keeps running sums, so an inf (or NaN) sample turns the
    rest of its line NaN; apron gives what correlate gives (only the windows holding it)."""
    x = np.ones((5, 9), np.float32)
    x[2, 1] = np.inf
    got = an.uniform_filter(x, 3)
    assert np.array_equal(got, an.correlate(x, np.full((3, 3), 1 / 9)))
    assert np.isinf(got[1:4, 0:3]).all() and np.allclose(got[:, 4:], 1.0)
    assert np.isnan(sn.uniform_filter(x, 3)[2, 4:]).all()


# ---- linear filters on integers: the rounding rule -----------------------------------------------------------------

def _exact_reference(name, x, args, kw):
    """The float64 truth; for means, the exact integer sum divided once (so ties are ties)."""
    xd = x.astype(np.float64)
    if name == "uniform_filter":
        size = args[0]
        sizes = (size, size) if np.isscalar(size) else size
        return sn.correlate(xd, np.ones(sizes), **kw) / np.prod(sizes)
    if name == "uniform_filter1d":
        size, axis = args[0], args[1] if len(args) > 1 else -1
        return sn.correlate1d(xd, np.ones(size), axis, **kw) / size
    return getattr(sn, name)(xd, *args, **kw)


# (name, args, keywords, apron exact on uint8/uint16, SciPy's 1-D passes that truncate)
INTEGER_CALLS = [
    ("correlate", (np.array([[1.0, 2.0, -1.0], [0.0, 3.0, 1.0]]),), {"origin": (0, 1)}, True, 1),
    ("correlate", (np.array([[0.25, -0.5], [0.3, 0.45]]),), {}, False, 1),
    ("convolve", (np.array([[1.0, 0.0, 2.0, 1.0]]),), {"origin": (0, -1)}, True, 1),
    ("correlate1d", ([0.2, 0.5, 0.3],), {}, False, 1),
    ("uniform_filter1d", (4,), {"origin": 1}, True, 1),
    ("uniform_filter", (3,), {}, True, 2),
    ("uniform_filter", ((2, 5),), {"origin": (0, 1)}, True, 2),
    ("gaussian_filter1d", (1.5,), {}, False, 1),
    ("gaussian_filter", (1.2,), {}, False, 2),
    ("sobel", (0,), {}, True, 0),
    ("prewitt", (1,), {}, True, 0),
    ("laplace", (), {}, True, 0),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.int8, np.int32, np.bool_],
                         ids=["u8", "u16", "i16", "i8", "i32", "bool"])
@pytest.mark.parametrize("mode", ["reflect", "constant", "nearest", "mirror", "wrap"])
def test_linear_filters_on_integers_round_once(mode, dtype):
    """apron: the float64 result rounded half to even and saturated, exactly where the sum is exact (integer
    weights or a mean, on uint8/uint16), within 1 elsewhere (SPEC.md). SciPy: each 1-D pass truncated toward
    zero and wrapped around: single-pass results equal trunc(truth) mod 2**bits, and on unsigned images its
    separable means and Gaussians lie 0 to `passes` below the correctly rounded result."""
    for shape in [(7, 5), (64, 65), (1, 9)]:
        x = image(shape, dtype, seed=101)
        if dtype == np.int32:
            x = (x.astype(np.int64) + 1_000_000_000 - 2 ** 19).astype(np.int32)  # around zero, within 2**24
        kw_mode = {"mode": mode, "cval": 5 if dtype != np.bool_ else 1}
        for name, args, kw, exact, passes in INTEGER_CALLS:
            what = f"{name}{args} {kw} {shape} {np.dtype(dtype)} {mode}"
            kw = dict(kw, **kw_mode)
            truth = _exact_reference(name, x, args, kw)
            got = getattr(an, name)(x, *args, **kw)
            assert got.dtype == x.dtype, what
            expected = rint_saturate(truth, dtype)
            diff = got.astype(np.int64) - expected.astype(np.int64)
            if exact and dtype in (np.uint8, np.uint16):
                assert not diff.any(), f"{what}: {np.abs(diff).max()}"
            else:
                assert np.abs(diff).max() <= 1, what
            if dtype == np.bool_:
                continue
            theirs = getattr(sn, name)(x, *args, **kw).astype(np.int64)
            info = np.iinfo(dtype)
            clean = np.abs(truth - np.round(truth)) > 1e-6  # away from float fuzz at integers
            if passes <= 1 or name in ("sobel", "prewitt", "laplace"):
                if passes == 1 or np.all(np.abs(truth - np.round(truth)) < 1e-9):
                    wrapped = (np.trunc(truth).astype(np.int64) - info.min) % (info.max - info.min + 1) + info.min
                    sel = clean | (np.abs(truth - np.round(truth)) < 1e-9)
                    assert np.array_equal(theirs[sel], wrapped[sel]), f"SciPy {what}"
            elif dtype in (np.uint8, np.uint16):
                inside = (truth >= 0) & (truth <= info.max)
                d = expected.astype(np.int64)[inside] - theirs[inside]
                assert d.min() >= 0 and d.max() <= passes, f"SciPy {what}: {d.min()}..{d.max()}"


def test_integer_output_dtype_rule():
    """output= an integer dtype: apron rounds half to even and saturates (SciPy truncates and wraps)."""
    x = image((9, 10), np.float32, seed=102)
    for dt in (np.uint8, np.int16, np.int32, np.uint16, np.int64):
        got = an.correlate(x, np.array([[0.5, 1.5]]), output=dt)
        assert got.dtype == dt and np.array_equal(got, rint_saturate(sn.correlate(x.astype(np.float64), [[0.5, 1.5]]), dt))
    got = an.sobel(image((9, 10), np.uint8, seed=103))  # unsigned: negative derivatives saturate to 0
    truth = sn.sobel(image((9, 10), np.uint8, seed=103).astype(np.float64))
    assert np.array_equal(got, rint_saturate(truth, np.uint8)) and (truth < 0).any()
    b = an.uniform_filter(np.eye(5, dtype=bool) | np.eye(5, k=1, dtype=bool), 3)
    assert b.dtype == np.bool_ and np.array_equal(b, rint_saturate(
        sn.uniform_filter((np.eye(5) + np.eye(5, k=1)), 3), np.bool_))


# ---- arrays, shapes, layouts, outputs -----------------------------------------------------------------------------

def test_one_dimensional_signals():
    s = image((50,), np.float64, seed=104)
    u = image((50,), np.uint8, seed=105)
    for name, args, kw in (("gaussian_filter", (2.0,), {}), ("gaussian_filter1d", (1.5,), {}), ("uniform_filter", (4,), {}),
                           ("correlate", ([1.0, -2.0, 0.5, 3.0],), {"origin": -1}), ("convolve1d", ([1, 2, 4],), {}),
                           ("sobel", (), {}), ("laplace", (), {})):
        got, expected = both(name, s, *args, **kw)
        _assert_close(got, expected, 8 * 100, name)
    for name, args, kw in (("median_filter", (), {"size": 5}), ("minimum_filter1d", (4,), {"origin": 1}),
                           ("maximum_filter1d", (3,), {}), ("grey_dilation", (), {"footprint": [1, 0, 1, 1]}),
                           ("percentile_filter", (75,), {"size": 6}), ("white_tophat", (), {"size": 4})):
        got, expected = both(name, u, *args, **kw)
        assert np.array_equal(got, expected), name


def test_colour_images_only_when_scipy_filters_each_channel_alike():
    x = image((12, 10, 3), np.uint8, seed=106)
    f = image((12, 10, 4), np.float32, seed=107)
    same = [("minimum_filter", (x,), {"size": (3, 2, 1)}), ("median_filter", (x,), {"size": 3, "axes": (0, 1)}),
            ("grey_dilation", (x,), {"footprint": np.array([[1, 0], [1, 1]])[..., None]}),
            ("rank_filter", (x, 2), {"footprint": np.eye(3), "axes": (0, 1)}),
            ("grey_closing", (x,), {"size": (2, 3), "axes": (1, 0)})]
    for name, args, kw in same:
        got, expected = both(name, *args, **kw)
        assert np.array_equal(got, expected), name
    close = [("gaussian_filter", (f, (1.0, 2.0, 0.0)), {}), ("gaussian_filter", (f, 1.5), {"axes": (0, 1)}),
             ("uniform_filter", (f, (3, 4, 1)), {}), ("correlate", (f, np.arange(6.0).reshape(3, 2, 1)), {}),
             ("correlate", (f, np.arange(6.0).reshape(3, 2)), {"axes": (0, 1)}), ("laplace", (f,), {"axes": (0, 1)}),
             ("correlate1d", (f, [1.0, 2.0, 3.0], 1), {})]
    for name, args, kw in close:
        got, expected = both(name, *args, **kw)
        _assert_close(got, expected, 20 * 100, name)
    # a call that filters along the last axis is a volume filter: refused, never reinterpreted
    refused = [lambda: an.minimum_filter(x, size=3), lambda: an.gaussian_filter(f, 1.0), lambda: an.sobel(f),
               lambda: an.laplace(f), lambda: an.correlate1d(f, [1, 2], axis=2), lambda: an.median_filter(x, 3),
               lambda: an.gaussian_filter(f, 1, axes=(1, 2)),
               lambda: an.uniform_filter(image((3, 4, 5, 2), np.float32, seed=1), 3)]
    for call in refused:
        with pytest.raises(ValueError, match=r"volume|volumes"):
            call()
    # 3-D weights and footprints over the three axes are SciPy's N-D filter of the array as a volume (nothing
    # is reinterpreted: SciPy's result either way; tests/python_api/test_volume_masks.py)
    got, expected = both("correlate", f, np.ones((3, 3, 3)))
    _assert_close(got, expected, 27 * 100, "correlate 3x3x3")


VOLUME_CALLS = [
    ("gaussian_filter", ((1.0, 1.5, 0.8),), {}, 1.0), ("gaussian_filter", ((2.0, 0.0, 1.0),), {"radius": (3, 1, 2)}, 1.0),
    ("gaussian_filter", (1.2,), {"axes": (0, 2)}, 1.0), ("gaussian_filter1d", (1.3, 0), {}, 1.0),
    ("uniform_filter", ((3, 1, 4),), {"origin": (1, 0, -1)}, 1.0), ("uniform_filter", (2,), {}, 1.0),
    ("uniform_filter1d", (4, 0), {"origin": -1}, 1.0), ("uniform_filter1d", (5, 1), {}, 1.0),
    ("correlate1d", ([0.5, -1.0, 2.0, 0.25], 0), {"origin": 1}, 3.75), ("convolve1d", ([1.0, -2.0, 3.0], 0), {}, 6.0),
    ("correlate1d", ([1.0, 2.0, 3.0], 2), {"origin": -1}, 6.0), ("sobel", (0,), {}, 32.0), ("sobel", (1,), {}, 32.0),
    ("prewitt", (2,), {}, 18.0), ("prewitt", (0,), {}, 18.0), ("laplace", (), {}, 12.0), ("laplace", (), {"axes": (0, 2)}, 8.0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(7, 9, 11), (1, 6, 5), (5, 1, 8), (9, 4, 6)], ids=["7x9x11", "1x6x5", "5x1x8", "9x4x6"])
def test_volumes_through_separable_filters_within_spec(shape, dtype):
    """A (Z, Y, X) volume: z passes run down the (Z, Y * X) image, x passes along (Z * Y, X), the rest per plane;
    every axis is filtered as SciPy's (borders included), within SPEC.md's tolerance."""
    _expect_linear_calls_within_spec(image(shape, dtype, seed=120), VOLUME_CALLS, MODES)


def test_volumes_per_axis_modes_and_integer_rounding():
    x = image((6, 7, 9), np.uint16, seed=121)
    f = x.astype(np.float64)
    modes = ["wrap", "constant", "nearest"]
    got = an.gaussian_filter(x, (1.5, 1.0, 0.7), mode=modes, cval=300)
    expected = sn.gaussian_filter(f, (1.5, 1.0, 0.7), mode=modes, cval=300)
    assert got.dtype == np.uint16
    assert np.abs(got.astype(np.int64) - rint_saturate(expected, np.uint16).astype(np.int64)).max() <= 1
    got = an.uniform_filter(x, (3, 3, 5), mode="mirror", output=np.float32)
    _assert_close(got, sn.uniform_filter(f, (3, 3, 5), mode="mirror").astype(np.float32), float(x.max()), "uniform")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.int16], ids=["u8", "u16", "f32", "i16"])
def test_volume_filter1d_extremes_equal_scipy(dtype):
    """minimum_filter1d / maximum_filter1d along each axis of a (Z, Y, X) volume: SciPy's bits in every mode,
    with origins and even sizes (along z on the (Z, Y * X) view, along y or x over the planes)."""
    v = random_array((6, 9, 11), dtype, seed=121)
    for name in ("minimum_filter1d", "maximum_filter1d"):
        for axis in (0, 1, 2, -1):
            for mode in ("reflect", "constant", "nearest", "mirror", "wrap"):
                for size, origin in ((3, 0), (4, 1), (5, -2), (1, 0), (9, 4)):
                    got = getattr(an, name)(v, size, axis=axis, mode=mode, cval=7, origin=origin)
                    want = getattr(sn, name)(v, size, axis=axis, mode=mode, cval=7, origin=origin)
                    assert got.dtype == want.dtype and np.array_equal(got, want), (name, axis, mode, size, origin)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.int16, np.bool_], ids=["u8", "u16", "f32", "i16", "bool"])
def test_volume_boxes_through_minimum_and_maximum_equal_scipy(dtype):
    """Boxes on a (Z, Y, X) volume: SciPy's 1-D passes, each over a 2-D view; SciPy's bits in every mode."""
    v = random_array((6, 5, 9), dtype, seed=123)
    calls = [("minimum_filter", {"size": (3, 1, 4), "origin": (1, 0, -1)}), ("maximum_filter", {"size": 2}),
             ("grey_dilation", {"size": (2, 3, 3)}), ("grey_erosion", {"footprint": np.ones((3, 2, 2), bool)}),
             ("maximum_filter", {"size": (4, 2, 1), "mode": ["wrap", "constant", "nearest"]}),
             ("grey_opening", {"size": (3, 2, 3)}), ("white_tophat", {"size": (2, 2, 3)})]
    for (name, kw), mode in itertools.product(calls, MODES):
        kw = dict({"mode": mode}, **kw)
        got, expected = both(name, v, cval=cval_for(dtype), **kw)
        assert np.array_equal(got, expected), (name, kw, np.dtype(dtype))


def test_any_strides_are_copied_not_refused():
    x = image((20, 30), np.uint16, seed=108)
    views = [x.T, x[:, ::3], x[::-1, ::2], np.asfortranarray(x), x[2:9, 3:17], x[::2]]
    for v in views:
        got, expected = both("maximum_filter", v, size=(2, 3))
        assert np.array_equal(got, expected)
        got = an.uniform_filter(v, 3)
        assert np.array_equal(got, rint_saturate(_exact_reference("uniform_filter", v, (3,), {}), np.uint16))
    c = image((8, 9, 3), np.float32, seed=109)
    got, expected = both("gaussian_filter", c[:, :, ::-1], 1.0, axes=(0, 1))
    _assert_close(got, expected, 100, "channels reversed")
    big = image((10, 10, 4), np.uint8, seed=110)
    got, expected = both("median_filter", big[..., :3], size=(3, 3, 1))  # a subset of channels
    assert np.array_equal(got, expected)


def test_output_arrays_and_dtypes():
    x = image((20, 30), np.uint16, seed=111)
    o = np.empty((20, 30), np.float32)
    assert an.gaussian_filter(x, 2, output=o) is o
    _assert_close(o, sn.gaussian_filter(x.astype(np.float64), 2).astype(np.float32), 65535, "output f32")
    assert an.gaussian_filter(x, 2, output=np.float64).dtype == np.float64
    assert np.array_equal(an.median_filter(x, 3, output=np.int32), sn.median_filter(x, 3, output=np.int32))
    assert np.array_equal(an.median_filter(x, 3, output="float32"), sn.median_filter(x, 3, output="float32"))
    o = np.zeros((30, 20), np.uint16).T  # Fortran-order output: written through a copy
    assert an.maximum_filter(x, 3, output=o) is o and np.array_equal(o, sn.maximum_filter(x, 3))
    y = x.copy()
    assert an.maximum_filter(y, 3, output=y) is y and np.array_equal(y, sn.maximum_filter(x, 3))  # in place
    z = x.astype(np.float32)
    assert an.uniform_filter(z, 5, output=z) is z
    _assert_close(z, sn.uniform_filter(x.astype(np.float64), 5).astype(np.float32), 65535, "in place")
    o = np.zeros((20, 30), np.int16)
    w = an.morphological_gradient(x.astype(np.int16), size=3, output=o)
    assert w is o and np.array_equal(o, sn.morphological_gradient(x.astype(np.int16), size=3, output=np.zeros((20, 30), np.int16)))
    with pytest.raises(RuntimeError, match="output shape"):
        an.median_filter(x, 3, output=np.zeros((3, 3), np.uint16))
    with pytest.raises(TypeError, match="output"):
        an.median_filter(x, 3, output=[[0]])


def test_dtypes_and_conversions():
    f16 = image((9, 12), np.float16, seed=112)
    got = an.median_filter(f16, 3)
    assert got.dtype == np.float16 and np.array_equal(got, sn.median_filter(f16.astype(np.float32), 3).astype(np.float16))
    got = an.gaussian_filter(f16, 1.0)
    assert got.dtype == np.float16
    assert np.allclose(got, sn.gaussian_filter(f16.astype(np.float64), 1.0), atol=0.1)
    # float64: computed in float32 (within 1e-5 relative); selections are SciPy's sample rounded to float32
    d = image((30, 31), np.float64, seed=113) * 1e-3 + 1.0
    got = an.median_filter(d, 5)
    assert got.dtype == np.float64 and np.array_equal(got, sn.median_filter(d, 5).astype(np.float32).astype(np.float64))
    assert np.abs(an.gaussian_filter(d, 2) - sn.gaussian_filter(d, 2)).max() <= 1e-5 * np.abs(d).max()
    for bad in (image((4, 4), np.float32, seed=1).astype(np.complex64), np.zeros((4, 4), "datetime64[s]")):
        with pytest.raises(TypeError):
            an.median_filter(bad, 3)
    assert an.median_filter([[1, 2, 3], [4, 5, 6]], 3).tolist() == sn.median_filter([[1, 2, 3], [4, 5, 6]], 3).tolist()
    be = image((6, 7), np.float32, seed=114).astype(">f4")  # non-native byte order
    assert np.array_equal(an.maximum_filter(be, 2), sn.maximum_filter(be, 2))


def test_empty_and_scalar_inputs():
    assert an.gaussian_filter(np.zeros((0, 5), np.float32), 1).shape == (0, 5)
    assert an.median_filter(np.zeros((3, 0)), 3).shape == (3, 0)
    with pytest.raises(ValueError, match="0-D"):
        an.median_filter(np.float32(3), 3)


def test_errors_name_the_function():
    x = image((10, 10), np.uint8, seed=115)
    cases = [
        (lambda: an.minimum_filter(x, 3, origin=2), ValueError, r"^minimum_filter\(\): invalid origin 2"),
        (lambda: an.correlate(x, np.ones((3, 3)), mode="bogus"), RuntimeError, r"^correlate\(\): mode: 'bogus'"),
        (lambda: an.rank_filter(x, 9, 3), RuntimeError, r"^rank_filter\(\): rank not within"),
        (lambda: an.percentile_filter(x, 120, 3), RuntimeError, r"^percentile_filter\(\): invalid percentile"),
        (lambda: an.minimum_filter(x), RuntimeError, r"^minimum_filter\(\): no footprint"),
        (lambda: an.grey_dilation(x), ValueError, r"^grey_dilation\(\): size, footprint, or structure"),
        (lambda: an.uniform_filter(x, (3, 3, 3)), RuntimeError, r"^uniform_filter\(\): size: a sequence of 3"),
        (lambda: an.minimum_filter(x, footprint=np.zeros((3, 3))), ValueError, "All-zero footprint"),
        (lambda: an.gaussian_filter(x, 1, radius=-1), ValueError, r"^gaussian_filter\(\): radius"),
        (lambda: an.median_filter(x, 5000), ValueError, r"^median_filter\(\): .*sides must be 1\.\.4097"),
        (lambda: an.gaussian_filter(x, 1000), ValueError, r"^gaussian_filter\(\): .*each side must be 1\.\.4097"),
        (lambda: an.correlate1d(x, [[1, 2]]), RuntimeError, r"^correlate1d\(\): weights"),
        (lambda: an.sobel(x, axis=2), ValueError, r"^sobel\(\): axis 2 is out of bounds"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match) as e:
            call()
        assert "\n" not in str(e.value) and "--op" not in str(e.value)


def test_torch_cpu_tensors_if_torch_is_installed():
    torch = pytest.importorskip("torch")
    x = image((16, 17), np.uint8, seed=116)
    t = torch.from_numpy(x)
    got = an.median_filter(t, 3)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.uint8
    assert np.array_equal(got.numpy(), sn.median_filter(x, 3))
    got = an.gaussian_filter(t.to(torch.float32).t(), 1.5)
    _assert_close(got.numpy(), sn.gaussian_filter(x.T.astype(np.float64), 1.5).astype(np.float32), 255, "torch cpu")
    out = torch.zeros((16, 17), dtype=torch.int16)
    assert an.grey_opening(t.to(torch.int16), size=(2, 3), output=out) is out
    assert np.array_equal(out.numpy(), sn.grey_opening(x.astype(np.int16), size=(2, 3)))


def test_the_migration_example_in_the_docs_runs():
    """docs/python.md's apron.ndimage example, run as written (and its results are SciPy's)."""
    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "python.md").read_text()
    section = text[text.index("## apron.ndimage"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    assert "import apron.ndimage as ndi" in code
    scope = {}
    exec(compile(code, "docs/python.md", "exec"), scope)
    assert np.array_equal(scope["med"], sn.median_filter(scope["img"], size=5))
    assert np.array_equal(scope["rgb_med"], sn.median_filter(scope["rgb"], size=(5, 5, 1)))
    assert np.array_equal(scope["opened"], sn.grey_opening(scope["img"], footprint=np.eye(5, dtype=bool), mode="nearest"))
