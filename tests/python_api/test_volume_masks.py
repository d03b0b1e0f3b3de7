"""3-D masks and structuring elements given as NumPy arrays (D, H, W), SciPy's (Z, Y, X) order.

What is pinned (docs/python.md, docs/volumes.md "3-D mask files"):
- apron.correlate / convolve / apron.op("correlate", mask=...) take (D, H, W) weights on a volume (layout='zyx'):
  the 'W H D' mask file's result (plane k weighs plane z + k - D // 2), within SPEC.md's tolerance of SciPy;
- apron.dilate / erode / open / close / gradient / tophat / blackhat and median / percentile take (D, H, W) 0/1
  elements: SciPy's bits;
- apron.ndimage.correlate / convolve on (Z, Y, X) volumes with 3-D weights (origins, even sizes, weights larger
  than the volume, one-plane volumes, every mode): within SPEC.md's float tolerance of SciPy, and on integer
  images SPEC.md's rounding (exact for integer weights);
- apron.ndimage's minimum/maximum filters and grey morphology with any 3-D footprint on volumes: SciPy's bits;
- refusals: 4-D arrays, NaN weights, elements deeper than 255 planes, each in one line naming the parameter.
"""
import itertools
import warnings

import numpy as np
import pytest

import apron
import apron.ndimage as an
from apron_cli_references import random_array

sn = pytest.importorskip("scipy.ndimage")

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
BORDERS = ["reflect", "constant", "nearest", "mirror", "wrap"]
_rng = np.random.default_rng(3031)
W333 = _rng.uniform(-1, 1, (3, 3, 3))
W243 = _rng.uniform(-1, 1, (2, 4, 3))  # even depth and height
W422 = _rng.uniform(-1, 1, (4, 2, 2))
W_DEEP = _rng.uniform(-1, 1, (9, 3, 13))  # deeper and wider than the small volumes below
FP333 = _rng.random((3, 3, 3)) > 0.5
FP333[1, 1, 1] = True
FP243 = _rng.random((2, 4, 3)) > 0.4
FP243[0, 0, 0] = True
FP_DEEP = _rng.random((7, 2, 9)) > 0.6
FP_DEEP[3, 1, 4] = True


