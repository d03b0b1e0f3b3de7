"""Bad input, one test per kind (SPEC.md "Errors"): non-zero exit, a one-line message on stderr that names
the file or parameter, and no output file (nor temporary file) left behind."""
from pathlib import Path

import numpy as np
import pytest

from conftest import leftovers, random_image, write_mask, write_png_raw, write_pnm


def good_pgm(d: Path, name="in.pgm", shape=(23, 37), dtype=np.uint8) -> Path:
    p = d / name
    write_pnm(p, random_image(shape, dtype, seed=110))
    return p


def check_failure(r, out: Path, *names: str):
    msg = r.stderr.strip()
    assert r.returncode != 0, f"expected failure, got exit 0; stderr={r.stderr!r}"
    assert msg, "no message on stderr"
    assert len(msg.splitlines()) == 1, f"message must be one line, got:\n{r.stderr}"
    for n in names:
        assert n in msg, f"message does not name {n!r}: {msg!r}"
    assert not out.exists(), f"{out} exists after a failed run"
    if out.parent.is_dir():
        assert leftovers(out.parent) == [], f"temporary files left: {leftovers(out.parent)}"
    assert "internal error" not in msg, msg


def run_bad(apron, tmp_path, src, ops, *extra, out_name="out.pgm"):
    out = tmp_path / "outdir" / out_name
    out.parent.mkdir(exist_ok=True)
    args = ["filter", src, out]
    for op in [ops] if isinstance(ops, str) else ops:
        args += ["--op", op]
    return apron.run(*args, *extra, check=False), out


# ---- input files ----------------------------------------------------------------------------------------


def test_missing_input_file(apron, tmp_path):
    src = tmp_path / "does-not-exist.pgm"
    r, out = run_bad(apron, tmp_path, src, "box")
    check_failure(r, out, "does-not-exist.pgm")


def test_input_is_a_directory(apron, tmp_path):
    d = tmp_path / "a-directory.pgm"
    d.mkdir()
    r, out = run_bad(apron, tmp_path, d, "box")
    check_failure(r, out, "a-directory.pgm")


