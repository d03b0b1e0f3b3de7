#!/usr/bin/env bash
# Installs an apron build into a temporary prefix and builds tests/consumer against it, as a user would:
#   1. CMake: find_package(apron) with CMAKE_PREFIX_PATH, apron::apron (shared) and apron::apron_static;
#   2. pkg-config: every installed header alone, then `pkg-config --cflags --libs apron` (shared), and
#      `--static` against libapron.a.
# Each program runs and checks a filtered image against values computed by hand (main.cpp).
#
# usage: run_consumer_test.sh BUILD_DIR CXX_COMPILER LIBDIR [GENERATOR]
#   LIBDIR: CMAKE_INSTALL_LIBDIR of the build (lib, or lib/<triplet> for a /usr prefix).
#   $CMAKE: the cmake that configured the build (CTest sets it; default: cmake on the PATH).
# The library is not rebuilt: the install takes what the build made (a full build has made it all).
set -euo pipefail
build=$(cd "$1" && pwd)
cxx=$2
libdir=$3
generator=${4:-}
consumer=$(cd "$(dirname "$0")" && pwd)
cmake=${CMAKE:-cmake}

work=$(mktemp -d "${TMPDIR:-/tmp}/apron-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "== consumer: $*"; }

step "install $build into $prefix"
if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  echo "consumer: the install failed; it takes what the build made (build all targets: cmake --build $build)"
  exit 1
fi
for f in "$libdir/libapron.a" "$libdir/libapron.so" "$libdir/cmake/apron/apronConfig.cmake" \
         "$libdir/pkgconfig/apron.pc" include/apron/pipeline.hpp bin/apron; do
  [ -e "$prefix/$f" ] || { echo "consumer: the install has no $f"; exit 1; }
done

step "CMake: find_package(apron) + target_link_libraries(app apron::apron)"
generator_args=()
[ -n "$generator" ] && generator_args=(-G "$generator")
"$cmake" -S "$consumer" -B "$work/build" "${generator_args[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
grep -q "^apron_DIR:PATH=$prefix/" "$work/build/CMakeCache.txt" ||
  { echo "consumer: find_package(apron) did not take the package under $prefix"; exit 1; }
"$cmake" --build "$work/build"
"$work/build/app"
"$work/build/app_static"
# The shared program runs on the installed library, found through the RUNPATH CMake gave it.
# ldd's output is captured before grep reads it: under pipefail, `ldd | grep -q` fails whenever grep
# stops at its first match and ldd then dies of SIGPIPE on the rest of its list.
app_libs=$(ldd "$work/build/app")
grep -q "$prefix/$libdir/libapron.so" <<<"$app_libs" ||
  { echo "consumer: app does not load $prefix/$libdir/libapron.so"; echo "$app_libs"; exit 1; }

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}  # and where its dependencies are
step "each installed header compiles alone (it includes only the standard library and apron/)"
for header in "$prefix"/include/apron/*.hpp; do
  # shellcheck disable=SC2046
  echo "#include <apron/${header##*/}>" | "$cxx" -std=c++20 -fsyntax-only $(pkg-config --cflags apron) -x c++ - ||
    { echo "consumer: apron/${header##*/} does not compile on its own"; exit 1; }
done

step "pkg-config: $cxx -std=c++20 main.cpp \$(pkg-config --cflags --libs apron)"
# shellcheck disable=SC2046  # pkg-config's output is a list of words
"$cxx" -std=c++20 -O1 "$consumer/main.cpp" -o "$work/app_pc" $(pkg-config --cflags --libs apron)
LD_LIBRARY_PATH=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/app_pc"

step "pkg-config --static: libapron.a with Requires.private and Libs.private"
# A folder with only the archive, searched first, so -lapron takes libapron.a rather than libapron.so.
mkdir "$work/static"
ln -s "$prefix/$libdir/libapron.a" "$work/static/libapron.a"
# shellcheck disable=SC2046
"$cxx" -std=c++20 -O1 "$consumer/main.cpp" -o "$work/app_pc_static" $(pkg-config --cflags apron) \
       -L"$work/static" $(pkg-config --static --libs apron)
static_libs=$(ldd "$work/app_pc_static")
if grep -q libapron <<<"$static_libs"; then
  echo "consumer: app_pc_static links libapron.so, not the archive"; exit 1
fi
"$work/app_pc_static"
step "all passed"
