"""correlate / convolve with mask files against scipy.ndimage.correlate / convolve (SPEC.md "Coordinates and
masks", "Borders", "Types, rounding, saturation", "Normalisation and scaling")."""
import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import (
    BORDERS,
    assert_equal_images,
    assert_f32_close,
    random_image,
    spec_correlate,
    to_type,
    write_mask,
)

# (H, W) mask shapes: odd, even, mixed, a single row/column, and larger ones.
MASK_SHAPES = [(3, 3), (4, 4), (5, 2), (1, 4), (6, 1), (7, 5), (2, 3)]
# (h, w) image shapes: odd, a single pixel, a single row/column, tiny ones where masks overhang both sides.
SMALL_IMAGES = [(1, 1), (1, 9), (9, 1), (2, 3), (3, 5)]
CVAL = {np.float32: 7.5, np.uint8: 7, np.uint16: 300}


def scipy_ref(img, m, border, value, convolve):
    f = ndi.convolve if convolve else ndi.correlate
    return f(np.asarray(img, np.float64), np.asarray(m, np.float64), mode=border, cval=value, origin=0)


def op_spec(kind, mask_path, border, value, extra=""):
    spec = f"{kind}:mask={mask_path},border={border}"
    if border == "constant":
        spec += f",value={value}"
    return spec + extra


def test_scipy_matches_spec_formula():
    """The reference itself: scipy's correlate/convolve with origin=0 equal SPEC.md's formulas for odd and
    even sizes (for even sizes scipy.ndimage.convolve shifts its origin by one, which lands exactly on
    SPEC's in(x - i + cx)), including masks larger than the image. If this ever failed, the apron tests
    below would be checking against the wrong thing."""
    rng = np.random.default_rng(0)
    for (h, w) in [(23, 37), (1, 1), (1, 9), (9, 1), (2, 3)]:
        img = rng.uniform(-1, 1, (h, w))
        for shape in MASK_SHAPES + [(11, 13)]:
            m = rng.uniform(-1, 1, shape)
            for border in BORDERS:
                for conv in (False, True):
                    np.testing.assert_allclose(
                        scipy_ref(img, m, border, 0.7, conv),
                        spec_correlate(img, m, border, 0.7, conv),
                        atol=1e-12,
                        err_msg=f"scipy vs SPEC formula: image {h}x{w} mask {shape} {border} convolve={conv}",
                    )


