"""One Python function per operation of apron's registry (include/apron/ops.hpp), made at import time.

The registry declares every operation once: its name, parameters (kind, default, limits, help) and
documentation. This module turns each into a function with a real signature, for example::

    gaussian(img, sigma, *, sigma_y=None, radius=None, radius_y=None, border='reflect', value=0.0,
             scale=1.0, delta=0.0, out=None, out_type=None, backend='auto', algorithm='auto', threads=0,
             memory_budget=0)

Required parameters come after the image, then the optional ones that OpenCV's or SciPy's function of the same
kind takes positionally (``box(img, 5)`` as ``uniform_filter(img, 5)``, ``dilate(img, se)``, ``sobel(img, 1,
0)``: POSITIONAL below), the rest are keywords. Values become the registry's text form
(``sigma=1.5`` -> ``gaussian:sigma=1.5``) and the registry validates them, so its one-line errors are the
errors (ValueError). Masks and structuring elements may be NumPy arrays: 2-D (weights, rows x columns) or
3-D (planes x rows x columns, a volume's: plane k weighs plane z + k - D // 2, as a 'W H D' mask file); they
are handed to the registry as weights, not through a file.
"""
from __future__ import annotations

import keyword
import numbers
import re
import textwrap

import numpy as np

from . import _apron

# Keywords every operation takes besides its own parameters (how to run it).
RUN_KEYWORDS = ("out", "out_type", "backend", "algorithm", "threads", "memory_budget", "layout")
_RUN_DOC = """\
out : array, optional
    Where to write the result (same kind of array as img, same shape, positive strides). Its dtype sets
    the output type unless out_type is given. Returned.
out_type : dtype or str, optional
    Output pixel type: numpy.uint8 / 'u8', uint16 / 'u16', float32 / 'f32'. Default: img's dtype.
backend : str
    'auto' (CUDA where this build and machine have it, NumPy arrays then copied up and down; else the
    CPU), 'cpu', 'reference' or 'cuda'. Device arrays need CUDA.
algorithm : str
    Force a path on every linear step: 'auto', 'direct', 'separable', 'low-rank', 'fft' or 'tensor'.
threads : int
    CPU threads; 0 = all cores.
memory_budget : int or str
    Host memory the run may take, in bytes or as '4G' / '75%'; 0 = three quarters of physical memory.
layout : str, optional
    How img's axes are read, never guessed: None (H x W, or H x W x C with C 1 to 4), 'hw', 'hwc', or a
    stack of images filtered each alike: 'chw' (planes), 'nhw', 'nchw' (each N, C plane an image) or 'nhwc'
    (each of N an H x W x C image). out, when given, has img's shape."""

_CACHE_LIMIT = 256  # compiled pipelines kept per process, keyed by spec text (a warm call skips parsing)

# Optional parameters taken positionally after the required ones, in the order of OpenCV's or SciPy's
# function of the same kind: box(img, 5) as uniform_filter(img, 5) (width, then height), sobel(img, 1, 0, 3)
# as cv2.Sobel's dx, dy, ksize, dilate(img, se) as cv2.dilate(img, kernel), median(img, se) as
# median_filter(img, size), percentile(img, p, se) as percentile_filter(img, percentile, size). The rest stay
# keyword-only.
POSITIONAL = {
    "separable": ("column",),
    "box": ("width", "height"),
    "sharpen": ("strength",),
    "unsharp": ("amount",),
    "sobel": ("dx", "dy", "ksize"),
    "scharr": ("dx", "dy"),
    "prewitt": ("dx", "dy"),
    "dilate": ("se",), "erode": ("se",), "open": ("se",), "close": ("se",), "gradient": ("se",),
    "tophat": ("se",), "blackhat": ("se",),
    "median": ("se",), "percentile": ("se",), "rank": ("se",),
}

# What the functions' docstrings add to the registry's text.
NOTES = {
    "gaussian": "Radius: apron's default is ceil(3 sigma) (SPEC.md); SciPy's gaussian_filter uses truncate=4.0, i.e. "
                "int(4 sigma + 0.5). Give radius= for SciPy's kernel, or use apron.ndimage.gaussian_filter, which "
                "follows SciPy (truncate=4.0).",
    "unsharp": "Radius: apron's default is ceil(3 sigma) (SPEC.md), not SciPy's truncate=4.0.",
}
_ELEMENT_NOTE = ("se also takes an int k (the k x k square, rect:kxk) or a NumPy 0/1 array: 2-D (rows x columns, "
                 "centre at (rows // 2, columns // 2)) or, for a volume (layout='zyx'), 3-D (planes x rows x columns, "
                 "centre at (planes // 2, rows // 2, columns // 2)).")

