"""Shared fixtures and helpers for the apron CLI suite.

The suite drives the `apron` binary (env APRON_BIN, else <repo>/build/tools/apron) on small random images
and compares its output with independent references: SciPy `ndimage`, OpenCV and a few lines of numpy that
restate SPEC.md. Image files are written and read here by our own tiny PNM/PFM codecs (never by apron), and
PNG/JPEG through OpenCV, so a bug in apron's codecs cannot hide a bug in its filters or vice versa.

Tests import the helpers with `from conftest import ...` (pytest puts this directory on sys.path).
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 60

# ---------------------------------------------------------------------------------------------------------
# the binary
# ---------------------------------------------------------------------------------------------------------


def _find_binary() -> tuple[Path | None, str]:
    env = os.environ.get("APRON_BIN")
    if env:
        p = Path(env)
        if not p.is_absolute():
            p = (Path.cwd() / p).resolve()
        if p.is_file() and os.access(p, os.X_OK):
            return p, ""
        return None, f"APRON_BIN={env!r} is not an executable file"
    p = REPO_ROOT / "build" / "tools" / "apron"
    if p.is_file() and os.access(p, os.X_OK):
        return p, ""
    return None, f"apron binary not found: set APRON_BIN or build {p} (cmake -S . -B build && ninja -C build apron)"


APRON_PATH, APRON_MISSING_REASON = _find_binary()


def pytest_configure(config):
    config.addinivalue_line("markers", "no_apron_binary: the test runs without the apron binary (tools, reports)")


def pytest_collection_modifyitems(config, items):
    if APRON_PATH is None:
        skip = pytest.mark.skip(reason=APRON_MISSING_REASON)
        for item in items:
            if item.get_closest_marker("no_apron_binary") is None:
                item.add_marker(skip)


class Apron:
    """Runs the binary. Every run has a timeout so a hang fails one test instead of the suite."""

    def __init__(self, path: Path):
        self.path = path

    def run(self, *args, check: bool = True, cwd=None) -> subprocess.CompletedProcess:
        cmd = [str(self.path), *[str(a) for a in args]]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=cwd)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed with exit {r.returncode}:\n{r.stderr}{r.stdout}")
        return r

    def filter_files(self, src, dst, ops, out_type=None, extra=(), check=True):
        args = ["filter", src, dst]
        for op in [ops] if isinstance(ops, str) else ops:
            args += ["--op", op]
        if out_type:
            args += ["--out-type", out_type]
        args += list(extra)
        return self.run(*args, check=check)

    def filter(self, tmp_path: Path, image: np.ndarray, ops, out_type=None, extra=(), in_ext=None, out_ext=None):
        """Writes `image`, runs `apron filter` with `ops` (one spec or a list), reads the result back.
        Formats: f32 -> .pfm, integers -> .pgm/.ppm, unless in_ext/out_ext say otherwise."""
        image = np.asarray(image)
        in_ext = in_ext or default_ext(image.dtype, channels_of(image))
        result_dtype = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32, None: image.dtype}[out_type]
        out_ext = out_ext or default_ext(result_dtype, channels_of(image))
        tmp_path.mkdir(parents=True, exist_ok=True)
        n = len(list(tmp_path.iterdir()))  # unique names when one test runs several filters
        src = tmp_path / f"in{n}{in_ext}"
        dst = tmp_path / f"out{n}{out_ext}"
        write_image(src, image)
        self.filter_files(src, dst, ops, out_type, extra)
        assert dst.is_file(), f"apron exited 0 but wrote no {dst}"
        return read_image(dst)


@pytest.fixture(scope="session")
def apron() -> Apron:
    if APRON_PATH is None:
        pytest.skip(APRON_MISSING_REASON)
    return Apron(APRON_PATH)


# ---------------------------------------------------------------------------------------------------------
# image files: our own PNM / PFM codecs, OpenCV for PNG / JPEG
# ---------------------------------------------------------------------------------------------------------


def channels_of(a: np.ndarray) -> int:
    return 1 if a.ndim == 2 else a.shape[2]


def default_ext(dtype, channels: int) -> str:
    if np.dtype(dtype) == np.float32:
        return ".pfm"
    return ".pgm" if channels == 1 else ".ppm"


def write_pnm(path, a: np.ndarray):
    """P5 (2-D) or P6 (H x W x 3), u8 with maxval 255 or u16 with maxval 65535 big-endian."""
    a = np.asarray(a)
    assert a.dtype in (np.uint8, np.uint16), a.dtype
    assert a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3), a.shape
    h, w = a.shape[:2]
    kind = "P5" if a.ndim == 2 else "P6"
    maxval = 255 if a.dtype == np.uint8 else 65535
    body = a.astype(">u2").tobytes() if a.dtype == np.uint16 else a.tobytes()
    Path(path).write_bytes(f"{kind}\n{w} {h}\n{maxval}\n".encode() + body)


def _header_tokens(data: bytes, count: int) -> tuple[list[bytes], int]:
    """`count` whitespace-separated tokens after the 2-byte magic, skipping '#' comments; returns them and
    the offset just past the single whitespace byte that ends the header."""
    tokens, pos = [], 2
    while len(tokens) < count:
        while data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        start = pos
        while not data[pos : pos + 1].isspace():
            pos += 1
        tokens.append(data[start:pos])
    return tokens, pos + 1


def read_pnm(path) -> np.ndarray:
    data = Path(path).read_bytes()
    magic = data[:2]
    assert magic in (b"P5", b"P6"), f"{path}: not a binary PGM/PPM: {magic!r}"
    (w, h, maxval), off = _header_tokens(data, 3)
    w, h, maxval = int(w), int(h), int(maxval)
    channels = 1 if magic == b"P5" else 3
    dtype = np.dtype(">u2") if maxval > 255 else np.dtype("u1")
    n = w * h * channels
    assert len(data) - off == n * dtype.itemsize, f"{path}: {len(data) - off} pixel bytes, expected {n * dtype.itemsize}"
    a = np.frombuffer(data, dtype=dtype, count=n, offset=off)
    a = a.astype(np.uint16 if maxval > 255 else np.uint8)
    return a.reshape(h, w) if channels == 1 else a.reshape(h, w, 3)


def write_pfm(path, a: np.ndarray, little_endian: bool = True):
    """'Pf' (2-D) or 'PF' (H x W x 3), rows bottom to top, scale -1 (little-endian) or +1 (big-endian)."""
    a = np.asarray(a, dtype=np.float32)
    assert a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3), a.shape
    h, w = a.shape[:2]
    kind = "Pf" if a.ndim == 2 else "PF"
    body = np.ascontiguousarray(a[::-1]).astype("<f4" if little_endian else ">f4").tobytes()
    Path(path).write_bytes(f"{kind}\n{w} {h}\n{-1.0 if little_endian else 1.0}\n".encode() + body)


def read_pfm(path) -> np.ndarray:
    data = Path(path).read_bytes()
    magic = data[:2]
    assert magic in (b"Pf", b"PF"), f"{path}: not a PFM: {magic!r}"
    (w, h, scale), off = _header_tokens(data, 3)
    w, h, scale = int(w), int(h), float(scale)
    channels = 1 if magic == b"Pf" else 3
    n = w * h * channels
    assert len(data) - off == 4 * n, f"{path}: {len(data) - off} pixel bytes, expected {4 * n}"
    a = np.frombuffer(data, dtype="<f4" if scale < 0 else ">f4", count=n, offset=off).astype(np.float32)
    a = a.reshape(h, w) if channels == 1 else a.reshape(h, w, 3)
    return np.ascontiguousarray(a[::-1])


def write_png_raw(path, a: np.ndarray):
    """A minimal PNG encoder (any of 1..4 channels, 8 or 16 bits, channels in file order: G, GA, RGB, RGBA).
    OpenCV cannot write gray+alpha, so 2-channel inputs go through here."""
    a = np.asarray(a)
    h, w = a.shape[:2]
    c = channels_of(a)
    depth = 16 if a.dtype == np.uint16 else 8
    assert a.dtype in (np.uint8, np.uint16)
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    be = a.astype(">u2" if depth == 16 else "u1").reshape(h, -1)
    raw = b"".join(b"\x00" + be[y].tobytes() for y in range(h))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    Path(path).write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _rgb_to_cv(a: np.ndarray) -> np.ndarray:
    import cv2

    c = channels_of(a)
    if c == 3:
        return cv2.cvtColor(a, cv2.COLOR_RGB2BGR)
    if c == 4:
        return cv2.cvtColor(a, cv2.COLOR_RGBA2BGRA)
    return a


def _cv_to_rgb(a: np.ndarray) -> np.ndarray:
    import cv2

    c = channels_of(a)
    if c == 3:
        return cv2.cvtColor(a, cv2.COLOR_BGR2RGB)
    if c == 4:
        return cv2.cvtColor(a, cv2.COLOR_BGRA2RGBA)
    return a


def write_png(path, a: np.ndarray):
    """PNG from an array in RGB(A) order (OpenCV wants BGR(A): converted here); 2 channels: own encoder."""
    import cv2

    if channels_of(a) == 2:
        return write_png_raw(path, a)
    assert cv2.imwrite(str(path), _rgb_to_cv(np.asarray(a))), f"cv2.imwrite({path}) failed"


def read_png(path) -> np.ndarray:
    """PNG (or JPEG) through OpenCV, returned in RGB(A) order. Note: OpenCV reads gray+alpha as 4 channels
    (B = G = R = gray, A = alpha)."""
    import cv2

    a = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert a is not None, f"cv2.imread({path}) failed"
    return _cv_to_rgb(a)


def write_image(path, a: np.ndarray):
    ext = Path(path).suffix.lower()
    if ext in (".pgm", ".ppm", ".pnm"):
        write_pnm(path, a)
    elif ext == ".pfm":
        write_pfm(path, a)
    elif ext == ".png":
        write_png(path, a)
    else:
        raise ValueError(f"write_image: unsupported extension {ext}")


def read_image(path) -> np.ndarray:
    data = Path(path).read_bytes()[:2]
    if data in (b"P5", b"P6"):
        return read_pnm(path)
    if data in (b"Pf", b"PF"):
        return read_pfm(path)
    return read_png(path)


def write_csv(path: Path, header, rows) -> Path:
    """A benchmark CSV (bench/report.py's and bench/plots.py's input)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def write_mask(path, m) -> Path:
    """GenConv mask text: 'W H', then H rows of W numbers (exact decimal form of each double)."""
    m = np.atleast_2d(np.asarray(m, dtype=np.float64))
    h, w = m.shape
    lines = [f"{w} {h}"]
    for row in m:
        lines.append(" ".join(str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v)) for v in row))
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