@pytest.mark.parametrize("convolve", [False, True], ids=["correlate", "convolve"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("mshape", MASK_SHAPES, ids=lambda s: f"{s[1]}x{s[0]}")
def test_f32_mask_file(apron, tmp_path, mshape, border, convolve):
    img = random_image((23, 37), np.float32, seed=1)
    m = np.random.default_rng(100 + mshape[0] * 10 + mshape[1]).uniform(-2, 2, mshape)
    mask = write_mask(tmp_path / "m.kernel", m)
    kind = "convolve" if convolve else "correlate"
    got = apron.filter(tmp_path, img, op_spec(kind, mask, border, 7.5))
    exp = scipy_ref(img, m, border, 7.5, convolve)
    bound = np.abs(m).sum() * max(np.abs(img).max(), 7.5)
    assert_f32_close(got, exp, bound, f"{kind} {mshape} {border}")


@pytest.mark.parametrize("convolve", [False, True], ids=["correlate", "convolve"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("ishape", SMALL_IMAGES, ids=lambda s: f"img{s[1]}x{s[0]}")
def test_f32_mask_larger_than_image(apron, tmp_path, ishape, border, convolve):
    """The border extension repeats for masks larger than the image; a 1-pixel row in mirror repeats it."""
    img = random_image(ishape, np.float32, seed=2)
    m = np.random.default_rng(3).uniform(-1, 1, (8, 11))
    mask = write_mask(tmp_path / "big.kernel", m)
    kind = "convolve" if convolve else "correlate"
    got = apron.filter(tmp_path, img, op_spec(kind, mask, border, 7.5))
    exp = scipy_ref(img, m, border, 7.5, convolve)
    bound = np.abs(m).sum() * max(np.abs(img).max(), 7.5)
    assert_f32_close(got, exp, bound, f"{kind} 11x8 mask on {ishape} image, {border}")


@pytest.mark.parametrize("convolve", [False, True], ids=["correlate", "convolve"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["u8", "u16"])
@pytest.mark.parametrize("mshape", [(3, 3), (4, 4), (2, 5), (1, 6), (5, 7)], ids=lambda s: f"{s[1]}x{s[0]}")
def test_integer_mask_bit_exact(apron, tmp_path, mshape, dtype, border, convolve):
    """Integer image and integer weights: exact sum, round half to even, saturate -> identical bits."""
    img = random_image((23, 37), dtype, seed=4)
    m = np.random.default_rng(200 + mshape[0] * 10 + mshape[1]).integers(-3, 5, mshape)
    mask = write_mask(tmp_path / "int.kernel", m)
    kind = "convolve" if convolve else "correlate"
    value = CVAL[dtype]
    got = apron.filter(tmp_path, img, op_spec(kind, mask, border, value))
    exp = to_type(scipy_ref(img, m, border, value, convolve), dtype)
    assert_equal_images(got, exp, f"{kind} {mshape} {border} {np.dtype(dtype)}")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("ishape", SMALL_IMAGES, ids=lambda s: f"img{s[1]}x{s[0]}")
def test_u8_mask_larger_than_image(apron, tmp_path, ishape, border):
    img = random_image(ishape, np.uint8, seed=5)
    m = np.random.default_rng(6).integers(-1, 3, (6, 9))
    mask = write_mask(tmp_path / "big.kernel", m)
    got = apron.filter(tmp_path, img, op_spec("correlate", mask, border, 7))
    assert_equal_images(got, to_type(scipy_ref(img, m, border, 7, False), np.uint8), f"{ishape} {border}")


@pytest.mark.parametrize("border", ["reflect", "constant", "wrap"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["u8", "u16"])
def test_integer_image_float_mask_within_one(apron, tmp_path, dtype, border):
    """Non-integer weights on an integer image: within 1 of the correctly rounded float64 result."""
    img = random_image((23, 37), dtype, seed=7)
    m = np.random.default_rng(8).uniform(-0.3, 0.6, (5, 4))
    mask = write_mask(tmp_path / "f.kernel", m)
    got = apron.filter(tmp_path, img, op_spec("correlate", mask, border, CVAL[dtype]))
    exp = to_type(scipy_ref(img, m, border, CVAL[dtype], False), dtype)
    assert_equal_images(got, exp, f"float mask on {np.dtype(dtype)}", max_diff=1)


def test_default_border_is_reflect(apron, tmp_path):
    img = random_image((23, 37), np.float32, seed=9)
    m = np.random.default_rng(10).uniform(-1, 1, (4, 5))
    mask = write_mask(tmp_path / "m.kernel", m)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask}")
    assert_f32_close(got, scipy_ref(img, m, "reflect", 0, False), np.abs(m).sum() * np.abs(img).max(), "default border")
    explicit = apron.filter(tmp_path, img, f"correlate:mask={mask},border=reflect")
    assert_equal_images(got, explicit, "no border vs border=reflect")


@pytest.mark.parametrize(
    "alias,canonical",
    [("zero", "constant"), ("replicate", "nearest"), ("clamp", "nearest"), ("symmetric", "reflect"),
     ("reflect101", "mirror"), ("periodic", "wrap")],
)
def test_border_aliases(apron, tmp_path, alias, canonical):
    img = random_image((9, 13), np.uint8, seed=11)
    mask = write_mask(tmp_path / "m.kernel", np.arange(1, 13).reshape(3, 4))
    a = apron.filter(tmp_path, img, f"correlate:mask={mask},border={alias}", out_type="f32")
    b = apron.filter(tmp_path, img, f"correlate:mask={mask},border={canonical}", out_type="f32")
    assert_equal_images(a, b, f"{alias} vs {canonical}")


def test_mask_file_syntax(apron, tmp_path):
    """Comments, blank lines, CRLF line ends, tabs and decimal spellings of the same weights."""
    img = random_image((11, 17), np.uint8, seed=12)
    m = np.array([[1, -2, 3], [0, 4, -1]])
    plain = write_mask(tmp_path / "plain.kernel", m)
    fancy = tmp_path / "fancy.kernel"
    fancy.write_bytes(b"# a comment\r\n\r\n3\t2\r\n  # another\r\n1.0 -2 3e0\r\n\r\n0.00\t4 -1.\r\n# end\r\n")
    a = apron.filter(tmp_path, img, f"correlate:mask={plain}")
    b = apron.filter(tmp_path, img, f"correlate:mask={fancy}")
    assert_equal_images(a, b, "mask syntax variants")
    assert_equal_images(a, to_type(scipy_ref(img, m, "reflect", 0, False), np.uint8), "mask vs scipy")


# ---- normalize / scale / delta ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("mshape", [(3, 3), (4, 2)], ids=lambda s: f"{s[1]}x{s[0]}")
def test_normalize_sum(apron, tmp_path, dtype, mshape):
    img = random_image((23, 37), dtype, seed=13)
    m = np.random.default_rng(14 + mshape[1]).integers(0, 6, mshape)
    m[0, 0] += 1  # sum > 0
    mask = write_mask(tmp_path / "m.kernel", m)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask},normalize=sum,border=nearest")
    exp = scipy_ref(img, m, "nearest", 0, False) / m.sum()
    if dtype == np.float32:
        assert_f32_close(got, exp, np.abs(img).max(), "normalize=sum")
    else:
        assert_equal_images(got, to_type(exp, dtype), "normalize=sum")


def test_normalize_sum_zero_sum_is_raw(apron, tmp_path):
    """normalize=sum divides only when the sum of weights is non-zero."""
    img = random_image((23, 37), np.float32, seed=15)
    m = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    mask = write_mask(tmp_path / "z.kernel", m)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask},normalize=sum")
    assert_f32_close(got, scipy_ref(img, m, "reflect", 0, False), 8 * np.abs(img).max(), "zero-sum normalize=sum")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("sign", ["positive", "zero", "negative"])
def test_normalize_book(apron, tmp_path, dtype, sign):
    """SPEC's book rule: S > 0 divide by S; S = 0 add the mid value; S < 0 add the maximum."""
    img = random_image((23, 37), dtype, seed=16, **({"lo": 0.0, "hi": 1.0} if dtype == np.float32 else {}))
    m = {
        "positive": np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]),
        "zero": np.array([[0, -1, 0], [-1, 4, -1], [0, -1, 0]]),
        "negative": np.array([[0, 1, 0], [1, -6, 1], [0, 1, 0]]),
    }[sign]
    mask = write_mask(tmp_path / "b.kernel", m)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask},normalize=book,border=mirror")
    raw = scipy_ref(img, m, "mirror", 0, False)
    mid, top = {np.uint8: (128, 255), np.uint16: (32768, 65535), np.float32: (0.5, 1.0)}[dtype]
    exp = raw / m.sum() if sign == "positive" else raw + (mid if sign == "zero" else top)
    if dtype == np.float32:
        assert_f32_close(got, exp, np.abs(m).sum(), f"book {sign}")
    else:
        assert_equal_images(got, to_type(exp, dtype), f"book {sign}")


