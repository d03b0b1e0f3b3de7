#!/usr/bin/env bash
# One call per iteration on the GPU machine (the device tool runs it from the repository root):
# build with Ninja on all cores, run the GPU tests and the CPU tests, compute-sanitizer (memcheck, racecheck
# and initcheck) on the GPU tests, apron's GPU benchmark and the peers' (NPP, cuDNN through PyTorch, CuPy) in
# the same call (bench/peers/), merged by bench/report.py into report.md. Everything it learns goes under
# $OUT, in at most eight files: summary.txt, build.log, tests.txt, sanitizers.txt, bench_gpu.csv, peers.csv,
# report.md, profile.txt (and cpu.csv with the step cpu-user).
# bench and peers time the single-channel cases and the cases users run (bench/user_cases.hpp: 1, 3 and 4
# channels, u8/u16/f32, rect/ellipse/cross/disk/random elements; the user cases first). Their full sweep
# (every type for every family, elements up to 63x63, about three times the default) is APRON_USER_FULL=1;
# APRON_BENCH_CASES / APRON_PEERS_CASES pick the sets (classic, user; default both). Estimated on the H200 from
# the rates of shared/GPU-MACHINE.md: bench about 1.5-2 minutes (the user cases' 93 about 45-60 s, the slow ones
# today's generic morphology kernels on 15x15 colour elements), NPP about 40 s, cuDNN and CuPy about 80 s; the
# time limits (APRON_BENCH_TIMEOUT 200 s, APRON_NPP_TIMEOUT 120 s, APRON_PEERS_TIMEOUT 240 s) keep the rows
# written before them.
#
# The GPU machine lacks Debian's Highway and FFTW; carry them in .device-carry/ (ignored by git):
#   mkdir -p .device-carry/debs && (cd .device-carry/debs && apt-get download libhwy-dev libhwy1 libfftw3-dev libfftw3-double3 libfftw3-single3)
#   for f in .device-carry/debs/libhwy*.deb; do dpkg -x "$f" .device-carry/hwy; done
#   for f in .device-carry/debs/libfftw3*.deb; do dpkg -x "$f" .device-carry/fftw; done
# and name .device-carry in the call's `carry`.
# The device's copy of .git can be older than the working tree it carries: name the commit measured with
# APRON_COMMIT=<sha> in the call, or the report shows the stale one.
# APRON_CMAKE_ARGS adds configure options (-DAPRON_NVJPEG=OFF). "multi" measures every GPU of the node
# (bench/multi_gpu.py, APRON_MULTI_ARGS); APRON_PYTHON_TESTS_ONLY=1 makes "python" run the suite alone.
# APRON_GPU_STEPS selects steps (default "build test sanitize bench peers report"; "stress" runs one test
# (APRON_STRESS, a gtest filter) in 16 processes at once, 4 rounds; "profile" runs ncu on one case,
# APRON_PROFILE="--op correlate --type u8 --k 5"); APRON_BENCH_ARGS adds bench_gpu arguments (--sweep,
# --large), APRON_PEERS_ARGS the peers' (--large). "sass" counts the tensor-core and dot-product instructions
# of the kernels that must have them; "calibrate" writes the planner's table for this GPU
# ($OUT/calibration.tsv, for calibration/) and checks the planner's choices on held-out cases
# ($OUT/planner-check.md). "cpu-opencv" runs bench/cpu_vs_opencv.py on 1-16 threads.
# "cpu" times the CPU backend against OpenCV's filter2D (bench/peers/cpu_peers.py,
# APRON_CPU_ARGS="--ks 31,63 --size 4096"). "batch" runs bench_batch (APRON_BATCH_ARGS="--count 1000
# --streams 1,2,3,4 --devices 0,1") and bench/batch_files.py (APRON_BATCH_FILES_ARGS). "shapes" times 1, 3 and 4
# channels, u8/u16/f32 and rectangle, ellipse and disk elements through the CLI (bench/shapes_cli.py).
# "cpu-user" times the CPU backend on 1, 3 and 4 channels in process (bench_cpu_user) against OpenCV in
# process and apron's CLI step time (bench/peers/cpu_peers.py --user) on this machine's cores, into
# $OUT/cpu.csv, which the report step adds (APRON_CPU_USER_ARGS="--size 4096 --types u8"). "wheel" runs
# `pip install .` with the CUDA toolkit into a fresh virtual environment and the Python suite on it. "huge"
# streams a generated huge image against dd and libvips (bench/huge_image.py; APRON_HUGE_SIZE, _TYPES, _DIR,
# _MEMORY, _BACKENDS); "beyond" streams an image larger than the GPU's memory (bench/beyond_gpu_memory.py).
# "volumes" times volumes (3-D Gaussian, ball and box) against cupyx.scipy.ndimage and a batch of tensors against
# kornia and torch, then the fused volume pass's variants (bench/volumes_gpu.py, into volumes.txt). "dask" runs
# bench/dask_vs_dask_image.py on a LocalCluster, NumPy and CuPy chunks (APRON_DASK_VARIANTS, ';'-separated
# argument lists), into dask.txt.
set -uo pipefail
OUT=${OUT:-/tmp/apron-gpu-out}
mkdir -p "$OUT"
steps=${APRON_GPU_STEPS:-build test sanitize bench peers report}
root=$(pwd)
carry=$root/.device-carry
start=$SECONDS
log() { echo "== [$((SECONDS - start)) s] $*" | tee -a "$OUT/summary.txt"; }
# One NVRTC disk cache for every process of the call (tests run in parallel, then under the sanitizers).
export APRON_RTC_CACHE_DIR=${APRON_RTC_CACHE_DIR:-/tmp/apron-rtc-cache}

