"""Dask arrays through apron.ndimage: each function's result as a lazy dask array, block by block.

    import dask.array as da, apron.ndimage as ndi
    vol = da.from_zarr("scan.zarr")                        # (Z, Y, X), chunks (64, 512, 512)
    smooth = ndi.gaussian_filter(vol, (1, 2, 2))           # lazy: nothing is computed yet
    smooth.to_zarr("smooth.zarr")                          # computed chunk by chunk, on any scheduler

Every block is extended by its neighbours' samples over exactly the halo the call reads along each axis
(dask.array.map_overlap), filtered by the same function on the block's NumPy (or CuPy) array, and trimmed back.
The halo is computed once per call from the parameters the function validates: a window of n cells whose centre
is n // 2 + origin reads n // 2 + origin cells before a sample and the rest after it (footprints, weights,
sizes, with SciPy's origin shifts and grey_dilation's and convolve's reflection); a Gaussian reads its radius,
int(truncate * sigma + 0.5) or radius=; sobel, prewitt and laplace read 1 along each axis; filters applied one
after another (grey_opening, the top-hats) read the sum of their halos, grey_dilation and grey_erosion of the
same input (morphological_gradient) the larger one. Blocks on the array's edge are not padded by dask
(boundary='none'): the function's own mode is applied at the true edge, so the result equals the whole-array
result bit for bit (apron computes each sample from the same samples in the same order whatever the image's
extent). Along an axis in 'wrap' mode dask pads the edge blocks with the far end of the array instead
(boundary='periodic', the larger of the two sides). An axis whose chunks are smaller than its halo is rechunked
(neighbouring chunks merged) so that every chunk holds the halo, as map_overlap needs, and an edge chunk one cell
more than the halo on its outer side (a 'mirror' or 'reflect' border reads that far back into the array from
its edge, and the edge block must hold those samples itself); an axis whose halo reaches
past the array's own length is one chunk (the mode then repeats over the array, as on the whole array). The
result comes back in the input's chunks.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ._core import (
    _check_axes, _error, _expand_footprint, _expand_origin, _is_dtype, _mode, _sequence, _single_mode,
)
from ._linear import _gaussian_radius, _weights
from ._selection import _footprint_bool


def is_dask(a) -> bool:
    """A dask array (without importing dask: its class lives in dask.array)."""
    t = type(a)
    return (t.__module__ or "").startswith("dask.array") and t.__name__ == "Array"


# ---- halos: how far each function reads along each axis, (before, after) ---------------------------------

class _Halo:
    """Per axis: the cells read before and after a sample, and whether the axis wraps around."""

    def __init__(self, ndim):
        self.reach = [(0, 0)] * ndim
        self.wrap = set()

    def add(self, axis, before, after, mode):
        """One more window along `axis` applied after what is there (a filter of the result): reaches add."""
        b, a = self.reach[axis]
        self.reach[axis] = (b + before, a + after)
        if mode == "wrap" and before + after > 0:
            self.wrap.add(axis)
        return self

    def then(self, other):
        """`other` applied to this one's result: reaches add along each axis."""
        for axis, (b, a) in enumerate(other.reach):
            self.add(axis, b, a, "wrap" if axis in other.wrap else None)
        return self

    def beside(self, other):
        """`other` applied to the same input (their results combined): the larger reach on each side."""
        self.reach = [(max(b1, b2), max(a1, a2)) for (b1, a1), (b2, a2) in zip(self.reach, other.reach)]
        self.wrap |= other.wrap
        return self


def _window(n, origin):
    """(before, after) of a window of n cells centred on cell n // 2 + origin (SciPy's origin)."""
    centre = n // 2 + int(origin)
    return centre, n - 1 - centre


def _reflected(origin, n):
    """The origin of a window flipped through its centre (convolve, grey_dilation): -origin, less 1 for even n."""
    return -int(origin) - (0 if n & 1 else 1)


