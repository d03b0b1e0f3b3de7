"""The command line itself: `apron ops` (every operation and parameter), `apron info`, --timing, --plan."""
import re

import numpy as np
import pytest

from conftest import leftovers, random_image, read_pnm, write_mask, write_pnm

LINEAR = {"border", "value", "scale", "delta", "nan", "preserve_nan", "nodata"}
MORPH = {"se", "iterations", "border", "value"}
GAUSS = {"sigma", "sigma_y", "radius", "radius_y", "sigma_z", "radius_z"} | LINEAR
# Every operation of the registry (src/ops/ops_*.cpp) with its parameters.
RANK = {"se", "border", "value"}
EXPECTED_OPS = {
    "correlate": {"mask", "normalize"} | LINEAR,
    "convolve": {"mask", "normalize"} | LINEAR,
    "separable": {"row", "column", "normalize"} | LINEAR,
    "gaussian": GAUSS,
    "box": {"width", "height", "depth"} | LINEAR,
    "sharpen": {"strength"} | LINEAR,
    "unsharp": {"amount"} | GAUSS,
    "emboss": LINEAR,
    "laplacian": {"neighbours"} | LINEAR,
    "sobel": {"dx", "dy", "dz", "ksize"} | LINEAR,
    "scharr": {"dx", "dy", "dz"} | LINEAR,
    "prewitt": {"dx", "dy", "dz"} | LINEAR,
    "dilate": MORPH,
    "erode": MORPH,
    "open": MORPH,
    "close": MORPH,
    "gradient": MORPH,
    "tophat": MORPH,
    "blackhat": MORPH,
    "median": RANK,
    "percentile": {"p"} | RANK,
    "rank": {"r"} | RANK,
    "xf-sharpen": {"alpha"} | LINEAR,
    "xf-highpass": LINEAR,
    "xf-lowpass": {"alpha"} | LINEAR,
    "xf-gaussian": {"alpha"} | LINEAR,
    "xf-dgaussian": LINEAR,
}


def parse_ops(text: str) -> dict:
    """`apron ops` output -> {name: {param: default or None}}. Blocks are separated by blank lines: a header
    'NAME  (category)  summary', an indented details line, then one indented line per parameter."""
    ops = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        assert lines and not lines[0].startswith(" "), f"unexpected block:\n{block}"
        name = lines[0].split()[0]
        params = {}
        for line in lines[2:]:
            assert line.startswith("    "), f"{name}: parameter line not indented: {line!r}"
            m = re.match(r"\s+([A-Za-z_]+)(?:=(\S+))?", line)
            assert m, f"{name}: cannot parse parameter line {line!r}"
            params[m.group(1)] = m.group(2)
        ops[name] = params
    return ops


def test_ops_lists_every_operation_and_parameter(apron):
    r = apron.run("ops")
    ops = parse_ops(r.stdout)
    assert set(ops) == set(EXPECTED_OPS), (
        f"missing: {sorted(set(EXPECTED_OPS) - set(ops))}, unexpected: {sorted(set(ops) - set(EXPECTED_OPS))}"
    )
    for name, params in EXPECTED_OPS.items():
        assert set(ops[name]) == params, f"{name}: listed {sorted(ops[name])}, expected {sorted(params)}"


def test_ops_shows_defaults(apron):
    ops = parse_ops(apron.run("ops").stdout)
    assert ops["gaussian"]["border"] == "reflect"  # SPEC.md: the default for filters is reflect
    assert ops["dilate"]["border"] == "ignore"  # morphology ignores outside pixels by default
    assert ops["dilate"]["se"] == "rect:3x3"
    assert ops["dilate"]["iterations"] == "1"
    assert ops["correlate"]["normalize"] == "none"
    assert ops["correlate"]["scale"] == "1" and ops["correlate"]["delta"] == "0"
    assert ops["box"]["width"] == "3"
    assert ops["sobel"]["ksize"] == "3"
    assert ops["gaussian"]["sigma"] is None  # required


def test_ops_single_operation(apron):
    r = apron.run("ops", "gaussian")
    ops = parse_ops(r.stdout)
    assert list(ops) == ["gaussian"]
    assert "sigma" in ops["gaussian"]
    assert "ceil(3 sigma)" in r.stdout  # the documented default radius


def test_ops_documents_weights(apron):
    """Edge and sharpen masks are documented with their weights (SPEC.md "Built-in masks")."""
    out = apron.run("ops").stdout
    for snippet in ["[-1 0 1]", "[3 10 3]", "[0 1 0; 1 -4 1; 0 1 0]", "[-2 -1 0; -1 1 1; 0 1 2]",
                    "[-1 -1 -1; -1 8 -1; -1 -1 -1]", "[1 2 1; 2 4 2; 1 2 1]", "[-2 1 -2; 1 4 1; -2 1 -2]"]:
        assert snippet in out, f"`apron ops` does not document {snippet}"


