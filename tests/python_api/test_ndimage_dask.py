"""apron.ndimage on dask arrays: every function, lazily, block by block with dask.array.map_overlap.

What is pinned (docs/python.md "Dask"):
- the result is a dask array, and nothing is computed until .compute() (parameters are checked at the call);
- it equals apron's whole-array NumPy result bit for bit: every function, 2-D images and (Z, Y, X) volumes
  (the functions that take them), odd chunk sizes, chunks smaller than the halo (merged, then the result
  handed back in the input's chunks), windows reaching past the array, every mode, asymmetric origins;
- it is within SPEC.md's tolerance of SciPy (linear filters) or SciPy's bits (selection filters, float32);
- the halo is exactly what the call reads along each axis;
- output= takes None or a dtype; an array is refused (TypeError);
- a zarr volume read with da.from_zarr, filtered, written back with to_zarr, equals the NumPy run;
- a dask.distributed LocalCluster of 2 worker processes computes the same bits;
- CuPy chunks (where CuPy and a GPU are present) give the NumPy chunks' result.
"""
import warnings

import numpy as np
import pytest

import apron.ndimage as an
from apron.ndimage import _dask

da = pytest.importorskip("dask.array")
sn = pytest.importorskip("scipy.ndimage")

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap"]
IMAGE, VOLUME = (37, 53), (13, 19, 23)
ODD_CHUNKS = {2: (7, 11), 3: (5, 7, 9)}
SMALL_IMAGE, SMALL_VOLUME = (15, 19), (9, 10, 11)
SMALL_CHUNKS = {2: (2, 3), 3: (2, 3, 3)}  # smaller than most halos below: merged for map_overlap

_rng = np.random.default_rng(2027)
W34 = _rng.normal(size=(3, 4))
W43 = _rng.normal(size=(4, 3))
FP35 = _rng.random((3, 5)) > 0.4
FP35[1, 2] = True
FP44 = _rng.random((4, 4)) > 0.3
FP44[0, 0] = True
DISK5 = np.hypot(*np.mgrid[-2:3, -2:3]) <= 2.2
BALL1 = np.sum(np.square(np.mgrid[-1:2, -1:2, -1:2]), axis=0) <= 1  # scikit-image's morphology.ball(1)
CROSS5 = np.zeros((5, 5), bool)
CROSS5[2, :] = CROSS5[:, 2] = True
W333 = _rng.normal(size=(3, 3, 3))
W243 = _rng.normal(size=(2, 4, 3))
FP333 = _rng.random((3, 3, 3)) > 0.5
FP333[1, 1, 1] = True
FP254 = _rng.random((2, 5, 4)) > 0.4
FP254[0, 0, 0] = True


def case(name, args=(), l1=None, **kwargs):
    """A call: the function's name, its arguments after the input, and sum|w| of a linear filter's weights
    (None: a selection filter, compared with SciPy bit for bit)."""
    return pytest.param(name, args, kwargs, l1, id=f"{name}-{'-'.join(map(str, kwargs)) or 'plain'}")


IMAGE_CASES = [
    case("correlate", (W34,), l1=np.abs(W34).sum(), origin=(1, -2)),
    case("convolve", (W43,), l1=np.abs(W43).sum(), origin=(-2, 1)),
    case("correlate1d", ([1.0, -2.0, 3.0, 0.5],), l1=6.5, axis=0, origin=1),
    case("convolve1d", ([0.25, 0.5, 0.25, 2.0],), l1=3.0, axis=-1, origin=-1),
    case("gaussian_filter", ((1.5, 2.5),), l1=1.0),
    case("gaussian_filter", (2.0,), l1=1.0, radius=3),
    case("gaussian_filter1d", (2.0,), l1=1.0, axis=0),
    case("uniform_filter", ((4, 5),), l1=1.0, origin=(1, -2)),
    case("uniform_filter1d", (6,), l1=1.0, axis=1, origin=-2),
    case("sobel", (), l1=8.0, axis=0),
    case("prewitt", (), l1=6.0, axis=1),
    case("laplace", (), l1=8.0),
    case("minimum_filter", (), footprint=FP35, origin=(1, -1)),
    case("maximum_filter", (), size=(4, 3), origin=(-2, 1)),
    case("minimum_filter1d", (5,), axis=0, origin=2),
    case("maximum_filter1d", (4,), axis=1, origin=-2),
    case("median_filter", (), size=5),
    case("percentile_filter", (30,), footprint=CROSS5),
    case("rank_filter", (-2,), size=(3, 4), origin=(0, 1)),
    case("grey_erosion", (), footprint=FP44),
    case("grey_dilation", (), footprint=FP35, origin=(1, -1)),
    case("grey_opening", (), size=(3, 5)),
    case("grey_closing", (), footprint=DISK5),
    case("white_tophat", (), size=4),
    case("black_tophat", (), footprint=FP44, origin=(-1, 0)),
    case("morphological_gradient", (), size=(5, 2)),
]