@pytest.mark.parametrize(
    "name,content",
    [
        ("garbage.pgm", bytes(range(256)) * 3),
        ("empty.png", b""),
        ("text.pgm", b"hello, this is not an image\n"),
        ("badheader.pgm", b"P5\nabc def\n255\n" + bytes(64)),
        ("zero.pgm", b"P5\n0 5\n255\n"),
        ("maxval.pgm", b"P5\n2 2\n70000\n" + bytes(8)),
        ("badpng.png", b"\x89PNG\r\n\x1a\n" + bytes(range(100))),
        ("badjpeg.jpg", b"\xff\xd8\xff\xe0" + bytes(200)),
        ("badpfm.pfm", b"Pf\n4 4\nnotanumber\n" + bytes(64)),
        ("zeroscale.pfm", b"Pf\n2 2\n0\n" + bytes(16)),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_garbage_input(apron, tmp_path, name, content):
    src = tmp_path / name
    src.write_bytes(content)
    r, out = run_bad(apron, tmp_path, src, "box")
    check_failure(r, out, name)


@pytest.mark.parametrize("fmt", ["pgm16", "ppm", "pfm", "png", "jpg"])
def test_truncated_input(apron, tmp_path, fmt):
    import cv2

    img = random_image((23, 37, 3), np.uint8, seed=111)
    if fmt == "pgm16":
        src = tmp_path / "cut.pgm"
        write_pnm(src, random_image((23, 37), np.uint16, seed=111))
    elif fmt == "ppm":
        src = tmp_path / "cut.ppm"
        write_pnm(src, img)
    elif fmt == "pfm":
        src = tmp_path / "cut.pfm"
        src.write_bytes(b"Pf\n37 23\n-1\n" + bytes(4 * 37 * 23))
    else:
        src = tmp_path / f"cut.{fmt}"
        assert cv2.imwrite(str(src), img)
    data = src.read_bytes()
    src.write_bytes(data[: len(data) * 2 // 3])
    # An output that can hold the input's type: the output format is checked from the header first.
    r, out = run_bad(apron, tmp_path, src, "box", out_name="out.pfm" if fmt == "pfm" else "out.pgm")
    check_failure(r, out, src.name)


def test_truncated_pgm_by_one_byte(apron, tmp_path):
    src = good_pgm(tmp_path, "short.pgm")
    src.write_bytes(src.read_bytes()[:-1])
    r, out = run_bad(apron, tmp_path, src, "box")
    check_failure(r, out, "short.pgm")


def test_image_over_max_pixels(apron, tmp_path):
    src = good_pgm(tmp_path, "big.pgm")  # 37 x 23 = 851 pixels
    r, out = run_bad(apron, tmp_path, src, "box", "--max-pixels", "850")
    check_failure(r, out, "big.pgm")
    r2, out2 = run_bad(apron, tmp_path, src, "box", "--max-pixels", "851", out_name="fits.pgm")
    assert r2.returncode == 0 and out2.exists(), r2.stderr


# ---- operations and masks -------------------------------------------------------------------------------


def test_unknown_op(apron, tmp_path):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "blurr:sigma=1")
    check_failure(r, out, "blurr")


def test_unknown_op_in_second_position(apron, tmp_path):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), ["box", "nosuchop"])
    check_failure(r, out, "nosuchop")


@pytest.mark.parametrize(
    "op,param",
    [
        ("gaussian:sigma=-1", "sigma"),
        ("gaussian:sigma=0", "sigma"),
        ("gaussian:sigma=abc", "sigma"),
        ("gaussian", "sigma"),  # required
        ("gaussian:sigma=1,radius=1.5", "radius"),
        ("gaussian:sigma=1,bogus=2", "bogus"),
        ("gaussian:sigma=1,sigma=2", "sigma"),
        ("gaussian:sigma=nan", "sigma"),
        ("box:width=0", "width"),
        ("box:width=3,height=-2", "height"),
        ("box:width", "width"),
        ("sobel:ksize=4", "ksize"),
        ("sobel:dx=0,dy=0", "dx"),
        ("sobel:dx=3", "dx"),
        ("scharr:dx=1,dy=1", "dx"),
        ("laplacian:neighbours=6", "neighbours"),
        ("box:border=bogus", "border"),
        ("sharpen:strength=-1", "strength"),
        ("xf-sharpen:alpha=1", "alpha"),
        ("xf-lowpass:alpha=0", "alpha"),
        ("separable:row=1:x:1", "row"),
        ("dilate:se=hexagon:3x3", "se"),
        ("dilate:se=rect:0x3", "se"),
        ("dilate:se=rect:3xq", "se"),
        ("erode:iterations=0", "iterations"),
        ("open:border=sideways", "border"),
        ("unsharp:sigma=1,amount=-1", "amount"),
        ("emboss:scale=inf", "scale"),
    ],
)
def test_bad_op_parameter(apron, tmp_path, op, param):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), op)
    check_failure(r, out, param)