def ball(r):
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def both(name, *args, **kwargs):
    """(apron's result, SciPy's result); an error SciPy raises must be raised by apron too (the same type)."""
    out = []
    for module in (an, sn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(getattr(module, name)(*args, **kwargs))
            except TypeError as e:  # bool - bool in SciPy's morphological_gradient
                out.append(e)
    if isinstance(out[1], Exception):
        assert type(out[0]) is type(out[1]), (name, out)
        return None, None
    assert not isinstance(out[0], Exception), (name, out[0])
    return out


def assert_within_spec(got, expected, l1, bound, what):
    """SPEC.md: within 1e-5 relative to sum|w| * max|in|."""
    assert got.shape == expected.shape, what
    err = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    tol = 1e-5 * l1 * bound + 1e-6
    assert err.max() <= tol, f"{what}: error {err.max():.3g} > {tol:.3g}"


def rint_saturate(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(np.nan_to_num(x)), info.min, info.max).astype(dtype)


# ---- the op functions: (D, H, W) arrays for mask= and se= ---------------------------------------------------

@pytest.mark.parametrize("border", BORDERS)
def test_correlate_and_convolve_take_3d_weights_on_volumes(border):
    v = random_array((6, 9, 11), np.float32, seed=1)
    for w in (W333, W243, W_DEEP):
        for name in ("correlate", "convolve"):
            got = getattr(apron, name)(v, w, border=border, value=2.5, layout="zyx")
            ref = getattr(sn, name)(v.astype(np.float64), w, mode=border, cval=2.5)
            assert got.dtype == np.float32
            assert_within_spec(got, ref, np.abs(w).sum(), 100, f"{name} {w.shape} {border}")


def test_a_3d_mask_array_is_its_mask_file(tmp_path):
    """The array and the 'W H D' file give the same bits (one path through the registry)."""
    w = np.round(W243 * 8) / 8  # exact in the file's decimals
    path = tmp_path / "m.kernel"
    d, h, wd = w.shape
    path.write_text(f"{wd} {h} {d}\n" + "\n".join("\n".join(" ".join(repr(float(c)) for c in row) for row in plane) + "\n"
                                                   for plane in w))
    v = random_array((5, 8, 7), np.uint16, seed=2)
    for spec_tail in ({}, {"border": "wrap", "normalize": "sum"}):
        from_file = apron.correlate(v, str(path), out_type="f32", layout="zyx", **spec_tail)
        given = apron.correlate(v, w, out_type="f32", layout="zyx", **spec_tail)
        np.testing.assert_array_equal(given, from_file)
        p = apron.Pipeline([apron.op("convolve", mask=w, **spec_tail)])
        np.testing.assert_array_equal(p.run(v, out_type="f32", layout="zyx"),
                                      apron.convolve(v, str(path), out_type="f32", layout="zyx", **spec_tail))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_morphology_takes_3d_elements(dtype):
    v = random_array((7, 10, 12), dtype, seed=3)
    for fp in (FP333, FP243, ball(2)):
        for border in BORDERS:
            kw = {"border": border, "value": 7, "layout": "zyx"}
            mode = {"cval": 7, "mode": border}
            np.testing.assert_array_equal(apron.dilate(v, fp, **kw), sn.maximum_filter(v, footprint=fp, **mode))
            np.testing.assert_array_equal(apron.erode(v, se=fp, **kw), sn.minimum_filter(v, footprint=fp, **mode))
        # ball(2) as an array is ball:2, and the derived ops compose the same steps.
        if fp.shape == (5, 5, 5):
            for op in ("dilate", "erode", "open", "close", "gradient", "tophat", "blackhat"):
                np.testing.assert_array_equal(getattr(apron, op)(v, fp, iterations=2, layout="zyx"),
                                              getattr(apron, op)(v, "ball:2", iterations=2, layout="zyx"), op)
    f = random_array((6, 8, 9), np.float32, seed=4)
    opened = apron.open(f, FP243, border="nearest", layout="zyx")
    ref = sn.maximum_filter(sn.minimum_filter(f, footprint=FP243, mode="nearest"), footprint=FP243, mode="nearest")
    np.testing.assert_array_equal(opened, ref)
    grad = apron.gradient(f, FP333, border="reflect", layout="zyx")
    ref = sn.maximum_filter(f, footprint=FP333) - sn.minimum_filter(f, footprint=FP333)
    np.testing.assert_array_equal(grad, ref)


def test_rank_filters_take_3d_elements():
    """The rank ops' se= reads planes as the morphology's does: a (D, H, W) array is its W H D element."""
    v = random_array((6, 8, 9), np.uint16, seed=12)
    np.testing.assert_array_equal(apron.median(v, ball(2), border="nearest", layout="zyx"),
                                  apron.median(v, "ball:2", border="nearest", layout="zyx"))
    np.testing.assert_array_equal(apron.percentile(v, 30, FP243, border="wrap", layout="zyx"),
                                  sn.percentile_filter(v, 30, footprint=FP243, mode="wrap"))


def test_3d_arrays_are_refused_in_one_line_naming_the_parameter():
    v = np.zeros((4, 5, 6), np.float32)
    with pytest.raises(ValueError, match=r"^correlate\(\): mask: a mask array must be 2-D .* or 3-D"):
        apron.correlate(v, np.ones((2, 2, 2, 2)), layout="zyx")
    w = np.ones((3, 3, 3))
    w[2, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"^correlate\(\): mask: weight at plane 2, row 1, column 0 is not finite$"):
        apron.correlate(v, w, layout="zyx")
    with pytest.raises(ValueError, match=r"^dilate\(\): se: .*structuring element of 256 planes \(at most 255\)$"):
        apron.dilate(v, np.ones((256, 1, 1), bool), layout="zyx")
    with pytest.raises(ValueError, match=r"^erode\(\): se: .*weights must be 0 or 1$"):
        apron.erode(v, np.full((2, 2, 2), 2.0), layout="zyx")
    with pytest.raises(ValueError, match=r"^dilate\(\): se: .*no cell set to 1$"):
        apron.dilate(v, np.zeros((3, 1, 2)), layout="zyx")
    with pytest.raises(ValueError, match=r"mask: the array is 4098x1x1"):
        apron.correlate(v, np.ones((4098, 1, 1)), layout="zyx")
    with pytest.raises(ValueError) as e:
        apron.correlate(v, w, layout="zyx")
    assert "\n" not in str(e.value)


# ---- apron.ndimage: correlate and convolve on volumes -------------------------------------------------------

VOLUME_SHAPES = [(7, 9, 11), (1, 6, 5), (5, 1, 8), (4, 5, 6), (3, 2, 4)]  # (3, 2, 4): 4 columns, still a volume
LINEAR_CASES = [(W333, 0), (W243, (0, -2, 1)), (W422, (1, 0, -1)), (W_DEEP, (-4, 1, 6)), (W333[:1], (0, 1, -1)),
                (W333[:, :1, :1], (-1, 0, 0))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", VOLUME_SHAPES, ids=["x".join(map(str, s)) for s in VOLUME_SHAPES])
def test_ndimage_correlate_and_convolve_on_volumes_within_spec(shape, dtype):
    x = random_array(shape, dtype, seed=5)
    bound = max(float(np.abs(x).max()), 7.25)
    for (w, origin), name, mode in itertools.product(LINEAR_CASES, ("correlate", "convolve"), MODES):
        what = f"{name} {w.shape} origin={origin} {shape} mode={mode}"
        got = getattr(an, name)(x, w, mode=mode, cval=-7.25, origin=origin)
        ref = getattr(sn, name)(x.astype(np.float64), w, mode=mode, cval=-7.25, origin=origin)
        assert got.dtype == x.dtype, what
        assert_within_spec(got, ref, np.abs(w).sum(), bound, what)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16])