VOLUME_CASES = [
    case("gaussian_filter", ((1, 2, 2),), l1=1.0),
    case("gaussian_filter1d", (1.5,), l1=1.0, axis=0),
    case("uniform_filter", ((3, 4, 5),), l1=1.0, origin=(1, -1, 0)),
    case("uniform_filter1d", (4,), l1=1.0, axis=0, origin=1),
    case("correlate1d", ([1.0, -2.0, 3.0],), l1=6.0, axis=0, origin=-1),
    case("convolve1d", ([0.5, 1.0, 0.25, 2.0],), l1=3.75, axis=2),
    case("sobel", (), l1=32.0, axis=0),
    case("prewitt", (), l1=18.0, axis=2),
    case("laplace", (), l1=12.0),
    case("minimum_filter", (), size=(3, 4, 2)),
    case("maximum_filter", (), size=3, origin=(1, 0, -1)),
    case("grey_erosion", (), size=(2, 3, 4)),
    case("grey_dilation", (), size=(4, 3, 2), origin=(1, 0, 0)),
    case("grey_opening", (), size=(3, 3, 3)),
    case("grey_closing", (), size=(2, 5, 3)),
    case("white_tophat", (), size=3),
    case("black_tophat", (), size=(3, 2, 3)),
    case("morphological_gradient", (), size=(3, 3, 4)),
    case("median_filter", (), size=(3, 3, 3)),
    case("percentile_filter", (30,), footprint=BALL1),
    case("rank_filter", (-2,), size=(2, 3, 4), origin=(0, 1, -1)),
    case("minimum_filter1d", (4,), axis=0, origin=1),
    case("maximum_filter1d", (3,), axis=1, origin=-1),
    # 3-D weights and footprints: one window over the three axes, its halo from its shape and origin
    case("correlate", (W333,), l1=np.abs(W333).sum(), origin=(1, 0, -1)),
    case("convolve", (W243,), l1=np.abs(W243).sum(), origin=(0, -2, 1)),
    case("minimum_filter", (), footprint=FP333, origin=(0, 1, -1)),
    case("grey_dilation", (), footprint=FP254, origin=(-1, 2, 0)),
    case("grey_opening", (), footprint=BALL1),
    case("black_tophat", (), footprint=FP254),
    case("morphological_gradient", (), footprint=FP333, origin=(1, 0, 0)),
]


def data(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 200 - 50).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)


def call(module, name, a, args, kwargs, **more):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(module, name)(a, *args, **kwargs, **more)


def mode_args(name, mode):
    return {"mode": mode, "cval": 0.5 if "constant" in mode else 0.0}


def assert_same(lazy, whole, scheduler=None):
    assert isinstance(lazy, da.Array)
    got = lazy.compute(scheduler=scheduler)
    assert type(got) is type(whole) and got.dtype == whole.dtype and got.shape == whole.shape
    assert np.array_equal(got, whole, equal_nan=whole.dtype.kind == "f")


def parametrize_cases():
    return pytest.mark.parametrize("ndim,name,args,kwargs,l1", [
        pytest.param(2, *p.values, id="2d-" + p.id) for p in IMAGE_CASES] + [
        pytest.param(3, *p.values, id="3d-" + p.id) for p in VOLUME_CASES])


# ---- bit for bit with the whole-array run -----------------------------------------------------------------

