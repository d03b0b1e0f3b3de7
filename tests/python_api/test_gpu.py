"""CuPy arrays and torch CUDA tensors, zero-copy on the caller's stream (run on the GPU machine; skipped
without a device, without CuPy/torch, or without apron's CUDA backend).

What is checked: the result is a device array of the same kind whose pointer is in device memory and is
not the input's; results equal the NumPy (CPU backend) results bit for bit for integer images and exact
plans; out= is written in place; a kernel queued on the caller's stream just before the call is seen by apron
(the work is ordered on that stream); two devices when the machine has them.

SPEC.md: one backend gives identical bits on every device, tiling and stream; between backends a float plan
(a Gaussian, any weights that are not integers over one common divisor) may round an integer sample the other
way (+-1) and an f32 result within 1e-5 of sum|m| max|in|, while an exact plan (integer image, integer
weights) is bit-exact everywhere. So device k is compared with device 0 bit for bit, and with the CPU backend
within that tolerance (bit for bit for exact plans): test_devices_agree_* run every operation family on every
device (skipped with one)."""
import numpy as np
import pytest

import apron
from apron_cli_references import assert_equal_images, assert_f32_close, random_image

pytestmark = pytest.mark.gpu

if not apron.info()["cuda_built"] or "cuda" not in apron.info()["backends"]:
    pytest.skip("apron has no usable CUDA backend here", allow_module_level=True)

# Exact on integer images (box, morphology, Sobel): the same bits as the CPU backend. (A float step such as
# a Gaussian may round a u8 sample the other way on another backend, within SPEC's tolerance, and Sobel
# then multiplies that difference.)
OPS = ["box:width=3", "dilate:se=disk:3", "sobel:dx=1"]


def _is_device_pointer(cp, ptr):
    attrs = cp.cuda.runtime.pointerGetAttributes(ptr)
    return attrs.type == cp.cuda.runtime.memoryTypeDevice


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("shape", [(37, 53), (64, 32, 3), (1, 1)])
def test_cupy_zero_copy_equals_cpu(dtype, shape, cp):
    host = random_image(shape, dtype, seed=70)
    d = cp.asarray(host)
    p = apron.Pipeline(OPS)
    pool = cp.get_default_memory_pool()
    used = pool.used_bytes()
    got = p.run(d)
    assert isinstance(got, cp.ndarray) and got.device.id == d.device.id
    assert pool.used_bytes() >= used + got.nbytes  # the result came from CuPy's device pool
    assert _is_device_pointer(cp, got.data.ptr) and got.data.ptr != d.data.ptr
    expected = p.run(host, backend="cpu")
    if dtype == np.float32:
        assert_f32_close(cp.asnumpy(got), expected.astype(np.float64), 1e3 * float(np.abs(host).max()), "cupy f32")
    else:
        assert_equal_images(cp.asnumpy(got), expected, "cupy")


def test_cupy_out_and_pitched_view(cp):
    host = random_image((40, 60), np.uint8, seed=71)
    d = cp.asarray(host)
    canvas = cp.zeros((50, 80), cp.uint8)
    window = canvas[5:45, 10:70]  # row pitch 80 bytes
    got = apron.dilate(d[:, :], se="rect:5x5", out=window)
    assert got is window
    assert_equal_images(cp.asnumpy(canvas[5:45, 10:70]), apron.dilate(host, se="rect:5x5"))
    assert int(canvas[:5].sum()) == 0 and int(canvas[:, :10].sum()) == 0


SPIN_CYCLES = 200_000_000  # ~0.1 s at 2 GHz: far longer than apron needs, so a run not ordered after it reads zeros


