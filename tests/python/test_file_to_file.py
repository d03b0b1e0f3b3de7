"""File to file at the storage bound (issue 30, item 5): `apron filter` reads binary PNM/PFM rows straight into
the image and writes them straight from it, and `--stream auto` streams a large PNM/PFM in bands even when it
fits in memory. Every path gives the same bytes: the whole-image run (--stream off), the streamed one
(--stream on) and the automatic choice; odd sizes, 1-pixel images, u8/u16/f32, 3 channels. `--timing` and
`--plan` say which path ran. Truncated or corrupt input gives one line naming the file and leaves no output,
no temporary or partial file and no journal, on every path, as does an interrupted automatic run."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import APRON_PATH, peak_rss_of, random_image, read_pfm, read_pnm, write_pfm, write_pnm

MIB = 1 << 20
# stream/faster_streamed.hpp: images of this many bytes or more are streamed for speed.
STREAM_ABOVE = 32 * MIB
OPS = ["gaussian:sigma=2", "box:width=5", "dilate:se=rect:9x9"]


def filter_args(src, dst, ops, *extra):
    args = ["filter", src, dst, "--backend", "cpu"]
    for op in [ops] if isinstance(ops, str) else ops:
        args += ["--op", op]
    return args + [str(e) for e in extra]


def everything_but(directory: Path, *keep: str) -> list[str]:
    """Files in `directory` other than `keep`: outputs, temporaries, partial files, journals, locks."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name not in keep)


def write_any(path: Path, a: np.ndarray):
    (write_pfm if a.dtype == np.float32 else write_pnm)(path, a)


def read_any(path: Path) -> np.ndarray:
    return read_pfm(path) if str(path).endswith(".pfm") else read_pnm(path)


def ext_of(a: np.ndarray) -> str:
    return ".pfm" if a.dtype == np.float32 else ".pgm" if a.ndim == 2 else ".ppm"


# Large images, each just over STREAM_ABOVE bytes, with an odd width (padded rows in memory) where it can.
LARGE = {
    "u8": ((8200, 4099), np.uint8),
    "u16": ((5800, 2901), np.uint16),
    "f32": ((4100, 2049), np.float32),
    "rgb": ((4100, 2731, 3), np.uint8),
}


@pytest.fixture(scope="module")
def large_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("large")
    paths = {}
    for name, (shape, dtype) in LARGE.items():
        a = random_image(shape, dtype, 30 + len(paths))
        assert a.nbytes >= STREAM_ABOVE
        p = d / f"in-{name}{ext_of(a)}"
        write_any(p, a)
        paths[name] = p
    return paths


@pytest.mark.parametrize("name", list(LARGE))
def test_whole_streamed_and_automatic_runs_write_the_same_bytes(apron, tmp_path, large_inputs, name):
    src = large_inputs[name]
    ext = src.suffix
    ops = OPS if name == "u8" else OPS[:1]
    for op in ops:
        outs = {}
        for mode in ("off", "on", "auto"):
            out = tmp_path / f"{mode}{ext}"
            r = apron.run(*filter_args(src, out, op, "--stream", mode, "--timing"))
            # --timing says which path ran: on the total's line, or on the streamed run's line.
            lines = r.stderr.splitlines()
            if mode == "off":
                assert "ms  total (whole image: asked for (--stream off))" in lines[-1], r.stderr
            else:
                streamed = [line for line in lines if " ms  streamed in " in line]
                assert len(streamed) == 1, r.stderr
                why = "; asked for" if mode == "on" else "; the image is"
                assert why in streamed[0], r.stderr
            outs[mode] = out.read_bytes()
        assert outs["off"] == outs["on"], f"{name} {op}: --stream on differs from the whole-image run"
        assert outs["off"] == outs["auto"], f"{name} {op}: the automatic choice differs from the whole-image run"
        assert everything_but(tmp_path, *(f"{m}{ext}" for m in outs)) == []


