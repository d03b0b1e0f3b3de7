"""Images larger than memory: `apron filter` in bands with halos (--stream on, --band-rows) gives the same bits
as the whole-image run (--stream off) for every border mode, 1-4 channels, u8/u16/f32, pipelines of several
steps, bands that do not divide the image, 1-row bands and halos taller than a band; resumes after kill -9;
stays within --memory on an image four times larger; refuses bad input with one line naming the file or
option.

Both runs' results are compared as raw samples: the whole-image result (a TIFF) is turned into raw samples by a
streamed identity (box:width=1), which is checked against an independent reading first."""
from __future__ import annotations

import os
import resource
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import RUN_TIMEOUT_S, peak_rss_of, random_image, write_pnm

DTYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}


def write_tiff(path, a: np.ndarray):
    """An uncompressed little-endian TIFF, one strip, samples interleaved: 1-4 channels, u8/u16/f32."""
    a = np.ascontiguousarray(a)
    h, w = a.shape[:2]
    c = 1 if a.ndim == 2 else a.shape[2]
    bits = a.dtype.itemsize * 8
    fmt = 3 if a.dtype == np.float32 else 1
    data = a.astype(a.dtype.newbyteorder("<")).tobytes()
    entries = [(256, 4, 1, w), (257, 4, 1, h), (258, 3, c, None), (259, 3, 1, 1), (262, 3, 1, 2 if c >= 3 else 1),
               (273, 4, 1, None), (277, 3, 1, c), (278, 4, 1, h), (279, 4, 1, len(data)), (284, 3, 1, 1)]
    if c in (2, 4):
        entries.append((338, 3, 1, 2))
    entries.append((339, 3, c, None))
    ifd_at = 8
    extra_at = ifd_at + 2 + 12 * len(entries) + 4
    shorts = lambda v: struct.pack("<" + "H" * c, *([v] * c))
    extras = {258: shorts(bits), 339: shorts(fmt)}
    extra_blob, extra_pos = b"", {}
    for tag in (258, 339):
        if c > 2:
            extra_pos[tag] = extra_at + len(extra_blob)
            extra_blob += extras[tag]
    data_at = extra_at + len(extra_blob)
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, value in entries:
        if tag == 273:
            value = data_at
        if tag in (258, 339):
            raw = extras[tag] if c <= 2 else struct.pack("<I", extra_pos[tag])
            ifd += struct.pack("<HHI", tag, typ, count) + raw.ljust(4, b"\0")
        elif typ == 3:
            ifd += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            ifd += struct.pack("<HHII", tag, typ, count, value)
    Path(path).write_bytes(b"II*\0" + struct.pack("<I", ifd_at) + ifd + struct.pack("<I", 0) + extra_blob + data)


@pytest.fixture()
def needs_tiff(apron):
    """The comparison reads TIFF (the whole-image run's 2- and 4-channel and f32 results): libtiff is optional."""
    if "tiff" not in apron.run("info").stdout.split("image formats:")[-1].split("\n")[0]:
        pytest.skip("this apron reads no TIFF (built without libtiff)")


def run(apron, *args, check=True):
    return apron.run("filter", *args, check=check)


def streamed_raw(apron, tmp_path, src, ops, extra=(), name="s"):
    out = tmp_path / f"{name}.raw"
    args = [src, out, "--stream", "on"] + [a for op in ops for a in ("--op", op)] + list(extra)
    run(apron, *args)
    return out.read_bytes()


def whole_raw(apron, tmp_path, src, ops, extra=(), name="w"):
    tif = tmp_path / f"{name}.tif"
    run(apron, src, tif, "--stream", "off", *[a for op in ops for a in ("--op", op)], *extra)
    return streamed_raw(apron, tmp_path, tif, ["box:width=1"], name=name + "_raw")


def assert_same(apron, tmp_path, img, ops, band_rows, extra=()):
    src = tmp_path / "in.tif"
    write_tiff(src, img)
    want = whole_raw(apron, tmp_path, src, ops, extra)
    got = streamed_raw(apron, tmp_path, src, ops, ["--band-rows", str(band_rows), *extra])
    assert len(got) == len(want)
    if got != want:
        w, g = np.frombuffer(want, img.dtype), np.frombuffer(got, img.dtype)
        bad = np.flatnonzero(w != g)
        row = bad[0] // (len(w) // img.shape[0])
        pytest.fail(f"{ops} with {band_rows}-row bands: {bad.size} samples differ, the first in row {row}")


