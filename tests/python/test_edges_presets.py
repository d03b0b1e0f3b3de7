"""Edge, sharpen and preset masks: the weights documented in the operation list (`apron ops`), run through
scipy.ndimage.correlate, and the derivative filters against OpenCV (cv2.Sobel / Scharr / Laplacian) and
SciPy's own sobel / prewitt / laplace."""
import numpy as np
import pytest
import scipy.ndimage as ndi

cv2 = pytest.importorskip("cv2")

from conftest import assert_equal_images, assert_f32_close, random_image, to_type  # noqa: E402


def deriv(size, order):
    """(1+z)^(size-1-order) (z-1)^order, lowest power first: OpenCV's getDerivKernels family."""
    k = np.array([1])
    for _ in range(size - 1 - order):
        k = np.convolve(k, [1, 1])
    for _ in range(order):
        k = np.convolve(k, [-1, 1])
    return k


def outer(column, row):
    return np.outer(np.asarray(column), np.asarray(row))


# spec -> (integer weights, divisor), as documented in ops_*.cpp / `apron ops`. Divisors keep rational
# weights exact so the integer references round exactly as SPEC.md asks.
def documented():
    m = {
        "sobel:dx=1": (outer([1, 2, 1], [-1, 0, 1]), 1),
        "sobel:dx=0,dy=1": (outer([-1, 0, 1], [1, 2, 1]), 1),
        "sobel:dx=1,dy=1": (outer([-1, 0, 1], [-1, 0, 1]), 1),
        "sobel:dx=2,ksize=5": (outer(deriv(5, 0), deriv(5, 2)), 1),
        "sobel:dx=1,dy=2,ksize=7": (outer(deriv(7, 2), deriv(7, 1)), 1),
        "scharr:dx=1": (outer([3, 10, 3], [-1, 0, 1]), 1),
        "scharr:dx=0,dy=1": (outer([-1, 0, 1], [3, 10, 3]), 1),
        "prewitt:dx=1": (outer([1, 1, 1], [-1, 0, 1]), 1),
        "prewitt:dx=0,dy=1": (outer([-1, 0, 1], [1, 1, 1]), 1),
        "laplacian": (np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]]), 1),
        "laplacian:neighbours=8": (np.array([[1, 1, 1], [1, -8, 1], [1, 1, 1]]), 1),
        "sharpen": (np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]), 1),
        # strength 0.5: [0 -s 0; -s 1+4s -s; 0 -s 0] = [0 -1 0; -1 6 -1; 0 -1 0] / 2
        "sharpen:strength=0.5": (np.array([[0, -1, 0], [-1, 6, -1], [0, -1, 0]]), 2),
        "emboss": (np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]), 1),
        # xf-sharpen alpha: off-centre -alpha/(9-9 alpha), centre (9-alpha)/(9-9 alpha)
        "xf-sharpen": (np.array([[-4, -4, -4], [-4, 41, -4], [-4, -4, -4]]), 9),  # alpha 0.8
        "xf-sharpen:alpha=0.5": (np.array([[-1, -1, -1], [-1, 17, -1], [-1, -1, -1]]), 9),
        "xf-highpass": (np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]]), 1),
        "xf-lowpass": (np.ones((3, 3), int), 9),
        "xf-lowpass:alpha=10": (np.ones((3, 3), int), 10),
        "xf-gaussian": (np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]), 16),
        "xf-gaussian:alpha=8": (np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]), 8),
        "xf-dgaussian": (np.array([[-2, 1, -2], [1, 4, 1], [-2, 1, -2]]), 1),
    }
    return m


DOC = documented()


def test_deriv_kernels_match_opencv():
    """Our restatement of the Sobel family equals cv2.getDerivKernels (the reference for the weights)."""
    for k in (3, 5, 7):
        for order in range(0, 3):
            kx, _ = cv2.getDerivKernels(order, 0 if order else 1, k)  # OpenCV refuses dx + dy = 0
            np.testing.assert_array_equal(kx.ravel(), deriv(k, order), err_msg=f"ksize {k} order {order}")


@pytest.mark.parametrize("border", ["reflect", "mirror", "nearest", "wrap", "constant"])
@pytest.mark.parametrize("spec", list(DOC), ids=list(DOC))
def test_documented_weights_f32_out(apron, tmp_path, spec, border):
    """u8 input, --out-type f32 so negatives survive; exact integer sums (divided once) as float32."""
    img = random_image((23, 37), np.uint8, seed=50)
    w, d = DOC[spec]
    full = f"{spec}{',' if ':' in spec else ':'}border={border}" + (",value=77" if border == "constant" else "")
    got = apron.filter(tmp_path, img, full, out_type="f32")
    exp = ndi.correlate(img.astype(np.float64), w.astype(np.float64), mode=border, cval=77) / d
    assert_f32_close(got, exp, np.abs(w).sum() / d * 255, full)


@pytest.mark.parametrize("spec", list(DOC), ids=list(DOC))
def test_documented_weights_u8_saturating(apron, tmp_path, spec):
    """Integer output: round half to even of the exact result, then saturate to 0..255."""
    img = random_image((23, 37), np.uint8, seed=51)
    w, d = DOC[spec]
    got = apron.filter(tmp_path, img, spec)
    isum = ndi.correlate(img.astype(np.int64), w.astype(np.int64), mode="reflect")
    assert_equal_images(got, to_type(isum / d, np.uint8), spec)