@parametrize_cases()
def test_every_mode_odd_chunks_equals_the_whole_array_run(ndim, name, args, kwargs, l1):
    a = data(IMAGE if ndim == 2 else VOLUME, seed=ndim)
    d = da.from_array(a, chunks=ODD_CHUNKS[ndim])
    for mode in MODES:
        more = mode_args(name, mode)
        lazy = call(an, name, d, args, kwargs, **more)
        assert lazy.chunks == d.chunks
        assert_same(lazy, call(an, name, a, args, kwargs, **more))


@parametrize_cases()
def test_chunks_smaller_than_the_halo(ndim, name, args, kwargs, l1):
    a = data(SMALL_IMAGE if ndim == 2 else SMALL_VOLUME, seed=10 + ndim)
    d = da.from_array(a, chunks=SMALL_CHUNKS[ndim])
    for mode in ("reflect", "mirror", "wrap", "constant"):
        more = mode_args(name, mode)
        lazy = call(an, name, d, args, kwargs, **more)
        assert lazy.chunks == d.chunks  # handed back in the input's chunks
        assert_same(lazy, call(an, name, a, args, kwargs, **more), "sync")  # many small tasks: no threads


@parametrize_cases()
def test_within_tolerance_of_scipy(ndim, name, args, kwargs, l1):
    a = data(IMAGE if ndim == 2 else VOLUME, seed=20 + ndim)
    d = da.from_array(a, chunks=ODD_CHUNKS[ndim])
    for mode in ("reflect", "wrap", "constant"):
        more = mode_args(name, mode)
        got = call(an, name, d, args, kwargs, **more).compute(scheduler="sync")
        ref = call(sn, name, a.astype(np.float64), args, kwargs, **more)
        if l1 is None:  # selections: SciPy's bits on float32
            assert np.array_equal(got, call(sn, name, a, args, kwargs, **more)), mode
        else:
            tol = 1e-5 * l1 * np.abs(a).max()
            assert np.abs(got.astype(np.float64) - ref).max() <= tol, mode


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float16, np.float64, np.bool_])
@pytest.mark.parametrize("name,args,kwargs", [
    ("gaussian_filter", (1.5,), {}), ("uniform_filter", (4,), {"origin": 1}), ("median_filter", (), {"size": 4}),
    ("grey_opening", (), {"footprint": DISK5}), ("sobel", (), {"axis": 1, "output": np.float32}),
])
def test_dtypes(dtype, name, args, kwargs):
    a = data(IMAGE, np.uint8, seed=3).astype(dtype) if dtype == np.bool_ else data(IMAGE, dtype, seed=3)
    d = da.from_array(a, chunks=(6, 10))
    lazy = call(an, name, d, args, kwargs)
    whole = call(an, name, a, args, kwargs)
    assert lazy.dtype == whole.dtype
    assert_same(lazy, whole)


def test_window_reaching_past_the_array_makes_one_chunk_of_that_axis():
    a = data((9, 53), seed=4)
    d = da.from_array(a, chunks=(3, 7))
    for mode in MODES:
        lazy = an.uniform_filter(d, 25, mode=mode)
        assert lazy.chunks == d.chunks
        assert_same(lazy, an.uniform_filter(a, 25, mode=mode))
        assert_same(an.median_filter(d, (21, 3), mode=mode), an.median_filter(a, (21, 3), mode=mode))


def test_signals_and_colour_images():
    s = data((101,), seed=5)
    ds = da.from_array(s, chunks=13)
    assert_same(an.gaussian_filter(ds, 3.0, mode="wrap"), an.gaussian_filter(s, 3.0, mode="wrap"))
    assert_same(an.maximum_filter1d(ds, 6, origin=-3), an.maximum_filter1d(s, 6, origin=-3))
    rgb = data((40, 50, 3), np.uint8, seed=6)
    for chunks in ((9, 11, 3), (9, 11, 1)):  # each channel alike, whichever chunks hold the channels
        d = da.from_array(rgb, chunks=chunks)
        assert_same(an.gaussian_filter(d, (2, 2, 0)), an.gaussian_filter(rgb, (2, 2, 0)))
        assert_same(an.median_filter(d, (5, 3, 1)), an.median_filter(rgb, (5, 3, 1)))
        assert_same(an.uniform_filter(d, 5, axes=(0, 1)), an.uniform_filter(rgb, 5, axes=(0, 1)))