def test_cupy_work_is_ordered_on_the_current_stream(cp):
    spin_copy = cp.RawKernel(r"""
    extern "C" __global__ void spin_copy(unsigned char* dst, const unsigned char* src, int n, long long cycles) {
        const long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
    }""", "spin_copy")
    host = random_image((512, 512), np.uint8, seed=72, lo=1)
    src = cp.asarray(host)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        d = cp.zeros((512, 512), cp.uint8)
        spin_copy((1,), (256,), (d, src, np.int32(d.size), np.int64(SPIN_CYCLES)))  # queued on s; apron must see it
        got = apron.box(d, width=3)       # queued on s too
        again = apron.box(got, width=3)
    s.synchronize()
    assert_equal_images(cp.asnumpy(again), apron.box(apron.box(host, width=3), width=3), "stream order")


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_torch_zero_copy_equals_cpu(dtype, torch):
    host = random_image((33, 47, 3), np.dtype(dtype), seed=73)
    t = torch.from_numpy(host).cuda()
    p = apron.Pipeline(OPS)
    got = p.run(t)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.device == t.device
    assert got.data_ptr() != t.data_ptr()
    expected = p.run(host, backend="cpu")
    if dtype == "float32":
        assert_f32_close(got.cpu().numpy(), expected.astype(np.float64), 1e3 * float(np.abs(host).max()), "torch f32")
    else:
        assert_equal_images(got.cpu().numpy(), expected, "torch")


def test_torch_out_and_stream_order(torch):
    host = random_image((256, 256), np.uint8, seed=74)
    s = torch.cuda.Stream()
    out = torch.empty((256, 256), dtype=torch.uint8, device="cuda")
    src = torch.from_numpy(host).cuda()
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        t = torch.zeros((256, 256), dtype=torch.uint8, device="cuda")
        torch.cuda._sleep(SPIN_CYCLES)     # a long kernel on s, then the data, then apron
        t.copy_(src)
        t.add_(1)
        got = apron.erode(t, se="cross:5x5", out=out)
    s.synchronize()
    assert got is out
    assert_equal_images(out.cpu().numpy(), apron.erode(host + np.uint8(1), se="cross:5x5"), "torch stream")


def test_mixed_kinds_are_refused(cp):
    with pytest.raises(ValueError, match="same kind"):
        apron.box(cp.zeros((4, 4), cp.uint8), out=np.zeros((4, 4), np.uint8))


def test_two_devices(cp):
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one device")
    host = random_image((64, 64), np.uint8, seed=75)
    with cp.cuda.Device(1):
        d1 = cp.asarray(host)
    with cp.cuda.Device(0):
        d0 = cp.asarray(host)
        on0 = apron.gaussian(d0, 1.5)
        got = apron.gaussian(d1, 1.5)  # runs on d1's device whatever the current one
        assert cp.cuda.runtime.getDevice() == 0
    assert got.device.id == 1 and on0.device.id == 0
    # A float plan (sigma 1.5): the CUDA backend gives the same bits on both devices (SPEC: one backend,
    # identical bits on every device); the CPU backend may round a u8 sample the other way.
    assert_same_bits(cp.asnumpy(got), cp.asnumpy(on0), "device 1 against device 0")
    assert_equal_images(cp.asnumpy(got), apron.gaussian(host, 1.5, backend="cpu"), "device 1 against the CPU backend",
                        max_diff=1)
    with cp.cuda.Device(0):
        out = cp.empty_like(d1)  # allocated on device 0: refused, not written across devices
        with pytest.raises(ValueError, match="CUDA device 0 but img is on CUDA device 1"):
            apron.gaussian(d1, 1.5, out=out)
        apron.dilate(d1, se="disk:3")
        assert cp.cuda.runtime.getDevice() == 0  # the caller's device is current again after the call


def test_describe_and_memory_needed_plan_on_the_arrays_device(cp):
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one device")
    p = apron.Pipeline(["gaussian:sigma=2", "dilate:se=disk:3"])
    with cp.cuda.Device(1):
        d1 = cp.zeros((61, 47), cp.uint8)
    with cp.cuda.Device(0):
        d0 = cp.zeros((61, 47), cp.uint8)
        text = p.describe(d1)
        assert cp.cuda.runtime.getDevice() == 0  # planned on device 1, the caller's device current again
        assert text == p.describe(d0)  # the lent machines' GPUs are of one model: the same plan
        assert "cuda" in text, text
        assert p.memory_needed(d1) == p.memory_needed(d0)