# ---------------------------------------------------------------------------------------------------------
# inputs and references
# ---------------------------------------------------------------------------------------------------------

BORDERS = ["constant", "nearest", "reflect", "mirror", "wrap"]
# apron's border names are SciPy's; these are the np.pad equivalents for the numpy references.
NP_PAD_MODE = {"constant": "constant", "nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}

TYPE_MAX = {np.dtype(np.uint8): 255, np.dtype(np.uint16): 65535}


def random_image(shape, dtype, seed: int, lo=None, hi=None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        lo = -100.0 if lo is None else lo
        hi = 100.0 if hi is None else hi
        return rng.uniform(lo, hi, size=shape).astype(np.float32)
    lo = 0 if lo is None else lo
    hi = TYPE_MAX[dtype] if hi is None else hi
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def random_array(shape, dtype, seed: int, wide=(-(2 ** 20), 2 ** 20)) -> np.ndarray:
    """Random samples of any NumPy dtype (SciPy's and the device libraries' arrays): floats uniform in
    [-100, 100], bools about half set, integers of up to 16 bits over their whole range, wider integers within
    `wide` (lo, hi, both included)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-100, 100, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if info.bits <= 16 else wide
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def to_type(x: np.ndarray, dtype) -> np.ndarray:
    """SPEC.md: round half to even, then saturate (float32 is a plain cast)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.asarray(x, dtype=np.float64).astype(np.float32)
    return np.clip(np.rint(np.asarray(x, dtype=np.float64)), 0, TYPE_MAX[dtype]).astype(dtype)


def spec_correlate(img: np.ndarray, m: np.ndarray, border: str, value: float = 0.0, convolve: bool = False):
    """SPEC.md's correlate / convolve formulas, in float64, via np.pad (independent of SciPy)."""
    m = np.asarray(m, dtype=np.float64)
    img = np.asarray(img, dtype=np.float64)
    H, W = m.shape
    cy, cx = H // 2, W // 2
    h, w = img.shape
    kw = {"constant_values": value} if border == "constant" else {}
    P = np.pad(img, ((H, H), (W, W)), mode=NP_PAD_MODE[border], **kw)
    out = np.zeros_like(img)
    for j in range(H):
        for i in range(W):
            dy, dx = (cy - j, cx - i) if convolve else (j - cy, i - cx)
            out += m[j, i] * P[H + dy : H + dy + h, W + dx : W + dx + w]
    return out


def per_channel(fn, img: np.ndarray) -> np.ndarray:
    """Applies a 2-D reference to each channel of an H x W x C image."""
    if img.ndim == 2:
        return fn(img)
    return np.stack([fn(img[..., c]) for c in range(img.shape[2])], axis=-1)


def assert_f32_close(got: np.ndarray, expected: np.ndarray, bound: float, what: str = ""):
    """SPEC.md: float results within 1e-5 relative to `bound` = |scale| * sum|m| * max|in| (+ a tiny
    absolute term for the final float32 rounding)."""
    assert got.dtype == np.float32, got.dtype
    assert got.shape == expected.shape, (got.shape, expected.shape)
    exp = np.asarray(expected, dtype=np.float64)
    tol = 1e-5 * bound + 1e-6 + 2 ** -23 * np.abs(exp)
    err = np.abs(got.astype(np.float64) - exp)
    bad = err > tol
    if bad.any():
        idx = np.unravel_index(np.argmax(err - tol), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} pixels off; worst at {idx}: got {got[idx]!r}, "
            f"expected {exp[idx]!r} (|diff| {err[idx]:.3g} > tol {np.broadcast_to(tol, err.shape)[idx]:.3g})"
        )


def assert_equal_images(got: np.ndarray, expected: np.ndarray, what: str = "", max_diff: int = 0):
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    diff = np.abs(got.astype(np.int64) - expected.astype(np.int64)) if got.dtype != np.float32 else np.abs(
        got.astype(np.float64) - expected.astype(np.float64)
    )
    bad = diff > max_diff
    if bad.any():
        idx = np.unravel_index(np.argmax(diff), diff.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {diff.size} pixels differ by more than {max_diff}; worst at {idx}: "
            f"got {got[idx]!r}, expected {expected[idx]!r}"
        )


def leftovers(directory: Path) -> list[str]:
    """apron's temporary files ('.NAME.apron-tmp-XXXXXX') left in `directory`."""
    return sorted(p.name for p in Path(directory).iterdir() if re.search(r"apron-tmp", p.name))


def peak_rss_of(args, timeout=120) -> tuple[int, subprocess.CompletedProcess]:
    """Runs apron with `args` in a fresh process; returns (its peak resident memory in bytes, the result).
    Through a small Python process of its own: a child's maximum resident set counts the memory of the
    process it was forked from (Linux records the old image's peak at exec), so a child of pytest itself
    would report pytest's size."""
    code = (
        "import json, resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(json.dumps({'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,"
        " 'rc': r.returncode, 'err': r.stderr}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(APRON_PATH), *map(str, args)], capture_output=True,
                         text=True, timeout=timeout, check=True)
    d = json.loads(out.stdout)
    return d["rss"], subprocess.CompletedProcess(args, d["rc"], "", d["err"])


def mpi_skip_reason() -> str | None:
    """Why MPI tests cannot run here (no mpirun, or apron built without MPI), or None."""
    if shutil.which("mpirun") is None:
        return "mpirun is not on PATH"
    if APRON_PATH is None:
        return None
    try:
        ldd = subprocess.run(["ldd", str(APRON_PATH)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None  # cannot tell: run the test
    if "libmpi" not in ldd:
        return f"{APRON_PATH} is not linked with MPI (built without libopenmpi-dev)"
    return None


def mpi_env() -> dict:
    """The environment for mpirun (Open MPI refuses root without these)."""
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