def test_the_raw_comparison_reads_what_was_written(apron, tmp_path, needs_tiff):
    """The check of the comparison itself: a TIFF written here, turned into raw samples, is its own bytes."""
    for dtype, c in ((np.uint8, 3), (np.uint16, 2), (np.float32, 4), (np.float32, 1)):
        img = random_image((13, 9, c) if c > 1 else (13, 9), dtype, seed=c)
        write_tiff(tmp_path / "a.tif", img)
        assert streamed_raw(apron, tmp_path, tmp_path / "a.tif", ["box:width=1"]) == img.astype(img.dtype.newbyteorder("=")).tobytes()


@pytest.mark.parametrize("border", ["constant", "nearest", "reflect", "mirror", "wrap"])
def test_every_border_mode_gives_the_whole_images_bits(apron, tmp_path, border, needs_tiff):
    img = random_image((61, 47, 3), np.uint8, seed=11)
    assert_same(apron, tmp_path, img, [f"gaussian:sigma=2,border={border}", f"dilate:se=disk:3,border={border}"], 5)


@pytest.mark.parametrize("type_name", ["u8", "u16", "f32"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_types_and_channels(apron, tmp_path, type_name, channels, needs_tiff):
    """An even-sized random mask (asymmetric anchor) and an element with border none, bands of 3 rows."""
    dtype = DTYPES[type_name]
    shape = (37, 23) if channels == 1 else (37, 23, channels)
    img = random_image(shape, dtype, seed=7 + channels)
    mask = tmp_path / "m.txt"
    rng = np.random.default_rng(channels)
    m = rng.uniform(-1, 1, (6, 4))
    mask.write_text("4 6\n" + "\n".join(" ".join(repr(float(v)) for v in row) for row in m) + "\n")
    assert_same(apron, tmp_path, img, [f"correlate:mask={mask},border=mirror", "erode:se=rect:3x5"], 3,
                extra=["--out-type", "f32"] if type_name != "f32" else [])


def test_one_row_bands_and_halos_taller_than_a_band(apron, tmp_path, needs_tiff):
    img = random_image((29, 31), np.uint16, seed=5)
    assert_same(apron, tmp_path, img, ["gaussian:sigma=3,border=wrap", "close:se=ellipse:5x7,border=reflect"], 1)


def test_combining_operations_and_wrap_followed_by_reflect(apron, tmp_path, needs_tiff):
    img = random_image((53, 40, 3), np.float32, seed=9)
    assert_same(apron, tmp_path, img, ["unsharp:sigma=1.5,border=wrap", "tophat:se=disk:2", "gradient:se=cross:3x3",
                                       "box:width=4,height=6,border=reflect"], 4)


def test_an_image_shorter_than_the_halo(apron, tmp_path, needs_tiff):
    img = random_image((5, 40), np.uint8, seed=3)
    for border in ("wrap", "reflect"):
        assert_same(apron, tmp_path, img, [f"gaussian:sigma=4,border={border}"], 2)


def random_mask_file(path, width, height, seed):
    m = np.random.default_rng(seed).uniform(-1, 1, (height, width))
    path.write_text(f"{width} {height}\n" + "\n".join(" ".join(repr(float(v)) for v in row) for row in m) + "\n")
    return path


@pytest.mark.parametrize("border", ["constant", "nearest", "reflect", "mirror", "wrap"])
def test_float_fft_steps_give_the_whole_images_bits(apron, tmp_path, border, needs_tiff, monkeypatch):
    """A float FFT step's rounding depends on every sample of its overlap-save tile: bands run the whole image's
    tiles (32 x 32 forced, so a small image has many rows of them and a band's halo crosses several). u8 samples
    (each tile centred on its own range), three channels, two FFT steps around a morphology step, bands of 17
    rows that do not divide the image."""
    monkeypatch.setenv("APRON_FFT_SIDE", "32")
    img = random_image((331, 45, 3), np.uint8, seed=23)
    mask = random_mask_file(tmp_path / "m.txt", 9, 11, 24)
    step = f"correlate:mask={mask},border={border}" + (",value=3" if border == "constant" else "")
    assert_same(apron, tmp_path, img, [step, "dilate:se=disk:2", step], 17, extra=["--algo", "fft", "--out-type", "f32"])


@pytest.mark.parametrize("type_name,channels", [("u16", 1), ("f32", 4)])
def test_float_fft_steps_on_sixteen_bits_and_floats_with_a_nan(apron, tmp_path, type_name, channels, needs_tiff, monkeypatch):
    """u16 samples, and an f32 image holding a NaN and an infinity, whose tiles are summed directly in every
    band that runs them (the decision is the tile's, not the band's)."""
    monkeypatch.setenv("APRON_FFT_SIDE", "32")
    shape = (257, 38) if channels == 1 else (257, 38, channels)
    img = random_image(shape, DTYPES[type_name], seed=25)
    if type_name == "f32":
        img[120, 7, 1] = np.nan
        img[30, 30, 3] = np.inf
    mask = random_mask_file(tmp_path / "m.txt", 12, 10, 26)
    assert_same(apron, tmp_path, img, [f"correlate:mask={mask},border=reflect", f"convolve:mask={mask},border=wrap"], 23,
                extra=["--algo", "fft"])


def test_tiff_input_and_tiled_bigtiff_output(apron, tmp_path, needs_tiff):
    """A streamed tiled BigTIFF (tiles of 16) read back by the whole-image reader, and a tiled input."""
    img = random_image((45, 70, 3), np.uint16, seed=21)
    src = tmp_path / "in.tif"
    write_tiff(src, img)
    ops = ["--op", "gaussian:sigma=1.5", "--op", "dilate:se=disk:2"]
    run(apron, src, tmp_path / "tiled.tif", "--stream", "on", "--band-rows", "7", "--tile", "16", *ops)
    data = (tmp_path / "tiled.tif").read_bytes()
    assert data[:4] == b"II+\0"  # BigTIFF
    back = streamed_raw(apron, tmp_path, tmp_path / "tiled.tif", ["box:width=1"], name="b")
    assert back == whole_raw(apron, tmp_path, src, ops[1::2], name="w2")
    # The tiled file as input, streamed again in bands that cut its tiles.
    assert streamed_raw(apron, tmp_path, tmp_path / "tiled.tif", ["erode:se=disk:3"], ["--band-rows", "5"], "c") == \
        whole_raw(apron, tmp_path, tmp_path / "tiled.tif", ["erode:se=disk:3"], name="w3")


def test_raw_input(apron, tmp_path, needs_tiff):
    img = random_image((33, 21, 2), np.float32, seed=2)
    (tmp_path / "in.raw").write_bytes(img.astype("<f4").tobytes())
    write_tiff(tmp_path / "in.tif", img)
    got = streamed_raw(apron, tmp_path, tmp_path / "in.raw", ["sobel:dx=1"], ["--raw", "21x33x2:f32", "--band-rows", "4"])
    assert got == whole_raw(apron, tmp_path, tmp_path / "in.tif", ["sobel:dx=1"])
    (tmp_path / "be.raw").write_bytes(img.astype(">f4").tobytes())
    assert streamed_raw(apron, tmp_path, tmp_path / "be.raw", ["sobel:dx=1"], ["--raw", "21x33x2:f32:big"], "be") == got


def test_auto_streams_when_the_whole_run_does_not_fit(apron, tmp_path):
    img = random_image((1200, 1000), np.uint8, seed=4)
    write_pnm(tmp_path / "in.pgm", img)
    plan = apron.run("filter", tmp_path / "in.pgm", tmp_path / "o.pgm", "--op", "gaussian:sigma=2", "--memory", "2M",
                     "--plan").stdout
    assert "streamed: the whole-image run would not fit" in plan and "bands of" in plan
    plan = apron.run("filter", tmp_path / "in.pgm", tmp_path / "o.pgm", "--op", "gaussian:sigma=2", "--plan").stdout
    assert "streamed" not in plan
    run(apron, tmp_path / "in.pgm", tmp_path / "o.pgm", "--op", "gaussian:sigma=2", "--memory", "2M")
    run(apron, tmp_path / "in.pgm", tmp_path / "w.pgm", "--op", "gaussian:sigma=2")
    assert (tmp_path / "o.pgm").read_bytes() == (tmp_path / "w.pgm").read_bytes()


def test_kill_9_then_resume_matches_an_uninterrupted_run(apron, tmp_path):
    img = random_image((1500, 1200), np.uint16, seed=8)
    write_pnm(tmp_path / "in.pgm", img)
    ops = ["--op", "gaussian:sigma=8", "--op", "dilate:se=disk:6"]
    base = [str(apron.path), "filter", str(tmp_path / "in.pgm"), str(tmp_path / "out.pgm"), *ops, "--stream", "on",
            "--band-rows", "4", "--threads", "1", "--algo", "direct"]
    journal = tmp_path / ".out.pgm.apron-journal"
    p = subprocess.Popen(base)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None:
        if journal.exists() and journal.read_text().count("band ") >= 5:
            break
        time.sleep(0.005)
    killed = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    if killed:
        assert (tmp_path / ".out.pgm.apron-partial").exists() and not (tmp_path / "out.pgm").exists()
        finished = journal.read_text().count("band ")
        assert 5 <= finished < 375
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", *ops, "--stream", "on", "--band-rows", "4",
                  "--algo", "direct", "--resume", "--timing")
    if killed:
        assert f"{finished} resumed" in r.stderr
    run(apron, tmp_path / "in.pgm", tmp_path / "whole.pgm", *ops, "--stream", "off", "--algo", "direct")
    assert (tmp_path / "out.pgm").read_bytes() == (tmp_path / "whole.pgm").read_bytes()
    assert not journal.exists() and not (tmp_path / ".out.pgm.apron-partial").exists()


def test_a_changed_pipeline_does_not_resume(apron, tmp_path):
    img = random_image((64, 50), np.uint8, seed=1)
    write_pnm(tmp_path / "in.pgm", img)
    partial, journal = tmp_path / ".out.pgm.apron-partial", tmp_path / ".out.pgm.apron-journal"
    partial.write_bytes(b"\xff" * 100)
    journal.write_text("apron-stream 1 something else\nband 0\nband 1\n")
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", "box:width=3", "--band-rows", "8",
                  "--resume", "--timing")
    assert " 0 resumed" in r.stderr
    run(apron, tmp_path / "in.pgm", tmp_path / "whole.pgm", "--op", "box:width=3")
    assert (tmp_path / "out.pgm").read_bytes() == (tmp_path / "whole.pgm").read_bytes()