# The C++ core's errors name the command line's options; from Python they name the keywords.
_OPTION_WORDS = (
    ("(raise it with --memory)", "(raise it with memory_budget=)"),
    ("(raise --memory)", "(raise memory_budget=)"),
    ("use --out-type f32", "use out_type='f32'"),
    ("(see `apron ops`)", "(apron.operations() lists them)"),
)
_OPTION_NAMES = {"--memory": "memory_budget", "--threads": "threads", "--backend": "backend", "--algo": "algorithm",
                 "--algorithm": "algorithm", "--out-type": "out_type", "--io-threads": "io_threads",
                 "--resume": "resume", "--metadata": "metadata", "--auto-orient": "auto_orient"}
_OPTION_RE = re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in sorted(_OPTION_NAMES, key=len, reverse=True))
                        + r")(?![\w-])")


def python_message(message: str, specs=(), function: str = None) -> str:
    """One of the core's error lines in Python's words: "--op gaussian:sigma=0: sigma: ..." becomes
    "gaussian(): sigma: ..." (`function`: the op's function) or "gaussian:sigma=0: sigma: ..." (a pipeline's
    item), and the options "--memory", "--threads", ... become the keywords memory_budget=, threads=, ..."""
    for spec in specs:
        for prefix in (f"--op {spec}: ", f"{spec}: " if function else None):
            if prefix and message.startswith(prefix):
                message = (f"{function}(): " if function else f"{spec}: ") + message[len(prefix):]
                break
        else:
            continue
        break
    else:
        if message.startswith("--op "):
            message = message[len("--op "):]
    for cli, py in _OPTION_WORDS:
        message = message.replace(cli, py)
    return _OPTION_RE.sub(lambda m: _OPTION_NAMES[m.group(1)], message)


def translated(error: BaseException, specs=(), function: str = None) -> BaseException:
    """The same exception type with python_message's text (ValueError, MemoryError, OSError from the core)."""
    text = python_message(str(error), specs, function)
    if function and not text.startswith(f"{function}()"):
        text = f"{function}(): {text}"
    return type(error)(text)


class Op:
    """One configured operation: a registry spec plus any NumPy masks. apron.op(name, **params) makes one;
    Pipeline takes them (or plain spec strings)."""

    __slots__ = ("name", "spec", "masks", "cacheable")

    def __init__(self, name: str, spec: str, masks: dict):
        self.name, self.spec, self.masks = name, spec, masks
        # Specs naming files (mask=FILE, se=FILE) are compiled afresh each time: the file may change.
        self.cacheable = not masks and not names_file(spec)

    def __repr__(self):
        return f"apron.Op({self.spec!r})"


def _python_default(p):
    text = p["default"]
    if text is None:
        return None
    if p["kind"] == "integer":
        return int(text)
    if p["kind"] == "number":
        v = float(text)
        return v
    return text


def _text(name: str, kind: str, value, op: str) -> str:
    """The registry's text for one keyword value (its own validation follows)."""
    if isinstance(value, bool):
        raise TypeError(f"{op}: {name}: a bool ({value}); give a number or text")
    if isinstance(value, str):
        text = value
    elif isinstance(value, numbers.Integral):
        text = str(int(value))
    elif isinstance(value, numbers.Real):
        text = repr(float(value))
    elif kind == "vector" and isinstance(value, (list, tuple, np.ndarray)):
        text = ":".join(_text(name, "number", v, op) for v in np.asarray(value).ravel().tolist())
    else:
        raise TypeError(f"{op}: {name}: {type(value).__name__} {value!r} is not a {kind} value")
    if "," in text:
        raise ValueError(f"{op}: {name}: '{text}' contains ',' (apron's op text separates parameters with commas)")
    return text


def names_file(spec: str) -> bool:
    """Whether an op text reads a file when compiled (ops.hpp names_file: mask=FILE, se=FILE but not se=shape:N)."""
    _, _, params = spec.partition(":")
    for item in params.split(","):
        key, _, value = item.partition("=")
        if key == "mask" or (key == "se" and ":" not in value):
            return True
    return False