# Debian packages the GPU machine lacks, extracted under .device-carry/ (Highway; FFTW for the CPU FFT path).
carry_pkg() {  # carry_pkg PKGCONFIG_NAME DIR
  local prefix=$carry/$2/usr
  pkg-config --exists "$1" 2>/dev/null || [ ! -d "$prefix" ] && return
  mkdir -p "$carry/pc"
  sed "s|^prefix=.*|prefix=$prefix|" "$prefix/lib/x86_64-linux-gnu/pkgconfig/$1.pc" > "$carry/pc/$1.pc"
  export PKG_CONFIG_PATH=$carry/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
carry_pkg libhwy hwy
carry_pkg fftw3 fftw
carry_pkg fftw3f fftw
# nanobind (PyPI) for the Python extension, unpacked from its wheel into .device-carry/py:
#   python3 -m pip download nanobind --no-deps -d /tmp/w && unzip /tmp/w/nanobind-*.whl -d .device-carry/py
[ -d "$carry/py/nanobind" ] && export PYTHONPATH=$carry/py${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/summary.txt"
echo "commit ${APRON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}" | tee -a "$OUT/summary.txt"

# libtiff: the GPU machine has the library (libtiff.so.6) but not its headers; Debian's libtiff-dev headers
# are carried in .device-carry/tiff (apt-get download libtiff-dev; dpkg -x libtiff-dev*.deb .device-carry/tiff).
tiff_args=()
tiff_lib=$(ls /usr/lib/x86_64-linux-gnu/libtiff.so.6 2>/dev/null | head -1)
if ! pkg-config --exists libtiff-4 2>/dev/null && [ -n "$tiff_lib" ] && [ -f "$carry/tiff/usr/include/x86_64-linux-gnu/tiffio.h" ]; then
  tiff_args=(-DTIFF_INCLUDE_DIR="$carry/tiff/usr/include/x86_64-linux-gnu" -DTIFF_LIBRARY="$tiff_lib")
fi

case " $steps " in *" build "*)
  log "build"
  # APRON_CUDA=ON: the CUDA backend whatever the GPU detection of APRON_CUDA=AUTO finds (a failed detection
  # fails the configure here instead of building a CPU-only apron whose GPU tests all skip).
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DAPRON_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DPython_EXECUTABLE="$(command -v python3)" "${tiff_args[@]}" ${APRON_CMAKE_ARGS:-} > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  # APRON_BUILD_TARGETS: only these targets (an iteration on one kernel family: "apron_gpu_tests bench_gpu").
  cmake --build build-gpu -j"$(nproc)" ${APRON_BUILD_TARGETS:+--target $APRON_BUILD_TARGETS} > "$OUT/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
  # Register and shared-memory use of every kernel (ptxas), for docs/perf-notes.md.
  find build-gpu -name "*.cu.o" -exec cuobjdump -res-usage {} \; >> "$OUT/build.log" 2>/dev/null
  # The slowest compile steps (ms), to keep the GPU machine's build short.
  awk '!/^#/ {print $2 - $1, $4}' build-gpu/.ninja_log | sort -rn | head -15 >> "$OUT/build.log"
  awk '!/^#/ {all += $2 - $1; if ($4 ~ /\.cu\.o$/) cu += $2 - $1} END {printf "compile CPU: %.0f s in all, %.0f s CUDA\n", all / 1000, cu / 1000}' \
    build-gpu/.ninja_log | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" sass "*)
  log "sass: matrix and dot-product instructions"
  for obj in $(find build-gpu -name "direct_imma*.cu.o" -o -name "direct_dp4a*.cu.o"); do
    n_imma=$(cuobjdump -sass "$obj" 2>/dev/null | grep -cE "IMMA|HMMA|HGMMA")
    n_dp4a=$(cuobjdump -sass "$obj" 2>/dev/null | grep -c "IDP.4A")
    echo "$(basename "$obj"): IMMA/HMMA $n_imma, IDP.4A $n_dp4a" | tee -a "$OUT/summary.txt"
  done
