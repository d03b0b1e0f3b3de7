"""3-D rank filters through `apron filter` on raw volumes: median, percentile and rank with a volume's element
(ball:R, rect:WxHxD, cross:WxHxD, a "W H D" mask file) against SciPy's N-D median_filter, percentile_filter and
rank_filter with the same footprint (the ball as scikit-image's morphology.ball defines it, x^2 + y^2 + z^2 <=
R^2, restated here), in every border mode SciPy and apron share; streamed z-slabs give the whole run's bytes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import random_image

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]


def ball(r: int) -> np.ndarray:
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


def raw_layout(v: np.ndarray) -> str:
    d, h, w = v.shape
    return f"{w}x{h}x{d}x1:" + {np.uint8: "u8", np.uint16: "u16", np.float32: "f32"}[v.dtype.type]


def filter_volume(apron, tmp_path, v: np.ndarray, op: str, *extra) -> np.ndarray:
    src, dst = tmp_path / "in.raw", tmp_path / "out.raw"
    v.tofile(src)
    apron.run("filter", src, dst, "--raw", raw_layout(v), "--backend", "cpu", "--op", op, *extra)
    return np.fromfile(dst, dtype=v.dtype).reshape(v.shape)


def write_element(path, fp: np.ndarray) -> str:
    d, h, w = fp.shape
    with open(path, "w") as f:
        f.write(f"{w} {h} {d}\n")
        for z in range(d):
            for y in range(h):
                f.write(" ".join("1" if c else "0" for c in fp[z, y]) + "\n")
    return str(path)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_median_over_a_ball_is_scipys_3d_median(apron, tmp_path, mode, dtype):
    v = random_image((9, 13, 11), dtype, 3, hi=40 if dtype != np.float32 else None)  # ties too
    for r in (1, 2):
        got = filter_volume(apron, tmp_path, v, f"median:se=ball:{r},border={mode},value=7")
        np.testing.assert_array_equal(got, ndi.median_filter(v, footprint=ball(r), mode=mode, cval=7), err_msg=f"ball:{r}")


@pytest.mark.parametrize("mode", MODES)
def test_percentile_and_rank_over_boxes_crosses_and_files_are_scipys(apron, tmp_path, mode):
    v = random_image((7, 10, 12), np.uint16, 5)
    f = random_image((6, 9, 8), np.float32, 6)
    cross = ndi.generate_binary_structure(3, 1)
    odd = np.random.default_rng(7).random((3, 2, 4)) > 0.4  # (D, H, W): even sides, a file
    odd[1, 1, 2] = True
    path = write_element(tmp_path / "odd.se", odd)
    for a in (v, f):
        got = filter_volume(apron, tmp_path, a, f"percentile:p=30,se=rect:3x5x3,border={mode},value=2")
        np.testing.assert_array_equal(got, ndi.percentile_filter(a, 30, size=(3, 5, 3), mode=mode, cval=2))
        got = filter_volume(apron, tmp_path, a, f"rank:r=-2,se=cross:3x3x3,border={mode},value=2")
        np.testing.assert_array_equal(got, ndi.rank_filter(a, -2, footprint=cross, mode=mode, cval=2))
        n = int(odd.sum())
        got = filter_volume(apron, tmp_path, a, f"rank:r={n // 3},se={path},border={mode},value=2")
        np.testing.assert_array_equal(got, ndi.rank_filter(a, n // 3, footprint=odd, mode=mode, cval=2))


def test_a_plane_element_on_a_volume_filters_each_plane(apron, tmp_path):
    v = random_image((5, 12, 9), np.uint8, 8)
    got = filter_volume(apron, tmp_path, v, "median:se=rect:3x3,border=nearest")
    np.testing.assert_array_equal(got, ndi.median_filter(v, size=(1, 3, 3), mode="nearest"))


def test_streamed_slabs_of_a_3d_median_are_the_whole_runs_bytes(apron, tmp_path):
    v = random_image((40, 24, 31), np.uint16, 9, hi=500)
    src, whole, slabs = tmp_path / "in.raw", tmp_path / "whole.raw", tmp_path / "slabs.raw"
    v.tofile(src)
    for op in ("median:se=ball:2", "percentile:p=70,se=rect:3x3x5,border=wrap"):
        base = ["filter", src, None, "--raw", raw_layout(v), "--backend", "cpu", "--op", op]
        base[2] = whole
        apron.run(*base)
        base[2] = slabs
        plan = apron.run(*base, "--stream", "on", "--band-rows", str(6 * 24), "--plan").stdout
        assert " slabs of " in plan and "x, y and z" in plan, plan
        apron.run(*base, "--stream", "on", "--band-rows", str(6 * 24))
        assert whole.read_bytes() == slabs.read_bytes(), op
        np.testing.assert_array_equal(np.fromfile(whole, np.uint16).reshape(v.shape),
                                      ndi.median_filter(v, footprint=ball(2), mode="reflect") if op.startswith("median")
                                      else ndi.percentile_filter(v, 70, size=(5, 3, 3), mode="wrap"))


def test_bad_volume_elements_are_refused_in_one_line_naming_se(apron, tmp_path):
    v = random_image((4, 5, 6), np.uint8, 1)
    src = tmp_path / "in.raw"
    v.tofile(src)
    bad = tmp_path / "bad.se"
    bad.write_text("1 1 2\n1\n2\n")
    for op in ("median:se=ball:200", "median:se=rect:3x3x0", f"median:se={bad}", "rank:r=27,se=rect:3x3x3"):
        r = apron.run("filter", src, tmp_path / "o.raw", "--raw", "6x5x4x1:u8", "--op", op, check=False)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, (op, r.stderr)
        assert ("r:" if op.startswith("rank") else "se") in r.stderr, (op, r.stderr)
        assert not (tmp_path / "o.raw").exists()
