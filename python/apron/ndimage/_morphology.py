"""apron.ndimage's grey morphology: erosion, dilation, opening, closing, top-hats and gradient."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _arrays
from ._core import _is_dtype, _NUMPY, _TorchOps, _error, _ops_for
from ._selection import _min_or_max


# ---- grey morphology ------------------------------------------------------------------------------------

def _need_element(size, footprint, structure, fname):
    if size is None and footprint is None and structure is None:
        raise _error(fname, "size, footprint, or structure must be specified")


def _erosion(fname, input, size, footprint, structure, output, mode, cval, origin, axes):
    _need_element(size, footprint, structure, fname)
    return _min_or_max(fname, input, size, footprint, structure, output, mode, cval, origin, True, axes)


def _dilation(fname, input, size, footprint, structure, output, mode, cval, origin, axes):
    _need_element(size, footprint, structure, fname)
    return _min_or_max(fname, input, size, footprint, structure, output, mode, cval, origin, False, axes,
                       reflect=True)


def grey_erosion(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                 *, axes=None):
    """Greyscale erosion (scipy.ndimage.grey_erosion): the minimum filter, computed by apron's erode.
    structure: only a flat one (all zeros) is supported."""
    return _erosion("grey_erosion", input, size, footprint, structure, output, mode, cval, origin, axes)


def grey_dilation(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                  *, axes=None):
    """Greyscale dilation (scipy.ndimage.grey_dilation): the maximum over the footprint reflected through its
    centre, with SciPy's origin shift for even sizes, so asymmetric and even footprints give SciPy's result.
    (apron's own dilate, like OpenCV's, does not reflect the element.) structure: only a flat one (zeros)."""
    return _dilation("grey_dilation", input, size, footprint, structure, output, mode, cval, origin, axes)


def _size_and_footprint(size, footprint):
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=3)


def grey_opening(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                 *, axes=None):
    """Greyscale opening (scipy.ndimage.grey_opening): grey_erosion, then grey_dilation of the result."""
    _size_and_footprint(size, footprint)
    tmp = _erosion("grey_opening", input, size, footprint, structure, None, mode, cval, origin, axes)
    return _dilation("grey_opening", tmp, size, footprint, structure, output, mode, cval, origin, axes)


def grey_closing(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                 *, axes=None):
    """Greyscale closing (scipy.ndimage.grey_closing): grey_dilation, then grey_erosion of the result."""
    _size_and_footprint(size, footprint)
    tmp = _dilation("grey_closing", input, size, footprint, structure, None, mode, cval, origin, axes)
    return _erosion("grey_closing", tmp, size, footprint, structure, output, mode, cval, origin, axes)


def _kind_ops(a):
    kind = _arrays._kind(a)
    if kind in ("torch", "torch-cpu"):
        return _TorchOps()
    if kind == "cupy":
        return _ops_for("cupy")
    return _NUMPY


def _as_array(input):
    return input if _arrays._kind(input) != "other" else np.asarray(input)


def white_tophat(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                 *, axes=None):
    """White top-hat (scipy.ndimage.white_tophat): input minus its grey_opening, in the output's dtype with
    NumPy's subtraction (wraparound on unsigned types, as SciPy)."""
    fname = "white_tophat"
    input = _as_array(input)
    _size_and_footprint(size, footprint)
    tmp = _erosion(fname, input, size, footprint, structure, None, mode, cval, origin, axes)
    tmp = _dilation(fname, tmp, size, footprint, structure, output, mode, cval, origin, axes)
    return _kind_ops(tmp).subtract(input, tmp, out=tmp)


def black_tophat(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0, origin=0,
                 *, axes=None):
    """Black top-hat (scipy.ndimage.black_tophat): grey_closing minus the input, as SciPy computes it."""
    fname = "black_tophat"
    input = _as_array(input)
    _size_and_footprint(size, footprint)
    tmp = _dilation(fname, input, size, footprint, structure, None, mode, cval, origin, axes)
    tmp = _erosion(fname, tmp, size, footprint, structure, output, mode, cval, origin, axes)
    return _kind_ops(tmp).subtract(tmp, input, out=tmp)


def morphological_gradient(input, size=None, footprint=None, structure=None, output=None, mode="reflect", cval=0.0,
                           origin=0, *, axes=None):
    """Morphological gradient (scipy.ndimage.morphological_gradient): grey_dilation minus grey_erosion, as SciPy
    computes it (into output= when it is an array; a dtype given as output= is ignored, as by SciPy)."""
    fname = "morphological_gradient"
    input = _as_array(input)
    tmp = _dilation(fname, input, size, footprint, structure, None, mode, cval, origin, axes)
    if output is not None and not _is_dtype(output):
        _erosion(fname, input, size, footprint, structure, output, mode, cval, origin, axes)
        return _kind_ops(output).subtract(tmp, output, out=output)
    return _kind_ops(tmp).minus(tmp, _erosion(fname, input, size, footprint, structure, None, mode, cval, origin, axes))