@pytest.mark.parametrize("spec", ["sobel:dx=1", "laplacian", "xf-gaussian", "emboss:delta=128", "xf-sharpen"])
def test_documented_weights_f32_in(apron, tmp_path, spec):
    img = random_image((23, 37), np.float32, seed=52)
    base = spec.split(":")[0] if spec.startswith("emboss") else spec
    w, d = DOC[base]
    got = apron.filter(tmp_path, img, spec)
    exp = ndi.correlate(img.astype(np.float64), w / d, mode="reflect") + (128 if "delta" in spec else 0)
    assert_f32_close(got, exp, np.abs(w).sum() / d * np.abs(img).max() + 128, spec)


# ---- against OpenCV ----------------------------------------------------------------------------------

CV_BORDER = {
    "mirror": cv2.BORDER_REFLECT_101,
    "reflect": cv2.BORDER_REFLECT,
    "nearest": cv2.BORDER_REPLICATE,
    "constant": cv2.BORDER_CONSTANT,  # value 0
}


@pytest.mark.parametrize("border", list(CV_BORDER))
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
@pytest.mark.parametrize(
    "dx,dy,ksize", [(1, 0, 3), (0, 1, 3), (1, 1, 3), (2, 0, 3), (1, 0, 5), (0, 2, 5), (1, 1, 7), (2, 1, 7)]
)
def test_sobel_vs_opencv(apron, tmp_path, dx, dy, ksize, dtype, border):
    img = random_image((23, 37), dtype, seed=53)
    got = apron.filter(tmp_path, img, f"sobel:dx={dx},dy={dy},ksize={ksize},border={border}", out_type="f32")
    exp = cv2.Sobel(img, cv2.CV_32F, dx, dy, ksize=ksize, borderType=CV_BORDER[border])
    bound = np.abs(outer(deriv(ksize, dy), deriv(ksize, dx))).sum() * float(np.abs(img).max())
    assert_f32_close(got, exp, bound, f"sobel dx={dx} dy={dy} ksize={ksize} {border}")


def test_sobel_scale_delta_vs_opencv(apron, tmp_path):
    img = random_image((23, 37), np.uint8, seed=54)
    got = apron.filter(tmp_path, img, "sobel:dx=1,dy=1,ksize=5,scale=0.25,delta=128,border=mirror", out_type="f32")
    exp = cv2.Sobel(img, cv2.CV_32F, 1, 1, ksize=5, scale=0.25, delta=128, borderType=cv2.BORDER_REFLECT_101)
    assert_f32_close(got, exp, 0.25 * 144 * 255 + 128, "sobel scale/delta")


@pytest.mark.parametrize("border", list(CV_BORDER))
@pytest.mark.parametrize("dx,dy", [(1, 0), (0, 1)])
def test_scharr_vs_opencv(apron, tmp_path, dx, dy, border):
    img = random_image((23, 37), np.float32, seed=55)
    got = apron.filter(tmp_path, img, f"scharr:dx={dx},dy={dy},border={border}")
    exp = cv2.Scharr(img, cv2.CV_32F, dx, dy, borderType=CV_BORDER[border])
    assert_f32_close(got, exp, 32 * float(np.abs(img).max()), f"scharr {dx},{dy} {border}")


@pytest.mark.parametrize("border", list(CV_BORDER))
def test_laplacian_vs_opencv(apron, tmp_path, border):
    img = random_image((23, 37), np.uint8, seed=56)
    got = apron.filter(tmp_path, img, f"laplacian:border={border}", out_type="f32")
    exp = cv2.Laplacian(img, cv2.CV_32F, ksize=1, borderType=CV_BORDER[border])
    assert_f32_close(got, exp, 8 * 255, f"laplacian {border}")


@pytest.mark.parametrize("border", ["reflect", "mirror", "nearest", "wrap", "constant"])
@pytest.mark.parametrize(
    "spec,scipy_fn",
    [
        ("sobel:dx=1", lambda x, m: ndi.sobel(x, axis=1, mode=m)),
        ("sobel:dx=0,dy=1", lambda x, m: ndi.sobel(x, axis=0, mode=m)),
        ("prewitt:dx=1", lambda x, m: ndi.prewitt(x, axis=1, mode=m)),
        ("prewitt:dx=0,dy=1", lambda x, m: ndi.prewitt(x, axis=0, mode=m)),
        ("laplacian", lambda x, m: ndi.laplace(x, mode=m)),
    ],
    ids=["sobel-x", "sobel-y", "prewitt-x", "prewitt-y", "laplace"],
)
def test_vs_scipy_named_filters(apron, tmp_path, spec, scipy_fn, border):
    img = random_image((23, 37), np.float32, seed=57)
    got = apron.filter(tmp_path, img, f"{spec}{',' if ':' in spec else ':'}border={border}")
    exp = scipy_fn(img.astype(np.float64), border)
    assert_f32_close(got, exp, 8 * float(np.abs(img).max()), f"{spec} {border}")


@pytest.mark.parametrize("ishape", [(1, 1), (1, 9), (9, 1)], ids=lambda s: f"img{s[1]}x{s[0]}")
def test_sobel7_on_tiny_images(apron, tmp_path, ishape):
    img = random_image(ishape, np.float32, seed=58)
    got = apron.filter(tmp_path, img, "sobel:dx=1,dy=1,ksize=7,border=mirror")
    w = outer(deriv(7, 1), deriv(7, 1))
    exp = ndi.correlate(img.astype(np.float64), w, mode="mirror")
    assert_f32_close(got, exp, np.abs(w).sum() * float(np.abs(img).max()), f"sobel7 on {ishape}")