# Every parameter is checked against the range `apron ops` shows, in one strict syntax; the message is
# exactly one line naming the op spec and the parameter.
OP_MESSAGES = [
    # limits narrowed to what the builders can make
    ("gaussian:sigma=683", "sigma: 683 is out of range (must be > 0 and <= 682)"),
    ("unsharp:sigma=1000", "sigma: 1000 is out of range (must be > 0 and <= 682)"),
    ("gaussian:sigma=1,radius=2049", "radius: 2049 is out of range (must be 0..2048)"),
    ("xf-lowpass:alpha=1e-320", "alpha: 1e-320 is out of range (must be 1e-30..1e+12)"),
    ("box:scale=1e39", "scale: 1e39 is out of range (must be -3.4e+38..3.4e+38)"),
    ("dilate:border=constant,value=-1e39", "value: -1e39 is out of range (must be -3.4e+38..3.4e+38)"),
    ("separable:row=1e200,column=1e200", "row: 1e200 is out of range (each number must be -3.4e+38..3.4e+38)"),
    # empty fields in vectors
    ("separable:row=1::2", "row: number 2 of '1::2' is empty (expected numbers separated by ':', e.g. 1:2:1)"),
    ("separable:row=:1", "row: number 1 of ':1' is empty (expected numbers separated by ':', e.g. 1:2:1)"),
    ("separable:row=1:", "row: number 2 of '1:' is empty (expected numbers separated by ':', e.g. 1:2:1)"),
    ("separable:row=1;;2", "row: number 2 of '1;;2' is empty (expected numbers separated by ':', e.g. 1:2:1)"),
    ("separable:row=", "row: empty value (expected numbers separated by ':', e.g. 1:2:1)"),
    # numbers: plain decimals only
    ("separable:row=1 2 1", "row: '1 2 1' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("separable:row=+1:2", "row: '+1' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("gaussian:sigma=0x1p1", "sigma: '0x1p1' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("gaussian:sigma=inf", "sigma: 'inf' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("gaussian:sigma=nan", "sigma: 'nan' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("gaussian:sigma=1e999", "sigma: '1e999' is not a finite number (beyond the double range)"),
    ("gaussian:sigma= 1", "sigma: ' 1' is not a finite number (write a decimal such as 3, -0.5 or 1e-3)"),
    ("gaussian:sigma=", "sigma: empty value (expected a number)"),
    # integers: digits only
    ("box:width=3.0", "width: '3.0' is not an integer"),
    ("box:width=+3", "width: '+3' is not an integer"),
    ("dilate:iterations=1e1", "iterations: '1e1' is not an integer"),
    ("box:width=99999999999", "width: 99999999999 is out of range (must be 1..4097)"),
    # structuring elements
    ("dilate:se=rect:3x", "se: structuring element 'rect:3x': expected WxH or N (e.g. rect:5x3, rect:5)"),
    ("dilate:se=rect:x3", "se: structuring element 'rect:x3': expected WxH or N (e.g. rect:5x3, rect:5)"),
    ("dilate:se=ellipse:3x3x3", "se: structuring element 'ellipse:3x3x3': expected WxH or N (e.g. rect:5x3, rect:5)"),
    ("dilate:se=cross:3x 3", "se: structuring element 'cross:3x 3': expected WxH or N (e.g. rect:5x3, rect:5)"),
    ("dilate:se=rect:+3x3", "se: structuring element 'rect:+3x3': expected WxH or N (e.g. rect:5x3, rect:5)"),
    ("dilate:se=rect:4098x1", "se: structuring element 'rect:4098x1': sides must be 1..4097"),
    ("dilate:se=disk:3x5", "se: structuring element 'disk:3x5': expected a radius R (disk:R; ellipse:WxH for other sizes)"),
    ("dilate:se=disk:-1", "se: structuring element 'disk:-1': expected a radius R (disk:R; ellipse:WxH for other sizes)"),
    ("dilate:se=disk:2049",
     "se: structuring element 'disk:2049': the radius must be 0..2048 (the disk is (2R+1)x(2R+1), at most 4097x4097)"),
]


@pytest.mark.parametrize("op,message", OP_MESSAGES, ids=[op for op, _ in OP_MESSAGES])
def test_op_parameter_message(apron, tmp_path, op, message):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), op)
    check_failure(r, out, op)
    assert r.returncode == 1, r.returncode
    assert r.stderr.strip() == f"apron: --op {op}: {message}"


@pytest.mark.parametrize("sigma", ["1e-300", "1e-320", "5e-324"])
def test_tiny_sigma_is_the_identity(apron, tmp_path, sigma):
    """The Gaussian's limit as sigma -> 0 is the unit impulse: the image comes back unchanged (it used to
    fail with 'mask: weight is not a finite number')."""
    img = random_image((23, 37), np.uint8, seed=114)
    got = apron.filter(tmp_path, img, f"gaussian:sigma={sigma}")
    np.testing.assert_array_equal(got, img)
    got = apron.filter(tmp_path, img, f"unsharp:sigma={sigma},amount=3")
    np.testing.assert_array_equal(got, img)


@pytest.mark.parametrize("op", ["gaussian:sigma=682", "unsharp:sigma=682", "gaussian:sigma=1,radius=2048",
                                "separable:row=1;2;1", "dilate:se=disk:0", "xf-lowpass:alpha=1e-30"])
def test_largest_and_smallest_advertised_values_run(apron, tmp_path, op):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path, shape=(5, 7)), op)
    assert r.returncode == 0 and out.exists(), r.stderr