def test_identity_keeps_every_sample_of_a_large_file(apron, tmp_path, large_inputs):
    # box:width=1 is the identity: the readers and writers alone, against our own PNM/PFM codec.
    for name in ("u16", "f32", "rgb"):
        src = large_inputs[name]
        original = read_any(src)
        for mode in ("off", "auto"):
            out = tmp_path / f"id-{mode}{src.suffix}"
            apron.run(*filter_args(src, out, "box:width=1", "--stream", mode))
            got = read_any(out)
            assert got.dtype == original.dtype and got.shape == original.shape
            assert np.array_equal(got.view(np.uint8), original.view(np.uint8)), f"{name} --stream {mode}"


def test_plan_says_which_path_runs(apron, tmp_path, large_inputs):
    src = large_inputs["u8"]
    r = apron.run(*filter_args(src, tmp_path / "o.pgm", "gaussian:sigma=2", "--plan"))
    assert r.stdout.startswith("streamed: the image is") and "bands of" in r.stdout, r.stdout
    # Just below the threshold: whole.
    small = tmp_path / "small.pgm"
    write_pnm(small, random_image((STREAM_ABOVE // 4096 - 1, 4096), np.uint8, 3))
    r = apron.run(*filter_args(small, tmp_path / "o.pgm", "gaussian:sigma=2", "--plan"))
    assert "streamed" not in r.stdout, r.stdout
    # A TIFF, PNG or JPEG output is written whole (a streamed TIFF is tiled BigTIFF, not the same file).
    r = apron.run(*filter_args(src, tmp_path / "o.png", "gaussian:sigma=2", "--plan"))
    assert "streamed" not in r.stdout, r.stdout
    # A halo too tall for four bands of four times its height: whole.
    r = apron.run(*filter_args(src, tmp_path / "o.pgm", "box:width=1,height=1001", "--plan"))
    assert "streamed" not in r.stdout, r.stdout
    # --auto-orient needs the whole image: it runs whole rather than refusing.
    r = apron.run(*filter_args(src, tmp_path / "o.pgm", "gaussian:sigma=2", "--plan", "--auto-orient"))
    assert "streamed" not in r.stdout, r.stdout
    assert everything_but(tmp_path, "small.pgm") == []


SMALL_SHAPES = [((1, 1), np.uint8), ((1, 1, 3), np.uint16), ((1, 1), np.float32), ((1, 1, 3), np.float32),
                ((1, 17), np.uint8), ((23, 1), np.uint16), ((31, 67), np.uint8), ((45, 129, 3), np.uint16),
                ((9, 1025), np.float32), ((130, 70, 3), np.uint8)]


@pytest.mark.parametrize("shape,dtype", SMALL_SHAPES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else np.dtype(v).name)
def test_small_and_odd_images_on_every_path(apron, tmp_path, shape, dtype):
    a = random_image(shape, dtype, 7)
    src = tmp_path / f"in{ext_of(a)}"
    write_any(src, a)
    for op in ("box:width=1", "gaussian:sigma=1"):
        outs = {}
        for mode in ("off", "on", "auto"):
            out = tmp_path / f"{mode}{src.suffix}"
            apron.run(*filter_args(src, out, op, "--stream", mode))
            outs[mode] = out.read_bytes()
        assert outs["off"] == outs["on"] == outs["auto"], op
        if op == "box:width=1":
            got = read_any(tmp_path / f"off{src.suffix}")
            assert np.array_equal(got.view(np.uint8), a.view(np.uint8))
    assert everything_but(tmp_path, src.name, *(f"{m}{src.suffix}" for m in ("off", "on", "auto"))) == []


def test_big_endian_pfm_and_little_endian_pgm_input(apron, tmp_path):
    a = random_image((37, 53), np.float32, 4)
    src = tmp_path / "be.pfm"
    write_pfm(src, a, little_endian=False)
    apron.run(*filter_args(src, tmp_path / "o.pfm", "box:width=1"))
    assert np.array_equal(read_pfm(tmp_path / "o.pfm").view(np.uint32), a.view(np.uint32))
    b = random_image((11, 13), np.uint16, 5)
    le = tmp_path / "le.pgm"
    le.write_bytes(b"P5\n13 11\n65535\n" + b.astype("<u2").tobytes())
    apron.run(*filter_args(le, tmp_path / "o.pgm", "box:width=1", "--byte-order", "little"))
    assert np.array_equal(read_pnm(tmp_path / "o.pgm"), b)


def _bad_files(large: bool):
    """(name, bytes, what the one-line error must say) for truncated and corrupt PNM/PFM files."""
    h, w = (8200, 4099) if large else (40, 33)
    body = np.full((h, w), 7, np.uint8)
    good = f"P5\n{w} {h}\n255\n".encode() + body.tobytes()
    deep_bad = bytearray(f"P5\n{w} {h}\n200\n".encode() + body.tobytes())
    deep_bad[-w * (h // 2)] = 201  # a sample above the maxval half way down
    pfm = f"Pf\n{w} {h}\n-1\n".encode() + np.zeros((h, w), "<f4").tobytes()
    return [
        ("short.pgm", good[:-1], "truncated PNM file"),
        ("header-only.pgm", good[: good.index(b"255\n") + 4], "truncated PNM file"),
        ("no-maxval.pgm", f"P5\n{w} {h}\n".encode(), "truncated PNM file"),
        ("maxval.pgm", bytes(deep_bad), "larger than the maxval 200"),
        ("short.pfm", pfm[:-3], "truncated PFM file"),
        ("scale.pfm", pfm.replace(b"-1\n", b"xx\n", 1), "malformed PFM file"),
        ("empty.pgm", b"", "empty file"),
    ]


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_bad_input_gives_one_line_naming_the_file_and_leaves_nothing(apron, tmp_path, large):
    for name, data, fragment in _bad_files(large):
        src = tmp_path / name
        src.write_bytes(data)
        out_name = "o" + Path(name).suffix
        for mode in ("off", "on", "auto"):
            r = apron.run(*filter_args(src, tmp_path / out_name, "gaussian:sigma=2", "--stream", mode), check=False)
            assert r.returncode == 1, (name, mode, r.stderr)
            assert r.stderr.count("\n") == 1 and str(src) in r.stderr and fragment in r.stderr, (name, mode, r.stderr)
            assert everything_but(tmp_path, name) == [], (name, mode)
        src.unlink()


def test_an_interrupted_automatic_run_leaves_nothing(apron, tmp_path, large_inputs):
    # Twenty steps, so the run lasts a while; interrupted once its first band is written. A run apron chose to
    # stream is not resumable: its partial file goes, and no journal is kept (unlike --stream on).
    src = large_inputs["u8"]
    out = tmp_path / "o.pgm"
    args = [str(APRON_PATH)] + [str(x) for x in filter_args(src, out, ["gaussian:sigma=1"] * 20)]
    plan = subprocess.run(args + ["--plan"], capture_output=True, text=True, timeout=60)
    assert plan.stdout.startswith("streamed: the image is"), plan.stdout
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={**os.environ, "APRON_PROGRESS_SECONDS": "0"})
        first = p.stderr.readline()
        assert " rows (" in first, first
        p.send_signal(sig)
        p.wait(timeout=60)
        rest = p.stderr.read()
        assert p.returncode != 0, rest
        assert "--resume" not in rest, rest
        assert everything_but(tmp_path) == [], (sig, rest)


def test_memory_of_a_whole_run_is_its_input_and_output(apron, tmp_path, large_inputs):
    # The whole-image run holds the input and the result, not the file's bytes or an encoded copy besides
    # (it was three images); the automatic choice streams in less (bands of at most an eighth of
    # the image, about six in flight; 8 MiB bands of a 32 MiB image held about as much as the whole run).
    src = large_inputs["u8"]
    image = os.path.getsize(src)
    rss_off, r = peak_rss_of(filter_args(src, tmp_path / "o.pgm", "dilate:se=rect:9x9", "--stream", "off"))
    assert r.returncode == 0, r.stderr
    rss_auto, r = peak_rss_of(filter_args(src, tmp_path / "o.pgm", "dilate:se=rect:9x9"))
    assert r.returncode == 0, r.stderr
    assert rss_off < 2 * image + 40 * MIB, f"whole: {rss_off / MIB:.0f} MiB for a {image / MIB:.0f} MiB image"
    assert rss_auto < 2 * image, f"automatic: {rss_auto / MIB:.0f} MiB for a {image / MIB:.0f} MiB image"
