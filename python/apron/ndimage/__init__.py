"""scipy.ndimage's filters computed by apron: the same names, signatures, defaults and results.

    import apron.ndimage as ndi          # instead of: import scipy.ndimage as ndi
    smooth = ndi.gaussian_filter(img, 2.0)
    opened = ndi.grey_opening(img, footprint=disk, mode="nearest")
    med = ndi.median_filter(img, size=(5, 5, 1))      # an RGB image, each channel alike

Every function takes SciPy's parameters in SciPy's order with SciPy's defaults (SciPy 1.17), and its result
is SciPy's: bit for bit for the selection filters (minimum, maximum, rank, median, percentile and the grey
morphology) on integer images, within SPEC.md's tolerance for the linear filters (1e-5 relative to
sum|w| * max|in|). What differs, and why, is listed below and in docs/python.md ("apron.ndimage").

Arrays: NumPy arrays (the CPU backend, or CUDA where the build and machine have it), CuPy arrays and torch
CUDA tensors (the GPU, on the caller's current stream), torch CPU tensors (through NumPy, sharing memory),
any strides (Fortran order, column slices and negative strides are copied first). Shapes: 1-D signals, 2-D
images (H, W), and 3-D (H, W, C) with C <= 4 channels when the call filters each channel alike (a size,
sigma or footprint of 1 along the last axis, or axes=(0, 1)). A 3-D array whose last axis is longer than 4
is a (Z, Y, X) volume, filtered along every axis as SciPy by the separable functions (gaussian_filter,
gaussian_filter1d, uniform_filter, uniform_filter1d, correlate1d, convolve1d, sobel, prewitt, laplace), by
correlate and convolve with (D, H, W) weights, and by minimum_filter, maximum_filter and the grey morphology
with sizes or any (D, H, W) footprint, and by median_filter, percentile_filter and rank_filter with sizes or
any (D, H, W) footprint (each 3-D window one apron call over the volume), and by minimum_filter1d and
maximum_filter1d along any axis; 4-D arrays raise ValueError. 3-D weights and footprints that span the last axis of a 3-D array of at most
4 columns filter it as such a volume too (SciPy's N-D result).

Pixel types (the result is the input's dtype unless output= says otherwise, as in SciPy):

    uint8, uint16, float32   native
    float64                  computed in float32 and returned as float64: linear filters within 1e-5 relative
                             (SPEC.md); selection filters return the float32-rounded sample (relative error
                             <= 2**-24); values beyond float32's range become +-inf
    float16 (and torch's bfloat16)  computed in float32 (exact conversion), returned in their type
    bool                     selection: as uint8 0/1 (exact); linear: computed in float32, stored by the
                             integer rule below (True where the rounded result is >= 1)
    int8, int16              selection: offset into uint8 / uint16 (x + 128, x + 32768; exact); linear:
                             computed in float32 (exact conversion)
    int32, uint32, int64, uint64   selection: exact, offset by the array's minimum into uint16 or float32,
                             where the values (and cval) span at most 2**24; a wider span raises
                             ValueError. Linear: computed in float32 (exact below 2**24 in magnitude,
                             else within SPEC's float tolerance)
    complex                  TypeError

Dask arrays: every function takes a dask.array.Array (of NumPy chunks, or CuPy chunks for the GPU) and returns
a lazy dask array, computed block by block with dask.array.map_overlap over exactly the halo the call reads along
each axis; blocks on the array's edge apply the function's own mode at the true edge, so the result equals the
whole-array result bit for bit (see _dask.py and docs/python.md "Dask"). output= may be None or a dtype there.

Storing into an integer type (an integer input's result, or output= an integer dtype): apron rounds half to
even and saturates to the type's range (NaN -> 0). SciPy truncates toward zero and wraps around, and its
separable filters (gaussian_filter, uniform_filter, sobel, prewitt, ...) store each 1-D pass in the integer
type. So on integer images apron's linear results are the correctly rounded ones (exactly for means and
integer weights on uint8/uint16, within 1 otherwise), SciPy's single-pass results are trunc(x) wrapped
around, and its 2-D means and Gaussians on unsigned images lie 0 to 2 below the correctly rounded result.
"""
from __future__ import annotations

from ._linear import (
    correlate, convolve, correlate1d, convolve1d, gaussian_filter, gaussian_filter1d, uniform_filter,
    uniform_filter1d, sobel, prewitt, laplace,
)
from ._selection import (
    minimum_filter, maximum_filter, minimum_filter1d, maximum_filter1d, median_filter, percentile_filter,
    rank_filter,
)
from ._morphology import (
    grey_dilation, grey_erosion, grey_opening, grey_closing, white_tophat, black_tophat,
    morphological_gradient,
)

from . import _dask

# Every function also takes a dask array (NumPy or CuPy chunks) and returns a lazy dask array (_dask.py).
for _name in ("correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter", "gaussian_filter1d",
              "uniform_filter", "uniform_filter1d", "sobel", "prewitt", "laplace", "minimum_filter", "maximum_filter",
              "minimum_filter1d", "maximum_filter1d", "median_filter", "percentile_filter", "rank_filter",
              "grey_dilation", "grey_erosion", "grey_opening", "grey_closing", "white_tophat", "black_tophat",
              "morphological_gradient"):
    globals()[_name] = _dask.takes_dask(globals()[_name])
del _name

__all__ = [
    "correlate", "convolve", "correlate1d", "convolve1d",
    "gaussian_filter", "gaussian_filter1d", "uniform_filter", "uniform_filter1d",
    "sobel", "prewitt", "laplace",
    "minimum_filter", "maximum_filter", "minimum_filter1d", "maximum_filter1d",
    "median_filter", "percentile_filter", "rank_filter",
    "grey_dilation", "grey_erosion", "grey_opening", "grey_closing",
    "white_tophat", "black_tophat", "morphological_gradient",
]