def test_memory_stays_within_the_budget_on_an_image_four_times_larger(apron, tmp_path):
    """1 GiB of u8 pixels through gaussian then dilate with --memory 256M: the process's peak resident
    memory stays below the budget plus 64 MiB (the program, its libraries, thread stacks)."""
    side = 32768
    src = tmp_path / "big.raw"
    with open(src, "wb") as f:
        rng = np.random.default_rng(0)
        block = rng.integers(0, 256, (1024, side), dtype=np.uint8).tobytes()
        for _ in range(side // 1024):
            f.write(block)
    out = tmp_path / "big_out.raw"
    # The CPU backend: a CUDA context alone takes a few hundred MiB of host memory, outside any budget.
    peak, r = peak_rss_of(["filter", src, out, "--raw", f"{side}x{side}x1:u8", "--op", "gaussian:sigma=2",
                           "--op", "dilate:se=rect:5x5", "--memory", "256M", "--timing", "--backend", "cpu"])
    assert r.returncode == 0, r.stderr
    assert peak < (256 + 64) << 20, f"peak RSS {peak >> 20} MiB over 256M + 64 MiB: {r.stderr}"
    assert out.stat().st_size == side * side
    # Spot check: a band of the result against the whole-image run of the same rows with their halo.
    rows = slice(20000, 20016)
    with open(src, "rb") as f:
        f.seek((rows.start - 16) * side)  # a halo of 16 rows: more than gaussian's 8 and dilate's 2
        part = np.frombuffer(f.read((rows.stop - rows.start + 32) * side), np.uint8).reshape(-1, side)
    (tmp_path / "part.raw").write_bytes(part.tobytes())
    run(apron, tmp_path / "part.raw", tmp_path / "part_out.raw", "--raw", f"{side}x{part.shape[0]}x1:u8", "--op",
        "gaussian:sigma=2", "--op", "dilate:se=rect:5x5", "--backend", "cpu")
    want = np.frombuffer((tmp_path / "part_out.raw").read_bytes(), np.uint8).reshape(-1, side)[16:-16]
    with open(out, "rb") as f:
        f.seek(rows.start * side)
        got = np.frombuffer(f.read((rows.stop - rows.start) * side), np.uint8).reshape(-1, side)
    assert np.array_equal(got, want)
    os.remove(src)
    os.remove(out)


@pytest.mark.parametrize("args, message", [
    (["--raw", "10x10:u8"], "--raw: '10x10:u8': the size needs three numbers"),
    (["--raw", "10x10x5:u8"], "channels must be 1 to 4"),
    (["--raw", "10x10x1:u8:middle"], "'middle' is not little or big"),
    (["--raw", "10x11x1:u8"], "needs exactly 110"),
    (["--stream", "sometimes"], "--stream: 'sometimes' is not auto, on or off"),
    (["--stream", "off", "--resume"], "--resume: needs the streaming path"),
    (["--tile", "20", "--stream", "on"], "--tile: must be a multiple of 16"),
])
def test_bad_options_are_refused_in_one_line(apron, tmp_path, args, message):
    (tmp_path / "in.raw").write_bytes(bytes(100))
    out = tmp_path / "out.raw"
    extra = [] if "--raw" in args else ["--raw", "10x10x1:u8"]
    r = apron.run("filter", tmp_path / "in.raw", out, "--op", "box", *args, *extra, check=False)
    assert r.returncode != 0 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists() and not any(p.name.startswith(".out.raw") for p in tmp_path.iterdir())


def test_streamed_output_formats_and_truncated_inputs(apron, tmp_path):
    img = random_image((40, 30), np.uint8, seed=6)
    write_pnm(tmp_path / "in.pgm", img)
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "o.jpg", "--op", "box", "--stream", "on", check=False)
    assert r.returncode == 1 and "o.jpg: a streamed image is written as .tif" in r.stderr
    data = (tmp_path / "in.pgm").read_bytes()
    (tmp_path / "short.pgm").write_bytes(data[:-31])
    r = apron.run("filter", tmp_path / "short.pgm", tmp_path / "o.pgm", "--op", "box", "--stream", "on", check=False)
    assert r.returncode == 1 and "short.pgm: truncated PNM file" in r.stderr
    # A tiled TIFF cut inside its tiles: the tile's number and the file are named.
    if "tiff" not in apron.run("info").stdout:
        return
    run(apron, tmp_path / "in.pgm", tmp_path / "t.tif", "--op", "box", "--stream", "on", "--tile", "16")
    tif = (tmp_path / "t.tif").read_bytes()
    (tmp_path / "cut.tif").write_bytes(tif[:len(tif) - 300])
    r = apron.run("filter", tmp_path / "cut.tif", tmp_path / "o2.pgm", "--op", "box", "--stream", "on", check=False)
    assert r.returncode == 1 and "cut.tif" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o2.pgm").exists()


def test_a_full_disk_is_named_and_leaves_no_output(apron, tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the partial file cannot reach its size."""
    img = random_image((200, 300), np.uint8, seed=6)
    write_pnm(tmp_path / "in.pgm", img)

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    p = subprocess.run([str(apron.path), "filter", str(tmp_path / "in.pgm"), str(tmp_path / "o.pgm"), "--op", "box",
                        "--stream", "on"], capture_output=True, text=True, preexec_fn=small_files, timeout=RUN_TIMEOUT_S)
    assert p.returncode == 1 and "o.pgm" in p.stderr and "File too large" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "o.pgm").exists()