@pytest.mark.parametrize(
    "scale,delta,normalize", [(0.5, 3, "none"), (-1, 255, "none"), (2, -10, "sum"), (0.25, 128.5, "none"), (3, 0, "none")]
)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
def test_scale_delta(apron, tmp_path, dtype, scale, delta, normalize):
    """out = scale * normalise(sum) + delta."""
    img = random_image((23, 37), dtype, seed=17)
    m = np.array([[1, 2, 0, 1], [0, -1, 3, 1], [2, 1, 1, 0]])
    mask = write_mask(tmp_path / "s.kernel", m)
    got = apron.filter(tmp_path, img, f"convolve:mask={mask},normalize={normalize},scale={scale},delta={delta}")
    raw = scipy_ref(img, m, "reflect", 0, True)
    exp = (raw / m.sum() if normalize == "sum" else raw) * scale + delta
    if dtype == np.float32:
        assert_f32_close(got, exp, abs(scale) * np.abs(m).sum() * np.abs(img).max() + abs(delta), "scale/delta")
    else:
        assert_equal_images(got, to_type(exp, dtype), f"scale={scale} delta={delta}")


def test_separable_equals_outer_product(apron, tmp_path):
    """separable: m(i,j) = column[j] * row[i]."""
    img = random_image((23, 37), np.uint8, seed=18)
    row, col = [1, 2, 1, -1], [-1, 0, 3]
    got = apron.filter(tmp_path, img, "separable:row=1:2:1:-1,column=-1:0:3,border=wrap", out_type="f32")
    m = np.outer(col, row)
    assert_equal_images(got, scipy_ref(img, m, "wrap", 0, False).astype(np.float32), "separable")


