"""The registry drives the Python API: one function per operation with the registry's parameters, defaults
and docs, and every example of every operation gives, through Python, the bits the CLI gives (the CLI suite
checks those against SciPy/OpenCV; the ops without a Python reference of their own here, the xf-* presets,
are covered so)."""
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
        assert fn.__name__ in apron.__all__


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