;; esac

case " $steps " in *" test "*)
  # In parallel: most of their time is the CPU reference and NVRTC compiles, not the GPU.
  log "GPU tests"
  timeout ${APRON_TEST_TIMEOUT:-300} ctest --test-dir build-gpu -L gpu -j"$(nproc)" --output-on-failure > "$OUT/tests.txt" 2>&1
  tail -5 "$OUT/tests.txt" | tee -a "$OUT/summary.txt"
  # APRON_CPU_TESTS=0: the GPU tests alone (a multi-GPU call; the CPU suite runs in CI).
  if [ "${APRON_CPU_TESTS:-1}" != 0 ]; then
    log "CPU tests"
    timeout 120 ctest --test-dir build-gpu -L cpu -j"$(nproc)" --output-on-failure >> "$OUT/tests.txt" 2>&1
    tail -3 "$OUT/tests.txt" | tee -a "$OUT/summary.txt"
  fi
;; esac

case " $steps " in *" sanitize "*)
  # The three tools side by side on tests that reach every kernel family with edges, ROIs and several
  # channels. memcheck takes the large-image tests too (interior fast paths); racecheck and initcheck,
  # ten times slower, the small ones (the long sweeps stay out: under a sanitizer they take the whole call).
  small=Cuda.PipelinesAndViews:Cuda.DevicePipelinesRunOnTheCallersStream:CudaMorphRect.NaNIsAMissingSample:CudaSeparable.*:-CudaSeparable.GaussianOnALargeOddImage
  small=CudaMorphRect.ElementsLargerThanTheImage:CudaMorphChords.RandomElementsWithHolesAndAnyAnchor:CudaMorphChords.UnalignedDeviceViews:CudaMorphChords.FloatSpecialValuesFollowTheReference:CudaPlanKernels.PlansWithoutACudaKernelOrWithAWrongOneStillRun:$small
  small=GpuLargeWeights.Cufft*:CudaDp4a.*:CudaDp2a.*:CudaMorphRect.FloatSpecialValuesFollowTheReference:CudaMorphRect.DerivedOperations:CudaMorphRect.HostRoiViews:CudaMorphRect.UnalignedDeviceViews:RuntimeDirect.RoiViewsAndAnchors:RuntimeDirect.TheExecutorRoutesOtherMasksHere:$small
  large=CudaMorphRect.WideColourRectanglesChainFastPasses:CudaColourLinear.DirectExactColourOnALargeImage:CudaMorphRect.LargeColourImagesMatchCpu:CudaMorphChords.MatchesCpuOnALargeImage:Cuda.IntegerPathIsBitExactOnALargeImage:Cuda.OverlappedHostToHostGivesTheSameBits:CudaMorphRect.MatchesCpuOnALargeImage:CudaSeparable.GaussianOnALargeOddImage:RuntimeDirect.ExactSumsBeyondTwoToThe24InIntegers
  log "compute-sanitizer memcheck, racecheck, initcheck"
  for tool in memcheck racecheck initcheck; do
    filter=$small
    [ "$tool" = memcheck ] && filter=${small%%:-*}:$large
    timeout ${APRON_SANITIZE_TIMEOUT:-420} compute-sanitizer --tool "$tool" --error-exitcode 9 \
      build-gpu/tests/apron_gpu_tests --gtest_filter="${APRON_SANITIZE_FILTER:-$filter}" > "/tmp/san_$tool.txt" 2>&1 &
  done
  wait
  for tool in memcheck racecheck initcheck; do
    echo "$tool: $(grep -E '^\[  (PASSED|FAILED)' /tmp/san_$tool.txt | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san_$tool.txt | tail -1)" |
      tee -a "$OUT/summary.txt"
    cat "/tmp/san_$tool.txt" >> "$OUT/sanitizers.txt"
  done