def _correlate_halo(p, ndim, fname, convolution):
    w = _weights(p["weights"], fname)
    axes = _check_axes(p["axes"], ndim, fname)
    w = _expand_footprint(ndim, axes, w, "weights", fname)
    origins = _expand_origin(ndim, axes, p["origin"], fname)
    if convolution:
        origins = [_reflected(o, n) for o, n in zip(origins, w.shape)]
    mode = _single_mode(p["mode"], fname, "")
    h = _Halo(ndim)
    for axis, (n, o) in enumerate(zip(w.shape, origins)):
        h.add(axis, *_window(n, o), mode)
    return h


def _correlate1d_halo(p, ndim, fname, convolution):
    n = int(np.asarray(p["weights"]).shape[0])
    origin = _reflected(p["origin"], n) if convolution else int(p["origin"])
    return _Halo(ndim).add(int(p["axis"]) % ndim, *_window(n, origin), _mode(p["mode"], fname))


def _gaussian_halo(p, ndim, fname):
    axes = _check_axes(p["axes"], ndim, fname)
    n = len(axes)
    h = _Halo(ndim)
    for ax, s, m, r in zip(axes, _sequence(p["sigma"], n, "sigma", fname), _sequence(p["mode"], n, "mode", fname),
                           _sequence(p["radius"], n, "radius", fname)):
        if s > 1e-15:
            lw = _gaussian_radius(s, p["truncate"], r, fname)
            h.add(ax, lw, lw, _mode(m, fname))
    return h


def _gaussian1d_halo(p, ndim, fname):
    lw = _gaussian_radius(float(p["sigma"]), p["truncate"], p["radius"], fname)
    return _Halo(ndim).add(int(p["axis"]) % ndim, lw, lw, _mode(p["mode"], fname))


def _uniform_halo(p, ndim, fname):
    axes = _check_axes(p["axes"], ndim, fname)
    n = len(axes)
    h = _Halo(ndim)
    for ax, s, o, m in zip(axes, _sequence(p["size"], n, "size", fname), _sequence(p["origin"], n, "origin", fname),
                           _sequence(p["mode"], n, "mode", fname)):
        h.add(ax, *_window(int(s), o), _mode(m, fname))
    return h


def _line_halo(p, ndim, fname):
    """uniform_filter1d, minimum_filter1d, maximum_filter1d: a window of `size` along `axis`."""
    return _Halo(ndim).add(int(p["axis"]) % ndim, *_window(int(p["size"]), p["origin"]), _mode(p["mode"], fname))


def _derivative_halo(p, ndim, fname):
    """sobel and prewitt: [-1, 0, 1] along the axis, a 3-tap smoothing along every other axis."""
    h = _Halo(ndim)
    for axis, m in enumerate(_sequence(p["mode"], ndim, "mode", fname)):
        h.add(axis, 1, 1, _mode(m, fname))
    return h


def _laplace_halo(p, ndim, fname):
    axes = _check_axes(p["axes"], ndim, fname)
    h = _Halo(ndim)
    for ax, m in zip(axes, _sequence(p["mode"], len(axes), "mode", fname) if axes else []):
        h.add(ax, 1, 1, _mode(m, fname))
    return h


def _min_or_max_halo(p, ndim, fname, reflect):
    """minimum_filter, maximum_filter (reflect=False) and grey_dilation (reflect=True: the footprint flipped,
    SciPy's origin shift) over a footprint, a flat structure or sizes."""
    size, footprint, structure = p.get("size"), p.get("footprint"), p.get("structure")
    fp = None
    if structure is not None:
        fp = np.ones(np.asarray(structure).shape, bool) if footprint is None else _footprint_bool(footprint, fname)
    elif footprint is not None:
        fp = _footprint_bool(footprint, fname)
    axes = _check_axes(p["axes"], ndim, fname)
    h = _Halo(ndim)
    if fp is not None and not fp.all():  # any footprint: one window over every axis, one mode
        fp = _expand_footprint(ndim, axes, fp, "footprint", fname)
        origins = _expand_origin(ndim, axes, p["origin"], fname)
        mode = _single_mode(p["mode"], fname, "")
        for axis, (n, o) in enumerate(zip(fp.shape, origins)):
            h.add(axis, *_window(n, _reflected(o, n) if reflect else o), mode)
        return h
    n = len(axes)
    if fp is not None:
        if fp.ndim != n:
            fp = _expand_footprint(ndim, axes, fp, "footprint", fname)
            axes, n = tuple(range(ndim)), ndim
        sizes = list(fp.shape)
    else:
        sizes = _sequence(size, n, "size", fname)
    origins, modes = _sequence(p["origin"], n, "origin", fname), _sequence(p["mode"], n, "mode", fname)
    for ax, s, o, m in zip(axes, sizes, origins, modes):
        s = int(s)
        if s > 1:
            h.add(ax, *_window(s, _reflected(o, s) if reflect else o), _mode(m, fname))
    return h


