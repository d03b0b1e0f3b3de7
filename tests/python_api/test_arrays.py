"""Arrays: dtypes, shapes, channels, strided views (row pitch honoured without a copy), negative strides
(copied), layouts apron cannot view (refused), out= and out_type."""
import numpy as np
import pytest

import apron
from apron_cli_references import assert_equal_images, random_image

OP = "gaussian:sigma=1.2,border=mirror"


def ref(img, out_type=None):
    """The pipeline on a fresh C-contiguous copy: what every layout must give."""
    return apron.Pipeline([OP]).run(np.ascontiguousarray(img), out_type=out_type)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (7, 1), (13, 17), (13, 17, 1), (5, 6, 2), (9, 4, 3), (6, 7, 4)])
def test_dtypes_and_shapes_keep_dtype_and_shape(dtype, shape):
    img = random_image(shape, dtype, seed=30)
    got = apron.gaussian(img, 1.2, border="mirror")
    assert got.dtype == img.dtype and got.shape == img.shape and got.flags.c_contiguous
    # channels are filtered independently: each equals the 2-D result of that channel
    if img.ndim == 3:
        for c in range(img.shape[2]):
            assert_equal_images(got[..., c], apron.gaussian(np.ascontiguousarray(img[..., c]), 1.2, border="mirror"))


@pytest.mark.parametrize("out_type", ["u8", "u16", "f32", np.float32, np.dtype(np.uint16), "uint8"])
def test_out_type(out_type):
    img = random_image((8, 9), np.uint8, seed=31)
    got = apron.sobel(img, dx=1, out_type=out_type)
    assert got.dtype == np.dtype({"u8": "uint8", "u16": "uint16", "f32": "float32"}.get(str(out_type), out_type))


def test_row_pitch_crop_is_read_in_place():
    big = random_image((40, 50, 3), np.uint16, seed=32)
    crop = big[5:30, 7:41]  # rows 300 bytes apart, 34 pixels of 6 bytes each
    assert not crop.flags.c_contiguous
    assert_equal_images(apron.gaussian(crop, 1.2, border="mirror"), ref(crop))


def test_out_view_with_row_pitch_is_written_in_place():
    img = random_image((12, 10), np.float32, seed=33)
    canvas = np.full((20, 30), -7.0, np.float32)
    window = canvas[3:15, 5:15]
    got = apron.gaussian(img, 1.2, border="mirror", out=window)
    assert got is window
    assert_equal_images(canvas[3:15, 5:15], ref(img))
    canvas[3:15, 5:15] = -7
    assert (canvas == -7).all()  # nothing written outside the window


@pytest.mark.parametrize("view", ["rows", "cols", "both"])
def test_negative_strides_are_copied(view):
    img = random_image((11, 13, 3), np.uint8, seed=34)
    v = {"rows": img[::-1], "cols": img[:, ::-1], "both": img[::-1, ::-1]}[view]
    assert_equal_images(apron.gaussian(v, 1.2, border="mirror"), ref(v))


def test_negative_stride_out_is_refused():
    img = random_image((5, 5), np.uint8, seed=35)
    out = np.empty((5, 5), np.uint8)[::-1]
    with pytest.raises(ValueError, match="out: negative strides"):
        apron.box(img, out=out)


@pytest.mark.parametrize("make", [
    lambda a: a[:, ::2],                      # pixels 2 apart
    lambda a: np.asfortranarray(a),           # column-major
    lambda a: a[..., :2],                     # 2 of 3 channels: pixels 3 samples apart
    lambda a: np.broadcast_to(a[:1], a.shape),  # rows at stride 0
], ids=["every-other-column", "fortran", "channel-slice", "broadcast"])
def test_layouts_apron_cannot_view_are_refused(make):
    img = random_image((8, 10, 3), np.uint8, seed=36)
    with pytest.raises(ValueError, match=r"img: (pixels are not contiguous|rows overlap)"):
        apron.box(make(img))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0, 3), (4, 0, 1)])
def test_zero_size_is_refused(shape):
    with pytest.raises(ValueError, match="img: an empty array"):
        apron.box(np.zeros(shape, np.uint8))


@pytest.mark.parametrize("shape,match", [((5,), "1-D"), ((2, 3, 4, 1), "4-D"), ((4, 4, 5), "5 channels"),
                                         ((4, 4, 0), "empty|0 channels")])
def test_bad_shapes_name_the_shape(shape, match):
    with pytest.raises(ValueError, match=match):
        apron.box(np.zeros(shape, np.uint8))


# float16 is taken (through float32): test_half_floats.py
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float64, np.bool_, ">u2", ">f4", np.complex64])
def test_other_dtypes_raise_type_error_naming_it(dtype):
    img = np.zeros((4, 4), dtype)
    with pytest.raises(TypeError, match=f"img: dtype {np.dtype(dtype)}"):
        apron.box(img)


@pytest.mark.parametrize("thing", [[[1, 2], [3, 4]], 3, "img", None])
def test_non_arrays_raise_type_error(thing):
    with pytest.raises(TypeError, match="is not an image array"):
        apron.box(thing)


