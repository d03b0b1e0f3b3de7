"""Morphology against OpenCV (SPEC.md "Morphology"): dilate/erode with getStructuringElement shapes, the
morphologyEx family, mask-file elements, border modes. Integer results must be bit-exact."""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from conftest import BORDERS, NP_PAD_MODE, assert_equal_images, random_image, write_mask  # noqa: E402

CV_SHAPE = {"rect": cv2.MORPH_RECT, "cross": cv2.MORPH_CROSS, "ellipse": cv2.MORPH_ELLIPSE}
SES = ["rect:3x3", "rect:5x3", "rect:4x2", "rect:1x1", "rect:2x2", "rect:1x6", "cross:3x3", "cross:5x5",
       "cross:4x6", "ellipse:5x5", "ellipse:7x5", "ellipse:6x4", "ellipse:9x9", "ellipse:2x3"]


def euclidean_disk(r: int) -> np.ndarray:
    """SPEC.md's disk:R, x^2 + y^2 <= R^2 on -R..R: scikit-image's morphology.disk(R) when installed."""
    try:
        from skimage.morphology import disk
    except ImportError:
        y, x = np.mgrid[-r : r + 1, -r : r + 1]
        return (x * x + y * y <= r * r).astype(np.uint8)
    return disk(r).astype(np.uint8)


def se_kernel(spec: str) -> np.ndarray:
    """cv2.getStructuringElement for 'shape:WxH' (OpenCV sizes are (width, height)); disk:R is Euclidean."""
    shape, size = spec.split(":")
    if shape == "disk":
        return euclidean_disk(int(size))
    w, h = (int(v) for v in size.split("x"))
    return cv2.getStructuringElement(CV_SHAPE[shape], (w, h))


def morph_ref(img, se, kind, border=None, value=0.0, iterations=1):
    """SPEC.md: out(x,y) = max (min) over set cells (i,j) of in(x + i - cx, y + j - cy); border None means
    outside pixels are ignored. Applied `iterations` times. Independent of OpenCV."""
    dtype = img.dtype
    x = img.astype(np.float64)
    H, W = se.shape
    cy, cx = H // 2, W // 2
    h, w = x.shape
    pick = np.maximum if kind == "dilate" else np.minimum
    for _ in range(iterations):
        if border is None:
            P = np.pad(x, ((H, H), (W, W)), mode="constant", constant_values=-np.inf if kind == "dilate" else np.inf)
        else:
            kw = {"constant_values": value} if border == "constant" else {}
            P = np.pad(x, ((H, H), (W, W)), mode=NP_PAD_MODE[border], **kw)
        out = np.full_like(x, -np.inf if kind == "dilate" else np.inf)
        for j in range(H):
            for i in range(W):
                if se[j, i]:
                    out = pick(out, P[H + j - cy : H + j - cy + h, W + i - cx : W + i - cx + w])
        x = out
    assert np.isfinite(x).all()
    return x.astype(dtype)


def test_numpy_reference_matches_opencv():
    """The independent numpy reference agrees with OpenCV where both apply (default border, asymmetric SE)."""
    img = random_image((23, 37), np.uint8, seed=60)
    se = np.array([[1, 1, 0, 0], [0, 1, 0, 1], [0, 0, 1, 1]], np.uint8)
    for kind, fn in (("dilate", cv2.dilate), ("erode", cv2.erode)):
        for it in (1, 2):
            np.testing.assert_array_equal(morph_ref(img, se, kind, iterations=it), fn(img, se, iterations=it))


@pytest.mark.parametrize("iterations", [1, 2])
@pytest.mark.parametrize("kind", ["dilate", "erode"])
@pytest.mark.parametrize("se", SES)
def test_u8_vs_opencv(apron, tmp_path, se, kind, iterations):
    img = random_image((23, 37), np.uint8, seed=61)
    got = apron.filter(tmp_path, img, f"{kind}:se={se},iterations={iterations}")
    k = se_kernel(se)
    exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, k, iterations=iterations)
    assert_equal_images(got, exp, f"{kind} {se} x{iterations}")
    assert_equal_images(got, morph_ref(img, k, kind, iterations=iterations), f"{kind} {se} x{iterations} (numpy)")


