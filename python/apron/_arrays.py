"""Arrays in and out: NumPy (host), CuPy and torch CUDA tensors (device, zero-copy).

apron reads and writes an image through a view: a pointer, H x W x C, a pixel type and a row pitch in
bytes (include/apron/image.hpp). So an array is taken as it is when its pixels are contiguous within each
row (channels interleaved) and its rows are any whole number of bytes apart (a crop of a larger image, a
pitched buffer). Other layouts are refused with a ValueError that says how to convert; the one exception
is negative strides (``a[::-1]``, ``a[:, ::-1]``): such an input is copied into a C-contiguous array first
(a view cannot express it), and an ``out=`` array with negative strides is refused.

CuPy and torch are imported only when such an array is passed.
"""
from __future__ import annotations

import numpy as np

from . import _apron

# apron's PixelType codes (u8, u16, f32) by NumPy dtype (CuPy arrays have NumPy dtypes; torch: _torch_codes).
_CODE_OF_DTYPE = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1, np.dtype(np.float32): 2}
_DTYPE_OF_CODE = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))
_ITEMSIZE = (1, 2, 4)
_TYPE_NAMES = {"u8": 0, "uint8": 0, "u16": 1, "uint16": 1, "f32": 2, "float32": 2}
_SUPPORTED = "uint8, uint16 or float32"
# 16-bit floats: taken and returned, computed in float32 (run_half). apron's kernels read u8, u16 and f32 only,
# so a float16 or bfloat16 array is converted once (a copy: no view of it is possible) and the float32 result
# rounded to the 16-bit type (to nearest, ties to even) once.
HALF_NAMES = {"f16": "float16", "float16": "float16", "half": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
F32 = 2


def half_name(dtype):
    """'float16' or 'bfloat16' for a 16-bit float dtype (NumPy, CuPy or torch) or its name ('f16', 'bf16'), else
    None."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        return HALF_NAMES.get(dtype.replace("torch.", ""))
    if type(dtype).__module__ == "torch":  # a torch.dtype
        return HALF_NAMES.get(str(dtype).replace("torch.", ""))
    try:
        return "float16" if np.dtype(dtype) == np.float16 else None
    except TypeError:
        return None


_HALF_OF_DTYPE = {np.dtype(np.float16): "float16"}


def array_half(a):
    """half_name of an array's dtype (None for other dtypes and for objects that are not arrays); on every call's
    path, so a dictionary look-up for NumPy's and CuPy's dtypes."""
    dtype = getattr(a, "dtype", None)
    try:
        name = _HALF_OF_DTYPE.get(dtype)
    except TypeError:  # an unhashable dtype attribute: not an array apron knows
        return None
    if name is None and type(dtype).__module__ == "torch":
        name = HALF_NAMES.get(str(dtype)[6:])
    return name


def type_code(out_type, what: str = "out_type", half_as_f32: bool = False) -> int:
    """-1 for None (the input's type), else apron's code for a NumPy/torch dtype or a name ('u8', 'f32');
    half_as_f32: a 16-bit float type is the float32 it is computed in (plans, memory estimates)."""
    if out_type is None:
        return -1
    if half_as_f32 and half_name(out_type):
        return F32
    if isinstance(out_type, str):
        code = _TYPE_NAMES.get(out_type)
    else:
        try:
            code = _CODE_OF_DTYPE.get(np.dtype(out_type))
        except TypeError:
            code = _TYPE_NAMES.get(str(out_type).replace("torch.", ""))
    if code is None:
        raise TypeError(f"{what}: {out_type!r} is not a pixel type apron writes ({_SUPPORTED}, or 'u8', 'u16', 'f32'; "
                        f"float16 and bfloat16 through float32)")
    return code


class View:
    """One array as apron sees it."""

    __slots__ = ("array", "kind", "ptr", "device", "height", "width", "channels", "code", "pitch", "shape", "device_id")

    def __init__(self, array, kind, ptr, device, height, width, channels, code, pitch, shape):
        self.array, self.kind, self.ptr, self.device, self.device_id = array, kind, ptr, device, -1
        self.height, self.width, self.channels, self.code, self.pitch, self.shape = height, width, channels, code, pitch, shape


INT_MAX = 2**31 - 1  # a C int: image sides, thread counts
UINT64_MAX = 2**64 - 1


def int_arg(name: str, value, low: int, high: int) -> int:
    """An integer keyword checked here, in one line naming it, before the binding's C types would refuse it
    with nanobind's "incompatible function arguments" listing."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {value!r} is not an integer")
    v = int(value)
    if not low <= v <= high:
        raise ValueError(f"{name}: {v} is out of range ({low}..{high})")
    return v


def text_arg(name: str, value) -> str:
    """A keyword that is a name (backend, algorithm), checked as int_arg checks numbers."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: {value!r} is not a name (a str such as 'auto')")
    return value


def _layout(shape, strides, itemsize, what):
    """(height, width, channels, pitch) of an array whose strides (bytes) apron can read without a copy."""
    nd = len(shape)
    if nd == 2:
        (h, w), c = shape, 1
        sy, sx = strides
        sc = itemsize
    elif nd == 3:
        h, w, c = shape
        sy, sx, sc = strides
        if not 1 <= c <= 4:
            raise ValueError(f"{what}: {c} channels (shape {tuple(shape)}); apron takes 1 to 4 (H x W x C); a stack "
                             f"of planes is read with layout='chw'")
    else:
        raise ValueError(f"{what}: a {nd}-D array of shape {tuple(shape)}; apron takes H x W or H x W x C (C 1 to 4), "
                         f"or a stack of them with layout= ('chw', 'nhw', 'nchw', 'nhwc')")
    if h == 0 or w == 0:
        raise ValueError(f"{what}: an empty array of shape {tuple(shape)}; apron needs at least one pixel")
    for side, n in (("height", h), ("width", w)):
        if n > INT_MAX:
            raise ValueError(f"{what}: {side} {n} (shape {tuple(shape)}) is over apron's limit of {INT_MAX} pixels")
    row = w * c * itemsize
    if (c > 1 and sc != itemsize) or (w > 1 and sx != c * itemsize):
        raise ValueError(
            f"{what}: pixels are not contiguous within a row (shape {tuple(shape)}, strides {tuple(strides)} bytes); "
            f"apron takes rows of interleaved channels at any row pitch: pass np.ascontiguousarray(...) (or the "
            f"array library's equivalent) to convert")
    pitch = sy if h > 1 else row
    if pitch < row:
        raise ValueError(f"{what}: rows overlap or run backwards (shape {tuple(shape)}, strides {tuple(strides)} bytes); "
                         f"pass a C-contiguous copy")
    if pitch % itemsize:
        raise ValueError(f"{what}: row pitch {pitch} bytes is not a multiple of the pixel size {itemsize}")
    return h, w, c, pitch


def _numpy_view(a, what, writable):
    code = _CODE_OF_DTYPE.get(a.dtype)
    if code is None:
        raise TypeError(f"{what}: dtype {a.dtype} is not supported (apron takes {_SUPPORTED}; convert with .astype())")
    h, w, c, pitch = _layout(a.shape, a.strides, a.itemsize, what)
    ptr = _apron.data_pointer(a)
    if ptr % a.itemsize:
        raise ValueError(f"{what}: data is not aligned to its {a.itemsize}-byte pixels")
    if writable and not a.flags.writeable:
        raise ValueError(f"{what}: the array is read-only")
    return View(a, "numpy", ptr, False, h, w, c, code, pitch, a.shape)


def _device_view(a, kind, what, writable):
    """CuPy and torch arrays through their own attributes, not __cuda_array_interface__: building that dict
    costs 3-15 us per array (torch's is Python code with checks), most of a small image's call."""
    if not _apron.has_cuda:
        raise ValueError(f"{what}: a {kind} array in GPU memory, but this apron was built without its CUDA backend "
                         f"(reinstall with the CUDA toolkit present, or pass a NumPy array)")
    if kind == "torch":
        code = _torch_codes().get(a.dtype)
        if code is None:
            raise TypeError(f"{what}: dtype {a.dtype} is not supported (apron takes {_SUPPORTED})")
        itemsize = _ITEMSIZE[code]
        shape = tuple(a.shape)
        strides = tuple(s * itemsize for s in a.stride())
        ptr, device = a.data_ptr(), a.device.index
    else:
        code = _CODE_OF_DTYPE.get(a.dtype)
        if code is None:
            raise TypeError(f"{what}: dtype {a.dtype} is not supported (apron takes {_SUPPORTED})")
        itemsize = _ITEMSIZE[code]
        shape, strides = a.shape, a.strides
        ptr, device = a.data.ptr, a.device.id
    h, w, c, pitch = _layout(shape, strides, itemsize, what)
    v = View(a, kind, ptr, True, h, w, c, code, pitch, shape)
    v.device_id = device
    return v


_TORCH_CODES = None


def _torch_codes():
    """torch dtype -> apron's code, built on first use (torch is imported only when a tensor is passed)."""
    global _TORCH_CODES
    if _TORCH_CODES is None:
        import torch

        codes = {torch.uint8: 0, torch.float32: 2}
        if hasattr(torch, "uint16"):
            codes[torch.uint16] = 1
        _TORCH_CODES = codes
    return _TORCH_CODES


def _kind(a) -> str:
    if isinstance(a, np.ndarray):
        return "numpy"
    module = type(a).__module__ or ""
    if module.startswith("cupy"):
        return "cupy"
    if module.startswith("torch"):
        return "torch" if getattr(a, "is_cuda", False) else "torch-cpu"
    return "other"


def _has_negative_strides(a, kind) -> bool:
    if kind == "torch":
        return any(s < 0 for s in a.stride())  # torch has none today; kept for completeness
    return any(s < 0 for s in a.strides)


def view_of(a, what: str = "img", writable: bool = False) -> View:
    """The view of an input (writable=False: negative strides are copied) or of an out= array (writable=True:
    refused)."""
    kind = _kind(a)
    if kind == "numpy":
        if a.size and _has_negative_strides(a, kind):
            if writable:
                raise ValueError(f"{what}: negative strides (strides {a.strides}); pass an array with positive strides")
            a = np.ascontiguousarray(a)
        return _numpy_view(a, what, writable)
    if kind == "cupy":
        if a.size and _has_negative_strides(a, kind):
            if writable:
                raise ValueError(f"{what}: negative strides (strides {a.strides}); pass an array with positive strides")
            import cupy

            a = cupy.ascontiguousarray(a)
        return _device_view(a, "CuPy", what, writable)
    if kind == "torch":
        if a.requires_grad and not writable:
            a = a.detach()  # the same memory; apron's result is outside autograd's graph anyway
        return _device_view(a, "torch", what, writable)
    if kind == "torch-cpu":
        raise TypeError(f"{what}: a torch CPU tensor; pass tensor.numpy() (no copy) or a CUDA tensor")
    raise TypeError(f"{what}: {type(a).__module__}.{type(a).__qualname__} is not an image array "
                    f"(apron takes NumPy arrays, CuPy arrays and torch CUDA tensors)")


def aligned_empty(shape, dtype, align: int = 64) -> np.ndarray:
    """np.empty whose data starts on a cache line. NumPy's own large arrays start 16 bytes past one (its
    allocation header), and every row of the result then splits its vector stores across two lines and
    cannot take non-temporal stores: a 4096^2 f32 3x3 filter took 11.0 ms into np.empty, 6.9 ms into this."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes < (1 << 16):
        return np.empty(shape, dt)
    raw = np.empty(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes].view(dt).reshape(shape)


def allocate_like(src: View, code: int, shape=None):
    """A new C-contiguous array for the result: the input's kind, device and dimensions (or `shape`), pixel
    type `code`."""
    shape = src.shape if shape is None else shape
    if src.kind == "numpy":
        return aligned_empty(shape, _DTYPE_OF_CODE[code])
    if src.kind == "CuPy":
        import cupy

        if cupy.cuda.runtime.getDevice() == src.device_id:  # the usual case: no device switch to pay for
            return cupy.empty(shape, _DTYPE_OF_CODE[code])
        with cupy.cuda.Device(src.device_id):
            return cupy.empty(shape, _DTYPE_OF_CODE[code])
    import torch

    dtype = (torch.uint8, getattr(torch, "uint16", None), torch.float32)[code]
    if dtype is None:
        raise TypeError("out_type: this torch has no uint16 tensors (torch >= 2.3 has them)")
    return torch.empty(shape, dtype=dtype, device=src.array.device)


def current_stream(v: View) -> int:
    """The caller's current stream on the array's device (CuPy's or torch's), as a cudaStream_t integer."""
    if v.kind == "CuPy":
        import cupy

        return cupy.cuda.get_current_stream(v.device_id).ptr
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what torch's compiled kernels use: no Stream object
    if raw is not None:
        return raw(v.device_id)
    return torch.cuda.current_stream(v.device_id).cuda_stream


# layout= names: (axes of the stack, dimensions of each image). Each image of a stack is run alike; a stack's
# images are never told apart by guessing from the shape.
LAYOUTS = {"hw": (0, 2), "hwc": (0, 3), "chw": (1, 2), "nhw": (1, 2), "nchw": (2, 2), "nhwc": (1, 3)}
# Volumes (docs/volumes.md): (Z, Y, X) and (Z, Y, X, C), filtered in 3-D where an operation reads along z.
VOLUME_LAYOUTS = {"zyx": 3, "zyxc": 4}


def run(pipeline, img, out=None, out_type=None, backend="auto", algorithm="auto", threads=0, memory_budget=0,
        layout=None):
    """Runs a compiled _apron.Pipeline on one array, or on each image of a stack (layout=); returns the result
    array (`out` when given)."""
    if array_half(img) or (out is not None and array_half(out)) or (out_type is not None and half_name(out_type)):
        return run_half(pipeline, img, out, out_type, backend, algorithm, threads, memory_budget, layout)
    how = (backend, algorithm, threads, memory_budget)
    if isinstance(layout, str) and layout.lower() in VOLUME_LAYOUTS:
        dims = VOLUME_LAYOUTS[layout.lower()]
        if len(tuple(getattr(img, "shape", ()))) != dims:
            raise ValueError(f"layout: '{layout}' reads a {dims}-D array, img has shape {tuple(getattr(img, 'shape', ()))}")
        return _run_volume(pipeline, img, out, out_type, 1, how)
    if layout is not None:
        stack = _stack_axes(img, layout)
        if stack:
            # A stack of planes of one size is one volume of planes (one call, every step's planes at once),
            # unless a step reads along z: then each image alone, as a volume of one plane.
            if not pipeline.along_z():
                return _run_volume(pipeline, img, out, out_type, stack, how)
            return _run_stack(pipeline, img, out, out_type, stack, how)
    src = view_of(img, "img")
    code = type_code(out_type)
    if out is None:
        if code < 0:
            code = src.code
        out = allocate_like(src, code)
    dst = view_of(out, "out", writable=True)
    if dst.kind != src.kind:
        raise ValueError(f"out: a {dst.kind} array for a {src.kind} input; out must be the same kind of array as img")
    if code >= 0 and code != dst.code:
        raise ValueError(f"out: dtype {dst_dtype(dst)} but out_type asks for {_DTYPE_OF_CODE[code]}")
    if (dst.height, dst.width, dst.channels) != (src.height, src.width, src.channels):
        raise ValueError(f"out: shape {tuple(dst.shape)} but the result is {tuple(src.shape)}")
    budget = memory_size(memory_budget)
    threads = int_arg("threads", threads, -INT_MAX - 1, INT_MAX)  # its range is the library's to say
    backend, algorithm = text_arg("backend", backend), text_arg("algorithm", algorithm)
    if src.device and dst.device_id != src.device_id:
        raise ValueError(f"out: on CUDA device {dst.device_id} but img is on CUDA device {src.device_id}")
    try:
        if src.device:
            # The binding makes the array's device current for the run (and restores the caller's).
            pipeline.run(src.ptr, True, src.height, src.width, src.channels, src.code, src.pitch, dst.ptr, True,
                         dst.code, dst.pitch, backend, algorithm, threads, budget, current_stream(src), src.device_id)
        else:
            pipeline.run(src.ptr, False, src.height, src.width, src.channels, src.code, src.pitch, dst.ptr, False,
                         dst.code, dst.pitch, backend, algorithm, threads, budget, 0, -1)
    except (ValueError, MemoryError, OSError) as e:
        from ._ops import translated  # the core's option names (--memory, --threads) as the keywords

        raise translated(e, pipeline.specs()) from None
    return out


def _stack_axes(img, layout) -> int:
    """How many leading axes of img stack its images under `layout` (checked against img's dimensions)."""
    if not isinstance(layout, str) or layout.lower() not in LAYOUTS:
        raise ValueError(f"layout: {layout!r} is not one of {', '.join(map(repr, [*LAYOUTS, *VOLUME_LAYOUTS]))} (or None)")
    stack, dims = LAYOUTS[layout.lower()]
    shape = tuple(getattr(img, "shape", ()))
    if len(shape) != stack + dims:
        raise ValueError(f"layout: '{layout}' reads a {stack + dims}-D array, img has shape {shape}")
    return stack


def _contiguous(a):
    """The array with its planes one after another (C order), copied only where they are not."""
    kind = _kind(a)
    if kind.startswith("torch"):
        return a.contiguous()
    if kind == "cupy":
        import cupy

        return cupy.ascontiguousarray(a)
    return np.ascontiguousarray(a)


def _planes_follow(v: View, a, stack: int) -> bool:
    """Whether the images of the first `stack` axes of `a` follow one another every height * pitch bytes."""
    torch_like = _kind(a).startswith("torch")
    strides = [int(s) * a.element_size() for s in a.stride()] if torch_like else [int(s) for s in a.strides]
    step = v.height * v.pitch
    for axis in range(stack - 1, -1, -1):
        if a.shape[axis] > 1 and strides[axis] != step:
            return False
        step *= a.shape[axis]
    return True


def _run_volume(pipeline, img, out, out_type, stack, how):
    """img's first `stack` axes as the planes of one volume (a (Z, Y, X[, C]) array: stack 1), in one call."""
    shape = tuple(img.shape)
    if any(n == 0 for n in shape[:stack]):
        raise ValueError(f"img: an empty stack of shape {shape}; apron needs at least one plane")
    depth = int(np.prod(shape[:stack]))
    first = view_of(img[(0,) * stack], "img")
    if not _planes_follow(first, img, stack):
        img = _contiguous(img)
        first = view_of(img[(0,) * stack], "img")
    code = type_code(out_type)
    if out is None:
        out = allocate_like(first, first.code if code < 0 else code, shape)
    elif tuple(out.shape) != shape:
        raise ValueError(f"out: shape {tuple(out.shape)} but the result is {shape}")
    dst = view_of(out[(0,) * stack], "out", writable=True)
    if not _planes_follow(dst, out, stack):
        raise ValueError(f"out: its planes do not follow one another (strides {getattr(out, 'strides', None)}); pass a "
                         f"C-contiguous array")
    if dst.kind != first.kind:
        raise ValueError(f"out: a {dst.kind} array for a {first.kind} input; out must be the same kind of array as img")
    if code >= 0 and code != dst.code:
        raise ValueError(f"out: dtype {dst_dtype(dst)} but out_type asks for {_DTYPE_OF_CODE[code]}")
    backend, algorithm, threads, memory_budget = how
    budget = memory_size(memory_budget)
    threads = int_arg("threads", threads, -INT_MAX - 1, INT_MAX)
    backend, algorithm = text_arg("backend", backend), text_arg("algorithm", algorithm)
    if first.device and dst.device_id != first.device_id:
        raise ValueError(f"out: on CUDA device {dst.device_id} but img is on CUDA device {first.device_id}")
    try:
        if first.device:
            pipeline.run_volume(first.ptr, True, depth, first.height, first.width, first.channels, first.code, first.pitch,
                                dst.ptr, True, dst.code, dst.pitch, backend, algorithm, threads, budget,
                                current_stream(first), first.device_id)
        else:
            pipeline.run_volume(first.ptr, False, depth, first.height, first.width, first.channels, first.code, first.pitch,
                                dst.ptr, False, dst.code, dst.pitch, backend, algorithm, threads, budget, 0, -1)
    except (ValueError, MemoryError, OSError) as e:
        from ._ops import translated

        raise translated(e, pipeline.specs()) from None
    return out


def _run_stack(pipeline, img, out, out_type, stack, how):
    """Each image img[i, ...] (the first `stack` axes indexed) into out[i, ...]: out allocated as img's shape
    with the first image's result type when not given."""
    shape = tuple(img.shape)
    if out is not None and tuple(out.shape) != shape:
        raise ValueError(f"out: shape {tuple(out.shape)} but the result is {shape}")
    if any(n == 0 for n in shape[:stack]):
        raise ValueError(f"img: an empty stack of shape {shape}; apron needs at least one image")
    for index in np.ndindex(*shape[:stack]):
        if out is None:  # the first image gives the result's type and kind
            first = run(pipeline, img[index], None, out_type, *how)
            v = view_of(first, "img")
            out = allocate_like(v, v.code, shape)
            out[index] = first
        else:
            run(pipeline, img[index], out[index], out_type, *how)
    return out


def dst_dtype(v: View):
    return _DTYPE_OF_CODE[v.code]


def memory_size(budget) -> int:
    """Bytes from an int (0: the default budget) or a text such as '4G' or '75%' (apron/memory.hpp)."""
    if isinstance(budget, str):
        return _apron.parse_memory_size(budget)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise TypeError(f"memory_budget: {budget!r} is not a number of bytes (int >= 0) or a size such as '4G'")
    if budget > UINT64_MAX:
        raise ValueError(f"memory_budget: {int(budget)} bytes is over the largest budget, 2**64 - 1")
    return int(budget)


# ---- 16-bit floats: float16 (NumPy, CuPy, torch) and torch's bfloat16 --------------------------------------

def _to_float32(a, kind):
    if kind == "torch":
        return a.detach().float()
    return a.astype(np.float32)


def _to_half(r, name, kind):
    """The float32 result rounded to the 16-bit type: to nearest, ties to even (NumPy's, CuPy's and torch's
    conversion), one rounding."""
    if kind == "torch":
        import torch

        return r.to(getattr(torch, name))
    return r.astype(name)


def run_half(pipeline, img, out, out_type, backend, algorithm, threads, memory_budget, layout):
    """run() where the input, out= or out_type is a 16-bit float: the input converted to float32 once (apron's
    kernels read u8, u16 and f32; no view of a 16-bit array is possible, so this is a copy), the pipeline run in
    float32 (or into the integer out_type asked for), and a 16-bit result rounded once from the float32 one."""
    kind = _kind(img)
    if kind == "torch-cpu":
        raise TypeError("img: a torch CPU tensor; pass tensor.numpy() (no copy; bfloat16: tensor.float().numpy()) "
                        "or a CUDA tensor")
    if kind == "other":
        view_of(img, "img")  # raises its TypeError naming the object
    src_half = array_half(img)
    out_half = array_half(out) if out is not None else None
    want_half = half_name(out_type) if out_type is not None else None
    if out is not None:
        okind = _kind(out)
        if okind != kind:
            raise ValueError(f"out: a {okind} array for a {kind} input; out must be the same kind of array as img")
        if out_type is not None:
            asked = want_half or _DTYPE_OF_CODE[type_code(out_type)].name
            have = out_half or str(out.dtype).replace("torch.", "")
            if asked != have:
                raise ValueError(f"out: dtype {have} but out_type asks for {asked}")
        if kind == "torch" and out.device != img.device:
            raise ValueError(f"out: on {out.device} but img is on {img.device}")
        if kind == "cupy" and out.device.id != img.device.id:
            raise ValueError(f"out: on CUDA device {out.device.id} but img is on CUDA device {img.device.id}")
    result_half = out_half if out is not None else (want_half if out_type is not None else src_half)
    work = _to_float32(img, kind) if src_half else img
    if not result_half:  # an integer or float32 result: apron writes it (into out= too)
        return run(pipeline, work, out, out_type, backend, algorithm, threads, memory_budget, layout)
    if kind != "torch" and result_half == "bfloat16":
        raise TypeError("out_type: bfloat16 results are made for torch tensors only (NumPy and CuPy have no bfloat16)")
    if out is not None:
        if _image_shape(out.shape) != _image_shape(img.shape):
            raise ValueError(f"out: shape {tuple(out.shape)} but the result is {tuple(img.shape)}")
        if kind != "torch" and any(s < 0 for s in out.strides):
            raise ValueError(f"out: negative strides (strides {out.strides}); pass an array with positive strides")
        if kind == "numpy" and not out.flags.writeable:
            raise ValueError("out: the array is read-only")
        if kind != "torch" and _may_overlap(out, img, kind):
            raise ValueError("out: it overlaps img; apron does not filter in place")
    r = run(pipeline, work, None, "f32", backend, algorithm, threads, memory_budget, layout)
    if out is None:
        return _to_half(r, result_half, kind)
    if kind == "torch":
        out.copy_(r.reshape(out.shape))  # torch's copy rounds float32 to the 16-bit type to nearest even
    else:
        out[...] = r.reshape(out.shape)  # NumPy's and CuPy's casting: the same rounding
    return out


def _image_shape(shape):
    """(H, W) and (H, W, 1) are the same image (as for out= of the other types)."""
    shape = tuple(shape)
    return shape[:-1] if len(shape) == 3 and shape[-1] == 1 else shape


def _may_overlap(a, b, kind) -> bool:
    if kind == "cupy":
        import cupy

        return bool(cupy.may_share_memory(a, b))
    return bool(np.may_share_memory(a, b))
