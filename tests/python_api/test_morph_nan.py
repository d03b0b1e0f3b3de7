"""NaN in f32 morphology through the Python API (SPEC.md "Morphology"): a NaN sample is missing, an output
whose element covers nothing else is NaN, infinities are kept. Expected values from scipy.ndimage's
generic_filter with a NaN-skipping max / min (ignored outside pixels read as NaN)."""
import numpy as np
import pytest
import scipy.ndimage as ndi

import apron


def nan_extremum(values, kind):
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        return np.nan
    return kept.max() if kind == "dilate" else kept.min()


def expected(img, kind, size, border):
    mode, cval = ("constant", np.nan) if border is None else (border, 0.0)
    planes = [ndi.generic_filter(img[..., c].astype(np.float64), nan_extremum, size=size, mode=mode, cval=cval,
                                 extra_arguments=(kind,)) for c in range(img.shape[-1])]
    return np.stack(planes, axis=-1).astype(np.float32)


def holed(seed):
    rng = np.random.default_rng(seed)
    img = rng.uniform(-1, 2, (21, 26, 3)).astype(np.float32)
    flat = img.reshape(-1)
    picks = rng.choice(flat.size, flat.size // 8, replace=False)
    flat[picks] = rng.choice(np.array([np.nan, np.inf, -np.inf], np.float32), picks.size)
    img[5:15, 4:16] = np.nan  # 12 x 10: larger than the 5 x 3 element
    return img


@pytest.mark.parametrize("backend", ["reference", "cpu"])
@pytest.mark.parametrize("border", [None, "nearest", "reflect", "mirror", "wrap"])
@pytest.mark.parametrize("kind", ["dilate", "erode"])
def test_nan_is_a_missing_sample(kind, border, backend):
    img = holed(seed=3)
    kw = {} if border is None else {"border": border}
    got = getattr(apron, kind)(img, se="rect:5x3", backend=backend, **kw)
    want = expected(img, kind, (3, 5), border)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # NaN where want is NaN, equal elsewhere
    assert np.isnan(got[10, 10]).all()


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_derived_operations_on_nan(backend):
    img = holed(seed=4)
    with np.errstate(invalid="ignore"):
        dil, ero = expected(img, "dilate", (3, 3), None), expected(img, "erode", (3, 3), None)
        opened = expected(ero, "dilate", (3, 3), None)
        np.testing.assert_array_equal(apron.gradient(img, se="rect:3x3", backend=backend), dil - ero)
        np.testing.assert_array_equal(apron.open(img, se="rect:3x3", backend=backend), opened)
        np.testing.assert_array_equal(apron.tophat(img, se="rect:3x3", backend=backend), img - opened)