;; esac

case " $steps " in *" python "*)
  # The Python package on the GPU: its whole suite (CuPy and torch zero-copy, streams, out=, devices) on the
  # build's extension, then the call overhead (NumPy, CuPy, torch) and device arrays at full size against
  # the same cases in C++ and against cupyx.scipy.ndimage (bench/python_device.py), into python.txt.
  log "python: tests/python_api, call overhead, device arrays"
  { nvidia-smi -L
    APRON_PYTHON_BUILD=$root/build-gpu/python APRON_BIN=$root/build-gpu/tools/apron timeout 240 \
      python3 -m pytest -q -p no:cacheprovider -rs tests/python_api 2>&1 | tail -25
    # APRON_PYTHON_TESTS_ONLY=1: the suite alone (a multi-GPU call, whose time all counts).
    if [ -z "${APRON_PYTHON_TESTS_ONLY:-}" ]; then
    for array in numpy cupy torch; do
      PYTHONPATH=$root/build-gpu/python timeout 60 python3 bench/python_overhead.py --array $array 2>&1 | tail -8
    done
    # kornia (and its kornia_rs) is not on the GPU machine: carried unpacked in .device-carry/kornia, as
    #   pip download --no-deps kornia kornia_rs --python-version 3.12 --only-binary=:all: ... ; unzip each there
    PYTHONPATH=$root/build-gpu/python${carry:+:$carry/kornia} timeout 240 python3 bench/python_device.py \
      --bench-gpu build-gpu/bench/bench_gpu 2>&1 | tail -40
    PYTHONPATH=$root/build-gpu/python timeout 120 python3 bench/python_cpu_peers.py 2>&1 | tail -24
    fi
  } > "$OUT/python.txt" 2>&1 < /dev/null
  grep -E "passed|failed|error" "$OUT/python.txt" | tail -3 | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" wheel "*)
  # `pip install .` as a user runs it on a machine with the CUDA toolkit (the CUDA backend compiled in), into a
  # fresh virtual environment that sees the machine's NumPy, CuPy and torch, then the Python suite from
  # outside the source tree against the installed package. No network there: scikit-build-core and nanobind
  # come from .device-carry/wheels (pip download scikit-build-core nanobind --python-version 3.12
  # --only-binary=:all: -d .device-carry/wheels).
  log "wheel: pip install . (CUDA) in a fresh venv, then tests/python_api"
  # The machine's NumPy, CuPy, torch, SciPy and pytest live in the venv python3 belongs to, which a new venv
  # cannot inherit: they are put after the new venv's own site-packages on PYTHONPATH (apron is not there).
  site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  { rm -rf /tmp/apron-venv && python3 -m venv /tmp/apron-venv &&
    /tmp/apron-venv/bin/python -m pip install -q --no-index --find-links "$carry/wheels" scikit-build-core nanobind &&
    APRON_CUDA=ON CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout 420 /tmp/apron-venv/bin/python -m pip install --no-index --no-deps \
      --no-build-isolation . 2>&1 | tail -3 &&
    (cd /tmp && export PYTHONPATH=$site && /tmp/apron-venv/bin/python -c "import apron; print(apron.__file__, apron.info())" &&
     APRON_BIN=$root/build-gpu/tools/apron timeout 240 /tmp/apron-venv/bin/python -m pytest -q -p no:cacheprovider \
       "$root/tests/python_api" 2>&1 | tail -6); } > "$OUT/wheel.txt" 2>&1
  tail -3 "$OUT/wheel.txt" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" huge "*)
  # Images larger than memory (docs/streaming.md): a generated SIZE x SIZE tiled BigTIFF through gaussian
  # sigma 4 then dilate disk:5 under --memory, against dd's read+write bound and libvips in the same run
  # (bench/huge_image.py). libvips is not on the GPU machine: pyvips with its bundled libvips (pyvips-binary)
  # and cffi are carried unpacked in .device-carry/vips (pip download pyvips pyvips-binary cffi pycparser
  # --python-version 3.12 --only-binary=:all:, each unzipped there).
  log "huge: ${APRON_HUGE_SIZE:-65536}^2 ${APRON_HUGE_TYPES:-u8} in ${APRON_HUGE_DIR:-/dev/shm}"
  PYTHONPATH=$carry/vips timeout ${APRON_HUGE_TIMEOUT:-500} python3 bench/huge_image.py --apron build-gpu/tools/apron \
    --size "${APRON_HUGE_SIZE:-65536}" --types "${APRON_HUGE_TYPES:-u8}" --dir "${APRON_HUGE_DIR:-/dev/shm}" \
    --memory "${APRON_HUGE_MEMORY:-1G}" --backends "${APRON_HUGE_BACKENDS:-cuda,cpu}" 2>&1 | tee -a "$OUT/huge.txt" | tail -12
