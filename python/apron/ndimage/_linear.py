"""apron.ndimage's linear filters: correlate, convolve, gaussian, uniform, sobel, prewitt, laplace."""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ._core import (
    _DBL_EPSILON, _Result, _Src, _axis_index, _channel_refusal, _check_axes, _check_origin, _error,
    _expand_footprint, _expand_origin, _image_window, _linear, _linear_zyx, _mode, _pad_to_centre, _sequence,
    _single_mode, _spans_volume, _store,
)


# ---- linear filters -------------------------------------------------------------------------------------

def _weights(weights, fname, what="weights"):
    w = np.asarray(weights)
    if w.dtype.kind == "c":
        raise _error(fname, f"complex {what} are not supported", TypeError)
    return np.asarray(w, dtype=np.float64)


def _correlate(fname, input, weights, output, mode, cval, origin, axes, convolution):
    src = _Src(input, fname, volumes=True)
    w = _weights(weights, fname)
    axes = _check_axes(axes, src.ndim, fname)
    w = _expand_footprint(src.ndim, axes, w, "weights", fname)
    origins = _expand_origin(src.ndim, axes, origin, fname)
    if convolution:  # scipy.ndimage.convolve: the weights flipped, the origin mirrored (one more for even sizes)
        w = w[tuple([slice(None, None, -1)] * w.ndim)]
        origins = [-o - (0 if n & 1 else 1) for o, n in zip(origins, w.shape)]
    origins = [_check_origin(o, n, fname, "weights size") for o, n in zip(origins, w.shape)]
    mode = _single_mode(mode, fname, "(correlate and convolve take one boundary mode)")
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    w = np.where(np.abs(w) > _DBL_EPSILON, w, 0.0)  # SciPy leaves these weights out
    if _spans_volume(src, w):  # a (D, H, W) mask, apron's centre moved to SciPy's by zero planes, rows, columns
        centre = [n // 2 + o for n, o in zip(w.shape, origins)]
        return _linear_zyx(src, res, _pad_to_centre(w, centre), mode, cval)
    mask2d, centre = _image_window(src, w, origins, "weights array")
    mask = _pad_to_centre(mask2d, centre)
    return _linear(src, res, [("correlate", {"mask": np.ascontiguousarray(mask)}, mode, mask)], cval)


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional correlation (scipy.ndimage.correlate), computed by apron.

    out[y, x] = sum_ij weights[j, i] * input[y + j - cy, x + i - cx] with (cy, cx) = shape // 2 + origin.
    Weights of magnitude <= 2.2e-16 are left out, as SciPy does. A (Z, Y, X) volume takes (D, H, W) weights
    (out[z, y, x] likewise over the three axes; apron sums each plane of the weights, then the planes). See the
    module's documentation for the arrays, dtypes and the integer rounding rule.
    """
    return _correlate("correlate", input, weights, output, mode, cval, origin, axes, False)


def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional convolution (scipy.ndimage.convolve): correlate with the weights flipped, for odd and
    even sizes, computed by apron."""
    return _correlate("convolve", input, weights, output, mode, cval, origin, axes, True)


def _one_axis_mask(src, k1d, axis, origin, fname):
    """A 1-D kernel along one axis of the input as apron's 2-D mask (padded for the origin)."""
    img_axis = src.image_axis(axis)
    if img_axis is None:
        raise _channel_refusal(src, "a 1-D filter")
    n = k1d.shape[0]
    centre = n // 2 + origin
    if img_axis == 1:
        return _pad_to_centre(k1d.reshape(1, n), (0, centre))
    return _pad_to_centre(k1d.reshape(n, 1), (centre, 0))


def _correlate1d(fname, input, weights, axis, output, mode, cval, origin, convolution):
    src = _Src(input, fname, volumes=True)
    w = _weights(weights, fname)
    if w.ndim != 1 or w.shape[0] < 1:
        raise _error(fname, f"weights: a 1-D sequence of at least one weight is needed (got shape {w.shape})",
                     RuntimeError)
    if convolution:
        w = w[::-1]
        origin = -operator.index(origin) - (0 if w.shape[0] & 1 else 1)
    axis = _axis_index(axis, src.ndim, fname)
    origin = _check_origin(origin, w.shape[0], fname, "weights length")
    mode = _mode(mode, fname)
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    mask = _one_axis_mask(src, w, axis, origin, fname)
    along = "z" if src.image_axis(axis) == 2 else "xy"
    return _linear(src, res, [("correlate", {"mask": np.ascontiguousarray(mask)}, mode, mask, along)], cval)


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional correlation along the given axis (scipy.ndimage.correlate1d), computed by apron."""
    return _correlate1d("correlate1d", input, weights, axis, output, mode, cval, origin, False)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional convolution along the given axis (scipy.ndimage.convolve1d), computed by apron."""
    return _correlate1d("convolve1d", input, weights, axis, output, mode, cval, origin, True)


class _Axis1D:
    """One 1-D pass of a separable filter on apron's image: its axis (0 rows, 1 columns, 2 a volume's planes),
    kernel and mode. A pass along planes is a pass down the columns of the (Z, Y * X) image."""

    def __init__(self, img_axis, kernel, centre, mode):
        self.img_axis, self.kernel, self.centre, self.mode = img_axis, kernel, centre, mode

    def mask(self):
        k = self.kernel
        if self.img_axis == 1:
            return _pad_to_centre(k.reshape(1, -1), (0, self.centre))
        return _pad_to_centre(k.reshape(-1, 1), (self.centre, 0))


def _separable_passes(items, cval, single):
    """1-D passes in SciPy's order as apron passes: consecutive passes on different axes with the same mode
    merge into one 2-D mask (their outer product) wherever that is the same filter: not with a constant
    border of cval != 0 after a pass whose weights do not sum to 1 (SciPy pads each pass's result with cval).
    `single(img_axes -> {axis: _Axis1D})` names the apron op for a merged set; None: correlate with the mask."""
    groups = []
    for item in items:
        g = groups[-1] if groups else None
        if g is not None and item.img_axis not in g and 2 not in g and item.img_axis != 2 and all(
                o.mode == item.mode for o in g.values()):
            earlier_sums_one = all(abs(o.kernel.sum() - 1.0) < 1e-12 for o in g.values())
            if item.mode != "constant" or float(cval) == 0.0 or earlier_sums_one:
                g[item.img_axis] = item
                continue
        groups.append({item.img_axis: item})
    passes = []
    for g in groups:
        if 2 in g:  # along a volume's planes: the column pass of the (Z, Y * X) image
            col, named = g[2].mask(), single({0: g[2]}) if single else None
            passes.append((named if named else ("correlate", {"mask": np.ascontiguousarray(col)})) + (g[2].mode, col, "z"))
            continue
        col = g[0].mask() if 0 in g else np.ones((1, 1))
        row = g[1].mask() if 1 in g else np.ones((1, 1))
        mask = col @ row
        mode = next(iter(g.values())).mode
        named = single(g) if single else None
        passes.append(named + (mode, mask) if named else ("correlate", {"mask": np.ascontiguousarray(mask)}, mode, mask))
    return passes


def _gaussian_kernel(sigma, radius):
    """scipy.ndimage._filters._gaussian_kernel1d for order 0."""
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / (sigma * sigma) * x.astype(np.float64) ** 2)
    return phi / phi.sum()


