"""NaN and nodata in linear filters (SPEC.md "NaN and nodata in linear filters"): nan=propagate|ignore|fill:V,
preserve_nan and nodata on the linear, edge and preset operations.

The expected images come from an independent NumPy/SciPy statement of normalised convolution
(scipy.ndimage.correlate of the zero-filled image and of the validity image, divided), and from
astropy.convolution.convolve / convolve_fft with nan_treatment='interpolate' where astropy is importable,
with the very same kernel weights handed to both (astropy's Gaussian2DKernel samples its Gaussian otherwise
than apron's gaussian op, so the kernel is built here and passed to apron as a mask file)."""
import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import BORDERS, random_image, write_mask

MIN_VALID_FRACTION = 1e-4  # SPEC.md: nan=ignore's threshold on the valid weight, relative to sum |w|


# ---------------------------------------------------------------------------------------------------------
# the statement
# ---------------------------------------------------------------------------------------------------------


def gaussian_kernel(sigma: float, radius: int | None = None) -> np.ndarray:
    r = int(np.ceil(3 * sigma)) if radius is None else radius
    x = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * x * x / (sigma * sigma))
    k /= k.sum()
    return np.outer(k, k)


def missing_of(img: np.ndarray, nodata=None) -> np.ndarray:
    m = np.isnan(img) if img.dtype == np.float32 else np.zeros(img.shape, bool)
    if nodata is not None:
        m |= img == (np.float32(nodata) if img.dtype == np.float32 else nodata)
    return m


def normalised(img, w, border, value=0.0, mode="ignore", fill=0.0, preserve=False, nodata=None,
               normalize="none", scale=1.0, delta=0.0):
    """SPEC's rule in float64 for one channel (2-D). Returns (value, missing, q, near) where q = sum|w| / |W|
    (the tolerance's growth) and near marks valid weights within the FFT's rounding of the threshold."""
    x = img.astype(np.float64)
    miss = missing_of(img, nodata)
    sw, aw = w.sum(), np.abs(w).sum()
    k = scale / sw if normalize == "sum" else scale
    if mode == "fill":
        s = ndi.correlate(np.where(miss, fill, x), w, mode=border, cval=value)
        out, missing, q, near = k * s + delta, np.zeros(img.shape, bool), np.ones(img.shape), np.zeros(img.shape, bool)
    elif mode == "propagate":
        s = ndi.correlate(np.where(miss, 0.0, x), w, mode=border, cval=value)
        # NaN reaches the outputs whose window holds a missing sample under a nonzero weight
        touched = ndi.correlate(miss.astype(np.float64), (w != 0).astype(np.float64), mode=border, cval=0.0) > 0
        out, missing, q, near = k * s + delta, touched, np.ones(img.shape), np.zeros(img.shape, bool)
    else:
        s = ndi.correlate(np.where(miss, 0.0, x), w, mode=border, cval=value)
        wv = ndi.correlate((~miss).astype(np.float64), w, mode=border, cval=1.0)
        signed = wv * np.sign(sw)
        missing = ~(signed > MIN_VALID_FRACTION * aw)
        near = np.abs(signed - MIN_VALID_FRACTION * aw) < 2e-5 * aw
        with np.errstate(divide="ignore", invalid="ignore"):
            out = k * (s * sw / wv) + delta
            q = aw / np.abs(wv)
    if preserve:
        missing = missing | miss
    out = np.where(missing, np.nan, out)
    return out, missing, q, near


def tolerance(img, w, q, nodata=None, value=0.0, scale=1.0, normalize="none", fill=0.0):
    """SPEC: 1e-5 * g * max|in| * q (1 + q), g = |scale * sum w| (or |scale| with normalize=sum) for masks of one
    sign; here |k| sum |w| (k = scale, or scale / sum w), which also bounds fill and propagate."""
    valid = img[~missing_of(img, nodata)].astype(np.float64)
    biggest = max(1.0, abs(value), abs(fill), np.abs(valid).max() if valid.size else 0.0)
    k = scale / w.sum() if normalize == "sum" else scale
    g = abs(k) * np.abs(w).sum()  # |k sum w| for masks of one sign, more for mixed ones
    return 1e-5 * g * biggest * q * (1 + q) + 1e-6