;; esac

case " $steps " in *" beyond "*)
  # An image larger than the GPU's memory (1.1 x, f32 in a sparse file) streamed through the CUDA backend under
  # --memory, its peak RSS, and stripes of it checked against one-band runs (bench/beyond_gpu_memory.py).
  log "beyond: an image larger than the GPU's memory"
  timeout ${APRON_BEYOND_TIMEOUT:-420} python3 bench/beyond_gpu_memory.py --apron build-gpu/tools/apron \
    --dir "${APRON_HUGE_DIR:-/dev/shm}" --memory "${APRON_BEYOND_MEMORY:-4G}" 2>&1 | tee -a "$OUT/huge.txt" | tail -8
;; esac

case " $steps " in *" stress "*)
  # A test run many times at once (16 processes sharing the GPU, 4 rounds): what only shows under load.
  log "stress ${APRON_STRESS:-CudaMorphRect.UnalignedDeviceViews}"
  fails=0
  for round in 1 2 3 4; do
    for i in $(seq "$(nproc)"); do
      build-gpu/tests/apron_gpu_tests --gtest_filter="${APRON_STRESS:-CudaMorphRect.UnalignedDeviceViews}" > "/tmp/stress_$i.txt" 2>&1 &
    done
    wait
    for i in $(seq "$(nproc)"); do grep -q "^\[  PASSED" "/tmp/stress_$i.txt" || { fails=$((fails + 1)); tail -20 "/tmp/stress_$i.txt" >> "$OUT/tests.txt"; }; done
  done
  echo "stress: $fails of $((4 * $(nproc))) runs failed" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" bench "*)
  log "apron bench_gpu"
  timeout ${APRON_BENCH_TIMEOUT:-200} build-gpu/bench/bench_gpu --sizes "${APRON_BENCH_SIZE:-8192}" \
    --cases "${APRON_BENCH_CASES:-classic,user}" ${APRON_USER_FULL:+--full} ${APRON_BENCH_ARGS:-} --csv "$OUT/bench_gpu.csv" 2>&1 |
    tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" volumes "*)
  # Issue 32's GPU targets: 3-D Gaussian and ball dilation against cupyx, a 64x3x512x512 batch against kornia
  # and torch (bench/volumes_gpu.py; kornia unpacked into .device-carry/py), into volumes.txt.
  log "volumes and tensor batches (bench/volumes_gpu.py)"
  PYTHONPATH=$root/build-gpu/python${PYTHONPATH:+:$PYTHONPATH} timeout ${APRON_VOLUMES_TIMEOUT:-240} \
    python3 bench/volumes_gpu.py ${APRON_VOLUMES_ARGS:-} > "$OUT/volumes.txt" 2>&1 < /dev/null
  # Variants of the Gaussian, for A/B in the same call (APRON_VOLUMES_VARIANTS, ';'-separated environments;
  # default the fused volume pass (cuda/separable_volume_impl.cuh, opt-in) at 2 and 4 rows a thread).
  IFS=';' read -r -a variants <<< "${APRON_VOLUMES_VARIANTS:-APRON_VOLUME_FUSED=1 APRON_VOLUME_RY=2;APRON_VOLUME_FUSED=1 APRON_VOLUME_RY=4}"
  for variant in "${variants[@]}"; do
    echo "== $variant" >> "$OUT/volumes.txt"
    env $variant PYTHONPATH=$root/build-gpu/python${PYTHONPATH:+:$PYTHONPATH} timeout 60 \
      python3 bench/volumes_gpu.py --only gaussian >> "$OUT/volumes.txt" 2>&1 < /dev/null
  done
  tail -25 "$OUT/volumes.txt" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" dask "*)
  # apron.ndimage against dask-image on a dask.distributed LocalCluster of this machine's cores, NumPy chunks
  # and CuPy chunks on the GPU (bench/dask_vs_dask_image.py, into dask.txt). dask, distributed and dask-image
  # are not on the GPU machine: carried unpacked in .device-carry/pydask (its PYDASK-README.txt says how).
  log "dask: apron.ndimage against dask-image on a LocalCluster"
  IFS=';' read -r -a dask_variants <<< "${APRON_DASK_VARIANTS:---workers 4 --threads-per-worker 4;--cupy --workers 2}"
  for variant in "${dask_variants[@]}"; do
    echo "== $variant" >> "$OUT/dask.txt"
    PYTHONPATH=$root/build-gpu/python:$carry/pydask${PYTHONPATH:+:$PYTHONPATH} timeout ${APRON_DASK_TIMEOUT:-200} \
      python3 bench/dask_vs_dask_image.py $variant --csv "/tmp/dask.csv" >> "$OUT/dask.txt" 2>&1 < /dev/null
  done
  grep -E "^\| |^==|whole-array" "$OUT/dask.txt" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" profile "*)
  # Nsight Compute on bench cases, ';'-separated: APRON_PROFILE="--op correlate --type u8 --k 5; --op dilate --k 3"
  # (the single-channel cases; "--cases user --channels 3 --op dilate --shape disk:7" for a user case)
  # (speed of light, memory, stalls, occupancy, and the source counters of the hottest instructions).
  IFS=';' read -ra profiles <<< "${APRON_PROFILE:---op correlate --type u8 --k 5}"
  : > "$OUT/profile.txt"
  for args in "${profiles[@]}"; do
    log "ncu $args"
    ncu -k "regex:${APRON_PROFILE_KERNEL:-direct|separable|morph|linear}" --launch-skip 2 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
        --section InstructionStats --section SchedulerStats \
        build-gpu/bench/bench_gpu --reps 2 --cases classic $args >> "$OUT/profile.txt" 2>&1  # args may say --cases user
  done
  grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible" "$OUT/profile.txt" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" cpu "*)
  # The CPU backend against OpenCV's filter2D on this machine's cores (OpenCV-Python is here, its C++ is not).
  log "cpu: apron --backend cpu vs OpenCV filter2D"
  timeout ${APRON_CPU_TIMEOUT:-300} python3 bench/peers/cpu_peers.py --apron build-gpu/tools/apron ${APRON_CPU_ARGS:-} \
    2>&1 | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" cpu-user "*)
  # The CPU backend on 1, 3 and 4 channels: in process, through the CLI, and OpenCV in process, same cores.
  log "cpu-user: bench_cpu_user, then OpenCV and apron's CLI (cpu_peers.py --user)"
  timeout ${APRON_CPU_TIMEOUT:-300} build-gpu/bench/bench_cpu_user ${APRON_CPU_USER_ARGS:---size 4096 --types u8} --csv /tmp/cpu_user.csv \
    2>&1 | tee -a "$OUT/summary.txt"
  timeout ${APRON_CPU_TIMEOUT:-300} python3 bench/peers/cpu_peers.py --user --apron build-gpu/tools/apron \
    ${APRON_CPU_USER_ARGS:---size 4096 --types u8} --dir /dev/shm --csv /tmp/cpu_peers_user.csv 2>&1 | tee -a "$OUT/summary.txt"
  { cat /tmp/cpu_user.csv 2>/dev/null; tail -n +2 /tmp/cpu_peers_user.csv 2>/dev/null; } > "$OUT/cpu.csv"  # one header