@pytest.mark.parametrize("kind", ["dilate", "erode"])
@pytest.mark.parametrize("dtype", [np.uint16, np.float32], ids=["u16", "f32"])
@pytest.mark.parametrize("se", ["rect:3x5", "cross:4x4", "ellipse:7x7"])
def test_other_types_vs_opencv(apron, tmp_path, se, dtype, kind):
    img = random_image((23, 37), dtype, seed=62)
    got = apron.filter(tmp_path, img, f"{kind}:se={se}")
    exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, se_kernel(se))
    assert_equal_images(got, exp, f"{kind} {se} {np.dtype(dtype)}")


def test_default_se_is_rect3x3(apron, tmp_path):
    img = random_image((23, 37), np.uint8, seed=63)
    assert_equal_images(apron.filter(tmp_path, img, "dilate"), cv2.dilate(img, np.ones((3, 3), np.uint8)), "dilate")


def test_euclidean_disk_reference():
    """The formula itself (independent of apron): disk(2) as scikit-image draws it, and it differs from
    OpenCV's 5x5 ellipse, which apron's disk:2 used to be."""
    np.testing.assert_array_equal(euclidean_disk(2), [[0, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1],
                                                      [0, 1, 1, 1, 0], [0, 0, 1, 0, 0]])
    assert not np.array_equal(euclidean_disk(2), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5, 8])
def test_disk_is_euclidean(apron, tmp_path, r):
    img = random_image((23, 37), np.uint8, seed=64)
    got = apron.filter(tmp_path, img, f"erode:se=disk:{r}")
    k = euclidean_disk(r)
    assert_equal_images(got, cv2.erode(img, k), f"disk:{r}")
    assert_equal_images(got, morph_ref(img, k, "erode"), f"disk:{r} (numpy)")


MORPH_EX = {
    "open": cv2.MORPH_OPEN,
    "close": cv2.MORPH_CLOSE,
    "gradient": cv2.MORPH_GRADIENT,
    "tophat": cv2.MORPH_TOPHAT,
    "blackhat": cv2.MORPH_BLACKHAT,
}


@pytest.mark.parametrize("iterations", [1, 2])
@pytest.mark.parametrize("se", ["rect:3x3", "rect:4x2", "cross:5x3", "ellipse:5x5"])
@pytest.mark.parametrize("op", list(MORPH_EX))
def test_morphology_ex_vs_opencv(apron, tmp_path, op, se, iterations):
    img = random_image((23, 37), np.uint8, seed=65)
    got = apron.filter(tmp_path, img, f"{op}:se={se},iterations={iterations}")
    exp = cv2.morphologyEx(img, MORPH_EX[op], se_kernel(se), iterations=iterations)
    assert_equal_images(got, exp, f"{op} {se} x{iterations}")


@pytest.mark.parametrize("op", list(MORPH_EX))
@pytest.mark.parametrize("dtype", [np.uint16, np.float32], ids=["u16", "f32"])
def test_morphology_ex_other_types(apron, tmp_path, op, dtype):
    img = random_image((23, 37), dtype, seed=66)
    got = apron.filter(tmp_path, img, f"{op}:se=ellipse:5x3")
    exp = cv2.morphologyEx(img, MORPH_EX[op], se_kernel("ellipse:5x3"))
    if dtype == np.float32:  # f32 differences are exact too: the operands are input values
        np.testing.assert_allclose(got, exp, rtol=0, atol=1e-4 * float(np.abs(img).max()))
    else:
        assert_equal_images(got, exp, f"{op} u16")


# An asymmetric element whose anchor (W/2, H/2) = (2, 1) is set: catches a reflected or shifted SE.
SE_FILE = np.array([[1, 1, 0, 0, 0], [0, 0, 1, 0, 1], [0, 0, 0, 1, 1]], np.uint8)


