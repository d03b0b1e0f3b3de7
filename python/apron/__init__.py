"""apron: image convolution and morphology at the hardware's limit, from Python.

    import numpy as np, apron
    img = np.random.randint(0, 256, (480, 640, 3), dtype=np.uint8)
    blurred = apron.gaussian(img, 2.0)                      # scipy.ndimage-style, same dtype out
    edges = apron.sobel(img, dx=1, out_type="f32")
    opened = apron.open(img, se="disk:5")
    p = apron.Pipeline(["gaussian:sigma=2", "dilate:se=ellipse:7x7"]); out = p.run(img)

Every operation of apron's registry is a function here (apron.operations() lists them); NumPy arrays run
on the CPU, CuPy arrays and torch CUDA tensors on the GPU without copies, on the caller's current stream;
float16 (and torch's bfloat16) arrays are computed in float32 and returned in their type (one rounding).
apron.ndimage has scipy.ndimage's filters with SciPy's names, signatures, defaults and results
(``import apron.ndimage as ndi``), and takes dask arrays too (lazily, block by block, the same bits). Errors: ValueError (parameters, shapes, layouts), TypeError (dtypes,
array kinds), OSError (files), MemoryError (the memory budget); their messages name the function and the
keyword ("gaussian(): sigma: ..."). See docs/python.md.

``from apron import *`` imports every function except those named as a Python builtin (apron.open): call
that one as apron.open(...).
"""
from __future__ import annotations

import builtins as _builtins

from . import _apron, _arrays, _ops, ndimage
from ._ops import Op, op
from ._pipeline import Pipeline, batch, info, plan

__version__ = _apron.__version__


def _run(pipeline, img, out, out_type, backend, algorithm, threads, memory_budget, layout):
    return _arrays.run(pipeline, img, out, out_type, backend, algorithm, threads, memory_budget, layout)


def operations() -> list:
    """The op registry as data: one dict per operation (name, category, summary, details, params, examples)."""
    return [dict(o) for o in _ops.all_operations()]


_functions = _ops.make_all(_run)
globals().update(_functions)

# Names that would shadow a builtin (open) stay out of __all__: `from apron import *` must not replace them.
__all__ = ["Op", "Pipeline", "batch", "info", "ndimage", "op", "operations", "plan",
           *sorted(n for n in _functions if not hasattr(_builtins, n))]
