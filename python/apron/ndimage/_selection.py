"""apron.ndimage's selection filters: minimum, maximum, rank, median and percentile."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .. import _arrays, _ops
from ._core import (
    _NATIVE, _Result, _Src, _apron_call, _axis_index, _channel_refusal, _check_axes, _check_origin, _error,
    _expand_footprint, _expand_origin, _image_window, _mode, _op, _pad_to_centre, _selection, _selection_coding,
    _selection_zyx, _sequence, _zyx_run, _single_mode, _spans_volume, _store, _value_is_plain, _volume_pass,
)
from ._linear import _one_axis_mask


# ---- minimum, maximum and rank filters ------------------------------------------------------------------

def _footprint_bool(footprint, fname):
    f = np.asarray(footprint)
    if f.dtype.kind == "c":
        raise _error(fname, "a complex footprint", TypeError)
    return f.astype(bool)


def _element(mask2d: np.ndarray):
    """A 0/1 element for apron: its text form for a full rectangle (cached pipelines), else the array."""
    if mask2d.all():
        return f"rect:{mask2d.shape[1]}x{mask2d.shape[0]}"
    return np.ascontiguousarray(mask2d, dtype=np.float64)


def _min_or_max(fname, input, size, footprint, structure, output, mode, cval, origin, minimum, axes,
                reflect=False):
    """scipy.ndimage._filters._min_or_max_filter (reflect=True: grey_dilation's reflected footprint and
    origin), as apron's erode (minimum) or dilate (maximum) over the same cells."""
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)
    src = _Src(input, fname, volumes=True)
    fp = None
    if structure is not None:
        st = np.asarray(structure, dtype=np.float64)
        if st.any():
            raise _error(fname, "structure: a non-flat structuring element (nonzero values added to the samples) is "
                                "not supported by apron; give footprint= (the cells) for a flat one, or a structure of "
                                "zeros")
        fp = np.ones(st.shape, bool) if footprint is None else _footprint_bool(footprint, fname)
    elif footprint is not None:
        fp = _footprint_bool(footprint, fname)
    elif size is None:
        raise _error(fname, "no footprint provided: give size, footprint or structure", RuntimeError)
    axes = _check_axes(axes, src.ndim, fname)
    res = _Result(src, output)
    op = "erode" if minimum else "dilate"
    if fp is not None and reflect:
        fp = fp[tuple([slice(None, None, -1)] * fp.ndim)]
    if fp is not None and not fp.any():
        raise _error(fname, "All-zero footprint is not supported.")
    if fp is not None and not fp.all():
        fp = _expand_footprint(src.ndim, axes, fp, "footprint", fname)
        origins = _expand_origin(src.ndim, axes, origin, fname)
        if reflect:
            origins = [-o - (0 if n & 1 else 1) for o, n in zip(origins, fp.shape)]
        origins = [_check_origin(o, n, fname, "footprint size") for o, n in zip(origins, fp.shape)]
        mode = _single_mode(mode, fname, "for non-separable footprints")
        if src.empty:
            return res.empty_result()
        if _spans_volume(src, fp):  # a (D, H, W) element over the volume, centred as SciPy's origin says
            centre = [n // 2 + o for n, o in zip(fp.shape, origins)]
            element = _pad_to_centre(fp.astype(np.float64), centre)
            return _selection_zyx(src, res, op, element, mode, cval)
        mask2d, centre = _image_window(src, fp, origins, "footprint")
        element = _element(_pad_to_centre(mask2d.astype(np.float64), centre))
        return _selection(src, res, [(op, {}, element)], mode, cval)
    # A size (or a full footprint): SciPy's separable 1-D passes, each with its own mode and origin.
    n = len(axes)
    if fp is not None:
        if fp.ndim != n:
            fp = _expand_footprint(src.ndim, axes, fp, "footprint", fname)
            axes, n = tuple(range(src.ndim)), src.ndim
        sizes = list(fp.shape)
    else:
        sizes = _sequence(size, n, "size", fname)
    origins = _sequence(origin, n, "origin", fname)
    modes = _sequence(mode, n, "mode", fname)
    steps_modes = []  # (1-D window as a row or column mask, mode) in SciPy's order of the axes
    for ax, s, o, m in zip(axes, sizes, origins, modes):
        s = int(s)
        if s < 1:
            raise _error(fname, f"size: {s} is not a filter size (>= 1)", RuntimeError)
        if s == 1:
            continue
        if reflect:
            o = -o - (0 if s & 1 else 1)
        o = _check_origin(o, s, fname)
        img_axis = src.image_axis(ax)
        if img_axis is None:
            raise _channel_refusal(src, f"a size of {s}")
        k = np.ones(s)
        mask = (_pad_to_centre(k.reshape(1, -1), (0, s // 2 + o)) if img_axis == 1
                else _pad_to_centre(k.reshape(-1, 1), (s // 2 + o, 0)))
        steps_modes.append((mask, _mode(m, fname), img_axis == 2))
    if src.empty:
        return res.empty_result()
    if not steps_modes:
        return res.copy_of_input()
    if src.volume:
        return _volume_min_or_max(src, res, op, steps_modes, cval)
    steps_modes = [(mask, m) for mask, m, _ in steps_modes]
    # Passes with the same mode merge into one rectangle (min and max are separable with any border).
    merged = []
    for mask, m in steps_modes:
        if merged and merged[-1][1] == m:
            merged[-1] = (_outer_union(merged[-1][0], mask), m)
        else:
            merged.append((mask, m))
    if len({m for _, m in merged}) == 1:
        return _selection(src, res, [(op, {}, _element(mk)) for mk, _ in merged], merged[0][1], cval)
    # Different modes per axis: one apron call per mode, in SciPy's order (exact: no rounding in between).
    r_src = src
    result = None
    for i, (mk, m) in enumerate(merged):
        last = i == len(merged) - 1
        step_res = res if last else _Result(r_src, None)
        result = _selection(r_src, step_res, [(op, {}, _element(mk))], m, cval)
        if not last:
            r_src = _Src(result, fname)
    return result


def _volume_min_or_max(src, res, op, steps_modes, cval):
    """A box on a (Z, Y, X) volume: SciPy's 1-D passes in turn (exact, so each pass's result is the next one's
    input); consecutive y and x passes of one mode merge into a rectangle, as on images. Each pass runs over
    the volume's 2-D views (_volume_pass)."""
    merged = []
    for mask, mode, along_z in steps_modes:
        if merged and not along_z and not merged[-1][2] and merged[-1][1] == mode:
            merged[-1] = (_outer_union(merged[-1][0], mask), mode, False)
        else:
            merged.append((mask, mode, along_z))
    r = src.ops.contiguous(src.a)
    for mask, mode, along_z in merged:
        def run_pass(image, mask=mask, mode=mode):
            image_src = _Src(image, src.fname)
            return _selection(image_src, _Result(image_src, None), [(op, {}, _element(mask))], mode, cval)
        r = _volume_pass(src, r, along_z, mask, run_pass)
    return res.finish(_store(src, r, src.dtype, res.compute_name))


def _outer_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two 1-D windows on different axes (a column and a row mask) as one 2-D rectangle window."""
    col = a if a.shape[1] == 1 else b
    row = b if col is a else a
    return col @ row


def minimum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional minimum filter (scipy.ndimage.minimum_filter), computed by apron's erode over the same
    cells (no reflection of the footprint)."""
    return _min_or_max("minimum_filter", input, size, footprint, None, output, mode, cval, origin, True, axes)


def maximum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional maximum filter (scipy.ndimage.maximum_filter), computed by apron's dilate over the same
    cells (no reflection of the footprint)."""
    return _min_or_max("maximum_filter", input, size, footprint, None, output, mode, cval, origin, False, axes)


def minimum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional minimum filter along an axis (scipy.ndimage.minimum_filter1d), computed by apron."""
    return _filter1d_extreme("minimum_filter1d", input, size, axis, output, mode, cval, origin, True)


def maximum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional maximum filter along an axis (scipy.ndimage.maximum_filter1d), computed by apron."""
    return _filter1d_extreme("maximum_filter1d", input, size, axis, output, mode, cval, origin, False)


def _filter1d_extreme(fname, input, size, axis, output, mode, cval, origin, minimum):
    src = _Src(input, fname, volumes=True)
    axis = _axis_index(axis, src.ndim, fname)
    size = int(size)
    if size < 1:
        raise _error(fname, f"size: {size} is not a filter size (>= 1)", RuntimeError)
    origin = _check_origin(origin, size, fname)
    mode = _mode(mode, fname)
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    mask = _one_axis_mask(src, np.ones(size), axis, origin, fname)
    op = "erode" if minimum else "dilate"
    if src.volume:  # along z on the (Z, Y * X) view, along y or x over the planes (_volume_pass)
        return _volume_min_or_max(src, res, op, [(mask, mode, src.image_axis(axis) == 2)], cval)
    return _selection(src, res, [(op, {}, _element(mask))], mode, cval)


def _rank(fname, input, rank, size, footprint, output, mode, cval, origin, operation, axes):
    """scipy.ndimage._filters._rank_filter as apron's rank op: the same rank of the same window's samples."""
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)
    src = _Src(input, fname, volumes=True)
    axes = _check_axes(axes, src.ndim, fname)
    if footprint is None:
        if size is None:
            raise _error(fname, "no footprint or filter size provided", RuntimeError)
        sizes = [int(s) for s in _sequence(size, len(axes), "size", fname)]
        if any(s < 1 for s in sizes):
            raise _error(fname, f"size: {size!r}: every size must be >= 1", RuntimeError)
        fp = np.ones(sizes, dtype=bool)
    else:
        fp = _footprint_bool(footprint, fname)
    fp = _expand_footprint(src.ndim, axes, fp, "footprint", fname)
    origins = _expand_origin(src.ndim, axes, origin, fname)
    origins = [_check_origin(o, n, fname, "footprint size") for o, n in zip(origins, fp.shape)]
    filter_size = int(fp.sum())
    if operation == "median":
        rank = filter_size // 2
    elif operation == "percentile":
        percentile = float(rank)
        if percentile < 0.0:
            percentile += 100.0
        if percentile < 0 or percentile > 100:
            raise _error(fname, f"invalid percentile {rank!r} (0..100, or -100..0 counted from 100)", RuntimeError)
        rank = filter_size - 1 if percentile == 100.0 else int(float(filter_size) * percentile / 100.0)
    else:
        rank = operator.index(rank)
    if rank < 0:
        rank += filter_size
    if rank < 0 or rank >= filter_size:
        raise _error(fname, f"rank not within filter footprint size ({filter_size} cells)", RuntimeError)
    mode = _single_mode(mode, fname, "by non-separable rank filters")
    res = _Result(src, output)
    if src.empty:
        return res.empty_result()
    if src.volume:
        return _volume_rank(src, res, fp, origins, rank, mode, cval)
    mask2d, centre = _image_window(src, fp, origins, "footprint")
    element = _element(_pad_to_centre(mask2d.astype(np.float64), centre))
    return _selection(src, res, [("rank", {"r": rank}, element)], mode, cval)


def _volume_rank(src, res, fp, origins, rank, mode, cval):
    """A (Z, Y, X) volume's window as apron's rank op on the whole volume (SPEC.md "Volumes"): the footprint
    padded so that apron's centre (D // 2, H // 2, W // 2) is SciPy's origin cell, given as a box's text
    (rect:WxHxD), a plane's element (a footprint one plane deep: each plane alone) or a mask file of its planes
    (the registry reads a volume's element from a file of "W H D" planes)."""
    centre = tuple(n // 2 + o for n, o in zip(fp.shape, origins))
    cells = _pad_to_centre(fp.astype(np.float64), centre)
    d, h, w = cells.shape
    coding = _selection_coding(src, mode, cval)
    work = src.ops.contiguous(src.as_image(coding.work))
    work_name = _arrays._DTYPE_OF_CODE[_NATIVE[src.ops.name(coding.work)]].name
    value = coding.value if mode == "constant" else 0
    # One call over the volume; a constant border apron cannot take (NaN, +-inf) padded in (_zyx_run).
    r = _zyx_run(src, work, "rank", {"se": _volume_element(cells), "r": rank}, mode, value, cells, work_name)
    r = coding.decode(r)
    return res.finish(_store(src, r, src.dtype, res.compute_name))


def _volume_element(cells):
    """apron's element for a (D, H, W) array of 0/1 cells, centred: a box's text (rect:WxHxD: a cached
    pipeline), else the cells themselves (a 3-D array reaches the registry as planes, as a W H D file would)."""
    d, h, w = cells.shape
    if cells.all():
        return f"rect:{w}x{h}x{d}" if d > 1 else f"rect:{w}x{h}"
    return np.ascontiguousarray(cells if d > 1 else cells[0], dtype=np.float64)


def rank_filter(input, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *,
                axes=None):
    """Multidimensional rank filter (scipy.ndimage.rank_filter), computed by apron's rank op: rank 0 is the
    minimum, -1 the maximum. NaN in float images: apron takes NaN as a missing sample (SPEC.md "Rank")."""
    return _rank("rank_filter", input, rank, size, footprint, output, mode, cval, origin, "rank", axes)


def median_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Multidimensional median filter (scipy.ndimage.median_filter), computed by apron: the sample of rank n // 2
    of the window's n samples (the upper middle one for even n, as SciPy)."""
    return _rank("median_filter", input, 0, size, footprint, output, mode, cval, origin, "median", axes)


def percentile_filter(input, percentile, size=None, footprint=None, output=None, mode="reflect", cval=0.0, origin=0,
                      *, axes=None):
    """Multidimensional percentile filter (scipy.ndimage.percentile_filter), computed by apron: the sample of
    rank int(n * p / 100) (n - 1 at 100; a negative p counts from 100)."""
    return _rank("percentile_filter", input, percentile, size, footprint, output, mode, cval, origin, "percentile",
                 axes)