def _rank_halo(p, ndim, fname):
    axes = _check_axes(p["axes"], ndim, fname)
    if p["footprint"] is None:
        fp_shape = tuple(int(s) for s in _sequence(p["size"], len(axes), "size", fname))
    else:
        fp_shape = _footprint_bool(p["footprint"], fname).shape
    fp_shape = _expand_footprint(ndim, axes, np.ones(fp_shape, bool), "footprint", fname).shape
    origins = _expand_origin(ndim, axes, p["origin"], fname)
    mode = _single_mode(p["mode"], fname, "")
    h = _Halo(ndim)
    for axis, (n, o) in enumerate(zip(fp_shape, origins)):
        h.add(axis, *_window(n, o), mode)
    return h


def _erosion_then_dilation(p, ndim, fname):
    """grey_opening, grey_closing, white_tophat and black_tophat: an erosion and a dilation one after the other
    (the top-hats' subtraction of the input reads no neighbour)."""
    return _min_or_max_halo(p, ndim, fname, False).then(_min_or_max_halo(p, ndim, fname, True))


def _gradient_halo(p, ndim, fname):
    """morphological_gradient: a dilation and an erosion of the same input, subtracted."""
    return _min_or_max_halo(p, ndim, fname, True).beside(_min_or_max_halo(p, ndim, fname, False))


HALOS = {
    "correlate": lambda p, nd, f: _correlate_halo(p, nd, f, False),
    "convolve": lambda p, nd, f: _correlate_halo(p, nd, f, True),
    "correlate1d": lambda p, nd, f: _correlate1d_halo(p, nd, f, False),
    "convolve1d": lambda p, nd, f: _correlate1d_halo(p, nd, f, True),
    "gaussian_filter": _gaussian_halo,
    "gaussian_filter1d": _gaussian1d_halo,
    "uniform_filter": _uniform_halo,
    "uniform_filter1d": _line_halo,
    "sobel": _derivative_halo,
    "prewitt": _derivative_halo,
    "laplace": _laplace_halo,
    "minimum_filter": lambda p, nd, f: _min_or_max_halo(p, nd, f, False),
    "maximum_filter": lambda p, nd, f: _min_or_max_halo(p, nd, f, False),
    "minimum_filter1d": _line_halo,
    "maximum_filter1d": _line_halo,
    "median_filter": _rank_halo,
    "percentile_filter": _rank_halo,
    "rank_filter": _rank_halo,
    "grey_erosion": lambda p, nd, f: _min_or_max_halo(p, nd, f, False),
    "grey_dilation": lambda p, nd, f: _min_or_max_halo(p, nd, f, True),
    "grey_opening": _erosion_then_dilation,
    "grey_closing": _erosion_then_dilation,
    "white_tophat": _erosion_then_dilation,
    "black_tophat": _erosion_then_dilation,
    "morphological_gradient": _gradient_halo,
}


def halo(fname, params, ndim):
    """((before, after) per axis, the axes in 'wrap' mode) that the call `fname(**params)` reads."""
    h = HALOS[fname](params, ndim, fname)
    return h.reach, h.wrap


# ---- the dask graph ------------------------------------------------------------------------------------------

def _merged_chunks(chunks, least):
    """Neighbouring chunks merged until each holds at least `least` cells (a short last one joins the one
    before it)."""
    if min(chunks) >= least:
        return tuple(chunks)
    out, run = [], 0
    for c in chunks:
        run += c
        if run >= least:
            out.append(run)
            run = 0
    if run:
        if out:
            out[-1] += run
        else:
            out.append(run)
    return tuple(out)