# ---- exactness corner cases ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights,spec_extra",
    [
        (np.random.default_rng(19).integers(500, 1000, (7, 7)), ",normalize=sum"),  # sums beyond 32 bits on u16
        (np.full((5, 5), 10**6), ",normalize=sum"),
        (np.full((9, 9), 2.0**40), ",normalize=sum"),
        (np.array([[-1, -2, -1], [0, 1, 0]]), ",normalize=sum"),  # negative sum of weights
    ],
    ids=["u16-wide-sum", "1e6-weights", "2^40-weights", "negative-sum"],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["u8", "u16"])
def test_large_or_negative_integer_weights_exact(apron, tmp_path, weights, spec_extra, dtype):
    img = random_image((23, 37), dtype, seed=20)
    mask = write_mask(tmp_path / "w.kernel", weights)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask}{spec_extra}")
    # exact rational arithmetic: the weights share one factor, so divide it out first
    g = np.gcd.reduce(np.abs(weights.astype(np.int64)).ravel()) if weights.max() < 2**40 else 2**40
    w = (weights // g).astype(np.int64)
    exp = ndi.correlate(img.astype(np.int64), w, mode="reflect") / w.sum()
    assert_equal_images(got, to_type(exp, dtype), "large/negative integer weights")


@pytest.mark.parametrize("d", [3, 7, 10, 12])
def test_rational_weights_exact(apron, tmp_path, d):
    """Weights k/d written as decimals (1/3 = 0.333...): integers over one divisor, so exact rounding."""
    img = random_image((23, 37), np.uint8, seed=21)
    k = np.array([[1, 2, 1], [2, d - 6 + 4, 0]]) if d > 6 else np.array([[1, 1, 0], [0, 1, 0]])
    mask = write_mask(tmp_path / "r.kernel", k / d)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask},border=mirror")
    exp = ndi.correlate(img.astype(np.int64), k, mode="mirror") / d
    assert_equal_images(got, to_type(exp, np.uint8), f"weights over {d}")


# Widths around SIMD vector lengths and tile edges, so vector tails and remainders are exercised.
WIDTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("width", WIDTHS)
def test_vector_tails(apron, tmp_path, width, dtype):
    img = random_image((6, width), dtype, seed=22 + width)
    x = img.astype(np.float64)
    mask = write_mask(tmp_path / "t.kernel", [[1, -2, 3, 1, 2], [0, 1, 1, -1, 2]])
    got = apron.filter(tmp_path, img, [f"correlate:mask={mask},border=wrap"], out_type="f32")
    exp = ndi.correlate(x, np.array([[1, -2, 3, 1, 2], [0, 1, 1, -1, 2]]), mode="wrap")
    assert_f32_close(got, exp, 14 * np.abs(x).max(), f"correlate width {width}")
    got = apron.filter(tmp_path, img, "box:width=5,height=3,border=mirror")
    exp = ndi.correlate(x, np.ones((3, 5)), mode="mirror") / 15
    if dtype == np.float32:
        assert_f32_close(got, exp, np.abs(x).max(), f"box width {width}")
    else:
        assert_equal_images(got, to_type(exp, dtype), f"box width {width}")
    got = apron.filter(tmp_path, img, "gaussian:sigma=1.5,border=nearest")
    exp = ndi.gaussian_filter(x, 1.5, mode="nearest", radius=5)
    if dtype == np.float32:
        assert_f32_close(got, exp, np.abs(x).max(), f"gaussian width {width}")
    else:
        assert_equal_images(got, to_type(exp, dtype), f"gaussian width {width}", max_diff=1)