;; esac

case " $steps " in *" cpu-opencv "*)
  # Issue 30's table: the CPU backend against OpenCV-Python case by case, calls alternating in one process,
  # on 1 to 16 threads (this machine's cores), into cpu_opencv.md and cpu_opencv.csv.
  log "cpu-opencv: apron's CPU backend vs OpenCV, threads ${APRON_CPU_THREADS:-1,2,4,8,16}"
  PYTHONPATH=$root/build-gpu/python timeout ${APRON_CPU_TIMEOUT:-400} python3 bench/cpu_vs_opencv.py \
    --threads "${APRON_CPU_THREADS:-1,2,4,8,16}" --reps "${APRON_CPU_REPS:-5}" --csv "$OUT/cpu_opencv.csv" 2>&1 |
    tee "$OUT/cpu_opencv.md"
;; esac

case " $steps " in *" shapes "*)
  # The shapes users feed (1, 3, 4 channels; u8, u16, f32; rectangles, ellipses, disks) through the CLI.
  log "shapes: channels, types and element shapes (bench/shapes_cli.py)"
  timeout ${APRON_SHAPES_TIMEOUT:-300} python3 bench/shapes_cli.py --apron build-gpu/tools/apron ${APRON_SHAPES_ARGS:-} \
    2>&1 | tee "$OUT/shapes.md" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" batch "*)
  # Many images (apron batch): host to host from pinned memory (bench_batch), then files in a tmpfs: a
  # GenConv job file of 8-bit PGM with a 5x5 dilation, and PNG (bench/batch_files.py).
  log "batch: in memory, host to host"
  timeout ${APRON_BATCH_TIMEOUT:-240} build-gpu/bench/bench_batch ${APRON_BATCH_ARGS:-} 2>&1 | tee -a "$OUT/summary.txt"
  log "batch: files"
  timeout ${APRON_BATCH_TIMEOUT:-240} python3 bench/batch_files.py --apron build-gpu/tools/apron ${APRON_BATCH_FILES_ARGS:-} 2>&1 |
    tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" multi "*)
  # Every GPU of the node (issue 29): batches from files in a tmpfs against the storage bound measured by cat
  # in the same run, a GPU-bound batch and one streamed image on 1, 2 and 4 GPUs (one process, MPI ranks),
  # bench_batch host to host; every output compared across GPU counts (bench/multi_gpu.py).
  log "multi-GPU: files against the storage bound, scaling over 1, 2, 4 GPUs"
  nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
  tiff_flag=$(grep -q "^TIFF_LIBRARY.*libtiff" build-gpu/CMakeCache.txt && echo --tiff)
  timeout ${APRON_MULTI_TIMEOUT:-420} python3 bench/multi_gpu.py --apron build-gpu/tools/apron \
    --bench-batch build-gpu/bench/bench_batch --csv "$OUT/multi.csv" --md "$OUT/multi.md" $tiff_flag \
    ${APRON_MULTI_ARGS:-} > "$OUT/multi.txt" 2>&1 < /dev/null
  cat "$OUT/multi.md" >> "$OUT/summary.txt"
  rm -rf /dev/shm/apron-multi