def _edges_merged(chunks, first, last):
    """The first chunk merged with its neighbours until it holds `first` cells, the last until it holds `last`.
    At the array's true edge a mode such as 'mirror' reads back into the array as far as the window reaches
    outside it (up to `before` cells from the first sample): the edge block must hold those samples itself."""
    chunks = list(chunks)
    while len(chunks) > 1 and chunks[0] < first:
        chunks[0:2] = [chunks[0] + chunks[1]]
    while len(chunks) > 1 and chunks[-1] < last:
        chunks[-2:] = [chunks[-2] + chunks[-1]]
    return tuple(chunks)


def _empty_like_chunks(x, shape, dtype):
    """An empty array of the dask array's chunk type (NumPy or CuPy)."""
    meta = getattr(x, "_meta", None)
    if meta is not None and (type(meta).__module__ or "").startswith("cupy"):
        import cupy

        return cupy.empty(shape, dtype)
    return np.empty(shape, dtype)


def _block(fn, params, block):
    return fn(block, **params)


def map_overlapped(fn, fname, x, params):
    """fn(x, **params) for a dask array x: a lazy dask array computed block by block (see the module's doc)."""
    import dask.array as da

    output = params.get("output")
    if output is not None and not _is_dtype(output):
        raise _error(fname, "output: an array given for a dask input; a dask result is made lazily and is not "
                            "written into an existing array: leave output=None (or give a dtype), then store the "
                            "result (x.compute(), da.store, to_zarr)", TypeError)
    if params.get("footprint") is not None and params.get("size") is not None:
        import warnings

        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)
        params = dict(params, size=None)  # warned once here, not once per block
    shape = tuple(int(n) for n in x.shape)
    # The parameters checked and the result's dtype found on an empty array of the chunks' type with the input's
    # dimensions (a volume is still a volume, a colour image still has its channels): errors are raised now, as
    # for a NumPy input, and nothing of x is computed.
    probe = _empty_like_chunks(x, (0,) + shape[1:] if shape else (), x.dtype)
    meta = fn(probe, **params)
    if any(n == 0 for n in shape):
        return da.map_blocks(functools.partial(_block, fn, params), x, dtype=meta.dtype, meta=meta)
    reach, wrap = halo(fname, params, x.ndim)
    chunks, depth, boundary = list(x.chunks), {}, {}
    for axis, ((before, after), n) in enumerate(zip(reach, shape)):
        least = max(before, after)
        if least == 0 or len(chunks[axis]) == 1:
            continue
        if least >= n:  # the window reaches past the array: the axis in one block, its mode at both true ends
            chunks[axis] = (n,)
            continue
        chunks[axis] = _merged_chunks(chunks[axis], least)
        if axis not in wrap:
            chunks[axis] = _edges_merged(chunks[axis], before + 1, after + 1)
        if len(chunks[axis]) == 1:
            continue
        if axis in wrap:  # dask pads the edge blocks with the array's far end (symmetric depth only)
            depth[axis], boundary[axis] = least, "periodic"
        else:
            depth[axis], boundary[axis] = (before, after), "none"
    if x.ndim == 3 and shape[2] > 4:
        # Every block of a (Z, Y, X) volume must be one too: a block of at most 4 columns would be read as a
        # colour image.
        chunks[2] = _merged_chunks(chunks[2], 5)
    given = tuple(x.chunks)
    if tuple(chunks) != given:
        x = x.rechunk(tuple(chunks))
    block = functools.partial(_block, fn, params)
    if not depth:
        r = da.map_blocks(block, x, dtype=meta.dtype, meta=meta)
    else:
        r = da.map_overlap(block, x, depth=depth, boundary=boundary, trim=True, dtype=meta.dtype, meta=meta,
                           allow_rechunk=False)
    # The result in the input's chunks (those of its zarr store, say), whichever were merged for the halo.
    return r.rechunk(given) if tuple(r.chunks) != given else r


def takes_dask(fn):
    """fn (an apron.ndimage function), also taking a dask array as its input (the result is a dask array)."""
    signature = inspect.signature(fn)
    fname = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        input = args[0] if args else kwargs.get("input")
        if not is_dask(input):
            return fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        x = params.pop("input")
        return map_overlapped(fn, fname, x, params)

    wrapper.__module__ = "apron.ndimage"
    return wrapper
