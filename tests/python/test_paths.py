"""Masks of any size through the command line: every path forced with --algo against SciPy, `apron plan`'s
candidate list, and --algo's errors (one line naming --algo, nothing written)."""
import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import random_image, write_mask


def dog_mask(radius, s1, s2):
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    g1 = np.exp(-x**2 / (2 * s1 * s1))
    g2 = np.exp(-x**2 / (2 * s2 * s2))
    return np.outer(g1, g1) / g1.sum() ** 2 - np.outer(g2, g2) / g2.sum() ** 2


@pytest.mark.parametrize("algo", ["auto", "direct", "low-rank", "fft"])
@pytest.mark.parametrize("border", ["reflect", "wrap", "constant"])
def test_f32_rank2_mask_every_path(apron, tmp_path, algo, border):
    img = random_image((41, 57), np.float32, seed=300)
    m = dog_mask(12, 2.0, 5.0)
    mask = write_mask(tmp_path / "dog.kernel", m)
    got = apron.filter(tmp_path, img, f"correlate:mask={mask},border={border}", extra=["--algo", algo, "--backend", "cpu"])
    want = ndi.correlate(img.astype(np.float64), m, mode={"reflect": "reflect", "wrap": "wrap", "constant": "constant"}[border])
    tol = 1e-5 * np.abs(m).sum() * np.abs(img).max()
    assert np.abs(got - want).max() <= tol


def test_u8_integer_mask_fft_is_exact(apron, tmp_path):
    img = random_image((33, 29), np.uint8, seed=301)
    rng = np.random.default_rng(302)
    m = rng.integers(-3, 4, size=(27, 27)).astype(np.float64)
    mask = write_mask(tmp_path / "int.kernel", m)
    spec = f"correlate:mask={mask},scale=0.01,delta=100"
    direct = apron.filter(tmp_path, img, spec, extra=["--algo", "direct", "--backend", "cpu"])
    fft = apron.filter(tmp_path, img, spec, extra=["--algo", "fft", "--backend", "cpu"])
    assert np.array_equal(direct, fft)


def test_plan_lists_candidates(apron, tmp_path):
    mask = write_mask(tmp_path / "dog.kernel", dog_mask(15, 3.0, 6.0))
    r = apron.run("plan", "--op", f"correlate:mask={mask}", "--size", "2048x1024", "--type", "f32", "--backend", "cpu")
    out = r.stdout
    assert "2048x1024x1 f32" in out
    for path in ("direct", "separable", "low-rank", "fft", "tensor"):
        assert path in out, out
    assert "the mask is not of rank 1" in out and "tensor cores are a CUDA path" in out
    assert out.count("* ") == 1, out  # one chosen path
    forced = apron.run("plan", "--op", f"correlate:mask={mask}", "--size", "64x64", "--backend", "cpu", "--algo", "low-rank")
    assert "low-rank term 1/2" in forced.stdout and "low-rank term 2/2" in forced.stdout


@pytest.mark.parametrize(
    "algo, why",
    [("separable", "not of rank 1"), ("tensor", "CUDA"), ("magic", "is not auto, direct")],
)
def test_algo_errors_are_one_line(apron, tmp_path, algo, why):
    src = tmp_path / "in.pgm"
    from conftest import write_pnm

    write_pnm(src, random_image((9, 8), np.uint8, seed=303))
    mask = write_mask(tmp_path / "m.kernel", np.arange(25, dtype=np.float64).reshape(5, 5) % 7 - 3)
    out = tmp_path / "out.pgm"
    r = apron.filter_files(src, out, f"correlate:mask={mask}", extra=["--algo", algo, "--backend", "cpu"], check=False)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--algo" in lines[0] and why in lines[0], r.stderr
    assert not out.exists()
