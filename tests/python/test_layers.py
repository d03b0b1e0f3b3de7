"""The layer check (cmake/check_layers.cmake, run at configure time from src/CMakeLists.txt): src/ passes it,
and an include that goes up the layer graph, fabricated in a copy of the layer folders, fails it with the file,
the include and the layers allowed. The graph has one source, src/CMakeLists.txt's APRON_LAYERS and
APRON_LAYER_DEPENDS_* lines: the check, the link-level test below and docs/planner.md's diagram follow it."""
import re
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


def layer_graph() -> tuple[list[str], dict[str, list[str]]]:
    """The layers, lowest first, and the layers each may use directly, as src/CMakeLists.txt sets them."""
    text = (ROOT / "src" / "CMakeLists.txt").read_text()
    layers = re.search(r"^set\(APRON_LAYERS ([^)]*)\)", text, re.M).group(1).split()
    deps = {}
    for layer in layers:
        m = re.search(rf"^set\(APRON_LAYER_DEPENDS_{layer} ([^)]*)\)", text, re.M)
        deps[layer] = m.group(1).replace('""', "").split()
    return layers, deps


def test_the_docs_draw_the_same_graph():
    layers, deps = layer_graph()
    doc = (ROOT / "docs" / "planner.md").read_text()
    block = doc.split("## Layers", 1)[1].split("```", 2)[1]
    drawn = {}
    for line in block.splitlines():
        m = re.match(r"(\w+)\s*(?:->\s*([\w, ]+?))?\s{2,}\S", line)
        if m:
            drawn[m.group(1)] = sorted(d.strip() for d in (m.group(2) or "").split(",") if d.strip())
    assert drawn == {layer: sorted(deps[layer]) for layer in layers}


def fake_tree(tmp_path: Path, files: dict) -> Path:
    src = tmp_path / "src"
    for layer in layer_graph()[0]:
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


# Calls that go up the graph at link level (the include check cannot see a call through a declaration in
# include/apron/ or in a lower layer's header): none. The registry, which reads mask files, is the ops layer
# above core and io; the core takes pinned memory through hooks the run layer installs. A known debt would be
# named here as (layer, "apron::function(").
KNOWN_UPWARD_CALLS: set[tuple[str, str]] = set()


def build_dir():
    import os
    binary = os.environ.get("APRON_BIN")
    return Path(binary).resolve().parents[1] if binary else ROOT / "build"


@pytest.mark.skipif(shutil.which("nm") is None or shutil.which("c++filt") is None, reason="binutils not found")
def test_no_layer_calls_a_layer_above_it():
    layers, deps = layer_graph()
    objects = {L: sorted((build_dir() / "src" / L).glob(f"CMakeFiles/apron_{L}.dir/**/*.o")) for L in layers}
    if not objects["core"] or not objects["plan"]:
        pytest.skip(f"no layer objects under {build_dir()}/src (build libapron first)")
    defined, undefined = {}, {}
    for L in layers:
        defined[L], undefined[L] = set(), set()
        for o in objects[L]:
            for line in subprocess.run(["nm", "-g", str(o)], capture_output=True, text=True).stdout.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "U":
                    undefined[L].add(parts[1])
                elif len(parts) == 3 and parts[1] in "TDBRVW":
                    defined[L].add(parts[2])

    def closure(L):
        seen, todo = set(), list(deps[L])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo += deps[d]
        return seen | {L}

    upward = []
    for L in layers:
        for sym in undefined[L]:
            owners = [M for M in layers if sym in defined[M]]
            if owners and not set(owners) & closure(L):
                name = subprocess.run(["c++filt", sym], capture_output=True, text=True).stdout.strip()
                if not any(L == layer and name.startswith(prefix) for layer, prefix in KNOWN_UPWARD_CALLS):
                    upward.append(f"{L} calls {name} (defined in {', '.join(owners)})")
    assert not upward, "\n".join(upward)