def holed(shape, seed, dtype=np.float32, nodata=None, big_hole=True, unit=False):
    """Random samples (in [0, 1) with `unit`) with scattered missing samples (about 5 %), a few small holes and
    optionally a hole larger than the masks here (windows with no valid sample)."""
    rng = np.random.default_rng(seed)
    img = random_image(shape, dtype, seed=seed, lo=0.0, hi=1.0) if unit else random_image(shape, dtype, seed=seed)
    hole = np.nan if dtype == np.float32 and nodata is None else nodata
    h, w = shape[:2]
    img[rng.uniform(size=shape) < 0.05] = hole
    for _ in range(4):
        y, x = rng.integers(0, h - 4), rng.integers(0, w - 4)
        img[y:y + 3, x:x + 4] = hole
    if big_hole:
        img[4:22, 6:26] = hole
    return img


def check(got, want, missing, q, near, tol_of_q, what, integer_nodata=None):
    got = got.astype(np.float64)
    keep = ~near
    if integer_nodata is None:
        assert np.array_equal(np.isnan(got)[keep], missing[keep]), f"{what}: missing outputs differ"
    else:
        assert np.array_equal((got == integer_nodata)[keep & missing], np.ones(np.count_nonzero(keep & missing), bool)), \
            f"{what}: missing outputs are not nodata"
    ok = keep & ~missing
    if not ok.any():
        return
    err = np.abs(got[ok] - want[ok])
    bound = tol_of_q(q[ok]) + (1.0 if integer_nodata is not None else 0.0)
    worst = np.argmax(err - bound)
    assert np.all(err <= bound), f"{what}: error {err[worst]:.3g} > {bound[worst]:.3g} (q = {q[ok][worst]:.3g})"


def op_text(base, border, value, mode, fill=0.0, preserve=False, nodata=None):
    s = f"{base},border={border}"
    if border == "constant":
        s += f",value={value}"
    s += f",nan=fill:{fill}" if mode == "fill" else f",nan={mode}"
    if preserve:
        s += ",preserve_nan=1"
    if nodata is not None:
        s += f",nodata={nodata}"
    return s


MASKS = {
    "gaussian2": gaussian_kernel(2.0),
    "box5x3": np.full((3, 5), 1 / 15),
    "asymmetric4x3": np.array([[1, 2, 0, 3], [0.5, 4, 1, 2], [3, 0, 1, 2]], dtype=np.float64),
    "sharpen": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float64),
}


# ---------------------------------------------------------------------------------------------------------
# against the statement
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preserve", [False, True], ids=["", "preserve"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("backend", ["auto", "reference"])
def test_ignore_f32_nan_holes(apron, tmp_path, backend, name, border, preserve):
    w = MASKS[name]
    img = holed((41, 53), seed=3)
    base = f"correlate:mask={write_mask(tmp_path / 'm.txt', w)}"
    got = apron.filter(tmp_path, img, op_text(base, border, 2, "ignore", preserve=preserve), extra=["--backend", backend])
    want, missing, q, near = normalised(img, w, border, 2.0, "ignore", preserve=preserve)
    check(got, want, missing, q, near, lambda q: tolerance(img, w, q, value=2.0), f"{name} {border} {backend}")


@pytest.mark.parametrize("algo", ["direct", "fft"])
@pytest.mark.parametrize("border", ["reflect", "wrap", "constant"])
def test_ignore_fft_path_equals_the_statement(apron, tmp_path, algo, border):
    w = gaussian_kernel(5.0)
    img = holed((120, 140), seed=4)
    base = f"correlate:mask={write_mask(tmp_path / 'm.txt', w)},normalize=sum"
    got = apron.filter(tmp_path, img, op_text(base, border, 1, "ignore", preserve=True), extra=["--algo", algo])
    want, missing, q, near = normalised(img, w, border, 1.0, "ignore", preserve=True, normalize="sum")
    check(got, want, missing, q, near, lambda q: tolerance(img, w, q, value=1.0, normalize="sum"), f"{algo} {border}")


