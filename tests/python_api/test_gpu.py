"""CuPy arrays and torch CUDA tensors, zero-copy on the caller's stream (run on the GPU machine; skipped
without a device, without CuPy/torch, or without apron's CUDA backend).

What is checked: the result is a device array of the same kind whose pointer is in device memory and is
not the input's; results equal the NumPy (CPU backend) results bit for bit for integer images; out= is
written in place; a kernel queued on the caller's stream just before the call is seen by apron (the work is
ordered on that stream); two devices when the machine has them."""
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


def _cupy():
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    return cp


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


def _is_device_pointer(cp, ptr):
    attrs = cp.cuda.runtime.pointerGetAttributes(ptr)
    return attrs.type == cp.cuda.runtime.memoryTypeDevice


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=["u8", "u16", "f32"])
@pytest.mark.parametrize("shape", [(37, 53), (64, 32, 3), (1, 1)])
def test_cupy_zero_copy_equals_cpu(dtype, shape):
    cp = _cupy()
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


def test_cupy_out_and_pitched_view():
    cp = _cupy()
    host = random_image((40, 60), np.uint8, seed=71)
    d = cp.asarray(host)
    canvas = cp.zeros((50, 80), cp.uint8)
    window = canvas[5:45, 10:70]  # row pitch 80 bytes
    got = apron.dilate(d[:, :], se="rect:5x5", out=window)
    assert got is window
    assert_equal_images(cp.asnumpy(canvas[5:45, 10:70]), apron.dilate(host, se="rect:5x5"))
    assert int(canvas[:5].sum()) == 0 and int(canvas[:, :10].sum()) == 0


SPIN_CYCLES = 200_000_000  # ~0.1 s at 2 GHz: far longer than apron needs, so a run not ordered after it reads zeros


def test_cupy_work_is_ordered_on_the_current_stream():
    cp = _cupy()
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
def test_torch_zero_copy_equals_cpu(dtype):
    torch = _torch()
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


def test_torch_out_and_stream_order():
    torch = _torch()
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


def test_mixed_kinds_are_refused():
    cp = _cupy()
    with pytest.raises(ValueError, match="same kind"):
        apron.box(cp.zeros((4, 4), cp.uint8), out=np.zeros((4, 4), np.uint8))


def test_two_devices():
    cp = _cupy()
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one device")
    host = random_image((64, 64), np.uint8, seed=75)
    with cp.cuda.Device(1):
        d1 = cp.asarray(host)
    with cp.cuda.Device(0):
        got = apron.gaussian(d1, 1.5)  # runs on d1's device whatever the current one
    assert got.device.id == 1
    assert_equal_images(cp.asnumpy(got), apron.gaussian(host, 1.5, backend="cpu"), "device 1")
    with cp.cuda.Device(0):
        out = cp.empty_like(d1)  # allocated on device 0: refused, not written across devices
        with pytest.raises(ValueError, match="CUDA device 0 but img is on CUDA device 1"):
            apron.gaussian(d1, 1.5, out=out)
        apron.dilate(d1, se="disk:3")
        assert cp.cuda.runtime.getDevice() == 0  # the caller's device is current again after the call


def test_two_devices_torch_colour_on_the_second_device():
    torch = _torch()
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


def test_torch_tensor_requiring_grad_is_read_and_out_on_another_device_refused():
    torch = _torch()
    host = random_image((20, 30), np.float32, seed=76)
    t = torch.from_numpy(host).cuda().requires_grad_(True)
    assert_f32_close(apron.box(t).cpu().numpy(), apron.box(host).astype(np.float64), 10 * float(np.abs(host).max()), "grad")
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="CUDA device 1 but img is on CUDA device 0"):
            apron.box(t.detach(), out=torch.empty((20, 30), device="cuda:1"))
