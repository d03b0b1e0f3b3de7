#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#  1. Release build (the CUDA backend where a GPU is found: APRON_CUDA=AUTO) with the Python extension;
#  2. the CUDA layers compiled (-DAPRON_CUDA=ON in build-cuda) where the toolkit is and step 1 did not build
#     them, so that a CUDA compile error cannot land: the library with its kernels (as PTX), the GPU tests and
#     benchmark linked against it (nothing of it runs without a GPU). APRON_CHECK_CUDA=1 (CI) fails without
#     the toolkit; 0 skips the step;
#  3. the same GoogleTest suites under AddressSanitizer + UndefinedBehaviorSanitizer;
#  4. every libFuzzer target for a few seconds on its seed corpus;
#  5. the GoogleTest suites and the pytest CLI suite against SciPy/OpenCV on the Release build (GPU tests skip
#     without a device);
#  6. the Python API suite (tests/python_api) on the Release build's extension, then on a CPU-only wheel
#     (`pip wheel .` with APRON_CUDA=OFF: only the CPU layers compile) installed in a fresh virtual environment.
# APRON_FUZZ_SECONDS (default 10) sets the fuzzing time per target; APRON_SKIP_SANITIZERS=1 skips 3 and 4.
# Every build goes through ccache (cmake/ApronCcache.cmake; install-deps installs it): build-cuda and the wheel
# compile the CPU files with the Release build's commands and take them from its cache. Each step prints its
# time, and the end a table of them (also when a step fails).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

started=$SECONDS step_started=$SECONDS step_name="" timings=""
step() {  # step [NAME]: ends the running step (its time into the log and the table), then starts NAME
  if [ -n "$step_name" ]; then
    echo "== $step_name: $((SECONDS - step_started)) s"
    timings+=$(printf '%6d s  %s' $((SECONDS - step_started)) "$step_name")$'\n'
  fi
  step_name=${1:-} step_started=$SECONDS
  if [ -n "$step_name" ]; then echo "== [$((SECONDS - started)) s] $step_name"; fi
}
report_times() {
  local status=$?
  step
  printf '== step times (%s cores), %s in all%s\n%s' "$jobs" "$((SECONDS - started)) s" \
    "$([ "$status" = 0 ] || echo ", FAILED (exit $status)")" "$timings"
}
trap report_times EXIT
configure() {  # configure DIR CMAKE_ARGS...: prints apron's CUDA and ccache lines, or the whole log if it fails
  local dir=$1 log
  shift
  log=$(mktemp)
  if ! cmake -S . -B "$dir" -G Ninja "$@" > "$log" 2>&1; then cat "$log"; rm -f "$log"; return 1; fi
  grep -E "apron: (CUDA|compiling)" "$log" || true
  rm -f "$log"
}

step "dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh

step "Release build (build/)"
# The extension is built for the python3 that runs the tests (and that install-deps gave nanobind).
configure build -DCMAKE_BUILD_TYPE=Release -DAPRON_PYTHON=ON -DAPRON_TESTS=ON -DAPRON_BENCH=ON \
  -DPython_EXECUTABLE="$(command -v python3)"
cmake --build build -j"$jobs"

step "CUDA layers compiled (build-cuda/, -DAPRON_CUDA=ON)"
if grep -q "^APRON_CUDA_BUILT:INTERNAL=ON" build/CMakeCache.txt 2>/dev/null; then
  echo "the Release build has the CUDA backend (a GPU was found): compiled there"
elif [ "${APRON_CHECK_CUDA:-auto}" = 0 ]; then
  echo "skipped (APRON_CHECK_CUDA=0)"
elif command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || [ -n "${CUDACXX:-}" ]; then
  # PTX only (90-virtual): the whole C++ of the kernels compiles (cudafe++, cicc), ptxas does not run. On 2
  # cores the CUDA layer for sm_90 took 2,458 s of CPU (a shared machine); this step as PTX, with the GPU tests
  # and benchmark, 908 s there and 6.4 minutes (758 s of CPU) on a quiet one. What only ptxas sees (inline
  # PTX, resource limits) is compiled by every GPU-machine build (scripts/gpu-run.sh, sm_90);
  # APRON_CHECK_CUDA_ARCHS=90 checks it here too.
  configure build-cuda -DCMAKE_BUILD_TYPE=Release -DAPRON_CUDA=ON -DAPRON_PYTHON=OFF -DAPRON_TESTS=ON -DAPRON_BENCH=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${APRON_CHECK_CUDA_ARCHS:-90-virtual}"
  cmake --build build-cuda -j"$jobs" --target apron_gpu_tests bench_gpu
elif [ "${APRON_CHECK_CUDA:-auto}" = 1 ]; then
  echo "APRON_CHECK_CUDA=1 but no CUDA toolkit (nvcc) found: install it, or the CUDA layers go unchecked" >&2
  exit 1
else
  echo "skipped: no CUDA toolkit (nvcc) found"
fi

if [ "${APRON_SKIP_SANITIZERS:-0}" != 1 ]; then
  step "ASan/UBSan build (build-asan/)"
  configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPRON_SANITIZE=ON -DAPRON_CUDA=OFF -DAPRON_PYTHON=OFF \
    -DAPRON_BENCH=OFF
  cmake --build build-asan -j"$jobs" --target apron_tests
  step "fuzz build (build-fuzz/, clang)"
  CC=clang CXX=clang++ configure build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPRON_FUZZ=ON -DAPRON_PYTHON=OFF \
    -DAPRON_CUDA=OFF -DAPRON_TESTS=OFF -DAPRON_BENCH=OFF
  cmake --build build-fuzz -j"$jobs"
  step "fuzzing (${APRON_FUZZ_SECONDS:-10} s a target)"
  fuzz/run_briefly.sh build-fuzz "${APRON_FUZZ_SECONDS:-10}"
  step "GoogleTest suites under ASan/UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -L cpu -j"$jobs" --output-on-failure
fi

step "all tests (Release build: GoogleTest, pytest CLI suite, package consumer)"
ctest --test-dir build -j"$jobs" --output-on-failure

step "Python API (the Release build's extension)"
APRON_PYTHON_BUILD="$PWD/build/python" APRON_BIN="$PWD/build/tools/apron" python3 -m pytest -q -p no:cacheprovider tests/python_api

step "Python wheel (CPU-only) built"
rm -rf build-wheel-dist build-venv
# The Release build's compile commands again, so that ccache serves its objects (143 s of CPU down to 6): the
# same compilers (scikit-build-core would take g++ from Python's sysconfig, and ccache hashes the name), and
# no build isolation, for the same python3 and nanobind (install-deps installed scikit-build-core and nanobind).
compiler() { sed -n "s/^CMAKE_$1_COMPILER:[A-Z]*=//p" build/CMakeCache.txt; }
CC=$(compiler C) CXX=$(compiler CXX) APRON_CUDA=OFF CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
  python3 -m pip wheel . --no-deps --no-build-isolation -w build-wheel-dist -C build-dir=build-wheel
step "Python wheel in a fresh virtual environment: tests/python_api"
python3 -m venv build-venv
build-venv/bin/python -m pip install -q build-wheel-dist/apron-*.whl -r tests/python_api/requirements.txt
# From outside the source tree, so that `import apron` can only find the installed wheel.
(cd build-venv && APRON_BIN="$OLDPWD/build/tools/apron" bin/python -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python_api")
