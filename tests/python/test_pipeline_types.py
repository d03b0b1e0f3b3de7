"""Pipelines (several --op in one run), --out-type conversions, and agreement between backends and thread
counts (SPEC.md "Types, rounding, saturation"; include/apron/pipeline.hpp: every operation writes the
output type and later operations read that type)."""
import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import assert_equal_images, assert_f32_close, random_image, to_type, write_mask

PIPELINES = [
    ["gaussian:sigma=1", "sobel:dx=1"],
    ["box:width=3", "dilate:se=cross:3x3", "sharpen"],
    ["sharpen:strength=2", "erode:se=ellipse:5x3", "laplacian:delta=128"],
    ["unsharp:sigma=1,amount=1.5", "tophat:se=rect:5x5", "xf-gaussian", "gradient"],
]


@pytest.mark.parametrize("out_type", [None, "f32", "u16"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
@pytest.mark.parametrize("ops", PIPELINES, ids=lambda ops: "+".join(o.split(":")[0] for o in ops))
def test_pipeline_equals_one_by_one(apron, tmp_path, ops, dtype, out_type):
    """One run with N --op == N runs, the first converting to the output type, the rest in that type."""
    img = random_image((23, 37), dtype, seed=80, **({"lo": 0.0, "hi": 255.0} if dtype == np.float32 else {}))
    together = apron.filter(tmp_path, img, ops, out_type=out_type)
    step = img
    for k, op in enumerate(ops):
        step = apron.filter(tmp_path, step, op, out_type=out_type if k == 0 else None)
    assert_equal_images(together, step, f"pipeline {ops} out_type={out_type}")


def test_pipeline_vs_scipy(apron, tmp_path):
    """A float pipeline matches the composition of the references."""
    img = random_image((23, 37), np.float32, seed=81)
    m = np.random.default_rng(82).uniform(-1, 1, (4, 3))
    mask = write_mask(tmp_path / "m.kernel", m)
    got = apron.filter(tmp_path, img, [f"correlate:mask={mask},border=wrap", "gaussian:sigma=1.5,border=nearest"])
    x = ndi.correlate(img.astype(np.float64), m, mode="wrap")
    exp = ndi.gaussian_filter(x, 1.5, mode="nearest", radius=5)
    assert_f32_close(got, exp, np.abs(m).sum() * np.abs(img).max(), "correlate then gaussian")


def test_pipeline_intermediate_saturates_in_output_type(apron, tmp_path):
    """u8 pipeline: the first op's negative results are clipped to 0 before the second op reads them."""
    img = random_image((23, 37), np.uint8, seed=83)
    got = apron.filter(tmp_path, img, ["sobel:dx=1", "box:width=3"])
    k = np.outer([1, 2, 1], [-1, 0, 1])
    first = to_type(ndi.correlate(img.astype(np.int64), k, mode="reflect"), np.uint8)
    exp = to_type(ndi.correlate(first.astype(np.float64), np.ones((3, 3)), mode="reflect") / 9, np.uint8)
    assert_equal_images(got, exp, "sobel then box on u8")


# ---- --out-type conversions ---------------------------------------------------------------------------

SPECIAL = np.array(
    [-1e9, -300, -3.5, -0.5, -0.49, -0.0, 0, 0.49, 0.5, 1.5, 2.5, 3.4999, 127.5, 128.5, 254.5, 255, 255.49,
     255.5, 256, 1000.5, 1001.5, 4095.5, 65534.5, 65535, 65535.49, 65535.5, 65536, 70000, 1e9, 3e38],
    dtype=np.float32,
)


@pytest.mark.parametrize("out_type", ["u8", "u16"])
@pytest.mark.parametrize("identity", ["correlate", "box:width=1", "dilate:se=rect:1x1"])
def test_f32_to_integer_rounds_half_even_and_saturates(apron, tmp_path, out_type, identity):
    img = SPECIAL.reshape(5, 6)
    if identity == "correlate":
        identity = f"correlate:mask={write_mask(tmp_path / 'one.kernel', [[1]])}"
    got = apron.filter(tmp_path, img, identity, out_type=out_type)
    assert_equal_images(got, to_type(img, {"u8": np.uint8, "u16": np.uint16}[out_type]), f"f32 -> {out_type}")


def test_scale_rounds_half_even(apron, tmp_path):
    """Integer result of an exact sum with a half: 2k+1 halves round to the even neighbour."""
    img = np.arange(0, 64, dtype=np.uint8).reshape(8, 8)
    got = apron.filter(tmp_path, img, "box:width=2,height=1,border=nearest")  # (a + b) / 2
    exp = to_type(ndi.correlate(img.astype(np.float64), np.ones((1, 2)), mode="nearest") / 2, np.uint8)
    assert_equal_images(got, exp, "box 2x1 halves")
    assert (got[0, 1:] % 2 == 0).all(), "every (k + k+1)/2 = k + 0.5 must round to the even neighbour"


@pytest.mark.parametrize(
    "src,dst",
    [(np.uint16, "u8"), (np.uint8, "u16"), (np.uint8, "f32"), (np.uint16, "f32"), (np.float32, "f32")],
    ids=["u16-u8", "u8-u16", "u8-f32", "u16-f32", "f32-f32"],
)
def test_type_conversions(apron, tmp_path, src, dst):
    img = random_image((23, 37), src, seed=84)
    got = apron.filter(tmp_path, img, "box:width=1", out_type=dst)
    assert_equal_images(got, to_type(img.astype(np.float64), {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}[dst]), dst)


def test_linear_out_type_rounds_once(apron, tmp_path):
    """u8 in, u16 out: the exact sum is rounded once into u16 (no intermediate u8 clipping)."""
    img = random_image((23, 37), np.uint8, seed=85)
    got = apron.filter(tmp_path, img, "xf-gaussian:alpha=4", out_type="u16")  # weights sum to 4: up to 1020
    exp = ndi.correlate(img.astype(np.int64), np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]), mode="reflect") / 4
    assert got.max() > 255
    assert_equal_images(got, to_type(exp, np.uint16), "u8 -> u16 xf-gaussian")