def test_ndimage_volume_correlate_on_integers_rounds_once(dtype):
    x = random_array((5, 7, 9), dtype, seed=6)
    integer_w = np.round(W333 * 3)
    for mode in ("reflect", "constant", "wrap"):
        got = an.correlate(x, integer_w, mode=mode, cval=3)
        exact = sn.correlate(x.astype(np.float64), integer_w, mode=mode, cval=3)
        if dtype == np.int16:  # through float32, stored by the rule: within 1
            assert np.abs(got.astype(np.int64) - rint_saturate(exact, dtype).astype(np.int64)).max() <= 1
        else:  # integer weights on uint8 / uint16: the exact sum, rounded once
            np.testing.assert_array_equal(got, rint_saturate(exact, dtype))
        got = an.convolve(x, W243, mode=mode, cval=3, output=np.float32)
        assert_within_spec(got, sn.convolve(x.astype(np.float64), W243, mode=mode, cval=3), np.abs(W243).sum(),
                           float(np.iinfo(dtype).max), mode)
        got = an.convolve(x, W243 / np.abs(W243).sum(), mode=mode, cval=3)
        expected = rint_saturate(sn.convolve(x.astype(np.float64), W243 / np.abs(W243).sum(), mode=mode, cval=3), dtype)
        assert np.abs(got.astype(np.int64) - expected.astype(np.int64)).max() <= 1


def test_ndimage_volume_correlate_with_nan_and_infinite_cval():
    x = random_array((4, 6, 7), np.float32, seed=7)
    for cval in (np.nan, np.inf, -np.inf):
        got = an.correlate(x, W243, mode="constant", cval=cval, origin=(0, 1, -1))
        ref = sn.correlate(x.astype(np.float64), W243, mode="constant", cval=cval, origin=(0, 1, -1))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        finite = np.isfinite(ref)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        assert_within_spec(got[finite], ref[finite], np.abs(W243).sum(), 100, f"cval {cval}")


def test_ndimage_3d_weights_on_arrays_of_at_most_4_columns_filter_them_as_volumes():
    """(Z, Y, 4): weights that span the last axis are a volume filter (SciPy's N-D correlate), not refused."""
    x = random_array((6, 7, 4), np.float32, seed=8)
    for w in (W333, W243):
        got, ref = both("correlate", x, w, mode="nearest")
        assert_within_spec(got, ref, np.abs(w).sum(), 100, str(w.shape))
    got, ref = both("minimum_filter", x, footprint=FP333, mode="wrap")
    np.testing.assert_array_equal(got, ref)


# ---- apron.ndimage: footprints on volumes ------------------------------------------------------------------

SELECTION = ["minimum_filter", "maximum_filter", "grey_erosion", "grey_dilation", "grey_opening", "grey_closing",
             "white_tophat", "black_tophat", "morphological_gradient"]
FOOTPRINTS = [(FP333, 0), (FP243, (0, -2, 1)), (FP_DEEP, (-3, 0, 4)), (ball(1), (1, 0, -1)),
              (FP333[1:2], 0)]  # one plane: the plane's element on every plane


def cval_for(dtype):
    dtype = np.dtype(dtype)
    return -7.25 if dtype.kind == "f" else 1 if dtype == np.bool_ else 3 if dtype.itemsize == 1 else 300


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, np.int16, np.int32, np.bool_],
                         ids=["u8", "u16", "f32", "f64", "i16", "i32", "bool"])
@pytest.mark.parametrize("name", SELECTION)
def test_ndimage_footprints_on_volumes_equal_scipy(name, dtype):
    for shape, (fp, origin) in itertools.product([(6, 7, 9), (1, 5, 6), (3, 2, 5)], FOOTPRINTS):
        x = random_array(shape, dtype, seed=9)
        for mode in MODES:
            what = (name, shape, fp.shape, origin, mode)
            got, ref = both(name, x, footprint=fp, mode=mode, cval=cval_for(dtype), origin=origin)
            if ref is None:  # SciPy refuses (bool - bool): so does apron
                continue
            assert got.dtype == ref.dtype
            if dtype != np.float64:
                assert np.array_equal(got, ref), what
            elif name in ("white_tophat", "black_tophat", "morphological_gradient"):  # float64 differences of
                assert np.abs(got - ref).max() <= 2.0 ** -23 * float(np.abs(x).max()) * 2, what  # float32 selections
            else:  # computed in float32: SciPy's samples rounded to float32 (docs/python.md)
                assert np.array_equal(got, ref.astype(np.float32).astype(np.float64)), what


def test_ndimage_footprints_with_infinite_cval_and_structure():
    x = random_array((5, 6, 7), np.float32, seed=10)
    for cval in (np.inf, -np.inf):
        for name in ("minimum_filter", "grey_dilation"):
            got, ref = both(name, x, footprint=FP243, mode="constant", cval=cval, origin=(0, 1, 0))
            np.testing.assert_array_equal(got, ref)
    got, ref = both("grey_erosion", x, structure=np.zeros((3, 3, 3)), footprint=FP333, mode="mirror")
    np.testing.assert_array_equal(got, ref)
