#!/usr/bin/env bash
# Installs what apron needs on Debian 12 / Ubuntu 24.04 (skips what is already there).
# Build: cmake, ninja, g++, ccache (rebuilds and a second build directory compile only what changed),
# libpng, libjpeg-turbo, libtiff, cfitsio, Highway, CLI11, FFTW.  Tests: GoogleTest, clang
# (libFuzzer targets), man-db, groff and zsh (the man page and the completion scripts), and the Python
# packages of tests/python/requirements.txt (with nanobind for the Python extension; python3-dev and
# python3-venv for it and for testing its wheel in a fresh virtual environment).
# Benchmarks (optional, APRON_BENCH_DEPS=1): Google Benchmark and OpenCV for the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ ccache pkg-config libpng-dev libjpeg62-turbo-dev libtiff-dev libcfitsio-dev libhwy-dev libcli11-dev libfftw3-dev nlohmann-json3-dev zlib1g-dev libopenmpi-dev openmpi-bin
          libgtest-dev clang man-db groff-base zsh python3 python3-pip python3-dev python3-venv)
if [ "${APRON_BENCH_DEPS:-0}" = 1 ]; then packages+=(libbenchmark-dev libopencv-dev); fi
# Ubuntu names libjpeg-turbo's dev package differently.
if ! apt-cache show libjpeg62-turbo-dev >/dev/null 2>&1; then
  packages=("${packages[@]/libjpeg62-turbo-dev/libjpeg-turbo8-dev}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "apron: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python packages for the CLI test suite (SciPy and OpenCV are the independent references).
py=$(command -v python3)
if ! "$py" -c "import numpy, scipy, cv2, pytest, matplotlib, nanobind, scikit_build_core, dask.array, distributed, dask_image, zarr" >/dev/null 2>&1; then
  echo "apron: installing Python test packages"
  "$py" -m pip install -q -r tests/python/requirements.txt 2>/dev/null ||
    "$py" -m pip install -q --break-system-packages -r tests/python/requirements.txt
fi