def _gaussian_radius(sigma, truncate, radius, fname):
    lw = int(truncate * float(sigma) + 0.5) if radius is None else radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise _error(fname, f"radius: {lw!r}: the radius must be a nonnegative integer")
    return int(lw)


def _check_order(order, fname):
    for o in (order if np.iterable(order) else [order]):
        if o != 0:
            raise _error(fname, f"order={order!r}: apron computes the Gaussian itself (order=0) only; derivatives of "
                                f"a Gaussian (order 1, 2, 3) are not implemented: use scipy.ndimage for them",
                         NotImplementedError)


def _gaussian_op(g):
    """apron's gaussian op for a merged set of Gaussian passes (SciPy's kernel: apron's gaussian op computes
    the same weights), or None where its limits (sigma <= 682) call for correlate with the weights."""
    items = {ax: it for ax, it in g.items()}
    sig = {ax: it.sigma for ax, it in items.items()}
    if any(s > 682 for s in sig.values()) or any(it.centre != it.kernel.shape[0] // 2 for it in items.values()):
        return None
    sx, sy = sig.get(1, sig.get(0)), sig.get(0, sig.get(1))
    rx = items[1].kernel.shape[0] // 2 if 1 in items else 0
    ry = items[0].kernel.shape[0] // 2 if 0 in items else 0
    return ("gaussian", {"sigma": float(sx), "sigma_y": float(sy), "radius": rx, "radius_y": ry})


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0, *, radius=None,
                    axes=None):
    """Multidimensional Gaussian filter (scipy.ndimage.gaussian_filter), computed by apron.

    sigma: a number or one per filtered axis; axes of sigma <= 1e-15 are not filtered (as SciPy). The kernel
    is SciPy's: radius int(truncate * sigma + 0.5) with truncate=4.0 by default, or `radius` (one or per
    axis). Note: apron.gaussian's own default radius is ceil(3 sigma) (SPEC.md); this function follows SciPy.
    Only order=0 (the smoothing filter): derivative orders raise NotImplementedError. Per-axis modes are
    supported (each axis its own 1-D pass, as SciPy).
    """
    fname = "gaussian_filter"
    _check_order(order, fname)
    src = _Src(input, fname, volumes=True)
    axes = _check_axes(axes, src.ndim, fname)
    n = len(axes)
    sigmas = _sequence(sigma, n, "sigma", fname)
    modes = _sequence(mode, n, "mode", fname)
    radii = _sequence(radius, n, "radius", fname)
    items = []
    for ax, s, m, r in zip(axes, sigmas, modes, radii):
        if not s > 1e-15:
            continue
        lw = _gaussian_radius(s, truncate, r, fname)
        img_axis = src.image_axis(ax)
        if img_axis is None:
            raise _channel_refusal(src, f"sigma {s}")
        it = _Axis1D(img_axis, _gaussian_kernel(float(s), lw)[::-1], lw, _mode(m, fname))
        it.sigma = float(s)
        items.append(it)
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    if not items:
        return res.copy_of_input()
    return _linear(src, res, _separable_passes(items, cval, _gaussian_op), cval)


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0, *,
                      radius=None):
    """One-dimensional Gaussian filter along an axis (scipy.ndimage.gaussian_filter1d), computed by apron:
    SciPy's kernel (radius int(truncate * sigma + 0.5), truncate=4.0), order=0 only."""
    fname = "gaussian_filter1d"
    _check_order(order, fname)
    src = _Src(input, fname, volumes=True)
    axis = _axis_index(axis, src.ndim, fname)
    s = float(sigma)
    if not s > 0:
        raise _error(fname, f"sigma: {sigma!r} must be > 0")
    lw = _gaussian_radius(s, truncate, radius, fname)
    img_axis = src.image_axis(axis)
    if img_axis is None:
        raise _channel_refusal(src, "a Gaussian")
    it = _Axis1D(img_axis, _gaussian_kernel(s, lw)[::-1], lw, _mode(mode, fname))
    it.sigma = s
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    return _linear(src, res, _separable_passes([it], cval, _gaussian_op), cval)


