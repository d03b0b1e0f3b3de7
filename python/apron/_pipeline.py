"""Pipelines (several operations on one image, intermediates kept inside apron), plan(), batch() and info()."""
from __future__ import annotations

import contextlib
import sys

from . import _apron, _arrays, _ops


def _as_op(item) -> "_ops.Op":
    if isinstance(item, _ops.Op):
        return item
    if isinstance(item, str):
        return _ops.Op(item.split(":", 1)[0], item, {})
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict):
        return _ops.op(item[0], **item[1])
    raise TypeError(f"Pipeline: {item!r} is not an operation (give 'gaussian:sigma=2', apron.op('gaussian', sigma=2) "
                    f"or ('gaussian', {{'sigma': 2}}))")


class Pipeline:
    """Operations run in order on one image, the intermediates kept inside apron::

        p = apron.Pipeline(["gaussian:sigma=2", apron.op("sobel", dx=1)])
        edges = p.run(img, out_type="f32")

    Items are op texts (as ``apron filter --op``), apron.op(...) objects, or (name, {params}) pairs. The
    pipeline is compiled once (parsed, validated, masks shared); run() may be called any number of times.
    """

    def __init__(self, ops):
        if isinstance(ops, (str, _ops.Op)):
            ops = [ops]
        self.ops = [_as_op(o) for o in ops]
        if not self.ops:
            raise ValueError("Pipeline: no operations")
        self._pipeline = _ops.compiled(self.ops)

    @property
    def specs(self) -> list:
        return list(self._pipeline.specs())

    def __repr__(self):
        return f"apron.Pipeline({self.specs!r})"

    def run(self, img, out=None, out_type=None, backend="auto", algorithm="auto", threads=0, memory_budget=0,
            layout=None):
        """The result of every operation in turn on img (see the operations' docs for the keywords; layout=
        'chw', 'nhw', 'nchw' or 'nhwc' runs each image of a stack alike)."""
        return _arrays.run(self._pipeline, img, out, out_type, backend, algorithm, threads, memory_budget, layout)

    __call__ = run

    def describe(self, img, out_type=None, backend="auto", algorithm="auto", candidates=False) -> str:
        """What run() would do on this image (or (shape, dtype)): one line per step with its algorithm; with
        candidates=True every path a linear step could take and its predicted time (``apron plan``)."""
        h, w, c, code, device = _shape(img)
        backend, algorithm = _arrays.text_arg("backend", backend), _arrays.text_arg("algorithm", algorithm)
        with _python_errors(self):
            return self._pipeline.describe(h, w, c, code, _arrays.type_code(out_type, half_as_f32=True), backend,
                                           algorithm, bool(candidates), device)

    def memory_needed(self, img, out_type=None, backend="auto") -> int:
        """Host bytes run() would take on this image (or (shape, dtype)), estimated from the plan."""
        h, w, c, code, device = _shape(img)
        backend = _arrays.text_arg("backend", backend)
        with _python_errors(self):
            need = self._pipeline.memory_needed(h, w, c, code, _arrays.type_code(out_type, half_as_f32=True), backend,
                                                device)
        if device < 0:  # 16-bit floats on the host: the float32 copy of the input, the 16-bit result
            pixels = h * w * c
            if _half_of(img):
                need += 4 * pixels
            if (_arrays.half_name(out_type) if out_type is not None else _half_of(img)):
                need += 2 * pixels
        return need


@contextlib.contextmanager
def _python_errors(pipeline):
    """The core's errors in Python's words (apron._ops.python_message): op texts without "--op", keywords
    (memory_budget=, threads=) for the command line's options."""
    try:
        yield
    except (ValueError, MemoryError, OSError) as e:
        raise _ops.translated(e, pipeline.specs) from None


def _half_of(img):
    """'float16' or 'bfloat16' when img (an array or a (shape, dtype) pair) holds 16-bit floats, else None."""
    if isinstance(img, tuple) and len(img) == 2 and isinstance(img[0], tuple):
        return _arrays.half_name(img[1])
    return _arrays.array_half(img)