@pytest.mark.parametrize("out_type", [None, "f32"])
@pytest.mark.parametrize("dtype,nodata", [(np.uint8, 0), (np.uint16, 65535), (np.float32, -9999)],
                         ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("mode", ["ignore", "fill", "propagate"])
def test_nodata(apron, tmp_path, mode, dtype, nodata, out_type):
    w = MASKS["box5x3"] if mode != "fill" else MASKS["asymmetric4x3"]
    img = holed((37, 45), seed=5, dtype=dtype, nodata=nodata)
    if dtype == np.float32:
        img[::7, ::5] = np.nan  # NaN and nodata both missing
    base = f"correlate:mask={write_mask(tmp_path / 'm.txt', w)}"
    spec = op_text(base, "nearest", 0, mode, fill=3, preserve=mode == "fill", nodata=nodata)
    got = apron.filter(tmp_path, img, spec, out_type=out_type)
    want, missing, q, near = normalised(img, w, "nearest", 0.0, mode, fill=3.0, preserve=mode == "fill", nodata=nodata)
    integer_out = out_type is None and dtype != np.float32
    if integer_out:
        top = np.iinfo(dtype).max
        want = np.clip(np.rint(np.where(missing, 0, want)), 0, top)
    check(got, want, missing, q, near, lambda q: tolerance(img, w, q, nodata=nodata, fill=3.0),
          f"{mode} {np.dtype(dtype).name} -> {out_type}", integer_nodata=nodata if integer_out else None)


def test_nodata_value_must_fit_the_types(apron, tmp_path):
    img = holed((9, 9), seed=6, dtype=np.uint8, nodata=7, big_hole=False)
    src = tmp_path / "in.pgm"
    from conftest import write_image
    write_image(src, img)
    r = apron.run("filter", src, tmp_path / "o.pgm", "--op", "box:nan=ignore,nodata=300", check=False)
    assert r.returncode != 0
    assert "nodata: 300 is not a u8 sample value" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    f = holed((9, 9), seed=6)
    write_image(tmp_path / "in.pfm", f)
    r = apron.run("filter", tmp_path / "in.pfm", tmp_path / "o.pgm", "--op", "box:nan=ignore,nodata=-5", "--out-type", "u8",
                  check=False)
    assert r.returncode != 0 and "nodata: -5 cannot be written to u8 pixels" in r.stderr
    for spec, fragment in [("gaussian:sigma=1,nan=nope", "nan: 'nope' is not propagate, ignore or fill:V"),
                           ("sobel:dx=1,nan=ignore", "nan: nan=ignore needs weights that do not sum to 0"),
                           ("laplacian:nan=ignore", "use nan=fill:V"),
                           ("gaussian:sigma=1,nodata=1e40", "nodata: 1e40 is out of range")]:
        r = apron.run("filter", tmp_path / "in.pfm", tmp_path / "o.pfm", "--op", spec, check=False)
        assert r.returncode != 0 and fragment in r.stderr, (spec, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_propagate_default_is_unchanged(apron, tmp_path):
    img = holed((31, 29), seed=7)
    a = apron.filter(tmp_path, img, "gaussian:sigma=1.5")
    b = apron.filter(tmp_path, img, "gaussian:sigma=1.5,nan=propagate,preserve_nan=0")
    assert a.tobytes() == b.tobytes()


def test_streamed_bands_give_the_whole_images_bits(apron, tmp_path):
    img = holed((90, 64), seed=8)
    spec = "gaussian:sigma=2,nan=ignore,preserve_nan=1"
    whole = apron.filter(tmp_path, img, spec)
    banded = apron.filter(tmp_path, img, spec, extra=["--stream", "on", "--band-rows", "7"])
    assert np.array_equal(np.isnan(whole), np.isnan(banded))
    assert whole.tobytes() == banded.tobytes()


# ---------------------------------------------------------------------------------------------------------
# against astropy
# ---------------------------------------------------------------------------------------------------------

ASTROPY_BOUNDARY = {"nearest": "extend", "wrap": "wrap", "constant": "fill"}


@pytest.mark.parametrize("preserve", [False, True], ids=["", "preserve_nan"])
@pytest.mark.parametrize("border", list(ASTROPY_BOUNDARY))
@pytest.mark.parametrize("kernel", ["gaussian1.5", "gaussian3", "asymmetric5x3", "unnormalised"])
def test_astropy_convolve_interpolate(apron, tmp_path, kernel, border, preserve):
    convolution = pytest.importorskip("astropy.convolution")
    if kernel.startswith("gaussian"):
        k = gaussian_kernel(float(kernel[8:]))
    elif kernel == "asymmetric5x3":
        k = np.array([[1, 2, 3, 0.5, 1], [2, 6, 1, 1, 0.25], [0, 1, 2, 3, 4]], dtype=np.float64)
        k /= k.sum()
    else:
        k = gaussian_kernel(1.0) * 7.5  # sum 7.5: normalize_kernel=False keeps it (apron: normalize=none)
    normalize = kernel != "unnormalised"
    img = holed((48, 56), seed=9, big_hole=False, unit=True)
    # convolve (the mask flipped), as astropy's convolve
    base = f"convolve:mask={write_mask(tmp_path / 'k.txt', k)}" + (",normalize=sum" if normalize else "")
    got = apron.filter(tmp_path, img, op_text(base, border, 0.25, "ignore", preserve=preserve))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = convolution.convolve(img.astype(np.float64), k, boundary=ASTROPY_BOUNDARY[border], fill_value=0.25,
                                    nan_treatment="interpolate", normalize_kernel=normalize, preserve_nan=preserve)
    both = ~np.isnan(want)
    assert np.array_equal(np.isnan(got), ~both), f"{kernel} {border}: NaN outputs differ"
    assert np.abs(got[both] - want[both]).max() <= 1e-5 * max(1.0, abs(k.sum())), f"{kernel} {border}"


@pytest.mark.parametrize("border", ["wrap", "constant"])
def test_astropy_convolve_fft_interpolate(apron, tmp_path, border):
    convolution = pytest.importorskip("astropy.convolution")
    k = gaussian_kernel(6.0)
    img = holed((160, 180), seed=10, big_hole=False, unit=True)
    base = f"convolve:mask={write_mask(tmp_path / 'k.txt', k)},normalize=sum"
    got = apron.filter(tmp_path, img, op_text(base, border, 0, "ignore"), extra=["--algo", "fft"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = convolution.convolve_fft(img.astype(np.float64), k, boundary="wrap" if border == "wrap" else "fill",
                                        fill_value=0.0, nan_treatment="interpolate", normalize_kernel=True)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() <= 1e-5


def test_astropy_gaussian_kernel_weights_match_when_passed_as_a_mask(apron, tmp_path):
    """astropy's own Gaussian2DKernel (its sampling, not apron's) gives the same result through apron when its
    weights are the mask."""
    convolution = pytest.importorskip("astropy.convolution")
    k = convolution.Gaussian2DKernel(2.0, x_size=13, y_size=13).array
    img = holed((40, 44), seed=11, big_hole=False, unit=True)
    base = f"convolve:mask={write_mask(tmp_path / 'k.txt', k)},normalize=sum"
    got = apron.filter(tmp_path, img, op_text(base, "nearest", 0, "ignore"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = convolution.convolve(img.astype(np.float64), k, boundary="extend", nan_treatment="interpolate")
    assert np.abs(got - want).max() <= 1e-5