def _box_op(g):
    """apron's box op for a merged set of uniform passes without origins (exact on integer images)."""
    if any(it.centre != it.kernel.shape[0] // 2 for it in g.values()):
        return None
    w = g[1].kernel.shape[0] if 1 in g else 1
    h = g[0].kernel.shape[0] if 0 in g else 1
    return ("box", {"width": w, "height": h})


def _uniform_item(src, size, axis, origin, mode, fname):
    size = operator.index(size) if not isinstance(size, float) else int(size)
    if size < 1:
        raise _error(fname, f"size: {size} is not a filter size (>= 1)", RuntimeError)
    origin = _check_origin(origin, size, fname)
    img_axis = src.image_axis(axis)
    if img_axis is None:
        raise _channel_refusal(src, f"a size of {size}")
    return _Axis1D(img_axis, np.full(size, 1.0 / size), size // 2 + origin, _mode(mode, fname))


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional uniform (mean) filter (scipy.ndimage.uniform_filter), computed by apron.

    size: one or per filtered axis ((rows, columns) for an image); sizes of 1 leave an axis alone. On integer
    images the mean is rounded once (apron; exact): SciPy truncates each axis's pass, so its result is lower
    by 0 to 1 per filtered axis.
    """
    fname = "uniform_filter"
    src = _Src(input, fname, volumes=True)
    axes = _check_axes(axes, src.ndim, fname)
    n = len(axes)
    sizes = _sequence(size, n, "size", fname)
    origins = _sequence(origin, n, "origin", fname)
    modes = _sequence(mode, n, "mode", fname)
    items = [_uniform_item(src, s, ax, o, m, fname) for ax, s, o, m in zip(axes, sizes, origins, modes) if s > 1]
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    if not items:
        return res.copy_of_input()
    return _linear(src, res, _separable_passes(items, cval, _box_op), cval)


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional uniform filter along an axis (scipy.ndimage.uniform_filter1d), computed by apron."""
    fname = "uniform_filter1d"
    src = _Src(input, fname, volumes=True)
    axis = _axis_index(axis, src.ndim, fname)
    it = _uniform_item(src, size, axis, origin, mode, fname)
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    return _linear(src, res, _separable_passes([it], cval, _box_op), cval)


def _derivative_filter(fname, input, axis, output, mode, cval, smooth):
    """sobel and prewitt: [-1, 0, 1] along `axis`, then `smooth` along every other axis (SciPy's order)."""
    src = _Src(input, fname, volumes=True)
    if src.ndim == 3 and not src.volume:
        raise _error(fname, f"a 3-D array {src.shape}: SciPy's {fname} also smooths across the last axis (it has no "
                            f"axes= to leave it out), which is a volume filter; pass each channel (img[..., c]) as a "
                            f"2-D array")
    axis = _axis_index(axis, src.ndim, fname)
    modes = _sequence(mode, src.ndim, "mode", fname)
    items = [_Axis1D(src.image_axis(axis), np.array([-1.0, 0.0, 1.0]), 1, _mode(modes[axis], fname))]
    for ii in range(src.ndim):
        if ii != axis:
            items.append(_Axis1D(src.image_axis(ii), np.array(smooth, dtype=np.float64), 1, _mode(modes[ii], fname)))
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    return _linear(src, res, _separable_passes(items, cval, None), cval)


def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0):
    """Sobel derivative along an axis (scipy.ndimage.sobel), computed by apron: [-1, 0, 1] along `axis`,
    [1, 2, 1] along the other. On unsigned images negative results saturate to 0 (SciPy wraps around): ask
    for output=np.float32 (or a signed type) to keep them."""
    return _derivative_filter("sobel", input, axis, output, mode, cval, [1.0, 2.0, 1.0])


def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0):
    """Prewitt derivative along an axis (scipy.ndimage.prewitt), computed by apron: [-1, 0, 1] along `axis`,
    [1, 1, 1] along the other. Negative results saturate on unsigned images (SciPy wraps around)."""
    return _derivative_filter("prewitt", input, axis, output, mode, cval, [1.0, 1.0, 1.0])