class OpSpec:
    """An operation of the registry, as the generated function and apron.op() use it."""

    def __init__(self, info: dict):
        self.name = info["name"]
        self.fname = _python_name(self.name)
        self.info = info
        self.params = info["params"]
        self.kinds = {p["name"]: p["kind"] for p in self.params}
        # Switches (choices 0 / 1, e.g. preserve_nan) take Python bools too.
        self.switches = {p["name"] for p in self.params if p["kind"] == "choice" and list(p["choices"]) == ["0", "1"]}
        self.defaults = {p["name"]: _python_default(p) for p in self.params}

    def make(self, values: dict) -> Op:
        """Op from keyword values: None and values equal to the registry's default are left out of the spec."""
        items, masks = [], {}
        for name, value in values.items():
            kind = self.kinds.get(name)
            if kind is None:
                known = ", ".join(self.kinds) or "none"
                raise TypeError(f"{self.fname}() got an unexpected keyword argument '{name}' (its parameters: {known})")
            if value is None:
                continue
            if kind == "element" and isinstance(value, numbers.Integral) and not isinstance(value, bool):
                if value < 1:
                    raise ValueError(f"{self.fname}(): {name}: {value} is not a square's side (an int >= 1)")
                value = f"rect:{int(value)}x{int(value)}"
            if kind in ("mask", "element") and not isinstance(value, str):
                weights = np.asarray(value)
                if weights.ndim not in (2, 3) or weights.dtype.kind not in "biuf":
                    raise ValueError(f"{self.fname}(): {name}: a mask array must be 2-D numbers (rows x columns) or 3-D "
                                     f"(planes x rows x columns, a volume's); got shape {weights.shape}, dtype "
                                     f"{weights.dtype}")
                masks[name] = np.ascontiguousarray(weights, dtype=np.float64)
                items.append(f"{name}=<array {'x'.join(str(n) for n in weights.shape)}>")
                continue
            if isinstance(value, bool) and name in self.switches:
                value = int(value)
            default = self.defaults[name]
            if default is not None and type(value) is type(default) and value == default:
                continue
            items.append(f"{name}={_text(name, kind, value, self.fname + '()')}")
        return Op(self.name, self.name + (":" + ",".join(items) if items else ""), masks)


_compiled: dict = {}


def compiled(ops) -> "_apron.Pipeline":
    """The _apron.Pipeline of a list of Op objects; pipelines without array masks or files are cached by text."""
    key = tuple(op.spec for op in ops)
    if all(op.cacheable for op in ops):
        p = _compiled.get(key)
        if p is None:
            if len(_compiled) >= _CACHE_LIMIT:
                _compiled.clear()
            p = _compiled[key] = _pipeline([(op.spec, {}) for op in ops])
        return p
    return _pipeline([(op.spec, op.masks) for op in ops])


def _pipeline(items) -> "_apron.Pipeline":
    try:
        return _apron.Pipeline(items)
    except (ValueError, MemoryError, OSError) as e:
        raise translated(e, [spec for spec, _ in items]) from None


def _range_text(p) -> str:
    lo, hi = p["min"], p["max"]
    if lo is not None and hi is not None:
        return f"{'>' if p['min_exclusive'] else '>='} {lo:g} and <= {hi:g}"
    if lo is not None:
        return f"{'>' if p['min_exclusive'] else '>='} {lo:g}"
    if hi is not None:
        return f"<= {hi:g}"
    return ""


PY_TYPE = {"number": "float", "integer": "int", "text": "str", "border": "str", "normalise": "str",
           "mask": "str | numpy.ndarray", "element": "str | int | numpy.ndarray", "vector": "str | Sequence[float]",
           "choice": "str | int"}


def docstring(info: dict) -> str:
    lines = [info["summary"][:1].upper() + info["summary"][1:] + ".", "", info["details"], "",
             f"apron operation '{info['name']}' ({info['category']}); the same as ``apron filter --op "
             f"{info['name']}:...`` on the command line.", "", "Parameters", "----------",
             "img : array", "    H x W or H x W x C (C 1-4), uint8, uint16 or float32: NumPy, CuPy or torch CUDA."]
    for p in info["params"]:
        bits = [PY_TYPE[p["kind"]]]
        if p["default"] is not None:
            bits.append(f"default {p['default']}")
        elif p["optional"]:
            bits.append("optional")
        lines.append(f"{p['name']} : {', '.join(bits)}")
        rng = _range_text(p)
        lines.append("    " + p["help"] + (f" [{rng}]" if rng else "") +
                     (f" (one of {', '.join(p['choices'])})" if p["choices"] else ""))
    lines.append(_RUN_DOC)
    lines += ["", "Returns", "-------", "array", "    The result, the same kind of array as img (out when given)."]
    notes = ([_ELEMENT_NOTE] if any(p["kind"] == "element" for p in info["params"]) else []) + (
        [NOTES[info["name"]]] if info["name"] in NOTES else [])
    if notes:
        lines += ["", "Notes", "-----"] + "\n\n".join(textwrap.fill(n, 100) for n in notes).split("\n")
    if info["examples"]:
        lines += ["", "Examples (op text)", "------------------"] + [f"    {e}" for e in info["examples"]]
    return "\n".join(lines)