def test_two_devices_torch_colour_on_the_second_device(torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("one device")
    host = random_image((61, 47, 3), np.uint8, seed=77)
    t1 = torch.from_numpy(host).to("cuda:1")
    torch.cuda.set_device(0)
    s1 = torch.cuda.Stream(device=1)
    with torch.cuda.stream(s1):  # the current stream of device 1 orders the work
        got = apron.correlate(t1, mask=np.arange(9, dtype=np.float64).reshape(3, 3) / 36, border="wrap")
    s1.synchronize()
    assert got.device == t1.device
    assert torch.cuda.current_device() == 0
    want = apron.correlate(host, mask=np.arange(9, dtype=np.float64).reshape(3, 3) / 36, border="wrap", backend="cpu")
    assert_equal_images(got.cpu().numpy(), want, "torch device 1")


def test_torch_tensor_requiring_grad_is_read_and_out_on_another_device_refused(torch):
    host = random_image((20, 30), np.float32, seed=76)
    t = torch.from_numpy(host).cuda().requires_grad_(True)
    assert_f32_close(apron.box(t).cpu().numpy(), apron.box(host).astype(np.float64), 10 * float(np.abs(host).max()), "grad")
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="CUDA device 1 but img is on CUDA device 0"):
            apron.box(t.detach(), out=torch.empty((20, 30), device="cuda:1"))


# ---- Every device gives the same bits --------------------------------------------------------------------
# Each operation family of the registry (apron.operations()), on u8, u16 and f32, 1 and 3 channels (4 for a
# few), at an odd size: the result on every device k > 0 equals device 0's bit for bit, lies on device k, and
# out= on device k is written in place there. Against the CPU backend: bit for bit where the plan is exact
# (integer image, integer weights over one common divisor, morphology), else within SPEC's tolerance.