def test_missing_mask_file(apron, tmp_path):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), f"correlate:mask={tmp_path / 'no-such.kernel'}")
    check_failure(r, out, "no-such.kernel")


def test_missing_se_file(apron, tmp_path):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), f"dilate:se={tmp_path / 'no-such.se'}")
    check_failure(r, out, "no-such.se")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "3 3\n1 2 3\n4 5 6\n",  # a row missing
        "3 2\n1 2 3\n4 5\n",  # a short row
        "2 2\n1 2\n3 4 5\n",  # a long row
        "2 2\n1 x\n3 4\n",  # not a number
        "2 2\n1 nan\n3 4\n",
        "2 2\n1 inf\n3 4\n",
        "a b\n1\n",  # bad header
        "2\n1 2\n",  # header with one number
        "0 3\n",  # zero size
        "2.5 1\n1 2\n",  # fractional size
        "2 1\n1 2\n3 4\n",  # an extra row
        "1 1\n1\0\n",  # binary
        "2 1\n+1 2\n",  # numbers as in op parameters: no '+', hexadecimal or overflow
        "2 1\n0x10 2\n",
        "2 1\n1 1e999\n",
        "3.0 1\n1 2 3\n",  # the size: digits only
        "+2 1\n1 2\n",
    ],
    ids=["empty", "comment-only", "missing-row", "short-row", "long-row", "not-number", "nan", "inf",
         "bad-header", "one-number-header", "zero-size", "fractional-size", "extra-row", "nul-byte",
         "plus-sign", "hex", "overflow", "decimal-size", "plus-size"],
)
def test_malformed_mask_file(apron, tmp_path, text):
    mask = tmp_path / "broken.kernel"
    mask.write_text(text)
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), f"correlate:mask={mask}")
    check_failure(r, out, "broken.kernel")


@pytest.mark.parametrize("weights", [[[0, 2, 0]], [[0, 0], [0, 0]], [[1, -1]], [[0.5, 1]]], ids=["two", "empty", "neg", "half"])
def test_bad_se_file(apron, tmp_path, weights):
    se = write_mask(tmp_path / "broken.se", weights)
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), f"dilate:se={se}")
    check_failure(r, out, "broken.se")


# ---- outputs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["out.xyz", "out", "out.gif", "out.pgm.bak"])
def test_unknown_output_extension(apron, tmp_path, name):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "box", out_name=name)
    check_failure(r, out, name)


@pytest.mark.parametrize(
    "src_kind,out_name,extra",
    [
        ("u8", "out.png", ["--out-type", "f32"]),  # f32 to PNG
        ("f32", "out.png", []),
        ("f32", "out.pgm", []),
        ("f32", "out.jpg", []),
        ("u8", "out.pfm", []),  # PFM holds f32 only
        ("u16", "out.jpg", []),  # JPEG holds u8 only
        ("ga", "out.pgm", []),  # 2 channels to PGM
        ("ga", "out.jpg", []),
        ("rgba", "out.ppm", []),
        ("rgba", "out.pfm", ["--out-type", "f32"]),
    ],
)
def test_output_format_cannot_store(apron, tmp_path, src_kind, out_name, extra):
    if src_kind == "u8":
        src = good_pgm(tmp_path)
    elif src_kind == "u16":
        src = good_pgm(tmp_path, dtype=np.uint16)
    elif src_kind == "f32":
        from conftest import write_pfm

        src = tmp_path / "in.pfm"
        write_pfm(src, random_image((23, 37), np.float32, seed=112))
    else:
        src = tmp_path / "in.png"
        write_png_raw(src, random_image((23, 37, 2 if src_kind == "ga" else 4), np.uint8, seed=113))
    r, out = run_bad(apron, tmp_path, src, "box", *extra, out_name=out_name)
    check_failure(r, out, out_name)


