"""Structuring elements of any shape (SPEC.md "Morphology"): random 0/1 elements with holes, non-convex and
even-sized, against OpenCV's dilate/erode; disk:R against scikit-image's definition (x^2 + y^2 <= R^2);
`apron plan` names the chord decomposition; iterated rectangles (merged into one larger rectangle) against
OpenCV, which merges them the same way."""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from conftest import assert_equal_images, random_image, write_mask  # noqa: E402


def disk_formula(r: int) -> np.ndarray:
    y, x = np.mgrid[-r : r + 1, -r : r + 1]
    return (x * x + y * y <= r * r).astype(np.uint8)


def random_element(rng, w, h, density):
    se = (rng.random((h, w)) < density).astype(np.uint8)
    se[rng.integers(h), rng.integers(w)] = 1
    return se


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5, 7, 15])
def test_disk_formula_matches_scikit_image(r):
    skm = pytest.importorskip("skimage.morphology")
    np.testing.assert_array_equal(skm.disk(r).astype(np.uint8), disk_formula(r))


def test_disk_formula_itself():
    """x^2 + y^2 <= R^2: disk:1 is the 3x3 cross, disk:3 has 29 cells and 7-cell middle rows."""
    np.testing.assert_array_equal(disk_formula(1), [[0, 1, 0], [1, 1, 1], [0, 1, 0]])
    d3 = disk_formula(3)
    assert d3.sum() == 29
    assert list(d3.sum(axis=1)) == [1, 5, 5, 7, 5, 5, 1]
    assert disk_formula(7).sum() == 149  # Gauss circle problem, N(7)


@pytest.mark.parametrize("r", [4, 7])
@pytest.mark.parametrize("kind", ["dilate", "erode"])
def test_disk_against_formula_through_opencv(apron, tmp_path, r, kind):
    img = random_image((41, 53, 3), np.uint8, seed=80 + r)
    got = apron.filter(tmp_path, img, f"{kind}:se=disk:{r}")
    exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, disk_formula(r))
    assert_equal_images(got, exp, f"{kind} disk:{r}")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["dilate", "erode"])
def test_random_elements_vs_opencv(apron, tmp_path, seed, kind):
    """Holes, non-convex shapes and even sides; the anchor is the centre (W/2, H/2) as OpenCV's default."""
    rng = np.random.default_rng(900 + seed)
    w, h = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    if seed == 5:
        w, h = 21, 8  # even height, wider than tall
    se = random_element(rng, w, h, 0.3 if seed % 2 else 0.65)
    img = random_image((29, 35) if seed % 2 else (29, 35, 3), np.uint8, seed=seed)  # gray and RGB (PGM/PPM)
    se_path = write_mask(tmp_path / "random.se", se)
    got = apron.filter(tmp_path, img, f"{kind}:se={se_path}")
    exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, se)
    assert_equal_images(got, exp, f"{kind} random {w}x{h} seed {seed}")


def test_random_element_u16_and_f32_vs_opencv(apron, tmp_path):
    rng = np.random.default_rng(77)
    se = random_element(rng, 9, 6, 0.5)
    se_path = write_mask(tmp_path / "r.se", se)
    for dtype in (np.uint16, np.float32):
        img = random_image((31, 27), dtype, seed=5)
        for kind in ("dilate", "erode"):
            got = apron.filter(tmp_path, img, f"{kind}:se={se_path}")
            exp = (cv2.dilate if kind == "dilate" else cv2.erode)(img, se)
            assert_equal_images(got, exp, f"{kind} {np.dtype(dtype).name}")


@pytest.mark.parametrize("n", [2, 5])
@pytest.mark.parametrize("rect", ["3x3", "4x2", "7x5"])
def test_iterated_rectangles_vs_opencv(apron, tmp_path, n, rect):
    img = random_image((37, 45), np.uint8, seed=n)
    w, h = (int(v) for v in rect.split("x"))
    k = np.ones((h, w), np.uint8)
    for kind, fn in (("dilate", cv2.dilate), ("erode", cv2.erode)):
        got = apron.filter(tmp_path, img, f"{kind}:se=rect:{rect},iterations={n}")
        assert_equal_images(got, fn(img, k, iterations=n), f"{kind} rect:{rect} x{n}")


def test_plan_names_chords_and_merged_rectangles(apron):
    out = apron.run("plan", "--op", "dilate:se=disk:7", "--size", "64x64", "--backend", "cpu").stdout
    assert "chords(15,6)" in out, out
    merged = apron.run("plan", "--op", "erode:se=rect:3x3,iterations=4", "--size", "64x64", "--backend", "cpu").stdout
    assert "9x9 separable-rect" in merged, merged
    kept = apron.run("plan", "--op", "erode:se=rect:3x3,iterations=4,border=reflect", "--size", "64x64",
                     "--backend", "cpu").stdout
    assert kept.count("3x3 separable-rect") == 4, kept