def test_volume_blocks_stay_volumes():
    """A (Z, Y, X) volume chunked into blocks of at most 4 columns: its x chunks are merged (a block of at
    most 4 columns would be read as a colour image)."""
    v = data((6, 8, 12), np.uint16, seed=7)
    d = da.from_array(v, chunks=(2, 3, 2))
    lazy = an.gaussian_filter(d, (0.7, 1, 1.5))
    assert lazy.chunks == d.chunks
    assert_same(lazy, an.gaussian_filter(v, (0.7, 1, 1.5)))


def test_per_axis_modes():
    a = data(IMAGE, seed=8)
    d = da.from_array(a, chunks=(5, 9))
    for modes in (("wrap", "reflect"), ("constant", "wrap"), ("mirror", "nearest")):
        assert_same(an.gaussian_filter(d, 2, mode=modes, cval=3), an.gaussian_filter(a, 2, mode=modes, cval=3))
        assert_same(an.uniform_filter(d, (3, 6), mode=modes, origin=(1, 2)),
                    an.uniform_filter(a, (3, 6), mode=modes, origin=(1, 2)))
        assert_same(an.minimum_filter(d, (4, 3), mode=modes), an.minimum_filter(a, (4, 3), mode=modes))
        assert_same(an.sobel(d, 1, mode=modes), an.sobel(a, 1, mode=modes))
        assert_same(an.laplace(d, mode=modes), an.laplace(a, mode=modes))


def test_non_finite_samples():
    a = data(IMAGE, seed=9)
    a[5, 10] = np.nan
    a[20, 40] = np.inf
    a[36, 0] = -np.inf
    d = da.from_array(a, chunks=(6, 10))
    for name, args, kwargs in (("correlate", (W34,), {"origin": (1, -2)}), ("gaussian_filter", (1.0,), {}),
                               ("grey_dilation", (), {"footprint": FP44}), ("median_filter", (), {"size": 3})):
        assert_same(call(an, name, d, args, kwargs), call(an, name, a, args, kwargs))


# ---- the halo -------------------------------------------------------------------------------------------------

def _halo(name, ndim=2, **params):
    import inspect

    sig = inspect.signature(getattr(an, name))
    shape = (50,) * ndim
    bound = sig.bind(np.empty(shape, np.float32), **params)
    bound.apply_defaults()
    p = dict(bound.arguments)
    p.pop("input")
    return _dask.halo(name, p, ndim)


def test_halo_is_exactly_what_the_call_reads():
    assert _halo("gaussian_filter", 3, sigma=(1, 2, 2)) == ([(4, 4), (8, 8), (8, 8)], set())
    assert _halo("gaussian_filter", 2, sigma=(2, 0), truncate=2.0) == ([(4, 4), (0, 0)], set())
    assert _halo("gaussian_filter", 2, sigma=3, radius=(2, 5), mode=("wrap", "reflect")) == ([(2, 2), (5, 5)], {0})
    assert _halo("uniform_filter", 2, size=(4, 5), origin=(1, -2)) == ([(3, 0), (0, 4)], set())
    assert _halo("uniform_filter", 2, size=4) == ([(2, 1), (2, 1)], set())
    assert _halo("sobel", 3) == ([(1, 1)] * 3, set())
    assert _halo("laplace", 2, axes=(1,), mode="wrap") == ([(0, 0), (1, 1)], {1})
    assert _halo("correlate", 2, weights=np.ones((3, 4)), origin=(1, -2)) == ([(2, 0), (0, 3)], set())
    assert _halo("convolve", 2, weights=np.ones((3, 4))) == ([(1, 1), (1, 2)], set())
    assert _halo("correlate1d", 2, weights=[1, 2, 3, 4], axis=0, origin=1) == ([(3, 0), (0, 0)], set())
    assert _halo("minimum_filter", 2, footprint=np.ones((3, 5), bool), origin=(1, -1)) == ([(2, 0), (1, 3)], set())
    assert _halo("grey_dilation", 2, size=(4, 3)) == ([(1, 2), (1, 1)], set())
    assert _halo("grey_erosion", 2, size=(4, 3)) == ([(2, 1), (1, 1)], set())
    assert _halo("grey_opening", 2, size=(4, 3)) == ([(3, 3), (2, 2)], set())
    assert _halo("morphological_gradient", 2, size=(4, 3)) == ([(2, 2), (1, 1)], set())
    assert _halo("median_filter", 2, footprint=np.ones((5, 1), bool), mode="grid-wrap") == ([(2, 2), (0, 0)], {0})
    assert _halo("maximum_filter1d", 2, size=4, axis=-1, origin=-2) == ([(0, 0), (0, 3)], set())


