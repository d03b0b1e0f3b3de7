"""The registry drives the Python API: one function per operation with the registry's parameters, defaults
and docs, and every example of every operation gives, through Python, the bits the CLI gives (the CLI suite
checks those against SciPy/OpenCV; the ops without a Python reference of their own here, the xf-* presets,
are covered so)."""
import builtins
import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import apron
from apron_cli_references import REPO_ROOT, assert_equal_images, random_image, read_image, write_image

OPS = apron.operations()


def python_name(name):
    return name.replace("-", "_")


def test_every_registry_operation_is_a_function():
    assert len(OPS) >= 20
    for op in OPS:
        fn = getattr(apron, python_name(op["name"]))
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        assert names[0] == "img"
        for p in op["params"]:
            assert p["name"] in sig.parameters, (op["name"], p["name"])
            param = sig.parameters[p["name"]]
            if p["default"] is None and not p["optional"]:
                assert param.default is inspect.Parameter.empty and param.kind == param.POSITIONAL_OR_KEYWORD
            elif p["default"] is not None:
                assert str(param.default) in (p["default"], p["default"] + ".0"), (op["name"], p["name"], param.default)
        for k in ("out", "out_type", "backend", "algorithm", "threads", "memory_budget"):
            assert sig.parameters[k].kind == inspect.Parameter.KEYWORD_ONLY
        assert op["summary"][1:] in fn.__doc__ and op["details"] in fn.__doc__
        # `from apron import *` leaves out the names of builtins (apron.open), which it would shadow
        assert (fn.__name__ in apron.__all__) == (not hasattr(builtins, fn.__name__)), fn.__name__


def test_star_import_does_not_shadow_builtins():
    scope = {}
    exec("from apron import *", scope)
    assert "open" not in scope and scope["close"] is apron.close and scope["ndimage"] is apron.ndimage
    assert callable(apron.open) and not set(scope) & set(dir(builtins)) - {"__builtins__"}


def test_positional_parameters_follow_opencv_and_scipy():
    """apron.box(img, 5) is uniform_filter(img, 5) (width, then height); sobel(img, dx, dy, ksize) as
    cv2.Sobel; dilate/median(img, se); percentile(img, p, se); rank(img, r, se); an int se is the square."""
    import scipy.ndimage as ndi

    img = random_image((13, 17), np.uint8, seed=21)
    assert_equal_images(apron.box(img, 5), apron.box(img, width=5), "box(img, 5)")
    assert_equal_images(apron.box(img, 5, 3), apron.box(img, width=5, height=3), "box(img, 5, 3)")
    assert np.allclose(apron.box(img.astype(np.float32), 5), ndi.uniform_filter(img.astype(np.float32), 5), atol=1e-3)
    assert_equal_images(apron.sobel(img, 0, 1, 5), apron.sobel(img, dx=0, dy=1, ksize=5), "sobel positional")
    assert_equal_images(apron.dilate(img, 5), apron.dilate(img, se="rect:5x5"), "dilate(img, 5)")
    assert_equal_images(apron.median(img, "disk:2"), apron.median(img, se="disk:2"), "median(img, se)")
    assert_equal_images(apron.median(img, 3), ndi.median_filter(img, 3), "median(img, 3)")
    assert_equal_images(apron.percentile(img, 25, 5), ndi.percentile_filter(img, 25, 5), "percentile(img, 25, 5)")
    assert_equal_images(apron.rank(img, -2, np.ones((2, 3))), ndi.rank_filter(img, -2, footprint=np.ones((2, 3))),
                        "rank(img, -2, se)")
    assert_equal_images(apron.gaussian(img, 2.0), apron.gaussian(img, sigma=2.0), "gaussian(img, sigma)")
    for fn, names in ((apron.box, ["img", "width", "height"]), (apron.sobel, ["img", "dx", "dy", "ksize"]),
                      (apron.dilate, ["img", "se"]), (apron.percentile, ["img", "p", "se"]),
                      (apron.gaussian, ["img", "sigma"])):
        sig = inspect.signature(fn)
        assert [n for n, p in sig.parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD] == names, fn.__name__
    with pytest.raises(TypeError):
        apron.gaussian(img, 2.0, 0)  # SciPy's positional order=0 is not sigma_y: keywords only after sigma


def test_info():
    i = apron.info()
    assert i["version"] == apron.__version__
    assert "cpu" in i["backends"] and "reference" in i["backends"]
    assert i["operations"] == [o["name"] for o in OPS]


def _cli():
    env = os.environ.get("APRON_BIN")
    p = Path(env) if env else REPO_ROOT / "build" / "tools" / "apron"
    if not p.is_file():
        pytest.skip(f"apron CLI not found at {p} (set APRON_BIN)")
    return p


EXAMPLES = [(op["name"], e) for op in OPS for e in op["examples"]]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["u8", "f32"])
@pytest.mark.parametrize("name,example", EXAMPLES, ids=[e for _, e in EXAMPLES])
def test_every_example_equals_the_cli(tmp_path, monkeypatch, name, example, dtype):
    import subprocess

    cli = _cli()
    monkeypatch.chdir(REPO_ROOT)  # examples name masks relative to the source tree
    img = random_image((19, 26), dtype, seed=20)
    ext = ".pfm" if dtype == np.float32 else ".pgm"
    write_image(tmp_path / f"in{ext}", img)
    r = subprocess.run([str(cli), "filter", str(tmp_path / f"in{ext}"), str(tmp_path / f"out{ext}"), "--op", example],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    expected = read_image(tmp_path / f"out{ext}")
    params = dict(item.split("=", 1) for item in example.split(":", 1)[1].split(",")) if ":" in example else {}
    got = getattr(apron, python_name(name))(img, **params)
    assert_equal_images(got, expected, example)
    # and through a Pipeline of the op text
    assert_equal_images(apron.Pipeline([example]).run(img), expected, example + " (Pipeline)")
