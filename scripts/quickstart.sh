#!/usr/bin/env bash
# The first command on a fresh machine: install what is missing, build the apron command, and filter the
# bundled sample image with a few operations into out/.
# The CUDA backend is built where a GPU is found (APRON_CUDA=AUTO); APRON_CUDA=ON scripts/quickstart.sh builds
# it wherever the CUDA toolkit is, APRON_CUDA=OFF never. Only what `cmake --install build` installs is built
# (the command, its man page and completions, the libraries), not the Python extension (APRON_PYTHON=OFF:
# pip install . makes the package): the tests and benchmarks follow with `cmake --build build`, and
# scripts/test.sh builds all of it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
scripts/install-deps.sh
log=$(mktemp)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAPRON_CUDA="${APRON_CUDA:-AUTO}" \
  -DAPRON_PYTHON="${APRON_PYTHON:-OFF}" > "$log" 2>&1 ||
  { cat "$log"; rm -f "$log"; exit 1; }
grep -E "apron: (CUDA|compiling)" "$log" | sed 's/^-- //' || true  # whether CUDA is built, and why
rm -f "$log"
cmake --build build -j"$(nproc)" --target apron apron_cli_docs libapron_shared
echo "apron: built in $((SECONDS - started)) s"
mkdir -p out
apron=build/tools/apron
$apron info
$apron filter samples/sample.png out/gaussian.png --op gaussian:sigma=3 --timing
$apron filter samples/sample.png out/sharpen.png --op sharpen:strength=0.8
$apron filter samples/sample.png out/edges.png --op gaussian:sigma=1 --op sobel:dx=1,delta=128
$apron filter samples/sample.png out/custom.png --op correlate:mask=samples/masks/edge3x3.kernel,border=mirror
$apron filter samples/sample.png out/even.pfm --out-type f32 --op convolve:mask=samples/masks/even4x4.kernel,normalize=sum
$apron filter samples/sample.png out/dilate.png --op dilate:se=ellipse:9x9
$apron filter samples/sample.png out/tophat.png --op tophat:se=rect:15x15
echo "apron: wrote $(ls out | wc -l) filtered images to out/"
# A GenConv job file (samples/job.txt: the sample and one of the results above) through apron batch.
$apron batch samples/job.txt -o out/batch --op dilate:se=rect:5x5
