#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#  1. Release build: GoogleTest suites and the pytest CLI suite against SciPy/OpenCV (GPU tests skip
#     without a device);
#  2. the same GoogleTest suites under AddressSanitizer + UndefinedBehaviorSanitizer;
#  3. every libFuzzer target for a few seconds on its seed corpus;
#  4. the Python API suite (tests/python_api) on the Release build's extension, then on a CPU-only wheel
#     (`pip wheel .` with APRON_CUDA=OFF: only the CPU layers compile) installed in a fresh virtual environment.
# APRON_FUZZ_SECONDS (default 10) sets the fuzzing time per target; APRON_SKIP_SANITIZERS=1 skips 2 and 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

# The extension is built for the python3 that runs the tests (and that install-deps gave nanobind).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAPRON_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build build -j"$jobs"

if [ "${APRON_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPRON_SANITIZE=ON -DAPRON_CUDA=OFF -DAPRON_PYTHON=OFF \
        -DAPRON_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs" --target apron_tests
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPRON_FUZZ=ON -DAPRON_PYTHON=OFF \
        -DAPRON_CUDA=OFF -DAPRON_TESTS=OFF -DAPRON_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs"
  fuzz/run_briefly.sh build-fuzz "${APRON_FUZZ_SECONDS:-10}"
  echo "== GoogleTest suites under ASan/UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -L cpu -j"$jobs" --output-on-failure
fi

echo "== all tests (Release build)"
ctest --test-dir build -j"$jobs" --output-on-failure

echo "== Python API (the Release build's extension)"
APRON_PYTHON_BUILD="$PWD/build/python" APRON_BIN="$PWD/build/tools/apron" python3 -m pytest -q -p no:cacheprovider tests/python_api

echo "== Python wheel (CPU-only) in a fresh virtual environment"
rm -rf build-wheel-dist build-venv
APRON_CUDA=OFF CMAKE_BUILD_PARALLEL_LEVEL="$jobs" python3 -m pip wheel . --no-deps -w build-wheel-dist -C build-dir=build-wheel
python3 -m venv build-venv
build-venv/bin/python -m pip install -q build-wheel-dist/apron-*.whl -r tests/python_api/requirements.txt
# From outside the source tree, so that `import apron` can only find the installed wheel.
(cd build-venv && APRON_BIN="$OLDPWD/build/tools/apron" bin/python -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python_api")