@pytest.mark.parametrize("op", ["dilate", "erode", "open", "close", "gradient", "tophat", "blackhat"])
def test_mask_file_se(apron, tmp_path, op):
    img = random_image((23, 37), np.uint8, seed=67)
    se_path = write_mask(tmp_path / "asym.se", SE_FILE)
    got = apron.filter(tmp_path, img, f"{op}:se={se_path}")
    if op in ("dilate", "erode"):
        exp = (cv2.dilate if op == "dilate" else cv2.erode)(img, SE_FILE)
    else:
        exp = cv2.morphologyEx(img, MORPH_EX[op], SE_FILE)
    assert_equal_images(got, exp, f"{op} with mask-file SE")


@pytest.mark.parametrize("ishape", [(1, 1), (1, 9), (9, 1), (2, 3)], ids=lambda s: f"img{s[1]}x{s[0]}")
@pytest.mark.parametrize("se", ["rect:5x5", "ellipse:7x7", "cross:6x4"])
@pytest.mark.parametrize("kind", ["dilate", "erode"])
def test_se_larger_than_image(apron, tmp_path, ishape, se, kind):
    img = random_image(ishape, np.uint8, seed=68)
    got = apron.filter(tmp_path, img, f"{kind}:se={se}")
    exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, se_kernel(se))
    assert_equal_images(got, exp, f"{kind} {se} on {ishape}")


CV_BORDER = {"nearest": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT, "mirror": cv2.BORDER_REFLECT_101,
             "constant": cv2.BORDER_CONSTANT}  # OpenCV morphology has no BORDER_WRAP


@pytest.mark.parametrize("kind", ["dilate", "erode"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("se", ["rect:3x3", "ellipse:5x3", "cross:4x4", "rect:7x7"])
def test_border_modes(apron, tmp_path, se, border, kind):
    img = random_image((13, 11), np.uint8, seed=69)
    spec = f"{kind}:se={se},border={border}" + (",value=9" if border == "constant" else "")
    got = apron.filter(tmp_path, img, spec)
    k = se_kernel(se)
    assert_equal_images(got, morph_ref(img, k, kind, border, 9), spec)
    if border in CV_BORDER:
        fn = cv2.dilate if kind == "dilate" else cv2.erode
        assert_equal_images(got, fn(img, k, borderType=CV_BORDER[border], borderValue=9), spec + " (OpenCV)")


@pytest.mark.parametrize("border", BORDERS)
def test_border_modes_iterated_tiny(apron, tmp_path, border):
    """Border modes with iterations on an image smaller than the element (the extension repeats)."""
    img = random_image((3, 2), np.uint8, seed=70)
    spec = f"dilate:se=ellipse:5x7,iterations=2,border={border}" + (",value=9" if border == "constant" else "")
    got = apron.filter(tmp_path, img, spec)
    assert_equal_images(got, morph_ref(img, se_kernel("ellipse:5x7"), "dilate", border, 9, iterations=2), spec)


@pytest.mark.parametrize("border", ["ignore", "none"])
def test_explicit_ignore_border(apron, tmp_path, border):
    img = random_image((23, 37), np.uint8, seed=71)
    got = apron.filter(tmp_path, img, f"erode:se=cross:5x5,border={border}")
    assert_equal_images(got, cv2.erode(img, se_kernel("cross:5x5")), f"border={border}")


def test_ppm_per_channel(apron, tmp_path):
    img = random_image((23, 37, 3), np.uint8, seed=72)
    got = apron.filter(tmp_path, img, "dilate:se=ellipse:5x5")
    assert_equal_images(got, cv2.dilate(img, se_kernel("ellipse:5x5")), "3-channel dilate")


@pytest.mark.parametrize("out_type", ["f32", "u16"])
@pytest.mark.parametrize("op", ["dilate", "gradient", "blackhat"])
def test_out_type(apron, tmp_path, op, out_type):
    """Morphology is exact in its input type; the result is then converted to the asked output type."""
    img = random_image((23, 37), np.uint8, seed=73)
    got = apron.filter(tmp_path, img, f"{op}:se=ellipse:5x5", out_type=out_type)
    k = se_kernel("ellipse:5x5")
    exp = cv2.dilate(img, k) if op == "dilate" else cv2.morphologyEx(img, MORPH_EX[op], k)
    assert_equal_images(got, exp.astype(np.float32 if out_type == "f32" else np.uint16), f"{op} -> {out_type}")