def test_output_directory_missing(apron, tmp_path):
    src = good_pgm(tmp_path)
    out = tmp_path / "no-such-dir" / "out.pgm"
    r = apron.run("filter", src, out, "--op", "box", check=False)
    check_failure(r, out, "no-such-dir")
    assert not out.parent.exists()


def test_output_is_a_directory(apron, tmp_path):
    src = good_pgm(tmp_path)
    out = tmp_path / "dir.pgm"
    out.mkdir()
    r = apron.run("filter", src, out, "--op", "box", check=False)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and "dir.pgm" in r.stderr, r.stderr
    assert out.is_dir() and not any(out.iterdir())
    assert leftovers(tmp_path) == []


def test_failed_run_keeps_existing_output(apron, tmp_path):
    """A run that fails must not clobber (or half-write) a previous result."""
    src = good_pgm(tmp_path)
    out = tmp_path / "outdir" / "out.pgm"
    out.parent.mkdir()
    out.write_bytes(b"previous")
    r = apron.run("filter", src, out, "--op", "gaussian:sigma=-5", check=False)
    assert r.returncode != 0
    assert out.read_bytes() == b"previous"
    assert leftovers(out.parent) == []


# ---- options --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra,name",
    [
        (["--out-type", "bogus"], "--out-type"),
        (["--out-type", "f64"], "--out-type"),
        (["--backend", "bogus"], "--backend"),
        (["--threads", "-1"], "--threads"),
        (["--quality", "0"], "--quality"),
    ],
    ids=["out-type-bogus", "out-type-f64", "backend-bogus", "threads-negative", "quality-zero"],
)
def test_bad_option(apron, tmp_path, extra, name):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "box", *extra)
    check_failure(r, out, name)


def test_negative_max_pixels(apron, tmp_path):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "box", "--max-pixels", "-5")
    check_failure(r, out, "--max-pixels")


@pytest.mark.parametrize("option,value", [("--threads", "abc"), ("--max-pixels", "1e3")])
def test_unconvertible_option_value(apron, tmp_path, option, value):
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "box", option, value)
    check_failure(r, out, option)


def test_huge_thread_count_does_not_hang(apron, tmp_path):
    """--threads far beyond the cores: either capped (and correct) or refused with one line; never a hang
    or a crash (an earlier build deadlocked in the thread pool when thread creation failed)."""
    src = good_pgm(tmp_path)
    r, out = run_bad(apron, tmp_path, src, "box", "--threads", "100000")
    if r.returncode == 0:
        assert out.exists()
    else:
        check_failure(r, out, "--threads")


def test_cuda_backend_without_cuda(apron, tmp_path):
    info = apron.run("info").stdout
    backends = next((line for line in info.splitlines() if line.startswith("backends")), "")
    if "cuda" in backends.split(":", 1)[-1].split():
        pytest.skip("this build and machine have the CUDA backend")
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), "box", "--backend", "cuda")
    check_failure(r, out, "cuda")


@pytest.mark.parametrize("op", ["box:border=constant,value=7.5", "box:border=constant,value=-1",
                                "dilate:border=constant,value=300"])
def test_constant_border_value_must_fit_the_pixel_type(apron, tmp_path, op):
    """On integer images the constant border reads as a pixel, so its value must be one the type holds."""
    r, out = run_bad(apron, tmp_path, good_pgm(tmp_path), op)
    check_failure(r, out, "value")
