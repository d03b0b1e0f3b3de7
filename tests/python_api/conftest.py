"""Shared set-up of the Python API suite (tests/python_api): which `apron` package is tested, the CLI
suite's references (tests/python/conftest.py: SPEC.md in numpy, comparison helpers), and the device marks.

The package tested: APRON_PYTHON_BUILD=<dir> puts <dir> first on sys.path (scripts/test.sh passes
build/python, where the build assembles the package); otherwise the installed `apron` (a wheel in a venv);
otherwise <repo>/build/python. The header of the pytest run names the one imported.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


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
