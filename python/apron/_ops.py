"""One Python function per operation of apron's registry (include/apron/ops.hpp), made at import time.

The registry declares every operation once: its name, parameters (kind, default, limits, help) and
documentation. This module turns each into a function with a real signature, for example::

    gaussian(img, sigma, *, sigma_y=None, radius=None, radius_y=None, border='reflect', value=0.0,
             scale=1.0, delta=0.0, out=None, out_type=None, backend='auto', algorithm='auto', threads=0,
             memory_budget=0)

Required parameters come after the image, the rest are keywords. Values become the registry's text form
(``sigma=1.5`` -> ``gaussian:sigma=1.5``) and the registry validates them, so its one-line errors are the
errors (ValueError). Masks and structuring elements may be NumPy 2-D arrays (weights, rows x columns);
they are handed to the registry as weights, not through a file.
"""
from __future__ import annotations

import keyword
import numbers

import numpy as np

from . import _apron

# Keywords every operation takes besides its own parameters (how to run it).
RUN_KEYWORDS = ("out", "out_type", "backend", "algorithm", "threads", "memory_budget")
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
    Host memory the run may take, in bytes or as '4G' / '75%'; 0 = three quarters of physical memory."""

_CACHE_LIMIT = 256  # compiled pipelines kept per process, keyed by spec text (a warm call skips parsing)


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
        self.info = info
        self.params = info["params"]
        self.kinds = {p["name"]: p["kind"] for p in self.params}
        self.defaults = {p["name"]: _python_default(p) for p in self.params}

    def make(self, values: dict) -> Op:
        """Op from keyword values: None and values equal to the registry's default are left out of the spec."""
        items, masks = [], {}
        for name, value in values.items():
            kind = self.kinds.get(name)
            if kind is None:
                known = ", ".join(self.kinds) or "none"
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{name}' (its parameters: {known})")
            if value is None:
                continue
            if kind in ("mask", "element") and not isinstance(value, str):
                weights = np.asarray(value)
                if weights.ndim != 2 or weights.dtype.kind not in "biuf":
                    raise ValueError(f"{self.name}: {name}: a mask array must be 2-D numbers (rows x columns); "
                                     f"got shape {weights.shape}, dtype {weights.dtype}")
                masks[name] = np.ascontiguousarray(weights, dtype=np.float64)
                items.append(f"{name}=<array {weights.shape[0]}x{weights.shape[1]}>")
                continue
            default = self.defaults[name]
            if default is not None and type(value) is type(default) and value == default:
                continue
            items.append(f"{name}={_text(name, kind, value, self.name)}")
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
            p = _compiled[key] = _apron.Pipeline([(op.spec, {}) for op in ops])
        return p
    return _apron.Pipeline([(op.spec, op.masks) for op in ops])


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
           "mask": "str | numpy.ndarray", "element": "str | numpy.ndarray", "vector": "str | Sequence[float]",
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
    if info["examples"]:
        lines += ["", "Examples (op text)", "------------------"] + [f"    {e}" for e in info["examples"]]
    return "\n".join(lines)


def signature_parts(info: dict):
    """(positional, keyword) parameter lists as (name, default) for the generated function and the stubs."""
    positional, keywords = [], []
    for p in info["params"]:
        required = p["default"] is None and not p["optional"]
        (positional if required else keywords).append((p["name"], _python_default(p)))
    return positional, keywords


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
    args = ["img"] + [n for n, _ in positional] + ["*"] + [f"{n}=_d[{n!r}]" for n, _ in keywords] + [
        "out=None", "out_type=None", "backend='auto'", "algorithm='auto'", "threads=0", "memory_budget=0"]
    values = "(" + "".join(f"{n}, " for n in names) + ")"
    # Warm calls find their compiled pipeline by the values and their types (3 and 3.0 hash alike but are
    # different op texts); arrays (unhashable) and first calls take _lookup.
    source = (f"def {fname}({', '.join(args)}):\n"
              f"    v = {values}\n"
              f"    try:\n"
              f"        p = _warm[v, tuple(map(type, v))]\n"
              f"    except (KeyError, TypeError):\n"
              f"        p = _lookup(v)\n"
              f"    return _run(p, img, out, out_type, backend, algorithm, threads, memory_budget)\n")
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

    scope = {"_d": dict(keywords), "_warm": warm, "_lookup": lookup, "_run": run}
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
