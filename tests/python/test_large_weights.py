"""Masks of huge and tiny finite weights through the command line (SPEC.md "Any finite weights"): a 3x3
mask of 1e38 or 1e200 with normalize=sum is the plain mean, as SciPy's correlate with the normalised mask
gives, on every path of the CPU backend and on the reference backend; unnormalised sums of huge weights
saturate (u8) or are inf (f32), and a scale of 1/magnitude brings them back to the ordinary sum."""
import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import assert_equal_images, assert_f32_close, random_image, to_type, write_mask

RUNS = [("cpu", "auto"), ("cpu", "direct"), ("cpu", "separable"), ("cpu", "fft"), ("reference", "auto")]


def run(apron, tmp_path, img, spec, backend, algo, out_type=None):
    return apron.filter(tmp_path, img, spec, out_type=out_type, extra=["--backend", backend, "--algo", algo])


@pytest.mark.parametrize("backend, algo", RUNS)
@pytest.mark.parametrize("value", [1e38, 1e200, 1e308, 1e-300])
def test_uniform_mask_with_sum_is_the_mean(apron, tmp_path, value, backend, algo):
    img = random_image((11, 13), np.uint8, seed=400)
    mask = write_mask(tmp_path / "m.kernel", np.full((3, 3), value))
    want = ndi.correlate(img.astype(np.float64), np.full((3, 3), 1 / 9), mode="reflect")
    got = run(apron, tmp_path, img, f"correlate:mask={mask},normalize=sum", backend, algo)
    assert_equal_images(got, to_type(want, np.uint8), f"{value:g} {backend} {algo}")
    got32 = run(apron, tmp_path, img, f"correlate:mask={mask},normalize=sum", backend, algo, out_type="f32")
    assert_f32_close(got32, want, 255.0, f"{value:g} {backend} {algo} f32")


@pytest.mark.parametrize("backend, algo", [r for r in RUNS if r[1] != "separable"] + [("cpu", "low-rank")])
@pytest.mark.parametrize("value", [1e38, 1e200, 1e-300])
@pytest.mark.parametrize("border", ["constant", "wrap", "mirror"])
def test_signed_mask_with_sum_matches_scipy(apron, tmp_path, value, backend, algo, border):
    """A mask of mixed signs and rank 2 (so low-rank can take it), weights `value` times about 1, on f32."""
    rng = np.random.default_rng(401)
    base = np.outer(rng.uniform(0.5, 1, 5), rng.uniform(0.5, 1, 7)) + np.outer(rng.uniform(-0.7, 0.7, 5), rng.uniform(-0.7, 0.7, 7))
    m = base * value
    mask = write_mask(tmp_path / "m.kernel", m)
    img = random_image((17, 12), np.float32, seed=402)
    unit = m / value  # the normalised mask, computed where nothing overflows
    want = ndi.correlate(img.astype(np.float64), unit / unit.sum(), mode=border, cval=0.0)
    got = run(apron, tmp_path, img, f"correlate:mask={mask},normalize=sum,border={border}", backend, algo)
    assert_f32_close(got, want, np.abs(unit).sum() / abs(unit.sum()) * np.abs(img).max(), f"{value:g} {backend} {algo}")


@pytest.mark.parametrize("backend, algo", RUNS)
@pytest.mark.parametrize("value", [1e38, 1e200, 1e308])
def test_unnormalised_huge_sums_saturate_and_scale_back(apron, tmp_path, value, backend, algo):
    img = random_image((9, 10), np.uint8, seed=403, lo=1)
    for sign in (1, -1):
        mask = write_mask(tmp_path / f"m{sign}.kernel", np.full((3, 3), sign * value))
        got = run(apron, tmp_path, img, f"correlate:mask={mask}", backend, algo)
        assert (got == (255 if sign > 0 else 0)).all(), got
        got32 = run(apron, tmp_path, img, f"correlate:mask={mask}", backend, algo, out_type="f32")
        assert (got32 == sign * np.inf).all(), got32
    # scale = 1/value: the plain sum of the 3x3 window, to the last unit (1e-308 is subnormal, which the
    # option parser does not take).
    if 1 / value < np.finfo(np.float64).tiny:
        return
    mask = write_mask(tmp_path / "m.kernel", np.full((3, 3), value))
    want = ndi.correlate(img.astype(np.float64), np.ones((3, 3)), mode="reflect")
    got16 = run(apron, tmp_path, img.astype(np.uint16), f"correlate:mask={mask},scale={1 / value!r}", backend, algo)
    assert_equal_images(got16, to_type(want, np.uint16), f"{value:g} {backend} {algo}", max_diff=1)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_separable_op_of_huge_vectors(apron, tmp_path, backend):
    img = random_image((10, 9), np.uint8, seed=404)
    got = apron.filter(tmp_path, img, "separable:row=1e38:2e38:1e38,column=1e38:3e38,normalize=sum",
                       out_type="f32", extra=["--backend", backend])
    m = np.outer([1, 3], [1, 2, 1]) / 16.0
    want = ndi.correlate(img.astype(np.float64), m, mode="reflect")
    assert_f32_close(got, want, 255.0, backend)