_REQUIRED = object()  # signature_parts' default of a required parameter


def signature_parts(info: dict):
    """(positional, keyword) parameter lists as (name, default) for the generated function and the stubs:
    the required parameters (default _REQUIRED), then those of POSITIONAL in its order; the rest keywords."""
    required, optional = [], {}
    for p in info["params"]:
        if p["default"] is None and not p["optional"]:
            required.append((p["name"], _REQUIRED))
        else:
            optional[p["name"]] = _python_default(p)
    positional = required + [(n, optional.pop(n)) for n in POSITIONAL.get(info["name"], ()) if n in optional]
    return positional, list(optional.items())


def _python_name(op_name: str) -> str:
    name = op_name.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


def make_function(info: dict, run):
    """The function for one operation: a real signature (so help() and IDEs show it) and the registry's
    documentation; its body hands the values to OpSpec.make and `run`."""
    spec = OpSpec(info)
    positional, keywords = signature_parts(info)
    for name, _ in positional + keywords:
        if name in RUN_KEYWORDS or not name.isidentifier() or keyword.iskeyword(name) or name == "img":
            raise RuntimeError(f"apron: operation {info['name']}: parameter '{name}' cannot be a Python keyword argument")
    fname = _python_name(info["name"])
    names = [n for n, _ in positional + keywords]
    args = ["img"] + [n if d is _REQUIRED else f"{n}=_d[{n!r}]" for n, d in positional] + ["*"] + [
        f"{n}=_d[{n!r}]" for n, _ in keywords] + [
        "out=None", "out_type=None", "backend='auto'", "algorithm='auto'", "threads=0", "memory_budget=0", "layout=None"]
    values = "(" + "".join(f"{n}, " for n in names) + ")"
    # Warm calls find their compiled pipeline by the values and their types (3 and 3.0 hash alike but are
    # different op texts); arrays (unhashable) and first calls take _lookup. Errors name the function
    # (_failed: "gaussian(): sigma: ...", the keywords as Python's).
    source = (f"def {fname}({', '.join(args)}):\n"
              f"    v = {values}\n"
              f"    try:\n"
              f"        try:\n"
              f"            p = _warm[v, tuple(map(type, v))]\n"
              f"        except (KeyError, TypeError):\n"
              f"            p = _lookup(v)\n"
              f"        return _run(p, img, out, out_type, backend, algorithm, threads, memory_budget, layout)\n"
              f"    except _Errors as e:\n"
              f"        raise _failed(e, v) from None\n")
    warm: dict = {}

    def lookup(v):
        op = spec.make(dict(zip(names, v)))
        p = compiled([op])
        if not op.cacheable:
            return p
        try:
            if len(warm) >= _CACHE_LIMIT:
                warm.clear()
            warm[v, tuple(map(type, v))] = p
        except TypeError:  # unhashable values (lists): not cached
            pass
        return p

    def failed(error, v):
        try:
            specs = [spec.make(dict(zip(names, v))).spec]
        except Exception:  # the values themselves were the problem: the error says so already
            specs = []
        return translated(error, specs, fname)

    defaults = {n: d for n, d in positional + keywords if d is not _REQUIRED}
    scope = {"_d": defaults, "_warm": warm, "_lookup": lookup, "_run": run, "_failed": failed,
             "_Errors": (ValueError, TypeError, MemoryError, OSError)}
    exec(source, scope)
    fn = scope[fname]
    fn.__doc__ = docstring(info)
    fn.__module__ = "apron"
    fn.op_spec = spec
    return fn


_registry = None


def all_operations() -> list:
    """The registry as data (one dict per operation), read once."""
    global _registry
    if _registry is None:
        _registry = _apron.operations()
    return _registry


def make_all(run) -> dict:
    """{python name: function} for every operation of the registry."""
    return {_python_name(info["name"]): make_function(info, run) for info in all_operations()}


def op(name: str, **params) -> Op:
    """An operation with its parameters, for Pipeline([...]): apron.op('gaussian', sigma=2)."""
    for info in all_operations():
        if info["name"] == name or _python_name(info["name"]) == name:
            return OpSpec(info).make(params)
    raise ValueError(f"op: unknown operation '{name}' (apron.operations() lists them)")