def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str):
    """The same dtype, shape and bytes (NaN payloads and signed zeros included)."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    a, b = np.ascontiguousarray(got), np.ascontiguousarray(want)
    differ = a.view(np.uint8).reshape(a.shape + (-1,)) != b.view(np.uint8).reshape(b.shape + (-1,))
    bad = differ.any(axis=-1)
    if bad.any():
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        worst = np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1))
        idx = tuple(int(i) for i in np.unravel_index(worst, bad.shape))
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} samples differ in their bits; largest "
                             f"difference at {idx}: got {a[idx]!r}, expected {b[idx]!r}")


_rng = np.random.default_rng(80)
MASK_INT = _rng.integers(-4, 5, size=(5, 5)).astype(np.float64)       # integer weights: exact on u8/u16
MASK_INT_EVEN = _rng.integers(-3, 4, size=(4, 6)).astype(np.float64)  # even sides, convolve
MASK_DIVISOR = np.arange(1, 10, dtype=np.float64).reshape(3, 3) / 45  # integers over one divisor: exact
MASK_FLOAT = _rng.normal(size=(5, 5))                                 # a float plan everywhere
MASK_FLOAT_EVEN = _rng.normal(size=(3, 4))
MASK_LOW_RANK = (np.outer(_rng.normal(size=9), _rng.normal(size=9)) +  # rank 2: two separable terms
                 np.outer(_rng.normal(size=9), _rng.normal(size=9)))
MASK_FFT = _rng.normal(size=(33, 31))                                 # large, not separable: the FFT path
MASK_FFT_INT = _rng.integers(-2, 3, size=(31, 33)).astype(np.float64) # exact through the double transform
MASK_BYTES = _rng.integers(-100, 101, size=(7, 7)).astype(np.float64) # byte weights: the tensor-core path
ELEMENT_RANDOM = (_rng.random((5, 7)) < 0.5).astype(np.float64)
ELEMENT_RANDOM[2, 3] = 1
ROW_FLOAT = _rng.normal(size=5).tolist()
del _rng

# apron.Pipeline items, made into a Pipeline for each call (none is kept past the test that runs it).
CHAIN_EXACT = ["box:width=3", apron.op("erode", se=ELEMENT_RANDOM), ("laplacian", {"neighbours": 8})]
CHAIN_FLOAT = ["gaussian:sigma=2", apron.op("dilate", se="ellipse:7x7"), ("erode", {"se": "disk:2"})]


class Case:
    """One call: an apron function (by name) or a Pipeline (its items), its parameters and run keywords.
    exact: whether the plan is exact on u8/u16 (checked against the planner's description); gain: sum |m| of
    the whole operation, for the f32 tolerance against the CPU backend; algorithm: forced on the CUDA runs
    only; dtypes: the types it runs on (default all three); gray: one channel only."""

    def __init__(self, id, fn, params=None, exact=False, gain=1.0, algorithm="auto", run=None, dtypes=None, gray=False):
        self.id, self.fn, self.params, self.exact, self.gain = id, fn, params or {}, exact, float(gain)
        self.algorithm, self.run_kw, self.dtypes, self.gray = algorithm, run or {}, dtypes, gray

    def pipeline(self):
        return apron.Pipeline(self.fn if isinstance(self.fn, list) else [apron.op(self.fn, **self.params)])

    def __call__(self, img, **kw):
        kw = {**self.run_kw, **kw}
        if isinstance(self.fn, list):
            return self.pipeline().run(img, **kw)
        return getattr(apron, self.fn)(img, **self.params, **kw)  # the generated function, as users call it

    def describe(self, shape, dtype, backend):
        return self.pipeline().describe((shape, dtype), out_type=self.run_kw.get("out_type"), backend=backend)


CASES = [
    Case("correlate-int", "correlate", {"mask": MASK_INT, "border": "constant", "value": 7}, True,
         np.abs(MASK_INT).sum()),
    Case("correlate-divisor", "correlate", {"mask": MASK_DIVISOR, "border": "wrap"}, True, 1),
    Case("correlate-float", "correlate", {"mask": MASK_FLOAT, "border": "mirror"}, False, np.abs(MASK_FLOAT).sum()),
    Case("correlate-low-rank", "correlate", {"mask": MASK_LOW_RANK}, False, np.abs(MASK_LOW_RANK).sum(),
         algorithm="low-rank"),
    Case("correlate-fft", "correlate", {"mask": MASK_FFT, "border": "nearest"}, False, np.abs(MASK_FFT).sum(),
         algorithm="fft"),
    Case("correlate-fft-int", "correlate", {"mask": MASK_FFT_INT}, True, np.abs(MASK_FFT_INT).sum(), algorithm="fft",
         dtypes=("u8",)),
    Case("correlate-tensor", "correlate", {"mask": MASK_BYTES, "normalize": "sum"}, True, np.abs(MASK_BYTES).sum(),
         algorithm="tensor", dtypes=("u8",), gray=True),  # the tensor-core path takes u8, one channel
    Case("convolve-int-even", "convolve", {"mask": MASK_INT_EVEN, "border": "reflect"}, True,
         np.abs(MASK_INT_EVEN).sum()),
    Case("convolve-float-even", "convolve", {"mask": MASK_FLOAT_EVEN, "scale": 0.5, "delta": 3}, False,
         np.abs(MASK_FLOAT_EVEN).sum()),
    Case("separable-float", "separable", {"row": ROW_FLOAT, "column": [1, 2, 1]}, False, 4 * np.abs(ROW_FLOAT).sum()),
    Case("gaussian", "gaussian", {"sigma": 1.5}, False, 1),
    Case("gaussian-aniso-wrap", "gaussian", {"sigma": 0.8, "sigma_y": 2.5, "border": "wrap"}, False, 1),
    Case("box", "box", {"width": 5, "height": 3, "border": "constant", "value": 9}, True, 1),
    Case("sharpen", "sharpen", {"strength": 0.5}, True, 5),
    Case("unsharp", "unsharp", {"sigma": 1.2, "amount": 0.7}, False, 3.4),
    Case("emboss", "emboss", {}, True, 8),
    Case("laplacian-8", "laplacian", {"neighbours": 8}, True, 16),
    Case("sobel-5", "sobel", {"dx": 1, "dy": 1, "ksize": 5}, True, 36),
    Case("sobel-to-f32", "sobel", {"dx": 1}, True, 8, run={"out_type": "f32"}),
    Case("scharr", "scharr", {"dy": 1, "dx": 0}, True, 32),
    Case("prewitt", "prewitt", {}, True, 6),
    Case("xf-dgaussian", "xf_dgaussian", {}, True, 16),
    Case("dilate-rect", "dilate", {"se": "rect:5x3"}, True, 1),
    Case("erode-disk", "erode", {"se": "disk:3", "border": "reflect"}, True, 1),
    Case("dilate-random", "dilate", {"se": ELEMENT_RANDOM, "iterations": 2}, True, 1),
    Case("open-ellipse", "open", {"se": "ellipse:5x5"}, True, 1),
    Case("close-cross", "close", {"se": "cross:3x5"}, True, 1),
    Case("gradient-disk", "gradient", {"se": "disk:2"}, True, 2),
    Case("tophat-rect", "tophat", {"se": "rect:7x7"}, True, 2),
    Case("blackhat-random", "blackhat", {"se": ELEMENT_RANDOM}, True, 2),
    Case("pipeline-exact", CHAIN_EXACT, None, True, 16),
    Case("pipeline-float", CHAIN_FLOAT, None, False, 1),
]
CASE_BY_ID = {c.id: c for c in CASES}
DTYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


def _params(shapes):
    for case in CASES:
        for dt in case.dtypes or DTYPES:
            for shape in shapes(case):
                yield pytest.param(case, dt, shape, id=f"{case.id}-{dt}-{'x'.join(map(str, shape))}")


def _grid(case):
    big = (131, 97) if case.algorithm == "fft" else (61, 47)  # the FFT's tiles need room
    if case.gray:
        return [big]
    shapes = [big, big + (3,)]
    if case.id in ("correlate-int", "gaussian", "dilate-random", "pipeline-float"):
        shapes.append(big + (4,))
    return shapes


def _one_pixel(case):
    return [(1, 1)] if case.id in ("correlate-int", "correlate-float", "gaussian", "erode-disk", "pipeline-exact",
                                   "correlate-fft") else []


def _devices_or_skip(count):
    if count < 2:
        pytest.skip("one device")
    return range(1, count)


def _check_against_cpu(case, got, host, dtype_name, plan):
    """SPEC's tolerance between backends; exact plans bit for bit."""
    want = case(host, backend="cpu")
    exact = dtype_name != "f32" and case.exact
    if dtype_name != "f32":  # the planner decides what is exact: the test's expectation must agree with it
        planned = "float" if " float " in plan else "exact"
        assert planned == ("exact" if case.exact else "float"), f"{case.id} {dtype_name}: a {planned} plan\n{plan}"
    if exact:
        assert_same_bits(got, want, "against the CPU backend (an exact plan)")
    elif got.dtype == np.float32:
        bound = 2 * case.gain * max(1.0, float(np.abs(host).max()))  # two backends, each within 1e-5 of the truth
        assert_f32_close(got, want.astype(np.float64), bound, "against the CPU backend (a float plan)")
    else:
        assert_equal_images(got, want, "against the CPU backend (a float plan)", max_diff=1)


def _run_cupy_on_every_device(cp, case, host):
    """Device 0's result (bits), after checking every other device's against it."""
    devices = _devices_or_skip(cp.cuda.runtime.getDeviceCount())
    algo = {"algorithm": case.algorithm}
    with cp.cuda.Device(0):
        d0 = cp.asarray(host)
        r0 = case(d0, **algo)
        assert r0.device.id == 0 and cp.cuda.runtime.getDevice() == 0
        want = cp.asnumpy(r0)
        for k in devices:
            with cp.cuda.Device(k):
                dk = cp.asarray(host)
            # Device 0 current, the arrays on device k (the library switches and switches back).
            rk = case(dk, **algo)
            assert cp.cuda.runtime.getDevice() == 0, "the caller's device is current again after the call"
            assert isinstance(rk, cp.ndarray) and rk.device.id == k, f"result on device {rk.device.id}, input on {k}"
            assert_same_bits(cp.asnumpy(rk), want, f"device {k} against device 0")
            # Device k current, out= there, on a non-blocking stream of device k.
            with cp.cuda.Device(k):
                out = cp.asarray(_filled_like(want))
                ptr = out.data.ptr
                s = cp.cuda.Stream(non_blocking=True)
                with s:
                    got = case(dk, out=out, **algo)
                s.synchronize()
                assert cp.cuda.runtime.getDevice() == k
            assert got is out and out.device.id == k and out.data.ptr == ptr
            assert_same_bits(cp.asnumpy(out), want, f"out= on device {k} against device 0")
    return want


def _filled_like(a: np.ndarray) -> np.ndarray:
    """An out= array's first contents: a sample apron leaves unwritten shows (NaN for f32)."""
    fill = {np.dtype(np.uint8): 0xA5, np.dtype(np.uint16): 0xA5A5, np.dtype(np.float32): np.nan}[a.dtype]
    return np.full(a.shape, fill, a.dtype)


@pytest.mark.parametrize("case, dtype_name, shape", list(_params(_grid)) + list(_params(_one_pixel)))
def test_devices_agree_cupy(case, dtype_name, shape, cp):
    host = random_image(shape, DTYPES[dtype_name], seed=81 if shape[0] > 1 else 82)
    want = _run_cupy_on_every_device(cp, case, host)
    _check_against_cpu(case, want, host, dtype_name, case.describe(shape, DTYPES[dtype_name], "cpu"))


def _torch_dtype(torch, name):
    dt = {"u8": torch.uint8, "u16": getattr(torch, "uint16", None), "f32": torch.float32}[name]
    if dt is None:
        pytest.skip("this torch has no uint16 tensors")
    return dt


def _torch_shapes(case):  # colour (the runs on CuPy cover the rest), and one pixel once
    return [(47, 61) if case.gray else (47, 61, 3)] + ([(1, 1)] if case.id == "gaussian" else [])


@pytest.mark.parametrize("case, dtype_name, shape", list(_params(_torch_shapes)))
def test_devices_agree_torch(case, dtype_name, shape, torch):
    devices = _devices_or_skip(torch.cuda.device_count())
    _torch_dtype(torch, dtype_name)
    host = random_image(shape, DTYPES[dtype_name], seed=83)
    algo = {"algorithm": case.algorithm}
    torch.cuda.set_device(0)
    r0 = case(torch.from_numpy(host).to("cuda:0"), **algo)
    assert r0.device == torch.device("cuda:0")
    want = r0.cpu().numpy()
    for k in devices:
        dev = torch.device(f"cuda:{k}")
        tk = torch.from_numpy(host).to(dev)
        rk = case(tk, **algo)  # device 0 current
        assert torch.cuda.current_device() == 0
        assert rk.is_cuda and rk.device == dev
        assert_same_bits(rk.cpu().numpy(), want, f"torch device {k} against device 0")
        out = torch.from_numpy(_filled_like(want)).to(dev)
        ptr = out.data_ptr()
        with torch.cuda.device(k):
            s = torch.cuda.Stream(device=k)
            with torch.cuda.stream(s):  # the current stream of device k orders the work
                got = case(tk, out=out, **algo)
            s.synchronize()
            assert torch.cuda.current_device() == k
        assert got is out and out.device == dev and out.data_ptr() == ptr
        assert torch.cuda.current_device() == 0
        assert_same_bits(out.cpu().numpy(), want, f"torch out= on device {k} against device 0")
    _check_against_cpu(case, want, host, dtype_name, case.describe(shape, DTYPES[dtype_name], "cpu"))


def test_devices_agree_out_on_the_wrong_device_is_refused_everywhere(cp):
    devices = _devices_or_skip(cp.cuda.runtime.getDeviceCount())
    host = random_image((61, 47, 3), np.uint16, seed=84)
    for k in devices:
        with cp.cuda.Device(k):
            dk = cp.asarray(host)
        for j in (0, *[d for d in devices if d != k]):
            with cp.cuda.Device(j):
                out = cp.zeros_like(cp.asarray(host))
            for case in (CASE_BY_ID["gaussian"], CASE_BY_ID["dilate-random"], CASE_BY_ID["pipeline-exact"]):
                with pytest.raises(ValueError, match=f"CUDA device {j} but img is on CUDA device {k}"):
                    case(dk, out=out)
            assert int(out.sum()) == 0, f"out= on device {j} was written"


def test_stacks_with_layout_on_device_arrays(device_lib):
    """layout='nchw' and 'nhwc' on device arrays: the result on the device, every image as the CPU's."""
    rng = np.random.default_rng(41)
    for layout, shape in (("nchw", (2, 3, 33, 35)), ("nhwc", (3, 21, 23, 3))):
        host = rng.random(shape).astype(np.float32)
        got = apron.gaussian(device_lib.put(host), 1.5, layout=layout)
        assert tuple(got.shape) == shape, (device_lib.name, layout)
        want = apron.gaussian(host, 1.5, layout=layout, backend="cpu")
        assert np.abs(device_lib.back(got) - want).max() <= 1e-5, (device_lib.name, layout)
