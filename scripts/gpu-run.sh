#!/usr/bin/env bash
# One call per iteration on the GPU machine (the device tool runs it from the repository root):
# build with Ninja on all cores, run the GPU tests and the CPU tests, compute-sanitizer (memcheck and
# racecheck) on the GPU tests, apron's GPU benchmark and the peers' (NPP, cuDNN through PyTorch, CuPy) in
# the same call. Everything it learns goes under $OUT, in at most six files (the device tool returns eight):
# summary.txt, build.log, tests.txt, sanitizers.txt, bench_gpu.csv, profile.txt, peers.txt.
#
# The GPU machine lacks Debian's Highway; carry it (and the peer scripts) in .device-carry/:
#   mkdir -p .device-carry/debs && (cd .device-carry/debs && apt-get download libhwy-dev libhwy1)
#   for f in .device-carry/debs/*.deb; do dpkg -x "$f" .device-carry/hwy; done
#   cp -r ../shared/peers .device-carry/
# and name .device-carry in the call's `carry`.
# APRON_GPU_STEPS selects steps (default "build test sanitize bench peers"; "profile" runs ncu on one case).
set -uo pipefail
OUT=${OUT:-/tmp/apron-gpu-out}
mkdir -p "$OUT"
steps=${APRON_GPU_STEPS:-build test sanitize bench peers}
root=$(pwd)
carry=$root/.device-carry
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if ! pkg-config --exists libhwy 2>/dev/null && [ -d "$carry/hwy" ]; then
  prefix=$carry/hwy/usr
  mkdir -p "$carry/pc"
  sed "s|^prefix=.*|prefix=$prefix|" "$prefix/lib/x86_64-linux-gnu/pkgconfig/libhwy.pc" > "$carry/pc/libhwy.pc"
  export PKG_CONFIG_PATH=$carry/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$OUT/summary.txt"
git log -1 --format='commit %h %s' 2>/dev/null | tee -a "$OUT/summary.txt"

case " $steps " in *" build "*)
  log "build"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  cmake --build build-gpu -j"$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
  # Register and shared-memory use of every kernel (ptxas), for docs/perf-notes.md.
  find build-gpu -name '*.cu.o' -exec cuobjdump -res-usage {} \; > "$OUT/build.log" 2>/dev/null
;; esac

case " $steps " in *" test "*)
  log "GPU tests"
  ctest --test-dir build-gpu -L gpu --output-on-failure > "$OUT/tests.txt" 2>&1; tail -5 "$OUT/tests.txt" | tee -a "$OUT/summary.txt"
  log "CPU tests"
  ctest --test-dir build-gpu -L cpu -j"$(nproc)" --output-on-failure >> "$OUT/tests.txt" 2>&1; tail -3 "$OUT/tests.txt" | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" sanitize "*)
  for tool in memcheck racecheck; do
    log "compute-sanitizer $tool"
    compute-sanitizer --tool "$tool" --error-exitcode 9 build-gpu/tests/apron_gpu_tests \
      --gtest_filter='Cuda.PipelinesAndViews:Cuda.IntegerPathIsBitExactOnALargeImage' > /tmp/san.txt 2>&1
    echo "exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.txt | tail -1)" | tee -a "$OUT/summary.txt"
    cat /tmp/san.txt >> "$OUT/sanitizers.txt"
  done
;; esac

case " $steps " in *" bench "*)
  log "apron bench_gpu"
  build-gpu/bench/bench_gpu --size "${APRON_BENCH_SIZE:-8192}" --csv "$OUT/bench_gpu.csv" 2>&1 | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" profile "*)
  # Nsight Compute on one bench case: APRON_PROFILE="--type u8 --k 5" (speed of light, memory, stalls).
  log "ncu ${APRON_PROFILE:-}"
  ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section Occupancy --section LaunchStats \
      build-gpu/bench/bench_gpu --reps 1 ${APRON_PROFILE:-} > "$OUT/profile.txt" 2>&1
  grep -E "Throughput|Duration|Occupancy|Registers|Stall|L1|L2|DRAM|Warp Cycles" "$OUT/profile.txt" | head -40 | tee -a "$OUT/summary.txt"
;; esac

case " $steps " in *" peers "*)
  if [ -d "$carry/peers" ]; then
    log "peers: NPP"
    (cd "$carry/peers" && nvcc -O3 -arch=sm_90 npp_bench.cu -o /tmp/npp_bench -lnppif -lnppim -lnppc > /dev/null 2>&1 &&
       /tmp/npp_bench "${APRON_BENCH_SIZE:-8192}") > "$OUT/peers.txt" 2>&1
    log "peers: cuDNN (PyTorch), CuPy, OpenCV CPU"
    (cd "$carry/peers" && SIZE=${APRON_BENCH_SIZE:-8192} PYTHONUNBUFFERED=1 timeout 240 python3 peers.py) >> "$OUT/peers.txt" 2>&1
  fi
;; esac
log "done"
