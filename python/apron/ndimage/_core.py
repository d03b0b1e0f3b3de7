"""apron.ndimage's shared machinery: array kinds, SciPy's parameter rules, pixel types and running apron."""
from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable

import numpy as np

from .. import _arrays, _ops


# SciPy's boundary modes for filters -> apron's border modes (SPEC.md "Borders"). The grid-* aliases are
# what SciPy's filters make of them (_ni_support._extend_mode_to_code(is_filter=True)).
_MODES = {"reflect": "reflect", "grid-mirror": "reflect", "constant": "constant", "grid-constant": "constant",
          "nearest": "nearest", "mirror": "mirror", "wrap": "wrap", "grid-wrap": "wrap"}
_F32_MAX = float(np.finfo(np.float32).max)
_EXACT_F32 = 2 ** 24  # integers up to this magnitude are exact in float32
_NATIVE = {"uint8": 0, "uint16": 1, "float32": 2}  # apron's pixel type codes
_INT_RANGE = {n: (int(np.iinfo(n).min), int(np.iinfo(n).max))
              for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")}
_INT_RANGE["bool"] = (0, 1)
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_SUPPORTED = tuple(_INT_RANGE) + _FLOATS
_DBL_EPSILON = float(np.finfo(np.float64).eps)  # SciPy's correlate leaves out weights of |w| <= this


# ---- errors -------------------------------------------------------------------------------------------

def _error(fname: str, message: str, kind=ValueError):
    return kind(f"{fname}(): {message}")


def _apron_call(fname: str, fn, *args, **kwargs):
    """Runs an apron call; its errors (already in Python's words, apron._ops.translate) name this function."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, MemoryError, OSError) as e:
        text = str(e)
        if not text.startswith(f"{fname}(): "):
            text = f"{fname}(): {text}"
        raise type(e)(text) from None


# ---- array kinds ----------------------------------------------------------------------------------------

class _NumpyLike:
    """NumPy and CuPy arrays: the few array operations the conversions need."""

    def __init__(self, xp, kind):
        self.xp, self.kind = xp, kind

    def name(self, a):
        return a.dtype.name

    def astype(self, a, name):
        return a.astype(name)

    def contiguous(self, a):
        a = self.xp.ascontiguousarray(a)
        if self.kind == "numpy" and not a.flags.aligned:
            # ascontiguousarray keeps a buffer whose pixels are not aligned to their size (an array made over
            # bytes at an odd offset, as dask.distributed hands out received blocks): apron reads aligned pixels
            a = a.copy()
        return a

    def stack(self, parts):
        return self.xp.stack(parts)

    def minmax(self, a):
        return int(a.min()), int(a.max())

    def offset_down(self, a, lo, name):
        # a - lo in a's own type: exact (modulo 2**bits, and the difference is small and non-negative).
        return (a - a.dtype.type(lo)).astype(name)

    def offset_up(self, r, lo, name):
        t = np.dtype(name).type
        return r.astype(name) + t(lo)

    def round_store(self, r, name):
        """A float array stored in an integer type: round half to even, saturate, NaN -> 0 (SPEC.md)."""
        xp = self.xp
        y = xp.rint(r)
        if name == "bool":
            return y >= 1
        lo, hi = _INT_RANGE[name]
        if hi < _EXACT_F32:
            y = xp.where(xp.isnan(y), 0, y)
            return xp.clip(y, lo, hi).astype(name)
        y = xp.where(xp.isnan(y), 0, y.astype(np.float64))
        over = y >= float(hi)
        with np.errstate(invalid="ignore", over="ignore"):
            out = xp.clip(y, lo, hi).astype(name)
        out[over] = hi
        return out

    def int_store(self, r, name):
        """An integer array stored in another integer type (or bool): saturated."""
        lo, hi = _INT_RANGE[name]
        rlo, rhi = _INT_RANGE[r.dtype.name]
        if rlo >= lo and rhi <= hi:
            return r.astype(name)
        if name == "bool":
            return r >= 1
        if r.dtype.name == "uint64":
            return self.xp.minimum(r, np.uint64(hi)).astype(name)
        return self.xp.clip(r.astype(np.int64), lo, hi).astype(name)

    def pad(self, a, t, b, l, r, value):
        widths = ((t, b), (l, r)) + (((0, 0),) if a.ndim == 3 else ())
        return self.xp.pad(a, widths, mode="constant", constant_values=value)

    def pad_axes(self, a, widths, value):
        """a padded with `value` by (before, after) along each of its axes (a volume's three)."""
        return self.xp.pad(a, tuple(widths), mode="constant", constant_values=value)

    def copy_into(self, dst, src):
        dst[...] = src

    def may_share_memory(self, a, b):
        return bool(self.xp.may_share_memory(a, b))

    def subtract(self, a, b, out):
        if a.dtype == np.bool_ and out.dtype == np.bool_:
            return self.xp.bitwise_xor(a, b, out=out)
        return self.xp.subtract(a, b, out=out)

    def minus(self, a, b):
        return a - b


class _TorchOps:
    """torch tensors (CUDA; CPU tensors go through NumPy)."""

    kind = "torch"

    def __init__(self):
        import torch

        self.torch = torch

    def dtype(self, name):
        return getattr(self.torch, name)

    def name(self, a):
        return str(a.dtype).rsplit(".", 1)[-1]

    def astype(self, a, name):
        return a.to(self.dtype(name))

    def contiguous(self, a):
        return a.contiguous()

    def stack(self, parts):
        return self.torch.stack(parts)

    def minmax(self, a):
        b = a.to(self.torch.int64)
        return int(b.min().item()), int(b.max().item())

    def offset_down(self, a, lo, name):
        return (a.to(self.torch.int64) - lo).to(self.dtype(name))

    def offset_up(self, r, lo, name):
        return (r.to(self.torch.int64) + lo).to(self.dtype(name))

    def round_store(self, r, name):
        torch = self.torch
        y = torch.round(r.to(torch.float64) if name in ("int32", "uint32", "int64", "uint64") else r)  # half to even
        if name == "bool":
            return y >= 1
        lo, hi = _INT_RANGE[name]
        y = torch.nan_to_num(y, nan=0.0)
        over = y >= float(hi)
        out = torch.clamp(y, lo, hi).to(self.dtype(name))
        if bool(over.any()):
            out[over] = hi
        return out

    def int_store(self, r, name):
        lo, hi = _INT_RANGE[name]
        rlo, rhi = _INT_RANGE[self.name(r)]
        if rlo >= lo and rhi <= hi:
            return r.to(self.dtype(name))
        if name == "bool":
            return r >= 1
        return self.torch.clamp(r.to(self.torch.int64), lo, hi).to(self.dtype(name))

    def pad(self, a, t, b, l, r, value):
        import torch.nn.functional as F

        if a.ndim == 3:  # (H, W, C): pad the first two axes
            return F.pad(a.permute(2, 0, 1), (l, r, t, b), value=float(value)).permute(1, 2, 0).contiguous()
        return F.pad(a, (l, r, t, b), value=float(value))

    def pad_axes(self, a, widths, value):
        import torch.nn.functional as F

        flat = [n for before_after in reversed(widths) for n in before_after]  # F.pad: the last axis first
        return F.pad(a, tuple(flat), value=float(value))

    def copy_into(self, dst, src):
        dst.copy_(src)

    def may_share_memory(self, a, b):
        sa, sb = a.untyped_storage(), b.untyped_storage()
        return sa.data_ptr() == sb.data_ptr() and a.device == b.device

    def subtract(self, a, b, out):
        torch = self.torch
        if a.dtype == torch.bool and out.dtype == torch.bool:
            out.copy_(torch.logical_xor(a, b))
        else:
            out.copy_(self.minus(a, b))
        return out

    def minus(self, a, b):
        """a - b wrapping around as NumPy's unsigned types do; torch has no CUDA arithmetic on uint16 / uint32,
        so those go through int64 (their differences fit it) and back modulo 2**bits."""
        torch = self.torch
        bits = {torch.uint16: 16, torch.uint32: 32}.get(a.dtype)
        if bits is None or b.dtype != a.dtype:
            return a - b
        return torch.remainder(a.to(torch.int64) - b.to(torch.int64), 1 << bits).to(a.dtype)


_NUMPY = _NumpyLike(np, "numpy")


def _ops_for(kind):
    if kind == "numpy":
        return _NUMPY
    if kind == "cupy":
        import cupy

        return _NumpyLike(cupy, "cupy")
    return _TorchOps()


# ---- the input ----------------------------------------------------------------------------------------

# The functions that take volumes. Separable filters are 1-D passes, and a pass along z is a vertical pass over
# the volume seen as a (Z, Y * X) image (rows are planes), one along x a horizontal pass over (Z * Y, X), any
# other pass one per plane (_linear); 3-D weights and footprints are one apron call over the volume
# (_linear_zyx, _selection_zyx), and so are the rank filters (apron's 3-D rank op).
_VOLUME_FUNCTIONS = ("correlate", "convolve", "gaussian_filter", "gaussian_filter1d", "uniform_filter",
                     "uniform_filter1d", "correlate1d", "convolve1d", "sobel", "prewitt", "laplace", "minimum_filter",
                     "maximum_filter", "grey_erosion", "grey_dilation", "grey_opening", "grey_closing",
                     "morphological_gradient", "white_tophat", "black_tophat", "rank_filter", "median_filter",
                     "percentile_filter", "minimum_filter1d", "maximum_filter1d")


class _Src:
    """The input as given (for its kind, shape and dtype) and as apron takes it (a 2-D or H x W x C array, or
    a (Z, Y, X) volume for the separable filters)."""

    def __init__(self, input, fname, volumes=False):
        self.fname = fname
        kind = _arrays._kind(input)
        self.torch_cpu = None  # the torch dtype of a torch CPU input (computed through NumPy)
        if kind == "torch-cpu":
            t = input.detach()
            if t.is_conj():
                t = t.resolve_conj()
            self.torch_cpu = t.dtype
            if str(t.dtype) == "torch.bfloat16":
                t = t.float()
            a, kind = t.numpy(), "numpy"
        elif kind == "torch":
            a = input.detach()
        elif kind == "other":
            a, kind = np.asarray(input), "numpy"
        else:
            a = input
        self.kind, self.ops = kind, _ops_for(kind)
        if kind in ("numpy", "cupy") and not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        name = self.ops.name(a)
        if name.startswith("complex"):
            raise _error(fname, "complex arrays are not supported (filter the real and imaginary parts)", TypeError)
        if name not in _SUPPORTED:
            raise _error(fname, f"dtype {name} is not supported (apron.ndimage takes {', '.join(_SUPPORTED)})", TypeError)
        self.a, self.dtype = a, name
        self.shape = tuple(a.shape)
        self.ndim = len(self.shape)
        if self.ndim == 0:
            raise _error(fname, "a 0-D array (a scalar); pass an image")
        # A 3-D array whose last axis is longer than 4 is a volume (Z, Y, X); one of at most 4 a colour image.
        self.volume = self.ndim == 3 and self.shape[2] > 4
        if self.ndim > 3 or (self.volume and not volumes):
            raise _error(fname, f"a {self.ndim}-D array of shape {self.shape}: apron.ndimage filters 1-D signals, 2-D "
                                f"images (H, W), (H, W, C) colour images of at most 4 channels (each channel alike), "
                                f"and (Z, Y, X) volumes (last axis longer than 4) with {', '.join(_VOLUME_FUNCTIONS)}; "
                                f"{fname} does not take " + ("volumes yet" if self.volume else "4-D arrays yet"))
        self.empty = any(n == 0 for n in self.shape)

    @property
    def torch_dtype_name(self):
        return str(self.torch_cpu).rsplit(".", 1)[-1] if self.torch_cpu is not None else None

    def image_axis(self, axis):
        """The axis of apron's (H, W[, C]) image that an axis of the input is (None: the channel axis; a
        volume's z is 2, y 0 and x 1)."""
        if self.ndim == 1:
            return 1
        if self.volume:
            return (2, 0, 1)[axis]
        return axis if axis < 2 else None

    def as_image(self, a):
        """An array of the input's shape (or a coding of it) as apron's (H, W[, C]) array, viewable by apron."""
        if self.ndim == 1:
            a = a.reshape((1, a.shape[0]))
        if self.volume:  # C order, so that the passes' (Z, Y * X) and (Z * Y, X) images are views
            return self.ops.contiguous(a)
        if not _viewable(a, self.kind):
            a = self.ops.contiguous(a)
        return a

    def from_image(self, r):
        return r.reshape(self.shape) if self.ndim == 1 else r


def _viewable(a, kind) -> bool:
    """Whether apron can read the array in place (include/apron/image.hpp: rows of contiguous pixels at any
    positive pitch); otherwise the caller copies it."""
    if kind == "torch":
        itemsize = a.element_size()
        strides = tuple(s * itemsize for s in a.stride())
    else:
        itemsize, strides = a.dtype.itemsize, a.strides
        if kind == "numpy" and not a.flags.aligned:
            return False
    shape = a.shape
    h, w = shape[0], shape[1]
    c = shape[2] if len(shape) == 3 else 1
    if c > 1 and strides[2] != itemsize:
        return False
    if w > 1 and strides[1] != c * itemsize:
        return False
    if h > 1 and (strides[0] < w * c * itemsize or strides[0] % itemsize):
        return False
    return all(s >= 0 for s in strides)


# ---- SciPy's parameter rules ----------------------------------------------------------------------------

def _check_axes(axes, ndim, fname):
    """scipy.ndimage._ni_support._check_axes."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        axes = (operator.index(axes),)
    elif isinstance(axes, Iterable):
        axes = tuple(operator.index(ax) for ax in axes)
    else:
        raise _error(fname, "axes must be an integer, iterable of integers, or None")
    for ax in axes:
        if ax < -ndim or ax > ndim - 1:
            raise _error(fname, f"specified axis: {ax} is out of range for a {ndim}-D array")
    axes = tuple(ax % ndim for ax in axes)
    if len(set(axes)) != len(axes):
        raise _error(fname, "axes must be unique")
    return axes


def _sequence(value, n, what, fname):
    """scipy.ndimage._ni_support._normalize_sequence: a scalar repeated n times, or a sequence of length n."""
    if not isinstance(value, str) and np.iterable(value):
        values = list(value)
        if len(values) != n:
            raise _error(fname, f"{what}: a sequence of {len(values)} for {n} axes (a sequence argument must have "
                                f"one value per filtered axis)", RuntimeError)
        return values
    return [value] * n


def _axis_index(axis, ndim, fname):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise _error(fname, f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def _mode(mode, fname):
    if not isinstance(mode, str) or mode not in _MODES:
        raise _error(fname, f"mode: {mode!r} is not a boundary mode (reflect, constant, nearest, mirror, wrap, "
                            f"grid-mirror, grid-constant, grid-wrap)", RuntimeError)
    return _MODES[mode]


def _single_mode(mode, fname, why):
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        raise _error(fname, f"mode: a sequence of modes is not supported {why}", RuntimeError)
    return _mode(mode, fname)


def _origin_ok(origin, n):
    return -(n // 2) <= origin <= (n - 1) // 2


def _check_origin(origin, n, fname, what="size"):
    if not isinstance(origin, numbers.Integral):
        try:
            origin = operator.index(origin)
        except TypeError:
            raise _error(fname, f"origin: {origin!r} is not an integer", TypeError) from None
    origin = int(origin)
    if not _origin_ok(origin, n):
        raise _error(fname, f"invalid origin {origin} for a {what} of {n}: it must lie in -({n} // 2)..({n} - 1) // 2 "
                            f"= {-(n // 2)}..{(n - 1) // 2}")
    return origin


def _expand_footprint(ndim, axes, footprint, what, fname):
    """scipy.ndimage._filters._expand_footprint: a footprint over `axes` as one over every axis."""
    if len(axes) < ndim:
        if footprint.ndim != len(axes):
            raise _error(fname, f"{what}.ndim ({footprint.ndim}) must match len(axes) ({len(axes)})", RuntimeError)
        footprint = np.expand_dims(footprint, tuple(ax for ax in range(ndim) if ax not in axes))
    if footprint.ndim != ndim or any(n < 1 for n in footprint.shape):
        raise _error(fname, f"{what} of shape {footprint.shape} for a {ndim}-D input: it needs {ndim} axes of at "
                            f"least one cell", RuntimeError)
    return footprint


def _expand_origin(ndim, axes, origin, fname):
    """scipy.ndimage._filters._expand_origin."""
    origins = _sequence(origin, len(axes), "origin", fname)
    if len(axes) < ndim:
        full = [0] * ndim
        for o, ax in zip(origins, axes):
            full[ax] = o
        origins = full
    return origins


# ---- from SciPy's windows to apron's masks ------------------------------------------------------------

def _pad_to_centre(k: np.ndarray, centre) -> np.ndarray:
    """k (2-D, or a volume's 3-D window) padded with zeros along each axis so that apron's centre (n // 2 on
    every axis, SPEC.md) falls on the cell `centre` of k: SciPy's origin. Zero weights and unset element cells
    are no-ops."""
    pads = []
    for n, c in zip(k.shape, centre):
        if 2 * c - n + 1 >= 0:
            pads.append((0, max(0, 2 * c - n)))
        else:
            pads.append((n - 2 * c - 1, 0))
    if any(p != (0, 0) for p in pads):
        k = np.pad(k, pads)
    return k


def _reach(k: np.ndarray):
    """(top, bottom, left, right): how far outside the image a padded mask reads."""
    h, w = k.shape
    return h // 2, h - 1 - h // 2, w // 2, w - 1 - w // 2


def _image_window(src, full: np.ndarray, origins, what):
    """A window over every axis of the input (SciPy's layout) as a 2-D window and its centre on apron's image;
    a window that spans the channel axis (a volume) is refused."""
    fname = src.fname
    if src.ndim == 1:
        return full.reshape(1, -1), (0, full.shape[0] // 2 + origins[0])
    if src.ndim == 3:
        if full.shape[2] != 1:
            raise _error(fname, f"a {what} of shape {full.shape} spans the last axis of a {src.shape} array: that is a "
                                f"volume filter, which apron does not do (yet). For a colour image give a {what} of "
                                f"shape (h, w, 1), a size of (h, w, 1) or axes=(0, 1), and each channel is filtered alike")
        full = full[:, :, 0]
    return full, (full.shape[0] // 2 + origins[0], full.shape[1] // 2 + origins[1])


def _channel_refusal(src, what):
    return _error(src.fname, f"{what} along the last axis of a {src.shape} array: that is a volume filter, which apron "
                             f"does not do (yet). For a colour image filter axes=(0, 1) (or give 1 for the last axis) "
                             f"and each channel is filtered alike")


# ---- pixel types ----------------------------------------------------------------------------------------

def _is_dtype(output):
    """Whether output= names a dtype (NumPy or torch) rather than an array."""
    return isinstance(output, (str, type, np.dtype)) or (
        type(output).__module__ == "torch" and type(output).__name__ == "dtype")


def _out_dtype(src, output):
    """The result's dtype name (SciPy: the input's unless output= is a dtype or an array), and the output array."""
    fname = src.fname
    if output is None:
        name = src.torch_dtype_name or src.dtype
        return name, None
    if _is_dtype(output):
        try:
            name = np.dtype(output).name if not str(output).startswith("torch.") else str(output).rsplit(".", 1)[-1]
        except TypeError:
            raise _error(fname, f"output: {output!r} is not a dtype or an array", TypeError) from None
        if name not in _SUPPORTED:
            raise _error(fname, f"output: dtype {name} is not supported (apron.ndimage writes {', '.join(_SUPPORTED)})",
                         TypeError)
        return name, None
    kind = _arrays._kind(output)
    expected = "torch-cpu" if src.torch_cpu is not None else src.kind
    if kind != expected:
        raise _error(fname, f"output: a {kind} array for a {expected} input; give the same kind of array", TypeError)
    if tuple(output.shape) != src.shape:
        raise _error(fname, f"output shape not correct: {tuple(output.shape)} for an input of {src.shape}", RuntimeError)
    ops = _TorchOps() if kind in ("torch", "torch-cpu") else src.ops
    name = ops.name(output)
    if name not in _SUPPORTED:
        raise _error(fname, f"output: dtype {name} is not supported (apron.ndimage writes {', '.join(_SUPPORTED)})",
                     TypeError)
    return name, output


def _int_cval(src, cval):
    """cval for a selection filter on an integer (or bool) image: SciPy casts it to the image's type (a C cast,
    toward zero); a value outside the type's range is refused (SciPy's result then depends on the cast)."""
    lo, hi = _INT_RANGE[src.dtype]
    try:
        v = int(cval) if isinstance(cval, (numbers.Integral, np.integer)) else math.trunc(float(cval))
    except (ValueError, OverflowError):
        raise _error(src.fname, f"cval: {cval!r} cannot be a {src.dtype} pixel") from None
    if not lo <= v <= hi:
        raise _error(src.fname, f"cval: {cval!r} lies outside {src.dtype}'s range {lo}..{hi} (SciPy would cast it with "
                                f"wraparound; give a value of the range)")
    return v


class _Coding:
    """How the input reaches apron: the working array (uint8, uint16 or float32), the border value in it, and
    the way back to the input's dtype."""

    def __init__(self, work, value, decode, exact_native):
        self.work, self.value, self.decode, self.native = work, value, decode, exact_native


def _selection_coding(src, mode, cval):
    """Selection filters (minimum, maximum, rank): exact for every integer type by an order-keeping offset."""
    ops, a, name = src.ops, src.a, src.dtype
    constant = mode == "constant"
    if name in ("uint8", "uint16"):
        v = _int_cval(src, cval) if constant else 0
        return _Coding(a, v, lambda r: r, True)
    if name == "float32" or name in ("float16", "bfloat16", "float64"):
        work = a if name == "float32" else ops.astype(a, "float32")
        v = _f32(cval) if constant else 0.0
        back = (lambda r: r) if name == "float32" else (lambda r: ops.astype(r, name))
        return _Coding(work, v, back, name == "float32")
    v = _int_cval(src, cval) if constant else 0
    if name == "bool":
        if src.kind == "torch":
            return _Coding(ops.astype(a, "uint8"), v, lambda r: ops.astype(r, "bool"), False)
        return _Coding(a.view(np.uint8), v, lambda r: r.view(np.bool_), False)
    if name in ("int8", "int16"):
        bits = 8 if name == "int8" else 16
        if src.kind == "torch":
            return _Coding(ops.astype(a, "float32"), float(v), lambda r: ops.astype(r, name), False)
        unsigned = "uint8" if bits == 8 else "uint16"
        top = np.dtype(unsigned).type(1 << (bits - 1))
        work = a.view(unsigned) ^ top
        return _Coding(work, v + (1 << (bits - 1)), lambda r: (r ^ top).view(name), False)
    # 32- and 64-bit integers: offset by the minimum into uint16 or float32 where the span allows.
    lo, hi = ops.minmax(a)
    if constant:
        lo, hi = min(lo, v), max(hi, v)
    span = hi - lo
    if span > _EXACT_F32:
        raise _error(src.fname, f"{name} values (with cval) span {span} (from {lo} to {hi}); apron's selection filters "
                                f"take {name} images exactly when the span is at most 2**24 (offset into float32): "
                                f"split the range or use SciPy for this array")
    work_name = "uint16" if span < 65536 else "float32"
    work = ops.offset_down(a, lo, work_name)
    value = (v - lo) if work_name == "uint16" else float(v - lo)
    return _Coding(work, value, lambda r: ops.offset_up(r, lo, name), False)


def _linear_coding(src, mode, cval):
    """Linear filters: uint8, uint16 and float32 natively, every other type through float32."""
    ops, a, name = src.ops, src.a, src.dtype
    constant = mode == "constant"
    if name in ("uint8", "uint16"):
        lo, hi = _INT_RANGE[name]
        c = float(cval)
        if not constant or (c == math.floor(c) and lo <= c <= hi):
            return _Coding(a, int(c) if constant else 0, None, True)
    work = a if name == "float32" else ops.astype(a, "float32")
    return _Coding(work, _f32(cval) if constant else 0.0, None, name == "float32")


def _f32(value) -> float:
    """A border value as a float32 pixel holds it (beyond float32's range: +-inf, then padded, not passed)."""
    with np.errstate(over="ignore"):
        return float(np.float32(float(value)))


def _store(src, r, from_name, to_name):
    """A result array (from_name) as to_name: SPEC's rule for integer types (round half to even, saturate)."""
    ops = src.ops
    if from_name == to_name:
        return r
    if to_name in _FLOATS:
        if src.torch_cpu is not None and to_name == "bfloat16":
            return r  # converted when the torch tensor is made
        return ops.astype(r, to_name)
    if from_name in _FLOATS:
        return ops.round_store(r, to_name)
    return ops.int_store(r, to_name)


# ---- running apron --------------------------------------------------------------------------------------

def _value_is_plain(v) -> bool:
    return not isinstance(v, float) or (math.isfinite(v) and abs(v) <= _F32_MAX)


def _op(name, **params):
    return _ops.op(name, **params)


def _run(src, work, ops, out_name, out=None, layout=None):
    """The compiled pipeline of `ops` on the working array (apron's image form, or a C-ordered (Z, Y, X)
    volume with layout='zyx'); the result in out_name."""
    pipeline = _apron_call(src.fname, _ops.compiled, ops)
    return _apron_call(src.fname, _arrays.run, pipeline, work, out, out_name, layout=layout)


def _spans_volume(src, window) -> bool:
    """Whether a window over every axis of the input (weights, a footprint) filters it as a (Z, Y, X) volume:
    a volume's, or a 3-D array's window that spans its last axis (then the array is a volume of at most 4
    columns, not a colour image; SciPy filters every axis alike either way)."""
    return src.ndim == 3 and (src.volume or window.shape[2] != 1)


def _zyx_run(src, work, op_name, params, mode, value, window, out_name):
    """One op over a C-ordered (Z, Y, X) volume in one apron call, its mask or element `window` (D, H, W)
    centred as apron centres it; a constant border apron cannot take (NaN, +-inf) is padded in instead."""
    if mode == "constant" and not _value_is_plain(value):
        widths = [(n // 2, n - 1 - n // 2) for n in window.shape]
        padded = src.ops.pad_axes(work, widths, value)
        r = _run(src, padded, [_op(op_name, border="nearest", **params)], out_name, layout="zyx")
        inner = tuple(slice(before, before + n) for (before, _), n in zip(widths, work.shape))
        return src.ops.contiguous(r[inner])
    border = {"border": mode, "value": value} if mode == "constant" else {"border": mode}
    return _run(src, work, [_op(op_name, **border, **params)], out_name, layout="zyx")


def _padded_run(src, work, op_name, params, mode, value, mask, out_name):
    """One step whose constant border value apron cannot take (NaN, +-inf): the image padded with it instead."""
    t, b, l, r = _reach(mask)
    padded = src.ops.pad(work, t, b, l, r, value)
    res = _run(src, padded, [_op(op_name, border="nearest", **params)], out_name)
    h, w = work.shape[0], work.shape[1]
    return src.ops.contiguous(res[t:t + h, l:l + w])


class _Result:
    """The output side of one call: the dtype, the output array, and how the result gets there."""

    def __init__(self, src, output):
        self.src = src
        self.name, self.output = _out_dtype(src, output)
        self.compute_name = "float32" if self.name == "bfloat16" and src.torch_cpu is not None else self.name

    def direct_out(self):
        """The output array as apron's image, when apron can write the result straight into it."""
        out, src = self.output, self.src
        if out is None or src.torch_cpu is not None or self.name not in _NATIVE or src.volume:
            return None
        view = out.reshape((1, out.shape[0])) if src.ndim == 1 else out
        if not _viewable(view, src.kind) or src.ops.may_share_memory(view, src.a):
            return None
        if src.kind == "numpy" and not view.flags.writeable:
            return None
        return view

    def finish(self, r):
        """r: the result in self.compute_name, shaped as apron's image (or already in the output array)."""
        src, out = self.src, self.output
        if out is not None and r is out:
            return out
        r = src.from_image(r)
        if src.torch_cpu is not None:
            import torch

            t = torch.from_numpy(np.ascontiguousarray(r))
            target = getattr(torch, self.name)
            if out is not None:
                out.copy_(t.to(target) if t.dtype != target else t)
                return out
            return t.to(target) if t.dtype != target else t
        if out is not None:
            if out is not r:
                src.ops.copy_into(out, r)
            return out
        return r

    def empty_result(self):
        src = self.src
        if self.output is not None:
            return self.output
        if src.torch_cpu is not None:
            import torch

            return torch.zeros(src.shape, dtype=getattr(torch, self.name))
        if src.kind == "torch":
            return src.ops.torch.zeros(src.shape, dtype=src.ops.dtype(self.name), device=src.a.device)
        return src.ops.xp.zeros(src.shape, self.name)

    def copy_of_input(self):
        """SciPy's `output[...] = input` when no axis is filtered."""
        src = self.src
        r = _store(src, src.a, src.dtype, self.compute_name)
        if r is src.a:
            r = r.copy() if src.kind != "torch" else r.clone()
        return self.finish(r)


def _selection_zyx(src, res, op_name, element, mode, cval):
    """One selection op (erode, dilate) with a (D, H, W) element over the input as a (Z, Y, X) volume."""
    coding = _selection_coding(src, mode, cval)
    work = src.ops.contiguous(coding.work)
    work_name = src.ops.name(coding.work)
    direct = coding.native and res.compute_name in _NATIVE
    value = coding.value if mode == "constant" else 0
    r = _zyx_run(src, work, op_name, {"se": np.ascontiguousarray(element, dtype=np.float64)}, mode, value, element,
                 res.compute_name if direct else work_name)
    if not direct:
        r = _store(src, coding.decode(r), src.dtype, res.compute_name)
    return res.finish(r)


def _linear_zyx(src, res, mask, mode, cval):
    """correlate with a (D, H, W) mask over the input as a (Z, Y, X) volume, in one apron call: apron sums
    each plane of the mask to float32, then the planes in order (SPEC.md "Volumes")."""
    coding = _linear_coding(src, mode, cval)
    work = src.ops.contiguous(coding.work)
    direct = coding.native and res.compute_name in _NATIVE
    value = coding.value if mode == "constant" else 0
    r = _zyx_run(src, work, "correlate", {"mask": np.ascontiguousarray(mask)}, mode, value, mask,
                 res.compute_name if direct else "float32")
    if not direct:
        r = _store(src, r, "float32", res.compute_name)
    return res.finish(r)


def _selection(src, res, steps, mode, cval):
    """Selection steps (apron op name, params, element) run on the input in one pipeline: every step with
    the same border mode and value (SciPy's morphology applies them to each intermediate alike)."""
    coding = _selection_coding(src, mode, cval)
    work = src.as_image(coding.work)
    work_name = _arrays._DTYPE_OF_CODE[_NATIVE[src.ops.name(coding.work)]].name
    direct = coding.native and res.compute_name in _NATIVE
    out_name = res.compute_name if direct else work_name
    out = res.direct_out() if direct else None
    if mode == "constant" and not _value_is_plain(coding.value):
        r = work
        for name, params, element in steps:
            r = _padded_run(src, r, name, dict(params, se=element), mode, coding.value,
                            element if isinstance(element, np.ndarray) else np.ones(_rect_shape(element)), work_name)
        if out_name != work_name:
            r = _store(src, r, work_name, out_name)
    else:
        border = {"border": mode, "value": coding.value} if mode == "constant" else {"border": mode}
        ops = [_op(name, se=element, **border, **params) for name, params, element in steps]
        r = _run(src, work, ops, out_name, out)
    if not direct:
        r = coding.decode(r)
        r = _store(src, r, src.dtype, res.compute_name)
    return res.finish(r)


def _volume_pass(src, r, along_z, mask, run_pass):
    """One 2-D pass over a C-ordered (Z, Y, X) volume: along z on the (Z, Y * X) image (rows are planes), along
    x alone on (Z * Y, X) (rows stay within their plane), anything else as apron's plane step on the volume
    (layout='zyx': one call, the planes a batch on the GPU) where the pass takes a layout, else plane by plane.
    (Plane by plane, a 64 x 512 x 512 CuPy block's y pass was 64 calls: through dask, apron's blocks took 0.33 s
    against cupyx's 0.23.)"""
    z, y, x = src.shape
    if along_z:
        return run_pass(r.reshape(z, y * x)).reshape(z, y, x)
    if mask.shape[0] == 1:
        return run_pass(r.reshape(z * y, x)).reshape(z, y, x)
    if getattr(run_pass, "takes_layout", False):
        return run_pass(r, layout="zyx")
    return src.ops.stack([run_pass(r[k]) for k in range(z)])


def _rect_shape(text):
    w, h = text.split(":")[1].split("x")
    return int(h), int(w)


def _linear(src, res, passes, cval):
    """Linear passes (apron op name, params, mode, mask for the reach) run in turn: one apron call each (the
    intermediates in float32)."""
    modes = {p[2] for p in passes}
    coding = _linear_coding(src, "constant" if "constant" in modes else "reflect", cval)
    work = src.as_image(coding.work)
    work_name = src.ops.name(coding.work)
    direct = coding.native and res.compute_name in _NATIVE
    r = work
    for i, (name, params, mode, mask, *along) in enumerate(passes):
        last = i == len(passes) - 1
        out_name = (res.compute_name if direct else "float32") if last else "float32"
        value = coding.value if mode == "constant" else 0
        if mode == "constant" and not _value_is_plain(value):
            def run_pass(image, name=name, params=params, mode=mode, value=value, mask=mask, out_name=out_name):
                return _padded_run(src, image, name, params, mode, value, mask, out_name)
        else:
            out = res.direct_out() if last and direct else None
            border = {"border": mode, "value": value} if mode == "constant" else {"border": mode}

            def run_pass(image, ops=[_op(name, **border, **params)], out_name=out_name, out=out, layout=None):
                return _run(src, image, ops, out_name, out, layout=layout)

            run_pass.takes_layout = out is None  # the result's own array: one volume call
        r = _volume_pass(src, r, along == ["z"], mask, run_pass) if src.volume else run_pass(r)
    if not direct:
        r = _store(src, r, "float32" if passes else work_name, res.compute_name)
    return res.finish(r)
