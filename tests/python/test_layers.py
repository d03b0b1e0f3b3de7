"""The layer check (cmake/check_layers.cmake, run at configure time from src/CMakeLists.txt): src/ passes it,
and an include that goes up the layer graph, fabricated in a copy of the layer folders, fails it with the file,
the include and the layers allowed."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "cmake" / "check_layers.cmake"

pytestmark = [
    pytest.mark.no_apron_binary,
    pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not found"),
]


def check(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", f"-DAPRON_LAYER_SRC={src}", "-P", str(SCRIPT)], capture_output=True, text=True,
                          timeout=120)


def fake_tree(tmp_path: Path, files: dict) -> Path:
    src = tmp_path / "src"
    for layer in ("core", "io", "plan", "cpu", "cuda", "run", "batch", "dist"):
        (src / layer).mkdir(parents=True)
    for name, text in files.items():
        (src / name).write_text(text)
    return src


def test_the_source_tree_passes():
    r = check(ROOT / "src")
    assert r.returncode == 0, r.stderr
    assert "layer check passed" in r.stdout + r.stderr


def test_allowed_includes_pass_transitively(tmp_path):
    src = fake_tree(tmp_path, {
        "batch/slot.cu": '#include "cuda/cuda_check.hpp"\n#include "core/pixel.hpp"\n#include "io/file_io.hpp"\n',
        "run/pipeline.cpp": '#include "plan/plan.hpp"\n#include "cpu/fast_executor.hpp"\n#include "apron/image.hpp"\n',
        "cpu/x.cpp": '#include "plan/plan.hpp"\n#include "core/dispatch.hpp"\n#include <vector>\n',
    })
    r = check(src)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("where, include, layer, target", [
    ("plan/linear_paths.cpp", "cpu/fft_linear.hpp", "plan", "cpu"),      # the planner calling a backend
    ("plan/no_cuda.cpp", "batch/compute_slot.hpp", "plan", "batch"),
    ("core/mask.cpp", "io/file_io.hpp", "core", "io"),                   # the core reading files
    ("cuda/batch_slot.cu", "batch/compute_slot.hpp", "cuda", "batch"),
    ("cpu/fast.cpp", "cuda/device_view.hpp", "cpu", "cuda"),             # sideways
    ("io/codec.cpp", "plan/plan.hpp", "io", "plan"),
])
def test_an_upward_include_fails_naming_the_file(tmp_path, where, include, layer, target):
    src = fake_tree(tmp_path, {where: f'// a comment\n#include "core/pixel.hpp"\n  #  include "{include}"\n'})
    r = check(src)
    assert r.returncode != 0
    assert f"src/{where}" in r.stderr, r.stderr
    assert f"the {layer} layer may not include {target}" in r.stderr, r.stderr
    assert include in r.stderr