;; esac

case " $steps " in *" peers "*)
  # NPP, cuDNN (PyTorch) and CuPy on the same cases, in the same call (bench/peers/).
  log "peers: NPP"
  peer_sets=(--cases "${APRON_PEERS_CASES:-classic,user}" ${APRON_USER_FULL:+--full})
  nvcc -O3 -arch=sm_90 bench/peers/npp_peers.cu -o /tmp/npp_peers -lnppif -lnppim -lnppc > /tmp/npp_build.txt 2>&1 &&
    timeout ${APRON_NPP_TIMEOUT:-120} /tmp/npp_peers --sizes "${APRON_BENCH_SIZE:-8192}" "${peer_sets[@]}" ${APRON_PEERS_ARGS:-} \
      --csv /tmp/npp.csv > /tmp/npp.txt 2>&1 || tail -5 /tmp/npp_build.txt /tmp/npp.txt
  log "peers: cuDNN (PyTorch), CuPy"
  timeout ${APRON_PEERS_TIMEOUT:-240} python3 bench/peers/torch_cupy_peers.py --sizes "${APRON_BENCH_SIZE:-8192}" "${peer_sets[@]}" \
    ${APRON_PEERS_ARGS:-} --csv /tmp/torch_cupy.csv > /tmp/torch_cupy.txt 2>&1 || tail -5 /tmp/torch_cupy.txt
  { cat /tmp/npp.csv 2>/dev/null; tail -n +2 /tmp/torch_cupy.csv 2>/dev/null; } > "$OUT/peers.csv"