# ---- laziness, checks, output= -------------------------------------------------------------------------------

def test_nothing_is_computed_until_compute():
    computed = []

    def source(block):
        if block.size:  # dask may call it on an empty array to learn its output type
            computed.append(block.shape)
        return block

    a = data(IMAGE, seed=11)
    d = da.from_array(a, chunks=(10, 10)).map_blocks(source, dtype=a.dtype)
    lazy = [an.gaussian_filter(d, 2), an.median_filter(d, 3), an.grey_opening(d, size=3), an.sobel(d),
            an.correlate(d, W34), an.morphological_gradient(d, footprint=FP44)]
    assert computed == [] and all(isinstance(r, da.Array) for r in lazy)
    assert_same(lazy[0], an.gaussian_filter(a, 2))
    assert computed


def test_parameters_are_checked_at_the_call():
    d = da.from_array(data(IMAGE, seed=12), chunks=(10, 10))
    with pytest.raises(RuntimeError, match="boundary mode"):
        an.gaussian_filter(d, 2, mode="bogus")
    with pytest.raises(ValueError, match="origin"):
        an.uniform_filter(d, 3, origin=2)
    with pytest.raises(NotImplementedError, match="order"):
        an.gaussian_filter(d, 2, order=1)
    with pytest.raises(ValueError, match="4-D"):
        an.gaussian_filter(da.zeros((3, 3, 3, 3), chunks=2), 1)
    with pytest.raises(RuntimeError, match="size"):
        an.minimum_filter1d(da.zeros((8, 9, 10), chunks=4), 0)
    with pytest.warns(UserWarning, match="ignoring size"):
        an.minimum_filter(d, size=5, footprint=FP35)


def test_output_array_is_refused_and_a_dtype_taken():
    a = data(IMAGE, np.uint8, seed=13)
    d = da.from_array(a, chunks=(10, 10))
    for out in (np.empty(IMAGE, np.uint8), da.zeros(IMAGE, chunks=10, dtype=np.uint8)):
        with pytest.raises(TypeError, match="sobel\\(\\): output: an array given for a dask input"):
            an.sobel(d, output=out)
    assert_same(an.sobel(d, output=np.float32), an.sobel(a, output=np.float32))
    assert_same(an.gaussian_filter(d, 1, output="float64"), an.gaussian_filter(a, 1, output="float64"))


def test_empty_array():
    d = da.zeros((0, 7), chunks=3, dtype=np.float32)
    r = an.gaussian_filter(d, 2)
    assert isinstance(r, da.Array) and r.compute().shape == (0, 7)


# ---- zarr, distributed, CuPy -----------------------------------------------------------------------------------

def test_zarr_volume_round_trip(tmp_path):
    pytest.importorskip("zarr")
    v = data((24, 48, 40), np.uint16, seed=14)
    da.from_array(v, chunks=(8, 16, 16)).to_zarr(str(tmp_path / "in.zarr"))
    src = da.from_zarr(str(tmp_path / "in.zarr"))
    assert src.chunks == ((8, 8, 8), (16, 16, 16), (16, 16, 8))
    an.gaussian_filter(src, (1, 2, 2)).to_zarr(str(tmp_path / "smooth.zarr"))
    an.grey_opening(src, size=(3, 5, 5)).to_zarr(str(tmp_path / "open.zarr"))
    an.gaussian_filter(src, (3, 5, 5)).to_zarr(str(tmp_path / "wide.zarr"))  # halo (12, 20, 20): chunks merged
    for path, whole in (("smooth.zarr", an.gaussian_filter(v, (1, 2, 2))),
                        ("open.zarr", an.grey_opening(v, size=(3, 5, 5))),
                        ("wide.zarr", an.gaussian_filter(v, (3, 5, 5)))):
        back = da.from_zarr(str(tmp_path / path))
        assert back.chunks == src.chunks
        got = back.compute()
        assert got.dtype == np.uint16 and np.array_equal(got, whole), path


