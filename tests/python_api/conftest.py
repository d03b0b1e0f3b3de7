"""Shared set-up of the Python API suite (tests/python_api): which `apron` package is tested, the CLI
suite's references (tests/python/conftest.py: SPEC.md in numpy, comparison helpers, random arrays), the
device marks, and the GPU array libraries as fixtures (cp, torch, device_lib: each skips the test without
the library or a CUDA device).

The package tested: APRON_PYTHON_BUILD=<dir> puts <dir> first on sys.path (scripts/test.sh passes
build/python, where the build assembles the package); otherwise the installed `apron` (a wheel in a venv);
otherwise <repo>/build/python. The header of the pytest run names the one imported.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable, NamedTuple

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

_build = os.environ.get("APRON_PYTHON_BUILD")
if _build:
    sys.path.insert(0, str(Path(_build).resolve()))
elif importlib.util.find_spec("apron") is None:
    sys.path.insert(0, str(REPO_ROOT / "build" / "python"))

# The CLI suite's helpers, loaded under another name (its conftest hooks stay with that suite).
_spec = importlib.util.spec_from_file_location("apron_cli_references", REPO_ROOT / "tests" / "python" / "conftest.py")
refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(refs)
sys.modules["apron_cli_references"] = refs


def pytest_report_header(config):
    try:
        import apron

        return f"apron package: {Path(apron.__file__).parent} ({apron.info()['cuda']})"
    except ImportError as e:
        return f"apron package: not importable ({e})"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device, CuPy or torch, and apron's CUDA backend")


# ---- GPU array libraries ----------------------------------------------------------------------------------


@pytest.fixture
def cp():
    """CuPy; the test is skipped without it or without a CUDA device."""
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    return cupy


@pytest.fixture
def torch():
    """torch; the test is skipped without it or when it sees no CUDA device."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


class DeviceLib(NamedTuple):
    name: str                   # "cupy" or "torch"
    put: Callable               # a NumPy array -> the library's array on the current CUDA device
    back: Callable              # the library's device array -> a NumPy array


@pytest.fixture(params=["cupy", "torch"])
def device_lib(request):
    """Each GPU array library in turn (DeviceLib), skipped as the cp and torch fixtures are."""
    if request.param == "cupy":
        cupy = request.getfixturevalue("cp")
        return DeviceLib("cupy", cupy.asarray, cupy.asnumpy)
    torch = request.getfixturevalue("torch")
    return DeviceLib("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy())