def test_ops_unknown_name(apron):
    r = apron.run("ops", "nosuchop", check=False)
    assert r.returncode != 0
    assert "nosuchop" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_info(apron):
    r = apron.run("info")
    assert "backends" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("backends"))
    assert "cpu" in line and "reference" in line, line


REQUIRED_FILL = {"correlate": "mask={mask}", "convolve": "mask={mask}", "separable": "row=1:2:1",
                 "gaussian": "sigma=1", "unsharp": "sigma=1", "percentile": "p=75", "rank": "r=-1"}


@pytest.mark.parametrize("name", sorted(EXPECTED_OPS))
def test_every_op_runs_with_defaults(apron, tmp_path, name):
    """Each listed operation runs with only its required parameters, on u8 and f32 and a 1x1 image."""
    mask = write_mask(tmp_path / "m.kernel", [[1, 2], [3, 4], [5, 6]])
    spec = name + (":" + REQUIRED_FILL[name].format(mask=mask) if name in REQUIRED_FILL else "")
    for img in (random_image((9, 7), np.uint8, seed=120), random_image((9, 7), np.float32, seed=121),
                random_image((1, 1), np.uint16, seed=122)):
        out = apron.filter(tmp_path, img, spec)
        assert out.shape == img.shape and out.dtype == img.dtype, (spec, out.shape, out.dtype)
        if out.dtype == np.float32:
            assert np.isfinite(out).all(), spec


# ---- --timing and --plan ------------------------------------------------------------------------------


def test_timing(apron, tmp_path):
    src, dst = tmp_path / "in.pgm", tmp_path / "out.pgm"
    write_pnm(src, random_image((23, 37), np.uint8, seed=123))
    ops = ["gaussian:sigma=1", "open:se=cross:3x3", "sobel:dx=1"]
    r = apron.filter_files(src, dst, ops, extra=["--timing"])
    lines = r.stderr.strip().splitlines()
    assert dst.exists()
    timed = [l for l in lines if re.match(r"\s*[0-9.]+\s*ms\s+\S", l)]
    assert timed == lines, f"every --timing line is 'N ms  stage':\n{r.stderr}"
    assert any("read" in l and "in.pgm" in l for l in lines), r.stderr
    assert any("write" in l and "out.pgm" in l for l in lines), r.stderr
    for op in ops:
        assert any(op in l for l in lines), f"no timing line for {op}:\n{r.stderr}"
    assert "total" in lines[-1], r.stderr
    assert r.stdout == ""


def test_no_timing_is_quiet(apron, tmp_path):
    src, dst = tmp_path / "in.pgm", tmp_path / "out.pgm"
    write_pnm(src, random_image((5, 6), np.uint8, seed=124))
    r = apron.filter_files(src, dst, "box")
    assert r.stdout == "" and r.stderr == ""
    assert read_pnm(dst).shape == (5, 6)


def test_plan_prints_and_writes_nothing(apron, tmp_path):
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((23, 37), np.uint8, seed=125))
    out = tmp_path / "outdir" / "out.pgm"
    out.parent.mkdir()
    ops = ["gaussian:sigma=1", "close:se=ellipse:5x5"]
    r = apron.filter_files(src, out, ops, extra=["--plan"])
    assert r.returncode == 0
    for op in ops:
        assert op in r.stdout, r.stdout
    assert "37x23" in r.stdout, r.stdout
    assert not out.exists(), "--plan must not write the output"
    assert list(out.parent.iterdir()) == [] and leftovers(out.parent) == []


def test_plan_still_validates(apron, tmp_path):
    """--plan on an impossible request fails like a real run (one line, non-zero)."""
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((5, 6), np.uint8, seed=126))
    out = tmp_path / "out.png"
    r = apron.filter_files(src, out, "box", out_type="f32", extra=["--plan"], check=False)
    assert r.returncode != 0 and "out.png" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


def test_output_may_replace_input(apron, tmp_path):
    """The input is read completely before the output is written atomically, so IN == OUT works."""
    img = random_image((23, 37), np.uint8, seed=127)
    p = tmp_path / "same.pgm"
    write_pnm(p, img)
    apron.filter_files(p, p, "dilate:se=rect:3x3")
    import cv2

    assert (read_pnm(p) == cv2.dilate(img, np.ones((3, 3), np.uint8))).all()
    assert leftovers(tmp_path) == []
