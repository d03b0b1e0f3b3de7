"""NaN in f32 morphology (SPEC.md "Morphology"): a NaN sample is missing; dilate and erode take the max and
min over the element's samples that are not NaN, and an output whose element covers no such sample is NaN,
never a finite stand-in such as -3.4e38. -inf and +inf are samples. The derived operations are OpenCV's
morphologyEx over that rule, with float arithmetic (NaN - x = NaN, inf - inf = NaN).

The expected images come from scipy.ndimage.generic_filter with a NaN-skipping max / min (outside pixels
that are ignored read as NaN, i.e. missing), on the reference and cpu backends, whole and streamed in bands
with halos."""
import numpy as np
import pytest

ndimage = pytest.importorskip("scipy.ndimage")

from conftest import read_image, write_image  # noqa: E402

SCIPY_MODE = {"constant": "constant", "nearest": "nearest", "reflect": "reflect", "mirror": "mirror", "wrap": "wrap"}
BORDER_VALUE = 0.5


def element(spec: str) -> np.ndarray:
    """rect:WxH, cross:WxH and disk:R, restated (rows = height)."""
    shape, size = spec.split(":")
    if shape == "disk":
        r = int(size)
        y, x = np.mgrid[-r : r + 1, -r : r + 1]
        return x * x + y * y <= r * r
    w, h = (int(v) for v in size.split("x"))
    if shape == "rect":
        return np.ones((h, w), bool)
    se = np.zeros((h, w), bool)
    se[h // 2, :] = True
    se[:, w // 2] = True
    return se


def nan_extremum(values: np.ndarray, kind: str) -> float:
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        return np.nan
    return kept.max() if kind == "dilate" else kept.min()


def extremum(img: np.ndarray, se: np.ndarray, kind: str, border: str | None) -> np.ndarray:
    """SPEC's dilate / erode per channel; border None: outside pixels ignored (scipy reads them as NaN)."""
    mode = "constant" if border is None else SCIPY_MODE[border]
    cval = np.nan if border is None else BORDER_VALUE
    planes = img[..., None] if img.ndim == 2 else img
    out = np.stack([ndimage.generic_filter(planes[..., c].astype(np.float64), nan_extremum, footprint=se, mode=mode,
                                           cval=cval, extra_arguments=(kind,))
                    for c in range(planes.shape[-1])], axis=-1).astype(np.float32)
    return out[..., 0] if img.ndim == 2 else out


def morphology(img, op, se, border, iterations=1):
    """cv2.morphologyEx's definitions over the restated dilate / erode, in float32 arithmetic."""
    def times(x, kind):
        for _ in range(iterations):
            x = extremum(x, se, kind, border)
        return x

    with np.errstate(invalid="ignore"):
        if op in ("dilate", "erode"):
            return times(img, op)
        if op == "open":
            return times(times(img, "erode"), "dilate")
        if op == "close":
            return times(times(img, "dilate"), "erode")
        if op == "gradient":
            return times(img, "dilate") - times(img, "erode")
        if op == "tophat":
            return img - times(times(img, "erode"), "dilate")
        return times(times(img, "dilate"), "erode") - img  # blackhat


def holed(shape, seed):
    """Random samples with a NaN hole of 12 x 9 pixels (larger than the elements here), scattered NaN and
    infinities."""
    rng = np.random.default_rng(seed)
    img = rng.uniform(-1, 2, shape).astype(np.float32)
    flat = img.reshape(-1)
    picks = rng.choice(flat.size, flat.size // 8, replace=False)
    flat[picks] = rng.choice(np.array([np.nan, np.nan, np.inf, -np.inf], np.float32), picks.size)
    img[6:15, 5:17] = np.nan
    return img


def spec(op, se, border, iterations=1):
    s = f"{op}:se={se}"
    if border:
        s += f",border={border}" + (f",value={BORDER_VALUE}" if border == "constant" else "")
    if iterations > 1:
        s += f",iterations={iterations}"
    return s


def run(apron, tmp_path, img, op_spec, extra, name):
    src, dst = tmp_path / f"{name}_in.pfm", tmp_path / f"{name}_out.pfm"
    write_image(src, img)
    apron.run("filter", src, dst, "--op", op_spec, *extra)
    return read_image(dst)


RUNS = {"reference": ["--backend", "reference"], "cpu": ["--backend", "cpu", "--stream", "off"],
        "streamed": ["--backend", "cpu", "--stream", "on", "--band-rows", "4"]}


def assert_same(got, want, what):
    assert got.shape == want.shape, what
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if not same.all():
        y, x = np.argwhere(same.reshape(same.shape[:2] + (-1,)).all(axis=-1) == 0)[0]
        pytest.fail(f"{what}: {np.count_nonzero(~same)} samples differ, first at (x={x}, y={y}): "
                    f"want {want[y, x]}, got {got[y, x]}")


@pytest.mark.parametrize("run_kind", list(RUNS))
@pytest.mark.parametrize("border", [None, "constant", "nearest", "reflect", "mirror", "wrap"])
@pytest.mark.parametrize("op", ["dilate", "erode", "open", "close", "gradient", "tophat", "blackhat"])
def test_nan_holes_follow_the_spec(apron, tmp_path, op, border, run_kind):
    channels = 3 if op in ("open", "gradient", "blackhat") else 1
    img = holed((23, 27, channels) if channels > 1 else (23, 27), seed=len(op) * 7 + (len(border or "") + 1))
    for se in ("rect:5x3", "cross:3x5", "disk:2"):
        s = spec(op, se, border)
        got = run(apron, tmp_path, img, s, RUNS[run_kind], se.replace(":", "_"))
        assert_same(got, morphology(img, op, element(se), border), f"{s} ({run_kind})")


@pytest.mark.parametrize("run_kind", list(RUNS))
def test_hole_larger_than_the_element_stays_nan(apron, tmp_path, run_kind):
    """The issue's case: a 5x5 element inside a NaN hole gave -3.4028235e+38 (dilate) and +3.4028235e+38
    (erode, open); the hole's inside is NaN and its rim takes the neighbours' extremum."""
    img = np.ones((20, 20), np.float32)
    img[5:15, 5:15] = np.nan
    img[0, 0], img[19, 19] = -np.inf, np.inf
    for op in ("dilate", "erode", "open", "close"):
        out = run(apron, tmp_path, img, f"{op}:se=rect:5x5", RUNS[run_kind], op)
        inside = 2 if op in ("dilate", "erode") else 4  # open / close: the NaN core shrinks, then stays
        assert np.isnan(out[5 + inside : 15 - inside, 5 + inside : 15 - inside]).all(), f"{op}: {out[10, 10]}"
        rim = np.concatenate([out[5:15, :5], out[5:15, 15:]])  # away from the corners' infinities
        assert (rim == 1).all(), f"{op}: {rim}"
    erode = run(apron, tmp_path, img, "erode:se=rect:3x3", RUNS[run_kind], "e3")
    dilate = run(apron, tmp_path, img, "dilate:se=rect:3x3", RUNS[run_kind], "d3")
    assert erode[1, 1] == -np.inf and dilate[18, 18] == np.inf


@pytest.mark.parametrize("run_kind", list(RUNS))
@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf])
def test_images_all_nan_or_infinite(apron, tmp_path, fill, run_kind):
    for shape in ((1, 1), (9, 7), (6, 5, 3)):
        img = np.full(shape, fill, np.float32)
        for op in ("dilate", "erode", "gradient", "tophat"):
            for border in (None, "reflect"):
                s = spec(op, "rect:3x3", border)
                got = run(apron, tmp_path, img, s, RUNS[run_kind], op)
                assert_same(got, morphology(img, op, element("rect:3x3"), border), f"{s} on {shape} of {fill}")


@pytest.mark.parametrize("run_kind", list(RUNS))
def test_iterations_over_a_hole(apron, tmp_path, run_kind):
    """Several passes of a rectangle with ignored borders run as one larger rectangle: the same NaN rule."""
    img = holed((25, 31), seed=5)
    for op in ("dilate", "erode", "open"):
        s = spec(op, "rect:3x3", None, iterations=3)
        got = run(apron, tmp_path, img, s, RUNS[run_kind], op)
        assert_same(got, morphology(img, op, element("rect:3x3"), None, iterations=3), f"{s} ({run_kind})")
