"""Volumes through `apron filter`: raw WxHxDxC files, filtered in 3-D against SciPy's N-D filters (and the ball
of scikit-image's definition, x^2 + y^2 + z^2 <= R^2, restated here), and streamed in z-slabs bit-identical to
the whole run within the memory budget."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import leftovers, peak_rss_of, random_image

MIB = 1 << 20
MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]


def ball(r: int) -> np.ndarray:
    z, y, x = np.mgrid[-r:r + 1, -r:r + 1, -r:r + 1]
    return x * x + y * y + z * z <= r * r


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5, 8])
def test_ball_formula_matches_scikit_image(r):
    """ball:R is scikit-image's morphology.ball (where scikit-image is installed)."""
    skm = pytest.importorskip("skimage.morphology")
    np.testing.assert_array_equal(skm.ball(r).astype(bool), ball(r))


def test_ball_formula_itself():
    """x^2 + y^2 + z^2 <= R^2: the lattice points of the ball (1, 7, 33, 123, 257, 515, 925 for R = 0..6);
    ball:1 is the 3-D cross."""
    assert [int(ball(r).sum()) for r in range(7)] == [1, 7, 33, 123, 257, 515, 925]
    cross = np.zeros((3, 3, 3), bool)
    cross[1, 1, :] = cross[1, :, 1] = cross[:, 1, 1] = True
    np.testing.assert_array_equal(ball(1), cross)


def raw_layout(v: np.ndarray) -> str:
    d, h, w = v.shape[:3]
    c = v.shape[3] if v.ndim == 4 else 1
    return f"{w}x{h}x{d}x{c}:{ {np.uint8: 'u8', np.uint16: 'u16', np.float32: 'f32'}[v.dtype.type] }".replace(" ", "")


def filter_volume(apron, tmp_path, v: np.ndarray, ops, *extra, out_dtype=None) -> np.ndarray:
    src, dst = tmp_path / "in.raw", tmp_path / "out.raw"
    v.tofile(src)
    args = ["filter", src, dst, "--raw", raw_layout(v), "--backend", "cpu"]
    for op in [ops] if isinstance(ops, str) else ops:
        args += ["--op", op]
    if out_dtype is not None:
        args += ["--out-type", {np.float32: "f32", np.uint8: "u8", np.uint16: "u16"}[out_dtype]]
    apron.run(*args, *extra)
    return np.fromfile(dst, dtype=out_dtype or v.dtype).reshape(v.shape)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_gaussian_with_sigma_z_is_scipys_3d_gaussian(apron, tmp_path, mode, dtype):
    v = random_image((9, 17, 23), dtype, 3)
    got = filter_volume(apron, tmp_path, v, f"gaussian:sigma=1.5,sigma_y=1,sigma_z=0.8,border={mode},value=2")
    # apron's radius is ceil(3 sigma) on each axis: (3, 3, 5).
    ref = ndi.gaussian_filter(v.astype(np.float64), sigma=(0.8, 1, 1.5), mode=mode, cval=2, radius=(3, 3, 5))
    if dtype == np.float32:
        np.testing.assert_allclose(got, ref, atol=2e-5 * max(1.0, float(np.abs(v).max())))
    else:
        assert np.abs(got.astype(np.float64) - np.clip(np.round(ref), 0, np.iinfo(dtype).max)).max() <= 1


@pytest.mark.parametrize("mode", MODES)
def test_box_with_depth_and_sobel_along_z_are_scipys(apron, tmp_path, mode):
    v = random_image((7, 12, 10), np.uint8, 5)
    box = filter_volume(apron, tmp_path, v, f"box:width=3,height=5,depth=3,border={mode}", out_dtype=np.float32)
    np.testing.assert_allclose(box, ndi.uniform_filter(v.astype(np.float64), size=(3, 5, 3), mode=mode), atol=1e-4)
    sob = filter_volume(apron, tmp_path, v, f"sobel:dx=0,dz=1,border={mode}", out_dtype=np.float32)
    # SciPy's sobel along axis 0 of (Z, Y, X): [-1 0 1] along z, [1 2 1] along y and x; exact integers.
    np.testing.assert_array_equal(sob, ndi.sobel(v.astype(np.float64), axis=0, mode=mode))


def write_mask_planes(path, m: np.ndarray) -> str:
    d, h, w = m.shape
    with open(path, "w") as f:
        f.write(f"{w} {h} {d}\n")
        for z in range(d):
            f.write(f"# plane {z}\n")
            for y in range(h):
                f.write(" ".join(repr(float(x)) for x in m[z, y]) + "\n")
    return str(path)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("mshape", [(3, 3, 3), (4, 3, 2), (2, 5, 1), (5, 1, 3)])
