"""APRON_CUDA=AUTO (cmake/ApronDependencies.cmake) builds the CUDA backend only where a GPU is found: the
configure of the whole project, with an nvidia-smi on the PATH that lists a GPU, one that fails as it does
without a driver, and APRON_CUDA=ON, each says which it chose and why."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.no_apron_binary,
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="cmake/ninja not found"),
]

LISTS_A_GPU = 'echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0123)"'
NO_DRIVER = 'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."; exit 9'


def toolkit():
    return shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()


def configure(tmp_path, nvidia_smi, *args):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text(f"#!/bin/sh\n{nvidia_smi}\n")
    (fake / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    env.pop("CUDACXX", None)
    r = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DAPRON_TESTS=OFF",
                        "-DAPRON_BENCH=OFF", "-DAPRON_PYTHON=OFF", *args],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if "apron: CUDA backend" in line]
    assert len(lines) == 1, r.stdout
    return lines[0]


def test_no_gpu_builds_no_cuda_and_says_how_to(tmp_path):
    line = configure(tmp_path, NO_DRIVER)
    assert "CUDA backend OFF" in line, line
    if toolkit():
        assert "toolkit found" in line and "no GPU" in line and "-DAPRON_CUDA=ON to build it" in line, line
    else:
        assert "no CUDA toolkit" in line, line
    assert "APRON_HAVE_CUDA=1" not in (tmp_path / "b" / "build.ninja").read_text()


@pytest.mark.skipif(not toolkit(), reason="no CUDA toolkit")
def test_a_gpu_found_builds_cuda(tmp_path):
    line = configure(tmp_path, LISTS_A_GPU)
    assert "CUDA backend ON (GPU found: NVIDIA H100 80GB HBM3" in line, line


@pytest.mark.skipif(not toolkit(), reason="no CUDA toolkit")
def test_asked_for_it_builds_cuda_without_a_gpu(tmp_path):
    line = configure(tmp_path, NO_DRIVER, "-DAPRON_CUDA=ON")
    assert "CUDA backend ON (APRON_CUDA=ON" in line, line


def test_asked_off_builds_no_cuda_with_a_gpu(tmp_path):
    line = configure(tmp_path, LISTS_A_GPU, "-DAPRON_CUDA=OFF")
    assert "CUDA backend OFF (APRON_CUDA=OFF)" in line, line