def test_out_checks():
    img = random_image((6, 7), np.uint8, seed=37)
    with pytest.raises(ValueError, match="out: shape"):
        apron.box(img, out=np.empty((6, 8), np.uint8))
    with pytest.raises(ValueError, match="out: dtype"):
        apron.box(img, out=np.empty((6, 7), np.uint16), out_type="f32")
    ro = np.empty((6, 7), np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        apron.box(img, out=ro)
    with pytest.raises(ValueError, match="overlaps the input"):
        apron.box(img, out=img)
    with pytest.raises(TypeError, match="out_type"):
        apron.box(img, out_type="i32")
    # out's dtype is the output type when out_type is not given
    got = apron.box(img, out=np.empty((6, 7), np.float32))
    assert got.dtype == np.float32
    assert_equal_images(got, apron.box(img, out_type="f32"))
    # (H, W, 1) out for an (H, W) image
    assert apron.box(img, out=np.empty((6, 7, 1), np.uint8)).shape == (6, 7, 1)


def test_read_only_input_is_fine():
    img = random_image((6, 7), np.uint8, seed=38)
    img.flags.writeable = False
    assert_equal_images(apron.box(img), apron.box(img.copy()))


def test_torch_cpu_tensor_is_refused_with_the_fix():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="tensor.numpy"):
        apron.box(torch.zeros((4, 4), dtype=torch.uint8))


def test_device_arrays_without_cuda_backend_raise():
    if apron.info()["cuda_built"]:
        pytest.skip("this apron has its CUDA backend")

    class FakeCupy:  # what apron reads of a CuPy array
        __module__ = "cupy._core.core"
        shape, strides, size, dtype = (4, 4), (4, 1), 16, np.dtype(np.uint8)

        class data:
            ptr = 1 << 20

        class device:
            id = 0

    with pytest.raises(ValueError, match="built without its CUDA backend"):
        apron.box(FakeCupy())


def test_the_gil_is_released_while_apron_works():
    """The main thread keeps running Python during a long filter in another thread: it gets through at least a
    fifth of the loop iterations it manages alone in the same time (with the GIL held it would get one switch
    interval, 5 ms, of a call lasting far longer)."""
    import threading
    import time

    img = random_image((2000, 2000), np.float32, seed=39)
    started, done = threading.Event(), threading.Event()
    seconds = []

    def work():
        started.set()
        t0 = time.perf_counter()
        apron.gaussian(img, 6.0, threads=1, algorithm="direct")
        seconds.append(time.perf_counter() - t0)
        done.set()

    end, alone = time.perf_counter() + 0.05, 0
    while time.perf_counter() < end:
        alone += 1
    rate = alone / 0.05
    t = threading.Thread(target=work)
    t.start()
    started.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.perf_counter()
    t.join()
    assert seconds[0] > 0.05, "the filter was too quick to tell"
    assert ticks > 0.2 * rate * seconds[0], (ticks, rate, seconds[0])  # 0.2: a loaded machine slows the loop


def test_results_start_on_a_cache_line():
    # NumPy's large arrays start 16 bytes past a cache line; apron's results start on one (their rows then
    # take aligned and non-temporal stores), and equal a result written into a plain np.empty.
    img = np.random.default_rng(5).integers(0, 256, (300, 257, 3), dtype=np.uint8)
    got = apron.box(img, width=5, backend="cpu")
    assert got.ctypes.data % 64 == 0 and got.flags.c_contiguous and got.flags.writeable
    assert got.shape == img.shape and got.dtype == img.dtype
    plain = np.empty_like(img)
    apron.box(img, width=5, backend="cpu", out=plain)
    np.testing.assert_array_equal(got, plain)
    small = apron.box(img[:4, :4], width=3, backend="cpu")
    assert small.shape == (4, 4, 3)


# ---- layout=: stacks of images, each run alike, never guessed from the shape ----------------------------------

@pytest.mark.parametrize("layout,shape", [("chw", (3, 17, 19)), ("nhw", (2, 9, 8)), ("nchw", (2, 3, 11, 13)),
                                          ("nhwc", (3, 10, 12, 3)), ("hwc", (10, 12, 4)), ("hw", (5, 6))])
def test_layout_runs_each_image_of_a_stack_alike(layout, shape):
    rng = np.random.default_rng(40)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    p = apron.Pipeline(["gaussian:sigma=1.5", "dilate:se=disk:2"])
    got = p.run(x, layout=layout, out_type="f32")
    stack = {"chw": 1, "nhw": 1, "nchw": 2, "nhwc": 1}.get(layout, 0)
    assert got.shape == x.shape and got.dtype == np.float32
    for index in np.ndindex(*shape[:stack]):  # each image alone, as a plain call
        assert np.array_equal(got[index], p.run(np.ascontiguousarray(x[index]), out_type="f32")), (layout, index)
    out = np.zeros(shape, np.uint8)
    assert apron.box(x, 3, layout=layout, out=out) is out
    assert np.array_equal(out[(0,) * stack], apron.box(np.ascontiguousarray(x[(0,) * stack]), 3))


def test_layout_is_checked_not_guessed():
    x = np.zeros((2, 3, 8, 9), np.uint8)
    cases = [(lambda: apron.gaussian(x, 1.0, layout="xyz"), r"layout: 'xyz' is not one of"),
             (lambda: apron.gaussian(x, 1.0, layout="zyx"), r"layout: 'zyx' reads a 3-D array, img has shape"),
             (lambda: apron.gaussian(x[0], 1.0, layout="nchw"), r"layout: 'nchw' reads a 4-D array, img has shape \(3, 8, 9\)"),
             (lambda: apron.gaussian(x, 1.0, layout="nhwc"), r"img: 9 channels"),
             (lambda: apron.gaussian(x, 1.0, layout="nchw", out=np.zeros((2, 3, 8, 8), np.uint8)), r"out: shape"),
             (lambda: apron.gaussian(x[:0], 1.0, layout="nchw"), r"empty stack"),
             (lambda: apron.gaussian(x, 1.0), r"4-D array")]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