def test_distributed_local_cluster():
    """Two worker processes; the volume is made on the workers and kept there, so blocks and halos travel
    between processes (received blocks may sit at odd byte offsets: apron copies those it cannot read)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        d = da.random.default_rng(15).integers(0, 65536, size=(20, 64, 48), chunks=(7, 20, 24), dtype=np.uint16)
        d = d.persist()
        v = d.compute()
        smooth, opened = client.compute([an.gaussian_filter(d, (1, 2, 2)), an.grey_closing(d, size=(3, 3, 5))],
                                        sync=True)
        sob = an.sobel(d, axis=0, output=np.float32, mode="wrap").compute()  # the client is the default scheduler
        names = client.run(lambda: __import__("apron").__file__)
        assert len(names) == 2
    assert np.array_equal(smooth, an.gaussian_filter(v, (1, 2, 2)))
    assert np.array_equal(opened, an.grey_closing(v, size=(3, 3, 5)))
    assert np.array_equal(sob, an.sobel(v, axis=0, output=np.float32, mode="wrap"))


def test_misaligned_numpy_arrays_are_copied():
    """NumPy arrays over bytes at an odd offset (as dask.distributed may hand out received blocks)."""
    for shape in ((10, 12), (6, 8, 9)):
        n = int(np.prod(shape))
        a = np.frombuffer(bytearray(2 * n + 1), np.uint8)[1:].view(np.uint16).reshape(shape)
        assert not a.flags.aligned
        a.flags.writeable = True
        a[...] = data(shape, np.uint16, seed=18)
        for name, args in (("gaussian_filter", (1.0,)), ("grey_opening", (3,)), ("uniform_filter", (3,))):
            assert np.array_equal(getattr(an, name)(a, *args), getattr(an, name)(a.copy(), *args)), (name, shape)
    assert np.array_equal(an.median_filter(a[0], 3), an.median_filter(a[0].copy(), 3))


@pytest.mark.gpu
def test_cupy_chunks(cp):
    import apron

    if not apron.info()["cuda_built"]:
        pytest.skip("apron built without CUDA")
    v = data((20, 40, 36), np.float32, seed=16)
    d = da.from_array(cp.asarray(v), chunks=(7, 13, 12), asarray=False)
    for name, args, kwargs in (("gaussian_filter", ((1, 2, 2),), {}), ("grey_opening", (), {"size": 3}),
                               ("uniform_filter", (4,), {"mode": "wrap"})):
        lazy = call(an, name, d, args, kwargs)
        got = lazy.compute()
        assert isinstance(got, cp.ndarray)
        assert np.array_equal(cp.asnumpy(got), cp.asnumpy(call(an, name, cp.asarray(v), args, kwargs)))
    img = data(IMAGE, np.uint8, seed=17)
    d2 = da.from_array(cp.asarray(img), chunks=(9, 14), asarray=False)
    assert np.array_equal(cp.asnumpy(an.median_filter(d2, 5).compute()), an.median_filter(img, 5))


def test_the_dask_example_in_the_docs_runs(tmp_path, monkeypatch):
    """docs/python.md's Dask example, run as written in a scratch directory (its zarr stores go there)."""
    pytest.importorskip("zarr")
    from conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "python.md").read_text()
    section = text[text.index("## Dask"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "docs/python.md", "exec"), scope)
    whole = da.from_zarr("scan.zarr").compute()
    assert np.array_equal(da.from_zarr("smooth.zarr").compute(), an.gaussian_filter(whole, (1, 2, 2)))
    assert np.array_equal(scope["edges"].compute(), an.sobel(whole, axis=0, output="float32"))
