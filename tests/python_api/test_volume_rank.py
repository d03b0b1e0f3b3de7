"""apron.ndimage's rank filters (median_filter, percentile_filter, rank_filter) on (Z, Y, X) volumes: apron's
3-D rank op over the whole volume, SciPy's bits for every integer type and float32, with sizes, 3-D footprints
(a ball as scikit-image's morphology.ball defines it, restated here; a random footprint with even sides),
origins, every mode SciPy and apron share, footprints one plane deep (each plane alone) and windows larger
than the volume; a dask volume in odd chunks gives the whole array's bits (its halo spans z too)."""
import numpy as np
import pytest
import scipy.ndimage as sn

import apron.ndimage as an

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-wrap", "grid-constant", "grid-mirror"]


def ball(r):
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def volume(shape, dtype, seed, levels=None):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.uniform(-50, 150, shape) if levels is None else rng.integers(0, levels, shape) * 0.5
        return v.astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    info = np.iinfo(dtype)
    hi = info.max if levels is None else info.min + levels
    return rng.integers(info.min, int(hi) + 1, shape, dtype=dtype)


ODD = np.random.default_rng(3).random((2, 3, 4)) > 0.45
ODD[1, 1, 2] = True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_median_percentile_and_rank_on_volumes_are_scipys(mode, dtype):
    v = volume((8, 11, 13), dtype, 1, levels=30)
    cval = 7
    calls = [("median_filter", (), {"footprint": ball(1)}), ("median_filter", (), {"size": (3, 3, 3)}),
             ("percentile_filter", (35,), {"footprint": ball(2)}), ("rank_filter", (-3,), {"footprint": ODD}),
             ("rank_filter", (2,), {"size": (2, 3, 4), "origin": (0, 1, -1)}),
             ("percentile_filter", (100,), {"footprint": ODD, "origin": (-1, 0, 1)})]
    for name, args, kw in calls:
        got = getattr(an, name)(v, *args, mode=mode, cval=cval, **kw)
        want = getattr(sn, name)(v, *args, mode=mode, cval=cval, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float64, np.bool_])
def test_other_dtypes_through_the_exact_codings(dtype):
    v = volume((6, 7, 9), dtype, 2, levels=None if dtype != np.int32 else 5000)  # int32: a span apron takes
    if dtype == np.float64:  # apron selects float64 samples as float32: samples float32 holds exactly
        v = v.astype(np.float32).astype(np.float64)
    for name, args, kw in (("median_filter", (), {"footprint": ball(1)}), ("rank_filter", (1,), {"size": 3})):
        np.testing.assert_array_equal(getattr(an, name)(v, *args, **kw), getattr(sn, name)(v, *args, **kw), err_msg=name)


def test_one_plane_one_voxel_and_windows_larger_than_the_volume():
    for shape, fp in (((1, 9, 8), ball(1)), ((3, 5, 5), ball(2)), ((2, 3, 6), np.ones((5, 3, 7), bool))):
        v = volume(shape, np.uint16, 4)
        for mode in ("nearest", "wrap", "constant", "mirror"):
            np.testing.assert_array_equal(an.median_filter(v, footprint=fp, mode=mode, cval=3),
                                          sn.median_filter(v, footprint=fp, mode=mode, cval=3), err_msg=f"{shape} {mode}")


def test_a_footprint_one_plane_deep_filters_each_plane_alone():
    v = volume((5, 12, 9), np.uint8, 5)
    disk = np.hypot(*np.mgrid[-2:3, -2:3]) <= 2.2
    for kw in ({"size": (1, 3, 3)}, {"footprint": disk[None]}, {"size": 3, "axes": (1, 2)}):
        np.testing.assert_array_equal(an.median_filter(v, **kw), sn.median_filter(v, **kw), err_msg=str(kw))


def test_nan_is_a_missing_sample_in_volumes():
    v = volume((6, 7, 8), np.float32, 6)
    v[2, 3, :] = np.nan
    got = an.median_filter(v, footprint=ball(1))
    # Away from NaN SciPy's median is the same; where the window holds NaN apron takes the median of the rest.
    clean = ~sn.maximum_filter(np.isnan(v), footprint=ball(1), mode="reflect")
    np.testing.assert_array_equal(got[clean], sn.median_filter(v, footprint=ball(1))[clean])
    assert not np.isnan(got[2, 3, 4])
    # At (2, 3, 4) the ball's 7 cells hold 3 NaN (the row along x): of the 4 valid samples, rank 3 * 4 // 7 = 1.
    window = [v[2 + dz, 3 + dy, 4 + dx] for dz, dy, dx in np.argwhere(ball(1)) - 1]
    valid = sorted(s for s in window if s == s)
    assert len(window) == 7 and len(valid) == 4
    assert got[2, 3, 4] == valid[1]


def test_infinite_and_nan_cval_are_padded_in():
    """A constant border apron cannot take (+-inf, NaN) is padded around the volume: SciPy's bits for the
    infinities; NaN a missing sample, as in the volume padded by hand and filtered with mode='nearest'."""
    v = volume((5, 6, 7), np.float32, 7)
    for cval in (np.inf, -np.inf):
        for name, args, kw in (("median_filter", (), {"size": (3, 3, 3)}), ("percentile_filter", (30,), {"footprint": ball(1)}),
                               ("rank_filter", (-2,), {"size": (2, 3, 4), "origin": (0, 1, -1)})):
            got = getattr(an, name)(v, *args, mode="constant", cval=cval, **kw)
            np.testing.assert_array_equal(got, getattr(sn, name)(v, *args, mode="constant", cval=cval, **kw))
    got = an.median_filter(v, size=(3, 3, 3), mode="constant", cval=np.nan)
    by_hand = an.median_filter(np.pad(v, 1, constant_values=np.nan), size=(3, 3, 3), mode="nearest")[1:-1, 1:-1, 1:-1]
    np.testing.assert_array_equal(got, by_hand)


def test_refusals_are_one_line():
    v = volume((5, 6, 7), np.float32, 7)
    with pytest.raises(RuntimeError, match="rank not within"):
        an.rank_filter(v, 27, size=3)


def test_dask_volumes_in_odd_chunks_give_the_whole_arrays_bits():
    da = pytest.importorskip("dask.array")
    v = volume((13, 19, 23), np.uint16, 8, levels=200)
    d = da.from_array(v, chunks=(4, 7, 9))
    for name, args, kw in (("median_filter", (), {"footprint": ball(2), "mode": "wrap"}),
                           ("percentile_filter", (20,), {"size": (5, 3, 3), "origin": (1, 0, -1), "mode": "mirror"}),
                           ("rank_filter", (-1,), {"footprint": ODD, "mode": "constant", "cval": 9})):
        lazy = getattr(an, name)(d, *args, **kw)
        assert isinstance(lazy, da.Array)
        got = lazy.compute()
        np.testing.assert_array_equal(got, getattr(an, name)(v, *args, **kw), err_msg=name)
        np.testing.assert_array_equal(got, getattr(sn, name)(v, *args, **kw), err_msg=name)