# ---- backends and threads: identical bits --------------------------------------------------------------

OPS_FOR_BACKENDS = [
    "gaussian:sigma=1.3,border=wrap", "box:width=4,height=3", "sobel:dx=1,ksize=5,border=constant,value=3",
    "unsharp:sigma=1,amount=0.5", "dilate:se=ellipse:5x5", "erode:se=cross:4x4,border=mirror", "open:se=rect:3x5",
    "close", "gradient", "tophat:se=ellipse:5x3", "blackhat:se=ellipse:5x3", "xf-sharpen", "emboss:delta=128",
]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
@pytest.mark.parametrize("op", OPS_FOR_BACKENDS)
def test_reference_backend_agrees(apron, tmp_path, op, dtype):
    """--backend reference vs cpu: integer results identical (exact sums) or within 1, f32 within SPEC."""
    img = random_image((23, 37), dtype, seed=86)
    cpu = apron.filter(tmp_path, img, op, extra=["--backend", "cpu"])
    ref = apron.filter(tmp_path, img, op, extra=["--backend", "reference"])
    if dtype == np.float32:
        assert_f32_close(cpu, ref.astype(np.float64), 40 * np.abs(img).max(), f"{op}: cpu vs reference")
    else:
        exact = not op.startswith(("gaussian", "unsharp"))
        assert_equal_images(cpu, ref, f"{op}: cpu vs reference", max_diff=0 if exact else 1)


@pytest.mark.parametrize("op", ["gaussian:sigma=2", "sobel:dx=1,dy=1", "dilate:se=ellipse:7x7", "unsharp:sigma=1"])
def test_threads_give_identical_bits(apron, tmp_path, op):
    img = random_image((61, 64), np.float32, seed=87)
    runs = [apron.filter(tmp_path, img, op, extra=["--threads", str(t)]) for t in (1, 2, 3, 0)]
    for t, r in zip((2, 3, 0), runs[1:]):
        assert r.tobytes() == runs[0].tobytes(), f"{op}: --threads {t} differs from --threads 1"