;; esac

case " $steps " in *" calibrate "*)
  log "calibrate"
  timeout ${APRON_CALIBRATE_TIMEOUT:-300} build-gpu/tools/apron calibrate --backend cuda -o "$OUT/calibration.tsv" \
    2> "$OUT/calibrate.log" || tail -5 "$OUT/calibrate.log"
  log "planner check (held-out cases, the new table)"
  APRON_CALIBRATION=$OUT/calibration.tsv timeout 200 build-gpu/tools/apron calibrate --backend cuda --check \
    > "$OUT/planner-check.md" 2>> "$OUT/calibrate.log"
  echo "planner check exit $?" | tee -a "$OUT/summary.txt"
  tail -2 "$OUT/planner-check.md" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" report "*)
  log "report"
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  cpu_csv=()
  [ -s "$OUT/cpu.csv" ] && cpu_csv=("$OUT/cpu.csv")
  python3 bench/report.py "$OUT/bench_gpu.csv" "$OUT/peers.csv" "${cpu_csv[@]}" --gpu "$gpu" \
    --commit "${APRON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" > "$OUT/report.md" 2>&1
  # Figures once reached are held: every row more than 10 % slower than this GPU model's baseline.
  model=$(echo "$gpu" | grep -oE 'H[0-9]{3}' | head -1 | tr 'H' 'h')
  baseline=${APRON_BASELINE:-$(ls -d bench/baselines/"${model:-none}"-*/bench_gpu.csv 2>/dev/null | tail -1)}
  if [ ! -s "$OUT/bench_gpu.csv" ]; then
    echo "no bench_gpu.csv in this call: nothing to hold against a baseline" | tee -a "$OUT/summary.txt"
  elif [ -n "$baseline" ]; then
    { echo; echo "## Against the baseline $baseline"; echo
      python3 bench/baseline_check.py "$OUT/bench_gpu.csv" "$baseline" --markdown; } >> "$OUT/report.md" 2>&1
    grep -E "rows matched|slower:|off the planner|mispredicted:" "$OUT/report.md" | tee -a "$OUT/summary.txt"
  else
    echo "no baseline for '$gpu' in bench/baselines/ (APRON_BASELINE=FILE names one)" | tee -a "$OUT/summary.txt"
  fi
  # The plots of the same CSVs (docs/plots/ once checked in), where the machine has matplotlib.
  if python3 -c "import matplotlib" 2>/dev/null; then
    python3 bench/plots.py "$OUT/bench_gpu.csv" "$OUT/peers.csv" "${cpu_csv[@]}" --gpu "$gpu" --date "$(date -u +%F)" \
      --commit "${APRON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" -o "$OUT/plots" >> "$OUT/report.md" 2>&1
  fi
;; esac
log "done"