def test_correlate_and_convolve_with_a_volumes_mask_file_are_scipys(apron, tmp_path, mode, mshape):
    # "W H D" mask files: odd and even depths (plane k weighs plane z + k - D/2, SciPy's origin 0), a plane of
    # zeros, any border; u16 and f32 volumes, against SciPy's N-D correlate and convolve.
    rng = np.random.default_rng(11)
    m = rng.uniform(-1, 1, mshape)
    if mshape[0] > 2:
        m[1] = 0
    mask = write_mask_planes(tmp_path / "m3.kernel", m)
    for dtype in (np.uint16, np.float32):
        v = random_image((6, 11, 13), dtype, 4)
        for op, ref in (("correlate", ndi.correlate), ("convolve", ndi.convolve)):
            got = filter_volume(apron, tmp_path, v, f"{op}:mask={mask},border={mode},value=5", out_dtype=np.float32)
            want = ref(v.astype(np.float64), m, mode=mode, cval=5)
            np.testing.assert_allclose(got, want, atol=2e-6 * max(1.0, float(np.abs(want).max())), err_msg=f"{op} {dtype}")
    got = filter_volume(apron, tmp_path, random_image((5, 7, 9), np.uint8, 2), f"correlate:mask={mask},normalize=sum",
                        out_dtype=np.float32)
    assert got.shape == (5, 7, 9)


def test_a_volumes_mask_refuses_what_it_cannot_do(apron, tmp_path):
    mask = write_mask_planes(tmp_path / "m3.kernel", np.ones((3, 3, 3)))
    v = random_image((4, 5, 6), np.float32, 1)
    src = tmp_path / "in.raw"
    v.tofile(src)
    for extra, word in (("nan=ignore", "nan"), ("normalize=book", "normalize")):
        r = apron.run("filter", src, tmp_path / "o.raw", "--raw", raw_layout(v), "--op", f"correlate:mask={mask},{extra}",
                      check=False)
        assert r.returncode != 0 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "o.raw").exists()