def laplace(input, output=None, mode="reflect", cval=0.0, *, axes=None):
    """N-D Laplace filter by second derivatives [1, -2, 1] summed over the axes (scipy.ndimage.laplace),
    computed by apron: one 3x3 mask when the axes share a mode. Negative results saturate on unsigned
    images (SciPy wraps around)."""
    fname = "laplace"
    src = _Src(input, fname, volumes=True)
    axes = _check_axes(axes, src.ndim, fname)
    modes = [_mode(m, fname) for m in _sequence(mode, len(axes), "mode", fname)] if axes else []
    for ax in axes:
        if src.image_axis(ax) is None:
            raise _channel_refusal(src, "a second derivative")
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    if not axes:
        return res.copy_of_input()
    masks = []
    for ax, m in zip(axes, modes):
        img_axis = src.image_axis(ax)
        k = np.zeros((3, 3))
        if img_axis == 1:
            k[1, :] = [1.0, -2.0, 1.0]
        else:  # rows, or a volume's planes (the rows of its (Z, Y * X) image)
            k[:, 1] = [1.0, -2.0, 1.0]
        if src.volume:  # one pass each: a row pass runs along (Z * Y, X), a column pass down planes or rows
            k = k[1:2, :] if img_axis == 1 else k[:, 1:2]
        masks.append((k, m, "z" if img_axis == 2 else "xy"))
    if len({m for _, m, _ in masks}) == 1 and not src.volume:
        k = sum(k for k, _, _ in masks)
        return _linear(src, res, [("correlate", {"mask": k}, masks[0][1], k)], cval)
    # Axes with different modes, or a volume's: each second derivative on its own (float32), summed, stored once.
    total = None
    for k, m, along in masks:
        part = _linear(src, _Result(src, "float32"), [("correlate", {"mask": k}, m, k, along)], cval)
        part = part.numpy() if src.torch_cpu is not None else part
        total = part if total is None else total + part
    return res.finish(_store(src, total, "float32", res.compute_name))