def _shape(img):
    """(height, width, channels, type code, CUDA device) of an array (device -1 for host arrays), or of a
    (shape, dtype) pair (device -1: plans on the current device, as a host array's run does). A 16-bit float
    image is described as the float32 image it is computed in."""
    if isinstance(img, tuple) and len(img) == 2 and isinstance(img[0], tuple):
        shape, dtype = img
        code = _arrays.type_code(dtype, "dtype", half_as_f32=True)
        if len(shape) not in (2, 3):
            raise ValueError(f"shape: {shape} is not (H, W) or (H, W, C)")
        sides = [_arrays.int_arg(f"shape: {side}", n, 1, _arrays.INT_MAX)
                 for side, n in zip(("height", "width", "channels"), shape)]
        return sides[0], sides[1], sides[2] if len(shape) == 3 else 1, code, -1
    if _arrays.array_half(img):
        shape = tuple(img.shape)
        kind = _arrays._kind(img)
        contiguous = tuple(int(_prod(shape[i + 1:])) * 4 for i in range(len(shape)))
        h, w, c, _ = _arrays._layout(shape, contiguous, 4, "img")
        device = img.device.id if kind == "cupy" else img.device.index if kind == "torch" else -1
        return h, w, c, _arrays.F32, device
    v = _arrays.view_of(img, "img")
    return v.height, v.width, v.channels, v.code, v.device_id


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def plan(ops, img, out_type=None, backend="auto", algorithm="auto", candidates=True) -> str:
    """``apron plan``: how the operations would run on this image (or (shape, dtype)), each step's algorithm
    and kernel, and with candidates=True every path's predicted time."""
    return Pipeline(ops).describe(img, out_type, backend, algorithm, candidates)


def batch(inputs, out_dir, ops, *, name="{stem}.{ext}", format=None, inputs_as="auto", out_type=None,
          backend="auto", algorithm="auto", threads=0, io_threads=0, memory_budget=0, resume=False, progress=None,
          metadata="keep", auto_orient=False):
    """``apron batch``: many image files through one pipeline, decoding, computing and encoding overlapped.

    inputs: a job file, list file, directory or glob pattern, or a list of them (inputs_as forces one
    reading). Outputs go to out_dir, named by `name` ({name} {stem} {ext} {index} {index:N}) in `format`
    (png, pgm, ppm, pfm, jpg, tif; default the input's). resume=True skips outputs a previous run of the same
    job finished. progress: the CLI's progress bar on stderr (default: when stderr is a terminal).
    metadata: "keep" carries each input's colour profile and Exif block (orientation) to its output where the
    format has a place for them; "strip" leaves them out. auto_orient=True turns each image upright by its Exif
    orientation before filtering (its output is then marked upright).

    Returns a dict: done, skipped, failed, total, failures [(input, message)], pixels, seconds, summary,
    workers. An unreadable or failing image is reported there and skipped; errors of the whole run
    (options, the output directory) raise.
    """
    if isinstance(inputs, str) or hasattr(inputs, "__fspath__"):
        inputs = [inputs]
    inputs = [str(p) for p in inputs]
    if not inputs:
        raise ValueError("batch: no inputs")
    if progress is None:
        progress = sys.stderr is not None and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    if metadata not in ("keep", "strip"):
        raise ValueError(f"metadata: {metadata!r} is not 'keep' or 'strip'")
    p = Pipeline(ops)
    threads = _arrays.int_arg("threads", threads, -_arrays.INT_MAX - 1, _arrays.INT_MAX)
    io_threads = _arrays.int_arg("io_threads", io_threads, -_arrays.INT_MAX - 1, _arrays.INT_MAX)
    budget = _arrays.memory_size(memory_budget)
    with _python_errors(p):
        result = _apron.batch(p._pipeline, inputs, inputs_as, str(out_dir), name, format or "",
                              _arrays.type_code(out_type), backend, algorithm, threads, io_threads, budget,
                              bool(resume), bool(progress), metadata == "keep", bool(auto_orient))
    if isinstance(result, dict) and result.get("failures"):  # each image's error, in Python's words too
        result["failures"] = [(item, _ops.python_message(message, p.specs)) for item, message in result["failures"]]
    return result


def info() -> dict:
    """The build and the machine: version, backends usable here, CUDA status and devices."""
    return {
        "version": _apron.__version__,
        "backends": list(_apron.available_backends()),
        "cuda": _apron.cuda_status(),
        "cuda_built": bool(_apron.has_cuda),
        "devices": list(_apron.cuda_devices()),
        "operations": [o["name"] for o in _ops.all_operations()],
    }