@pytest.mark.parametrize("r", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_ball_dilation_and_erosion_are_the_3d_max_and_min(apron, tmp_path, r, dtype):
    v = random_image((8, 13, 11), dtype, 7 + r)
    fp = ball(r)
    # Border ignore: voxels outside do not count; SciPy's constant border at the type's extreme does the same.
    lo, hi = (np.finfo(np.float32).min, np.finfo(np.float32).max) if dtype == np.float32 else (0, np.iinfo(dtype).max)
    dil = filter_volume(apron, tmp_path, v, f"dilate:se=ball:{r}")
    np.testing.assert_array_equal(dil, ndi.grey_dilation(v, footprint=fp, mode="constant", cval=lo))
    ero = filter_volume(apron, tmp_path, v, f"erode:se=ball:{r}")
    np.testing.assert_array_equal(ero, ndi.grey_erosion(v, footprint=fp, mode="constant", cval=hi))
    # A border mode reads through it on every axis (SciPy's modes).
    for mode in ("reflect", "wrap", "nearest"):
        got = filter_volume(apron, tmp_path, v, f"dilate:se=ball:{r},border={mode}")
        np.testing.assert_array_equal(got, ndi.grey_dilation(v, footprint=fp, mode=mode), err_msg=mode)


@pytest.mark.parametrize("se, fp", [
    ("rect:3x5x3", np.ones((3, 5, 3), bool)),
    ("cross:3x3x3", ndi.generate_binary_structure(3, 1)),
])
def test_rect_and_cross_elements_on_volumes(apron, tmp_path, se, fp):
    v = random_image((6, 9, 8), np.uint16, 13)
    got = filter_volume(apron, tmp_path, v, f"dilate:se={se},border=nearest")
    np.testing.assert_array_equal(got, ndi.grey_dilation(v, footprint=fp, mode="nearest"))
    got = filter_volume(apron, tmp_path, v, f"open:se={se},border=nearest")
    np.testing.assert_array_equal(got, ndi.grey_opening(v, footprint=fp, mode="nearest"))


def test_an_element_file_of_planes_is_any_3d_footprint(apron, tmp_path):
    # se=FILE with a 'W H D' first line: an asymmetric, even-sized 0/1 element (a plane of no cell included),
    # the 3-D max and min over its cells (SciPy's maximum_filter and minimum_filter, no reflection).
    fp = np.random.default_rng(17).random((4, 3, 5)) > 0.5
    fp[1] = False
    fp[0, 0, 0] = True
    se = write_mask_planes(tmp_path / "fp.se", fp.astype(np.float64))
    v = random_image((7, 8, 9), np.uint8, 17)
    for mode in ("reflect", "wrap", "constant"):
        got = filter_volume(apron, tmp_path, v, f"dilate:se={se},border={mode},value=3")
        np.testing.assert_array_equal(got, ndi.maximum_filter(v, footprint=fp, mode=mode, cval=3), err_msg=mode)
        got = filter_volume(apron, tmp_path, v, f"erode:se={se},border={mode},value=3")
        np.testing.assert_array_equal(got, ndi.minimum_filter(v, footprint=fp, mode=mode, cval=3), err_msg=mode)
    bad = write_mask_planes(tmp_path / "bad.se", np.full((2, 2, 2), 0.5))
    src = tmp_path / "in.raw"
    v.tofile(src)
    r = apron.run("filter", src, tmp_path / "o.raw", "--raw", raw_layout(v), "--op", f"dilate:se={bad}", check=False)
    assert r.returncode == 1 and "se: " in r.stderr and "0 or 1" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_volume_four_times_the_memory_streams_in_slabs_with_the_same_bytes(apron, tmp_path):
    # 3072 planes of 256x256 u16 (384 MiB) under --memory 96M: streamed in slabs of whole planes, the same bytes
    # as the whole run, the process's peak within the budget (which counts the process itself).
    v = np.random.default_rng(17).integers(0, 65536, (3072, 256, 256), dtype=np.uint16)
    src, whole, slabs = tmp_path / "in.raw", tmp_path / "whole.raw", tmp_path / "slabs.raw"
    v.tofile(src)
    del v
    ops = ["--op", "gaussian:sigma=1,sigma_z=1", "--op", "dilate:se=rect:3x3x3"]
    base = ["filter", src, None, "--raw", "256x256x3072x1:u16", "--backend", "cpu", "--threads", "2", *ops]
    base[2] = whole
    apron.run(*base, "--memory", "4G")
    base[2] = slabs
    plan = apron.run(*base, "--memory", "96M", "--plan").stdout
    assert "volume in " in plan and " slabs of " in plan, plan
    rss, r = peak_rss_of([*base, "--memory", "96M"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert whole.read_bytes() == slabs.read_bytes()
    assert rss <= 96 * MIB * 1.1, f"{rss / MIB:.0f} MiB under --memory 96M"


def test_volume_refusals_name_the_parameter_and_leave_nothing(apron, tmp_path):
    v = random_image((4, 5, 6), np.uint8, 1)
    src = tmp_path / "in.raw"
    v.tofile(src)
    for layout, fragment in [("6x5x0x1:u8", "depth"), ("6x5x4x5:u8", "channels"), ("6x5x4x1x1:u8", "--raw"),
                             ("6x5x4x1:u9", "u9")]:
        r = apron.run("filter", src, tmp_path / "o.raw", "--raw", layout, "--op", "box", check=False)
        assert r.returncode == 1 and fragment in r.stderr and r.stderr.count("\n") == 1, (layout, r.stderr)
    r = apron.run("filter", src, tmp_path / "o.pgm", "--raw", "6x5x4x1:u8", "--op", "box", check=False)
    assert r.returncode == 1 and "volume" in r.stderr, r.stderr
    r = apron.run("filter", src, tmp_path / "o.raw", "--raw", "6x5x4x1:u8", "--op", "dilate:se=ball:200", check=False)
    assert r.returncode == 1 and "ball:200" in r.stderr, r.stderr
    assert leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.raw"]


def test_a_multi_page_ome_tiff_filters_as_one_volume_and_keeps_its_pages_and_ome_xml(apron, tmp_path):
    tifffile = pytest.importorskip("tifffile")
    v = random_image((10, 33, 41), np.uint16, 23)
    src, dst = tmp_path / "stack.ome.tif", tmp_path / "out.ome.tif"
    tifffile.imwrite(src, v, metadata={"axes": "ZYX", "PhysicalSizeX": 0.2, "PhysicalSizeY": 0.2, "PhysicalSizeZ": 1.5}, ome=True)
    apron.run("filter", src, dst, "--volume", "--op", "gaussian:sigma=1.5,sigma_z=1", "--op", "dilate:se=ball:1", "--backend", "cpu")
    with tifffile.TiffFile(dst) as t:
        assert len(t.pages) == 10 and t.is_ome
        assert 'PhysicalSizeZ="1.5"' in t.pages[0].description
        got = t.asarray()
    blurred = filter_volume(apron, tmp_path, v, "gaussian:sigma=1.5,sigma_z=1")
    np.testing.assert_array_equal(got, ndi.grey_dilation(blurred, footprint=ball(1), mode="constant", cval=0))
    # Without --volume each page is filtered alone: sigma_z then reads its own page (one plane).
    apron.run("filter", src, tmp_path / "pages.tif", "--op", "dilate:se=ball:1", "--backend", "cpu")
    with tifffile.TiffFile(tmp_path / "pages.tif") as t:
        pages = t.asarray()
    np.testing.assert_array_equal(pages, np.stack([ndi.grey_dilation(p, footprint=ball(1)[1], mode="constant", cval=0) for p in v]))
    for bad, fragment in [(["--volume", "--page", "1"], "--page"), (["--volume", "--stream", "on"], "--volume")]:
        r = apron.run("filter", src, tmp_path / "x.tif", "--op", "box", *bad, check=False)
        assert r.returncode == 1 and fragment in r.stderr, r.stderr
    r = apron.run("filter", src, tmp_path / "x.png", "--volume", "--op", "box", check=False)
    assert r.returncode == 1 and "--volume" in r.stderr and not (tmp_path / "x.png").exists()
